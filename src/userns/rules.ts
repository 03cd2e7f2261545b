/**
 * The kubelet's rules for a pod's user namespace (pkg/kubelet/userns/userns_manager.go), as pure
 * functions: which namespace a pod asks for, whether the runtime handler can give it one
 * (kubelet_getters.go HandlerSupportsUserNamespaces), the blocks of IDs pods get, and what the
 * mappings file each pod's directory keeps says. Messages are the kubelet's.
 */
import type { Pod } from '../api/types.ts';
import type { RuntimeHandler } from '../runtime/types.ts';

/** IDs a pod's user namespace maps (userns_manager.go userNsLength; KubeletConfiguration userNamespaces.idsPerPod's default). */
export const IDS_PER_POD = 65536;

/**
 * Where the kubelet's IDs start and how many there are without a `getsubids kubelet` range
 * (kubelet_pods.go getKubeletMappings: the whole ID space above 65535; a node without the
 * `kubelet` user or the getsubids tool uses it).
 */
export const FIRST_ID = 1 << 16;
export const ID_COUNT = 2 ** 32 - FIRST_ID;

/** Whether the pod runs in a user namespace of its own: only `hostUsers: false` (userns_manager.go GetOrCreateUserNamespaceMappings). */
export const wantsOwnUserNamespace = (pod: Pod): boolean => pod.spec.hostUsers === false;

/**
 * Why the handler cannot give the pod a user namespace, or null when it can
 * (kubelet_getters.go HandlerSupportsUserNamespaces, userns_manager.go GetOrCreateUserNamespaceMappings).
 * `handlers` null: the runtime's Status has not been read yet. A runtime that reports no handlers
 * (containerd 1.6) gives an empty list (kuberuntime_manager.go toKubeRuntimeStatus), so its
 * default handler '' is not known.
 */
export function userNamespaceRefusal(handlers: readonly RuntimeHandler[] | null, handler: string): string | null {
  if (handlers === null) return 'runtime handlers are not set';
  const found = handlers.find((h) => h.name === handler);
  if (!found) return `the handler ${JSON.stringify(handler)} is not known`;
  return found.features.userNamespaces ? null : `RuntimeClass handler ${JSON.stringify(handler)} does not support user namespaces`;
}

/** The most pods the kubelet's IDs have a block each for (userns_manager.go MakeUserNsManager: more, and it does not start). */
export const MAX_USERNS_PODS = ID_COUNT / IDS_PER_POD;

/** The first host ID of the lowest block no pod holds (userns_manager.go allocateOne), or null when all are taken. */
export function firstFreeBlock(taken: ReadonlySet<number>): number | null {
  for (let first = FIRST_ID; first < FIRST_ID + ID_COUNT; first += IDS_PER_POD) if (!taken.has(first)) return first;
  return null;
}

interface FileMapping {
  hostId: number;
  containerId: number;
  length: number;
}

/** The pod's mappings file (`<pod dir>/userns`), as the kubelet marshals it (userns_manager.go userNamespace). */
export function mappingsFile(hostId: number): string {
  const mapping: FileMapping = { hostId, containerId: 0, length: IDS_PER_POD };
  return JSON.stringify({ uidMappings: [mapping], gidMappings: [mapping] });
}

const isMapping = (value: unknown): value is FileMapping =>
  typeof value === 'object' && value !== null && ['hostId', 'containerId', 'length'].every((k) => Number.isInteger((value as Record<string, unknown>)[k]));

/**
 * The first host ID a mappings file records, or the kubelet's reason it is not one it wrote
 * (userns_manager.go parseUserNsFileAndRecord, record): one mapping each, UIDs and GIDs the same,
 * container ID 0, a whole block at a block's start, within the kubelet's IDs.
 */
export function parseMappingsFile(content: string): { hostId: number } | { error: string } {
  let parsed: unknown;
  try {
    parsed = JSON.parse(content);
  } catch (err) {
    return { error: `invalid user namespace mappings file: ${err instanceof Error ? err.message : String(err)}` };
  }
  const file = (typeof parsed === 'object' && parsed !== null ? parsed : {}) as { uidMappings?: unknown; gidMappings?: unknown };
  const uids = Array.isArray(file.uidMappings) ? file.uidMappings : [];
  const gids = Array.isArray(file.gidMappings) ? file.gidMappings : [];
  if (uids.length !== 1) return { error: 'invalid user namespace configuration: no more than one mapping allowed.' };
  if (gids.length !== uids.length) return { error: 'invalid user namespace configuration: GID and UID mappings should be identical.' };
  const [uid, gid] = [uids[0], gids[0]];
  if (!isMapping(uid) || !isMapping(gid)) return { error: 'invalid user namespace mappings file: a mapping needs a hostId, a containerId and a length' };
  if (uid.hostId !== gid.hostId || uid.containerId !== gid.containerId || uid.length !== gid.length) {
    return { error: 'invalid user namespace configuration: GID and UID mapping should be identical' };
  }
  if (uid.containerId !== 0) return { error: 'invalid user namespace configuration: UID 0 must be mapped' };
  if (uid.length !== IDS_PER_POD) return { error: `wrong user namespace length ${uid.length}` };
  if (uid.hostId % IDS_PER_POD !== 0) return { error: `wrong user namespace offset specified ${uid.hostId}` };
  if (uid.hostId < FIRST_ID || uid.hostId >= FIRST_ID + ID_COUNT) return { error: `id ${uid.hostId} is out of range` };
  return { hostId: uid.hostId };
}
