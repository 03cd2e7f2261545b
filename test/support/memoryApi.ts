/**
 * An in-memory KubeApi for fast unit tests: pods with resourceVersions, a watch that replays what
 * happened after a version and then follows, compaction (a watch from before it ends with 410),
 * UID preconditions on status patches and deletes, status patches merged as the API server merges
 * them (its keyed lists, its one-IP-per-family check), and scripted failures. The real API server is
 * what the cluster suite runs against; this double only makes the sources' and writers' edge
 * cases quick and deterministic to reach.
 */
import type { CSIDriver, PersistentVolume, PersistentVolumeClaim, VolumeAttachment } from '../../src/api/storage.ts';
import type { ClusterTrustBundle, CSINode, KubeEvent, Lease, NodeObject, RuntimeClass, Service } from '../../src/api/cluster.ts';
import type { Pod } from '../../src/api/types.ts';
import { type AccessReview, ApiError, type IssuedToken, type ReviewedToken, type UserInfo, type KubeApi, type PodList, type TokenRequestSpec, type WatchEventType, type WatchHandlers } from '../../src/client/api.ts';

type Method = keyof KubeApi;

interface Watcher {
  nodeName: string;
  handlers: WatchHandlers<Pod>;
}

const clone = <T>(value: T): T => JSON.parse(JSON.stringify(value)) as T;
const key = (namespace: string, name: string) => `${namespace}/${name}`;

export class MemoryApi implements KubeApi {
  private rv = 1;
  private compactedAt = 0;
  private readonly pods = new Map<string, Pod>();
  private readonly history: { rv: number; type: WatchEventType; pod: Pod }[] = [];
  private readonly watchers = new Set<Watcher>();
  private readonly failures = new Map<Method, ApiError[]>();
  private readonly holds = new Map<Method, (() => void)[]>();
  readonly nodes = new Map<string, NodeObject>();
  readonly leases = new Map<string, Lease>();
  readonly csiNodes = new Map<string, CSINode>();
  readonly events = new Map<string, KubeEvent>();
  /** ConfigMaps and Secrets by `namespace/name` (Secret values base64, as the API has them). */
  readonly configMaps = new Map<string, { data?: Record<string, string> }>();
  readonly secrets = new Map<string, { metadata?: { uid?: string }; type?: string; data?: Record<string, string> }>();
  /** ServiceAccounts by `namespace/name`. */
  readonly serviceAccounts = new Map<string, { metadata?: { uid?: string; annotations?: Record<string, string> } }>();
  /** PersistentVolumeClaims by `namespace/name`, PersistentVolumes by name. */
  readonly claims = new Map<string, PersistentVolumeClaim>();
  readonly volumes = new Map<string, PersistentVolume>();
  /** CSIDrivers and VolumeAttachments by name (the CSI mount flow's reads). */
  readonly csiDrivers = new Map<string, CSIDriver>();
  readonly volumeAttachments = new Map<string, VolumeAttachment>();
  /** The open CSIDriver watches' handlers. */
  readonly csiDriverWatchers = new Set<WatchHandlers<CSIDriver>>();
  /** Claim status patches as sent (the claim itself is left as it was: the cluster suite checks the API server's merge). */
  readonly claimStatusPatches: { namespace: string; name: string; patch: object }[] = [];
  /** Services, listed as they are (their watch never reports a change). */
  readonly services: Service[] = [];
  /** Listed once by the node's RuntimeClass lister (its watch sends nothing). */
  readonly runtimeClasses: RuntimeClass[] = [];
  /** ClusterTrustBundles, served under `trustBundleVersions` (the first is the one listed). */
  readonly clusterTrustBundles: ClusterTrustBundle[] = [];
  trustBundleVersions: string[] = ['certificates.k8s.io/v1'];
  /** The group version of each ClusterTrustBundle listing. */
  readonly trustBundleListings: string[] = [];
  /** TokenRequests as asked (namespace, service account, spec); each issued token is `token-<n>`. */
  readonly tokenRequests: { namespace: string; serviceAccount: string; spec: TokenRequestSpec }[] = [];
  /** The clock the issued tokens' expiry is counted from. */
  tokenClock: () => number = Date.now;
  /** Every call, in order, by method name. */
  readonly calls: Method[] = [];

