/**
 * Whether a pod may use an image already on the node without pulling it
 * (KubeletEnsureSecretPulledImages): the credential verification policies
 * (pkg/kubelet/images/pullmanager/image_pull_policies.go), the decision on a pulled-image record
 * (image_pull_manager.go MustAttemptImagePull) and how a successful pull's credentials merge into
 * the record (pulledRecordMergeNewCreds). Pure: the records' files are pullRecords.ts's.
 */

/** `imagePullCredentialsVerificationPolicy` (KubeletConfiguration). */
export const VERIFICATION_POLICIES = ['NeverVerify', 'NeverVerifyPreloadedImages', 'NeverVerifyAllowlistedImages', 'AlwaysVerify'] as const;
export type VerificationPolicy = (typeof VERIFICATION_POLICIES)[number];
export const DEFAULT_VERIFICATION_POLICY: VerificationPolicy = 'NeverVerifyPreloadedImages';

/** A secret a pull used, as a record keeps it: its coordinates and its credential's hash (ImagePullSecret). */
export interface RecordedSecret {
  uid: string;
  namespace: string;
  name: string;
  credentialHash: string;
}

/** A service account a pull's credentials were given for, by a plugin in token mode (ImagePullServiceAccount). */
export interface RecordedServiceAccount {
  uid: string;
  namespace: string;
  name: string;
}

/** Who may use an image pulled for one repository (ImagePullCredentials). */
export interface RecordedCredentials {
  kubernetesSecrets?: RecordedSecret[];
  kubernetesServiceAccounts?: RecordedServiceAccount[];
  /** Every pod on the node: the pull needed no credentials, or the node's own. */
  nodePodsAccessible?: boolean;
}

/** ImagePulledRecord (kubelet.config.k8s.io/v1alpha1): an image the kubelet pulled and with what. */
export interface PulledRecord {
  lastUpdatedTime: string;
  imageRef: string;
  /** By repository without tag or digest (`docker.io/library/busybox`). */
  credentialMapping: Record<string, RecordedCredentials>;
}

/** The allowlist as the policy reads it: exact repositories and `/*` prefixes. */
export interface Allowlist {
  exact: ReadonlySet<string>;
  prefixes: readonly string[];
}

/**
 * `preloadedImagesVerificationAllowlist` checked as the kubelet checks it (image_pull_policies.go
 * getAllowlistImagePattern): no surrounding spaces, `*` only as a final `/*` after at least a
 * host, anything else a repository with neither tag nor digest, fully qualified
 * (`docker.io/library/busybox`, not `busybox`). Returns the error message, or the allowlist.
 */
