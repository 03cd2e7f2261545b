/**
 * Turns a manifest read by the file (or http) source into the pod the agent runs, the way the
 * kubelet defaults static pods:
 *
 * - no UID ⇒ one derived from where the manifest came from and what it says (see `staticPodUid`);
 * - name ⇒ `<name>-<node name in lowercase>`, so the same manifest on two nodes gives two pods;
 * - namespace ⇒ `default` when absent; `spec.nodeName` ⇒ this node;
 * - annotation `kubernetes.io/config.hash` = the UID (the mirror pod in the API carries it);
 * - file pods tolerate every NoExecute taint, so node problems never evict them;
 * - `status.phase` ⇒ Pending;
 *
 * then API validation (of the final name, so a name that the suffix makes too long is rejected)
 * and API defaulting. Pure: no I/O, the input is never modified.
 */
import { createHash } from 'node:crypto';
import { ConfigAnnotation, type Pod } from '../api/types.ts';
import { applyPodDefaults, isRecord, validatePod, type PodValidation, withoutNullMembers } from '../api/validate.ts';

export type ManifestOrigin = { kind: 'file'; path: string } | { kind: 'url'; url: string };

/** The toleration every file pod gets: any NoExecute taint, whatever its key or value. */
const TOLERATE_NO_EXECUTE = { operator: 'Exists', effect: 'NoExecute' } as const;

/**
 * Key-order independent JSON: objects with sorted keys, `undefined` members dropped. Two manifests
 * that differ only in key order or formatting (YAML vs JSON) serialize the same.
 */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map((item) => canonicalJson(item ?? null)).join(',')}]`;
  if (isRecord(value)) {
    const members = Object.keys(value)
      .filter((key) => value[key] !== undefined)
      .sort()
      .map((key) => `${JSON.stringify(key)}:${canonicalJson(value[key])}`);
    return `{${members.join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

/**
 * Hex MD5 over the origin (`host:<node>file:<path>` for files, `url:<url>` for http) followed by
 * the manifest. The kubelet hashes its in-memory Go object, which we cannot reproduce; we hash our
 * canonical JSON of the parsed manifest instead. So UIDs differ from the kubelet's, but keep the
 * properties that matter: the same manifest at the same place on the same node gives the same UID
 * across restarts, and any change to the manifest, path or node gives a new one. (Recent kubelets
 * switched to FNV-128a; the digest is an implementation detail, we keep MD5, as
 * pkg/kubelet/config/common.go applyDefaults long used.)
 */
export function staticPodUid(manifest: unknown, origin: ManifestOrigin, nodeName: string): string {
  const hash = createHash('md5');
  if (origin.kind === 'file') {
    hash.update(`host:${nodeName}`);
    hash.update(`file:${origin.path}`);
  } else {
    hash.update(`url:${origin.url}`);
  }
  hash.update(canonicalJson(manifest));
  return hash.digest('hex');
}

function staticPodName(name: string, nodeName: string): string {
  return `${name}-${nodeName.toLowerCase()}`;
}

function isNoExecuteWildcard(toleration: unknown): boolean {
  return (
    isRecord(toleration) &&
    !toleration['key'] &&
    !toleration['value'] &&
    toleration['operator'] === TOLERATE_NO_EXECUTE.operator &&
    toleration['effect'] === TOLERATE_NO_EXECUTE.effect
  );
}

/**
 * Applies the static-pod defaults to a copy of `manifest` where its shape allows; fields of the
 * wrong type are left for validation to report.
 */
function withStaticDefaults(manifest: Record<string, unknown>, origin: ManifestOrigin, nodeName: string): Record<string, unknown> {
  const pod = structuredClone(manifest);
  pod['metadata'] ??= {};
  const metadata = pod['metadata'];
  if (isRecord(metadata)) {
    const uid = metadata['uid'];
    if (uid === undefined || uid === null || uid === '') metadata['uid'] = staticPodUid(manifest, origin, nodeName);
    // A missing name stays missing, so validation says "Required" instead of rejecting "-node".
    const name = metadata['name'];
    if (typeof name === 'string' && name !== '') metadata['name'] = staticPodName(name, nodeName);
    if (metadata['namespace'] === undefined || metadata['namespace'] === '') metadata['namespace'] = 'default';
    metadata['annotations'] ??= {};
    const annotations = metadata['annotations'];
    if (isRecord(annotations)) annotations[ConfigAnnotation.hash] = metadata['uid'];
  }

  const spec = pod['spec'];
  if (isRecord(spec)) {
    spec['nodeName'] = nodeName;
    if (origin.kind === 'file') {
      spec['tolerations'] ??= [];
      const tolerations = spec['tolerations'];
      if (Array.isArray(tolerations) && !tolerations.some(isNoExecuteWildcard)) tolerations.push({ ...TOLERATE_NO_EXECUTE });
    }
  }

  pod['status'] ??= {};
  const status = pod['status'];
  if (isRecord(status)) status['phase'] = 'Pending';
  return pod;
}

/** Defaults, validates and API-defaults one parsed manifest. `pod` is set exactly when valid. */
export function defaultStaticPod(manifest: unknown, origin: ManifestOrigin, nodeName: string): PodValidation {
  if (!isRecord(manifest)) return validatePod(manifest);
  // Created afresh at each read, as the kubelet validates it (ValidatePodCreate): no ephemeral containers.
  const checked = validatePod(withoutNullMembers(withStaticDefaults(manifest, origin, nodeName)), { create: true });
  if (!checked.pod) return checked;
  const pod: Pod = applyPodDefaults(checked.pod);
  return { pod, errors: [] };
}