  // ------------------------------------------------------------------ what a test does to it

  /** Creates or replaces a pod as a user or controller would (a new resourceVersion, a watch event). */
  putPod(pod: Pod): Pod {
    const k = key(pod.metadata.namespace, pod.metadata.name);
    const type: WatchEventType = this.pods.has(k) ? 'MODIFIED' : 'ADDED';
    return this.store(k, pod, type);
  }

  /** Removes a pod object (a forced delete). */
  removePod(namespace: string, name: string): void {
    const k = key(namespace, name);
    const pod = this.pods.get(k);
    if (!pod) return;
    this.pods.delete(k);
    this.record('DELETED', { ...pod, metadata: { ...pod.metadata, resourceVersion: String(++this.rv) } });
  }

  pod(namespace: string, name: string): Pod | undefined {
    return this.pods.get(key(namespace, name));
  }

  /** Forgets history up to now: a watch from an older version ends with 410 Gone. */
  compact(): void {
    this.compactedAt = this.rv;
    this.history.length = 0;
  }

  /** Ends every open watch with `err` (a dropped connection: status 0), or cleanly without. */
  dropWatches(err?: ApiError): void {
    for (const w of [...this.watchers]) {
      this.watchers.delete(w);
      w.handlers.onEnd(err);
    }
  }

  /**
   * Sends every open watch a BOOKMARK at the current version, as the API server does about once a
   * minute to watches that asked for them: the versions of changes the watch was not sent (pods of
   * other nodes) are behind it.
   */
  bookmark(): void {
    for (const w of this.watchers) w.handlers.onBookmark(String(this.rv));
  }

  get openWatches(): number {
    return this.watchers.size;
  }

  /** The next calls of `method` fail with these errors, one each. */
  failNext(method: Method, ...errors: ApiError[]): void {
    this.failures.set(method, [...(this.failures.get(method) ?? []), ...errors]);
  }

  /** Holds calls of `method` until released; returns the release of all held so far and to come. */
  hold(method: Method): { release(): void } {
    this.holds.set(method, []);
    return {
      release: () => {
        const held = this.holds.get(method) ?? [];
        this.holds.delete(method);
        for (const go of held) go();
      },
    };
  }

  count(method: Method): number {
    return this.calls.filter((m) => m === method).length;
  }

  // ------------------------------------------------------------------ KubeApi

  async listPods(fieldSelector: string): Promise<PodList> {
    await this.enter('listPods');
    const node = nodeOf(fieldSelector);
    return { items: [...this.pods.values()].filter((p) => p.spec.nodeName === node).map(clone), resourceVersion: String(this.rv) };
  }

  watchPods(fieldSelector: string, resourceVersion: string, handlers: WatchHandlers<Pod>): { stop(): void } {
    this.calls.push('watchPods');
    const watcher: Watcher = { nodeName: nodeOf(fieldSelector), handlers };
    const from = Number(resourceVersion);
    const failure = this.failures.get('watchPods')?.shift();
    queueMicrotask(() => {
      if (failure) return handlers.onEnd(failure);
      if (from < this.compactedAt) return handlers.onEnd(new ApiError(410, 'Expired', `too old resource version: ${from} (${this.compactedAt})`, 'WATCH pods'));
      for (const h of this.history) if (h.rv > from && h.pod.spec.nodeName === watcher.nodeName) handlers.onEvent(h.type, clone(h.pod));
      this.watchers.add(watcher);
    });
    return { stop: () => this.watchers.delete(watcher) };
  }

  async getPod(namespace: string, name: string): Promise<Pod> {
    await this.enter('getPod');
    const pod = this.pods.get(key(namespace, name));
    if (!pod) throw new ApiError(404, 'NotFound', `pods "${name}" not found`, `GET pods ${namespace}/${name}`);
    return clone(pod);
  }

  async createPod(pod: Pod): Promise<Pod> {
    await this.enter('createPod');
    const k = key(pod.metadata.namespace, pod.metadata.name);
    if (this.pods.has(k)) throw new ApiError(409, 'AlreadyExists', `pods "${pod.metadata.name}" already exists`, `POST pods ${k}`);
    return clone(this.store(k, { ...pod, metadata: { ...pod.metadata, uid: pod.metadata.uid || `uid-${this.rv + 1}` } }, 'ADDED'));
  }

