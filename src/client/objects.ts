/**
 * ConfigMaps and Secrets as containers' environments and volumes use them, read over the API
 * server with the node's identity (the Node authorizer allows only those referenced by pods bound
 * to this node). Not found is `null`; any other failure is thrown (the caller's sync retries).
 *
 * Reads that may be a little old (a volume's refresh at each pod sync) are served from a cache for
 * up to `ttlMs`, the kubelet's `Cache` change-detection strategy (pkg/kubelet/util/manager
 * cache_based_manager.go, its default TTL of one minute): a node of 1,000 pods that all mount
 * `kube-root-ca.crt` then asks for it once a minute, not at each pod's sync. A read with
 * `maxAgeMs: 0` goes to the API server (a container's start, a pod's first volume setup: a new pod
 * sees the objects as they are now, as the kubelet refetches an object a new pod refers to). An
 * object found missing is not cached: the pod waiting for it starts as soon as it exists. Reads of
 * one object under way at the same time share one request.
 *
 * ClusterTrustBundles (projected volumes' clusterTrustBundle sources) are listed whole through the
 * same cache: the node's identity may get, list and watch them all (the system:node rules the Node
 * authorizer applies, plugin/pkg/auth/authorizer/rbac/bootstrappolicy/policy.go NodeRules).
 */
import type { ClusterTrustBundle } from '../api/cluster.ts';
import { isNotFound, type KubeApi } from './api.ts';

/** A ConfigMap's `data` (text) and `binaryData` (bytes). */
interface ConfigMapData {
  data: Record<string, string>;
  binaryData: Record<string, Buffer>;
}

/** Reads ConfigMaps and Secrets (a Secret's values decoded to bytes). */
export interface ObjectReader {
  /** `maxAgeMs`: how old a cached copy may be (default: the reader's TTL; 0: read now). */
  configMap(namespace: string, name: string, maxAgeMs?: number): Promise<ConfigMapData | null>;
  secret(namespace: string, name: string, maxAgeMs?: number): Promise<Record<string, Buffer> | null>;
  /** A Secret with its uid and type, as image pull secrets are read (the keyring needs both). */
  pullSecret(namespace: string, name: string, maxAgeMs?: number): Promise<TypedSecret | null>;
  /** A ServiceAccount's uid and annotations, as credential provider plugins in token mode read it. */
  serviceAccount(namespace: string, name: string, maxAgeMs?: number): Promise<ServiceAccountData | null>;
  /**
   * Every ClusterTrustBundle, through the newest certificates.k8s.io version the API server serves
   * them in; throws the kubelet's error when it serves none.
   */
  clusterTrustBundles(maxAgeMs?: number): Promise<ClusterTrustBundle[]>;
}

/**
 * The versions the kubelet looks for ClusterTrustBundles in, in its order
 * (pkg/kubelet/clustertrustbundle/clustertrustbundle_manager.go LazyInformerManager.ensureManagerSet).
 */
const TRUST_BUNDLE_VERSIONS = ['certificates.k8s.io/v1', 'certificates.k8s.io/v1beta1', 'certificates.k8s.io/v1alpha1'];

/** The kubelet's NoopManager error: no API server, or one serving no version of the API. */
export const NO_TRUST_BUNDLE_API = 'ClusterTrustBundle projection is not supported in static kubelet mode';

/**
 * The first version serving `clustertrustbundles`, or null when none does
 * (clustertrustbundle_manager.go clusterTrustBundlesAvailable: a version not found is skipped,
 * any other discovery failure is the caller's error and the choice is made again next time).
 */
async function trustBundleVersion(api: KubeApi): Promise<string | null> {
  for (const groupVersion of TRUST_BUNDLE_VERSIONS) {
    let resources: string[];
    try {
      resources = await api.apiResources(groupVersion);
    } catch (err) {
      if (isNotFound(err)) continue;
      const message = err instanceof Error ? err.message : String(err);
      throw new Error(`failed to ensure informer manager for ClusterTrustBundles: failed to determine which informer manager to choose: ${message}`);
    }
    if (resources.includes('clustertrustbundles')) return groupVersion;
  }
  return null;
}

/** A Secret's uid, type and values (decoded to bytes). */
export interface ServiceAccountData {
  uid: string;
  annotations: Readonly<Record<string, string>>;
}

