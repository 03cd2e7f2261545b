/**
 * What a projected volume's `clusterTrustBundle` source writes: the trust anchors of one bundle
 * (by `name`) or of every bundle of a signer matching a label selector, as the kubelet's
 * ClusterTrustBundle manager gives them (pkg/kubelet/clustertrustbundle/clustertrustbundle_manager.go
 * GetTrustAnchorsByName, GetTrustAnchorsBySigner, normalizeTrustAnchors) and its projected volume
 * writes them (pkg/volume/projected/projected.go collectData).
 */
import { createHash, randomBytes } from 'node:crypto';
import type { ClusterTrustBundle } from '../api/cluster.ts';

interface LabelSelectorRequirement {
  key: string;
  operator: string;
  values?: string[];
}

export interface LabelSelector {
  matchLabels?: Record<string, string>;
  matchExpressions?: LabelSelectorRequirement[];
}

export interface ClusterTrustBundleProjection {
  name?: string;
  signerName?: string;
  labelSelector?: LabelSelector;
  optional?: boolean;
  path: string;
}

/**
 * Whether `labels` match `selector` (apimachinery metav1.LabelSelectorAsSelector): an absent
 * selector matches nothing, an empty one everything. An operator it does not know is an error.
 */
export function selectorMatches(selector: LabelSelector | undefined, labels: Record<string, string>): boolean | Error {
  if (!selector) return false;
  for (const [key, value] of Object.entries(selector.matchLabels ?? {})) if (labels[key] !== value) return false;
  for (const requirement of selector.matchExpressions ?? []) {
    const has = Object.hasOwn(labels, requirement.key);
    const values = requirement.values ?? [];
    switch (requirement.operator) {
      case 'In':
        if (!has || !values.includes(labels[requirement.key]!)) return false;
        break;
      case 'NotIn':
        if (has && values.includes(labels[requirement.key]!)) return false;
        break;
      case 'Exists':
        if (!has) return false;
        break;
      case 'DoesNotExist':
        if (has) return false;
        break;
      default:
        return new Error(`while parsing label selector: "${requirement.operator}" is not a valid label selector operator`);
    }
  }
  return true;
}

const PEM_BLOCK = /-----BEGIN ([^\n]*?)-----\r?\n([\s\S]*?)-----END \1-----/g;

/** The DER bytes of every PEM block in `text`, whatever its type; malformed blocks are skipped (Go's pem.Decode loop). */
function pemBlocks(text: string): Buffer[] {
  const blocks: Buffer[] = [];
  for (const [, , body] of text.matchAll(PEM_BLOCK)) {
    // Headers ("Key: value" lines) precede the base64 body.
    const base64 = body!
      .split(/\r?\n/)
      .filter((line) => !line.includes(':'))
      .join('')
      .replace(/\s/g, '');
    if (!/^[A-Za-z0-9+/]*={0,2}$/.test(base64) || base64.length % 4 !== 0) continue;
    blocks.push(Buffer.from(base64, 'base64'));
  }
  return blocks;
}

function pemCertificate(der: Buffer): string {
  const lines = der.toString('base64').match(/.{1,64}/g) ?? [];
  return `-----BEGIN CERTIFICATE-----\n${lines.join('\n')}${lines.length ? '\n' : ''}-----END CERTIFICATE-----\n`;
}

/** This process's seed for the order of trust anchors: the same on every refresh, another after a restart. */
const PROCESS_SEED = randomBytes(16);

/**
 * The bundles' PEM blocks, deduplicated, each re-encoded as a CERTIFICATE block, in an order that
 * depends on `seed` (normalizeTrustAnchors). The kubelet shuffles them "to give the list a stable
 * ordering that changes each time Kubelet restarts"; it reshuffles whenever it recomputes (its
 * five-minute cache), where ours stays put for the process, so a refresh does not rewrite an
 * unchanged file.
 */
export function normalizeTrustAnchors(bundles: readonly ClusterTrustBundle[], seed: Buffer = PROCESS_SEED): Buffer {
  const unique = new Map<string, Buffer>();
  for (const bundle of bundles) for (const der of pemBlocks(bundle.spec.trustBundle)) unique.set(der.toString('base64'), der);
  const rank = (der: Buffer) => createHash('sha256').update(seed).update(der).digest('hex');
  const ordered = [...unique.values()].map((der) => ({ der, key: rank(der) })).sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
  return Buffer.from(ordered.map(({ der }) => pemCertificate(der)).join(''));
}

/**
 * The file content of a `clusterTrustBundle` source given every bundle of the cluster, or the
 * kubelet's error. A missing named bundle, or no bundle of the signer matching, is an empty file
 * when the source is `optional`.
 */
export function trustAnchorsFor(source: ClusterTrustBundleProjection, bundles: readonly ClusterTrustBundle[], seed?: Buffer): Buffer | Error {
  if (source.name !== undefined) {
    const found = bundles.find((bundle) => bundle.metadata.name === source.name);
    if (found) return normalizeTrustAnchors([found], seed);
    if (source.optional) return Buffer.alloc(0);
    return new Error(`while getting ClusterTrustBundle: clustertrustbundle.certificates.k8s.io "${source.name}" not found`);
  }
  if (source.signerName !== undefined) {
    // The selector is parsed before any bundle is looked at.
    const invalid = selectorMatches(source.labelSelector, {});
    if (invalid instanceof Error) return invalid;
    const matching = bundles.filter((bundle) => bundle.spec.signerName === source.signerName && selectorMatches(source.labelSelector, bundle.metadata.labels ?? {}) === true);
    if (matching.length) return normalizeTrustAnchors(matching, seed);
    if (source.optional) return Buffer.alloc(0);
    return new Error('combination of signerName and labelSelector matched zero ClusterTrustBundles');
  }
  return new Error('ClusterTrustBundle projection requires either name or signerName to be set');
}