  async patchPodStatus(namespace: string, name: string, patch: object): Promise<Pod> {
    await this.enter('patchPodStatus');
    const k = key(namespace, name);
    const pod = this.pods.get(k);
    if (!pod) throw new ApiError(404, 'NotFound', `pods "${name}" not found`, `PATCH pods/status ${k}`);
    const { metadata, status } = patch as { metadata?: { uid?: string }; status?: Pod['status'] };
    if (metadata?.uid && metadata.uid !== pod.metadata.uid) {
      throw new ApiError(409, 'Conflict', `Precondition failed: UID in precondition: ${metadata.uid}, UID in object meta: ${pod.metadata.uid}`, `PATCH pods/status ${k}`);
    }
    const merged = mergeStatus(pod.status ?? {}, status ?? {});
    const families = (merged.podIPs ?? []).map((p) => (p.ip.includes(':') ? 'IPv6' : 'IPv4'));
    if (new Set(families).size < families.length) {
      throw new ApiError(422, 'Invalid', `Pod "${name}" is invalid: status.podIPs: Invalid value: ${JSON.stringify(merged.podIPs)}: may specify no more than one IP for each IP family`, `PATCH pods/status ${k}`);
    }
    return clone(this.store(k, { ...pod, status: merged }, 'MODIFIED'));
  }

  async deletePod(namespace: string, name: string, options: { gracePeriodSeconds?: number; uid?: string }): Promise<void> {
    await this.enter('deletePod');
    const pod = this.pods.get(key(namespace, name));
    if (!pod) throw new ApiError(404, 'NotFound', `pods "${name}" not found`, `DELETE pods ${namespace}/${name}`);
    if (options.uid && options.uid !== pod.metadata.uid) throw new ApiError(409, 'Conflict', 'Precondition failed: UID', `DELETE pods ${namespace}/${name}`);
    this.removePod(namespace, name);
  }

  async createNode(node: NodeObject): Promise<NodeObject> {
    await this.enter('createNode');
    if (this.nodes.has(node.metadata.name)) throw new ApiError(409, 'AlreadyExists', 'exists', `POST nodes ${node.metadata.name}`);
    const stored = { ...clone(node), metadata: { ...node.metadata, uid: `node-uid-${node.metadata.name}` } };
    this.nodes.set(node.metadata.name, stored);
    return clone(stored);
  }

  async getNode(name: string): Promise<NodeObject> {
    await this.enter('getNode');
    const node = this.nodes.get(name);
    if (!node) throw new ApiError(404, 'NotFound', 'not found', `GET nodes ${name}`);
    return clone(node);
  }

  async patchNode(name: string, patch: object): Promise<NodeObject> {
    await this.enter('patchNode');
    const node = await this.getNode(name);
    const merged = { ...node, metadata: { ...node.metadata, ...(patch as { metadata?: object }).metadata } } as NodeObject;
    this.nodes.set(name, merged);
    return clone(merged);
  }

  async patchNodeStatus(name: string, patch: object): Promise<NodeObject> {
    await this.enter('patchNodeStatus');
    const node = await this.getNode(name);
    const { status, metadata } = patch as { status?: object; metadata?: { labels?: Record<string, string | null>; annotations?: Record<string, string | null> } };
    // A strategic merge patch of the labels and annotations: a null value removes the key.
    const mergeMap = (current: Record<string, string> | undefined, change: Record<string, string | null> | undefined) =>
      change ? Object.fromEntries(Object.entries({ ...current, ...change }).filter((entry): entry is [string, string] => entry[1] !== null)) : current;
    const labels = mergeMap(node.metadata.labels, metadata?.labels);
    const annotations = mergeMap(node.metadata.annotations, metadata?.annotations);
    const merged = { ...node, metadata: { ...node.metadata, ...(labels ? { labels } : {}), ...(annotations ? { annotations } : {}) }, status: { ...node.status, ...status } } as NodeObject;
    this.nodes.set(name, merged);
    return clone(merged);
  }