export function parseAllowlist(patterns: readonly string[]): Allowlist | string {
  const exact = new Set<string>();
  const prefixes: string[] = [];
  for (const pattern of patterns) {
    if (pattern !== pattern.trim()) return `leading/trailing spaces are not allowed: ${pattern}`;
    const wildcard = pattern.endsWith('/*');
    const trimmed = wildcard ? pattern.slice(0, -1) : pattern;
    if (trimmed.length === 0) return `the supplied pattern is too short: ${pattern}`;
    if (trimmed.includes('*')) return `not a valid wildcard pattern, only patterns ending with '/*' are allowed: ${pattern}`;
    if (wildcard) {
      if (trimmed.length === 1) return 'at least registry hostname is required';
      prefixes.push(trimmed);
      continue;
    }
    if (!/^[a-z0-9]+(?:[._-][a-z0-9]+)*(?::[0-9]+)?(?:\/[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*)*(?::[\w][\w.-]{0,127})?(?:@[a-z0-9]+:[a-f0-9]{32,})?$/.test(trimmed)) {
      return `failed to parse as an image name: ${pattern}`;
    }
    if (!isNormalizedRepository(trimmed)) return `neither tag nor digest is accepted in an image reference: ${pattern}`;
    exact.add(trimmed);
  }
  return { exact, prefixes };
}

/** Whether a name is a repository as distribution/reference normalizes it: a host first, no tag, no digest. */
function isNormalizedRepository(name: string): boolean {
  const slash = name.indexOf('/');
  if (name.includes('@') || slash < 0) return false;
  const first = name.slice(0, slash);
  if (!(/[.:]/.test(first) || first === 'localhost')) return false;
  if (name.slice(slash + 1).includes(':')) return false;
  return !(first === 'docker.io' && !name.slice(slash + 1).includes('/'));
}

/**
 * Whether the policy wants a pod's credentials checked before it uses a present image
 * (RequireCredentialVerificationForImage): `image` as the container names it; `pulledByKubelet`
 * when a record or a pull intent exists for it.
 */
export function requiresVerification(policy: VerificationPolicy, allowlist: Allowlist, image: string, pulledByKubelet: boolean): boolean {
  switch (policy) {
    case 'NeverVerify':
      return false;
    case 'NeverVerifyPreloadedImages':
      return pulledByKubelet;
    case 'NeverVerifyAllowlistedImages':
      return !(allowlist.exact.has(image) || allowlist.prefixes.some((prefix) => image.startsWith(prefix)));
    case 'AlwaysVerify':
      return true;
  }
}

/** The pod's pull secrets for the repository, each with its credential's hash. */
export type PodSecrets = () => RecordedSecret[];
/**
 * The pod's service account, when a plugin in token mode gave credentials for it; only the first
 * such credential counts, whatever its audience (image_manager.go getPodCredentials).
 */
export type PodServiceAccount = () => RecordedServiceAccount | null;

/**
 * The decision on a present image once the policy wants it verified (MustAttemptImagePull): no
 * record, or none for this repository, or one naming no credentials ⇒ pull; a record open to the
 * node's pods ⇒ use it; else the pod may use it when one of its secrets has a hash the record
 * keeps, or the coordinates (uid, namespace, name) of one it keeps, or its service account (same
 * uid, namespace and name) is one the record keeps. Answers whether to pull, and a secret to add
 * to the record (the kubelet writes down a matching secret it did not yet list).
 */
export function mustAttemptPull(
  record: PulledRecord | null,
  repository: string,
  podSecrets: PodSecrets,
  podServiceAccount: PodServiceAccount = () => null,
): { pull: boolean; remember?: RecordedSecret } {
  if (!record) return { pull: true };
  const cached = record.credentialMapping[repository];
  if (!cached) return { pull: true };
  if (cached.nodePodsAccessible) return { pull: false };
  const kept = cached.kubernetesSecrets ?? [];
  const accounts = cached.kubernetesServiceAccounts ?? [];
  if (kept.length === 0 && accounts.length === 0) return { pull: true };
  for (const secret of podSecrets()) {
    for (const known of kept) {
      const hashesMatch = known.credentialHash.length > 0 && secret.credentialHash === known.credentialHash;
      const sameSecret = secret.uid === known.uid && secret.namespace === known.namespace && secret.name === known.name;
      if (hashesMatch) return sameSecret || kept.length >= WRITE_WHILE_MATCHING_LIMIT ? { pull: false } : { pull: false, remember: secret };
      if (sameSecret) return kept.length >= WRITE_WHILE_MATCHING_LIMIT ? { pull: false } : { pull: false, remember: secret };
    }
  }
  const account = podServiceAccount();
  if (account && accounts.some((known) => coordinates(known) === coordinates(account))) return { pull: false };
  return { pull: true };
}

/** Secrets a record may gain while matching (image_pull_manager.go writeRecordWhileMatchingLimit). */
const WRITE_WHILE_MATCHING_LIMIT = 100;

/**
 * A record with a pull's credentials merged in (pulledRecordMergeNewCreds); null when nothing
 * changes. A repository open to the node stays so; one made open drops its secrets; a secret with
 * known coordinates takes the new hash; secrets stay sorted by namespace, name, uid.
 */
export function mergeIntoRecord(record: PulledRecord | null, imageRef: string, repository: string, credentials: RecordedCredentials | null, now: string): PulledRecord | null {
  if (!record) {
    return { lastUpdatedTime: now, imageRef, credentialMapping: credentials ? { [repository]: credentials } : {} };
  }
  if (!credentials) return null;
  const newSecrets = credentials.kubernetesSecrets ?? [];
  const newAccounts = credentials.kubernetesServiceAccounts ?? [];
  if (!credentials.nodePodsAccessible && newSecrets.length === 0 && newAccounts.length === 0) return null;
  const selected = record.credentialMapping[repository];
  const updated = (entry: RecordedCredentials): PulledRecord => ({ lastUpdatedTime: now, imageRef: record.imageRef, credentialMapping: { ...record.credentialMapping, [repository]: entry } });
  if (!selected) return updated(credentials);
  if (selected.nodePodsAccessible) return null;
  if (credentials.nodePodsAccessible) return updated({ nodePodsAccessible: true });
  if (newSecrets.length === 0) {
    // mergePullServiceAccounts: a set by uid, namespace and name, sorted by namespace, name, uid.
    const known = selected.kubernetesServiceAccounts ?? [];
    const added = newAccounts.filter((account) => !known.some((k) => coordinates(k) === coordinates(account)));
    if (added.length === 0) return null;
    const merged = [...known, ...new Map(added.map((a) => [coordinates(a), a])).values()].sort(inCoordinateOrder);
    return updated({ ...selected, kubernetesServiceAccounts: merged });
  }
  const byCoordinates = new Map((selected.kubernetesSecrets ?? []).map((s) => [coordinates(s), s]));
  let changed = false;
  for (const secret of newSecrets) {
    if (byCoordinates.get(coordinates(secret))?.credentialHash !== secret.credentialHash) {
      byCoordinates.set(coordinates(secret), secret);
      changed = true;
    }
  }
  if (!changed) return null;
  const merged = [...byCoordinates.values()].sort(inCoordinateOrder);
  return updated({ ...selected, kubernetesSecrets: merged });
}

const coordinates = (s: RecordedServiceAccount) => `${s.namespace}\u0000${s.name}\u0000${s.uid}`;
const inCoordinateOrder = (a: RecordedServiceAccount, b: RecordedServiceAccount) => compare(a.namespace, b.namespace) || compare(a.name, b.name) || compare(a.uid, b.uid);
const compare = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);