export interface TypedSecret {
  uid: string;
  type: string;
  data: Record<string, Buffer>;
}

/** The kubelet's default TTL of its cache-based ConfigMap and Secret managers. */
export const OBJECT_CACHE_TTL_MS = 60_000;

const bytes = (values: Record<string, string> | undefined) => Object.fromEntries(Object.entries(values ?? {}).map(([k, v]) => [k, Buffer.from(v, 'base64')]));

async function orNull<T>(read: () => Promise<T>): Promise<T | null> {
  try {
    return await read();
  } catch (err) {
    if (isNotFound(err)) return null;
    throw err;
  }
}

interface CacheOptions {
  ttlMs: number;
  now(): number;
}

/**
 * Reads by key, from the cache when the copy is young enough, sharing a read that is under way
 * with whoever asks for the same key meanwhile.
 */
function cached<T>(read: (namespace: string, name: string) => Promise<T | null>, options: CacheOptions): (namespace: string, name: string, maxAgeMs?: number) => Promise<T | null> {
  const inFlight = new Map<string, { value: Promise<T | null>; startedAt: number }>();
  const copies = new Map<string, { value: T; at: number }>();
  const sweep = () => {
    for (const [key, copy] of copies) if (options.now() - copy.at > options.ttlMs) copies.delete(key);
  };
  return (namespace, name, maxAgeMs = options.ttlMs) => {
    const key = `${namespace}/${name}`;
    const now = options.now();
    const copy = copies.get(key);
    // A copy is never fresh enough for `maxAgeMs: 0`, even one taken within the same millisecond:
    // it may predate the change the caller is asking after.
    if (copy && maxAgeMs > 0 && now - copy.at <= maxAgeMs) return Promise.resolve(copy.value);
    // A read under way is shared when it started recently enough (callers asking at once share one).
    const pending = inFlight.get(key);
    if (pending && now - pending.startedAt <= maxAgeMs) return pending.value;
    const value = read(namespace, name)
      .then((result) => {
        if (result === null) copies.delete(key);
        else if ((copies.get(key)?.at ?? -Infinity) <= now) {
          // (A read that started earlier and ended later does not replace a newer copy.)
          if (copies.size >= 1024) sweep();
          copies.set(key, { value: result, at: now });
        }
        return result;
      })
      .finally(() => {
        if (inFlight.get(key)?.value === value) inFlight.delete(key);
      });
    inFlight.set(key, { value, startedAt: now });
    return value;
  };
}

export function apiObjectReader(api: KubeApi, options: CacheOptions = { ttlMs: OBJECT_CACHE_TTL_MS, now: Date.now }): ObjectReader {
  // Chosen once, like the kubelet's manager: a server serving no version stays without one until
  // the agent restarts (ensureManagerSet keeps its NoopManager).
  let version: Promise<string | null> | undefined;
  const bundles = cached(async () => {
    version ??= trustBundleVersion(api).catch((err: unknown) => {
      version = undefined;
      throw err;
    });
    const groupVersion = await version;
    if (groupVersion === null) throw new Error(NO_TRUST_BUNDLE_API);
    return api.listClusterTrustBundles(groupVersion);
  }, options);
  return {
    configMap: cached(async (namespace, name) => {
      const found = await orNull(() => api.getConfigMap(namespace, name));
      return found ? { data: found.data ?? {}, binaryData: bytes(found.binaryData) } : null;
    }, options),
    secret: cached(async (namespace, name) => {
      const found = await orNull(() => api.getSecret(namespace, name));
      return found ? bytes(found.data) : null;
    }, options),
    pullSecret: cached(async (namespace, name) => {
      const found = await orNull(() => api.getSecret(namespace, name));
      return found ? { uid: found.metadata?.uid ?? '', type: found.type ?? 'Opaque', data: bytes(found.data) } : null;
    }, options),
    serviceAccount: cached(async (namespace, name) => {
      const found = await orNull(() => api.getServiceAccount(namespace, name));
      return found ? { uid: found.metadata?.uid ?? '', annotations: found.metadata?.annotations ?? {} } : null;
    }, options),
    // Cluster-scoped and listed whole, as the kubelet's informer holds them all.
    clusterTrustBundles: async (maxAgeMs) => (await bundles('', '', maxAgeMs)) ?? [],
  };
}