  async getCSINode(name: string): Promise<CSINode> {
    await this.enter('getCSINode');
    const found = this.csiNodes.get(name);
    if (!found) throw new ApiError(404, 'NotFound', `csinodes.storage.k8s.io "${name}" not found`, `GET csinodes ${name}`);
    return clone(found);
  }

  async createCSINode(csiNode: CSINode): Promise<CSINode> {
    await this.enter('createCSINode');
    if (this.csiNodes.has(csiNode.metadata.name)) throw new ApiError(409, 'AlreadyExists', 'exists', `POST csinodes ${csiNode.metadata.name}`);
    this.csiNodes.set(csiNode.metadata.name, clone(csiNode));
    return clone(csiNode);
  }

  async updateCSINode(csiNode: CSINode): Promise<CSINode> {
    await this.enter('updateCSINode');
    if (!this.csiNodes.has(csiNode.metadata.name)) throw new ApiError(404, 'NotFound', 'not found', `PUT csinodes ${csiNode.metadata.name}`);
    this.csiNodes.set(csiNode.metadata.name, clone(csiNode));
    return clone(csiNode);
  }

  async deleteCSINode(name: string): Promise<void> {
    await this.enter('deleteCSINode');
    this.csiNodes.delete(name);
  }

  async getLease(namespace: string, name: string): Promise<Lease> {
    await this.enter('getLease');
    const lease = this.leases.get(key(namespace, name));
    if (!lease) throw new ApiError(404, 'NotFound', 'not found', `GET leases ${namespace}/${name}`);
    return clone(lease);
  }

  async createLease(lease: Lease): Promise<Lease> {
    await this.enter('createLease');
    this.leases.set(key(lease.metadata.namespace, lease.metadata.name), clone(lease));
    return clone(lease);
  }

  async updateLease(lease: Lease): Promise<Lease> {
    await this.enter('updateLease');
    this.leases.set(key(lease.metadata.namespace, lease.metadata.name), clone(lease));
    return clone(lease);
  }

  async listServices(): Promise<{ items: Service[]; resourceVersion: string }> {
    await this.enter('listServices');
    return { items: clone(this.services), resourceVersion: String(this.rv) };
  }

  watchServices(): { stop(): void } {
    this.calls.push('watchServices');
    return { stop: () => {} };
  }

  async listRuntimeClasses(): Promise<{ items: RuntimeClass[]; resourceVersion: string }> {
    await this.enter('listRuntimeClasses');
    return { items: clone(this.runtimeClasses), resourceVersion: String(this.rv) };
  }

  watchRuntimeClasses(): { stop(): void } {
    this.calls.push('watchRuntimeClasses');
    return { stop: () => {} };
  }

  async getConfigMap(namespace: string, name: string): Promise<{ data?: Record<string, string> }> {
    await this.enter('getConfigMap');
    const found = this.configMaps.get(key(namespace, name));
    if (!found) throw new ApiError(404, 'NotFound', `configmaps "${name}" not found`, `GET configmaps ${namespace}/${name}`);
    return clone(found);
  }

  async getSecret(namespace: string, name: string): Promise<{ metadata?: { uid?: string }; type?: string; data?: Record<string, string> }> {
    await this.enter('getSecret');
    const found = this.secrets.get(key(namespace, name));
    if (!found) throw new ApiError(404, 'NotFound', `secrets "${name}" not found`, `GET secrets ${namespace}/${name}`);
    return clone(found);
  }

  async getPersistentVolumeClaim(namespace: string, name: string): Promise<PersistentVolumeClaim> {
    await this.enter('getPersistentVolumeClaim');
    const found = this.claims.get(key(namespace, name));
    if (!found) throw new ApiError(404, 'NotFound', `persistentvolumeclaims "${name}" not found`, `GET persistentvolumeclaims ${namespace}/${name}`);
    return clone(found);
  }

  async getPersistentVolume(name: string): Promise<PersistentVolume> {
    await this.enter('getPersistentVolume');
    const found = this.volumes.get(name);
    if (!found) throw new ApiError(404, 'NotFound', `persistentvolumes "${name}" not found`, `GET persistentvolumes ${name}`);
    return clone(found);
  }

  // The CSI mount flow's reads.
  async getCSIDriver(name: string): Promise<CSIDriver> {
    await this.enter('getCSIDriver');
    const found = this.csiDrivers.get(name);
    if (!found) throw new ApiError(404, 'NotFound', `csidrivers.storage.k8s.io "${name}" not found`, `GET csidrivers ${name}`);
    return clone(found);
  }

  async listCSIDrivers(): Promise<{ items: CSIDriver[]; resourceVersion: string }> {
    await this.enter('listCSIDrivers');
    return { items: clone([...this.csiDrivers.values()]), resourceVersion: String(this.rv) };
  }

  /** The CSIDrivers' watch: `csiDriverWatchers` gets each one, for a test to send events through. */
  watchCSIDrivers(_resourceVersion: string, handlers: WatchHandlers<CSIDriver>): { stop(): void } {
    this.calls.push('watchCSIDrivers');
    this.csiDriverWatchers.add(handlers);
    return { stop: () => void this.csiDriverWatchers.delete(handlers) };
  }

  async patchPersistentVolumeClaimStatus(namespace: string, name: string, patch: object): Promise<PersistentVolumeClaim> {
    await this.enter('patchPersistentVolumeClaimStatus');
    const k = key(namespace, name);
    const found = this.claims.get(k);
    if (!found) throw new ApiError(404, 'NotFound', `persistentvolumeclaims "${name}" not found`, `PATCH persistentvolumeclaims/status ${k}`);
    this.claimStatusPatches.push({ namespace, name, patch: clone(patch) });
    return clone(found);
  }

  async getVolumeAttachment(name: string): Promise<VolumeAttachment> {
    await this.enter('getVolumeAttachment');
    const found = this.volumeAttachments.get(name);
    if (!found) throw new ApiError(404, 'NotFound', `volumeattachments.storage.k8s.io "${name}" not found`, `GET volumeattachments ${name}`);
    return clone(found);
  }

  async getServiceAccount(namespace: string, name: string): Promise<{ metadata?: { uid?: string; annotations?: Record<string, string> } }> {
    await this.enter('getServiceAccount');
    const found = this.serviceAccounts.get(key(namespace, name));
    if (!found) throw new ApiError(404, 'NotFound', `serviceaccounts "${name}" not found`, `GET serviceaccounts ${namespace}/${name}`);
    return clone(found);
  }

  async apiResources(groupVersion: string): Promise<string[]> {
    await this.enter('apiResources');
    if (!this.trustBundleVersions.includes(groupVersion)) throw new ApiError(404, 'NotFound', 'the server could not find the requested resource', `GET discovery ${groupVersion}`);
    return ['clustertrustbundles'];
  }

  async listClusterTrustBundles(groupVersion: string): Promise<ClusterTrustBundle[]> {
    await this.enter('listClusterTrustBundles');
    this.trustBundleListings.push(groupVersion);
    if (!this.trustBundleVersions.includes(groupVersion)) throw new ApiError(404, 'NotFound', 'the server could not find the requested resource', 'LIST clustertrustbundles');
    return clone(this.clusterTrustBundles);
  }

  async createServiceAccountToken(namespace: string, serviceAccount: string, spec: TokenRequestSpec): Promise<IssuedToken> {
    await this.enter('createServiceAccountToken');
    this.tokenRequests.push(clone({ namespace, serviceAccount, spec }));
    const expirationTimestamp = new Date(this.tokenClock() + spec.expirationSeconds * 1000).toISOString();
    return { token: `token-${this.tokenRequests.length}`, expirationTimestamp, expirationSeconds: spec.expirationSeconds };
  }

  /** Bearer tokens the double knows, and who they are. */
  readonly users = new Map<string, UserInfo>();
  /** What users may do: `<username> <verb> <subresource>`. */
  readonly grants = new Set<string>();

  async createTokenReview(token: string): Promise<ReviewedToken> {
    await this.enter('createTokenReview');
    const user = this.users.get(token);
    return user ? { authenticated: true, user: clone(user) } : { authenticated: false };
  }

  async createSubjectAccessReview(review: AccessReview): Promise<{ allowed: boolean }> {
    await this.enter('createSubjectAccessReview');
    return { allowed: this.grants.has(`${review.user.username} ${review.verb} ${review.subresource}`) };
  }

  async createEvent(event: KubeEvent): Promise<KubeEvent> {
    await this.enter('createEvent');
    const k = key(event.metadata.namespace, event.metadata.name);
    if (this.events.has(k)) throw new ApiError(409, 'AlreadyExists', 'exists', `POST events ${k}`);
    this.events.set(k, clone(event));
    return clone(event);
  }

  async patchEvent(namespace: string, name: string, patch: object): Promise<KubeEvent> {
    await this.enter('patchEvent');
    const k = key(namespace, name);
    const event = this.events.get(k);
    if (!event) throw new ApiError(404, 'NotFound', 'not found', `PATCH events ${k}`);
    const merged = { ...event, ...(patch as Partial<KubeEvent>) };
    this.events.set(k, merged);
    return clone(merged);
  }

  // ------------------------------------------------------------------ inside

  private async enter(method: Method): Promise<void> {
    this.calls.push(method);
    const held = this.holds.get(method);
    if (held) await new Promise<void>((resolve) => held.push(resolve));
    const failure = this.failures.get(method)?.shift();
    if (failure) throw failure;
  }

  private store(k: string, pod: Pod, type: WatchEventType): Pod {
    const stored = clone({ ...pod, metadata: { ...pod.metadata, resourceVersion: String(++this.rv) } });
    this.pods.set(k, stored);
    this.record(type, stored);
    return stored;
  }

  private record(type: WatchEventType, pod: Pod): void {
    this.history.push({ rv: Number(pod.metadata.resourceVersion), type, pod });
    for (const w of this.watchers) if (pod.spec.nodeName === w.nodeName) w.handlers.onEvent(type, clone(pod));
  }
}

type Directive = { $patch?: 'replace' | 'delete' };

/** An object patched as a merge patch does: the patch's fields replace, a null one is removed. */
function mergeFields<T extends object>(current: T, patch: object): T {
  const merged: Record<string, unknown> = { ...(current as Record<string, unknown>) };
  for (const [field, value] of Object.entries(patch)) {
    if (value === null) delete merged[field];
    else merged[field] = value;
  }
  return merged as T;
}

/**
 * A list merged by key, as a strategic merge patch does (k8s.io/apimachinery
 * pkg/util/strategicpatch mergeSlice): an item of the patch is merged field by field into the one
 * of the same key (a null field removed) or added; `{$patch: replace}` makes the patch's items the
 * whole list; `{$patch: delete, <key>}` removes one, if there is one.
 */
function mergeByKey<T extends object>(current: T[] | undefined, patch: (T & Directive)[], key: keyof T): T[] {
  const items = patch.filter((item) => item.$patch === undefined) as T[];
  const withoutNulls = (item: T) => mergeFields({} as T, item);
  if (patch.some((item) => item.$patch === 'replace')) return items.map(withoutNulls);
  const deleted = new Set(patch.filter((item) => item.$patch === 'delete').map((item) => item[key]));
  const merged = (current ?? []).filter((item) => !deleted.has(item[key])).map((item) => {
    const update = items.find((p) => p[key] === item[key]);
    return update ? mergeFields(item, update) : item;
  });
  return [...merged, ...items.filter((p) => !merged.some((item) => item[key] === p[key])).map(withoutNulls)];
}

/** A pod status patched as the API server does: the lists with a merge key (conditions by type, IPs by ip) merged, the rest replaced, a null field removed. */
export function mergeStatus(current: NonNullable<Pod['status']>, patch: NonNullable<Pod['status']>): NonNullable<Pod['status']> {
  const merged = mergeFields(current, patch);
  if (patch.conditions) merged.conditions = mergeByKey(current.conditions, patch.conditions, 'type');
  if (patch.podIPs) merged.podIPs = mergeByKey(current.podIPs, patch.podIPs, 'ip');
  if (patch.hostIPs) merged.hostIPs = mergeByKey(current.hostIPs, patch.hostIPs, 'ip');
  return merged;
}

function nodeOf(fieldSelector: string): string {
  const match = /^spec\.nodeName=(.*)$/.exec(fieldSelector);
  if (!match) throw new Error(`MemoryApi: unsupported field selector ${fieldSelector}`);
  return match[1]!;
}
