/**
 * What the node's objects say of its CSI drivers, and how a driver's registration changes them
 * (pkg/volume/csi/nodeinfomanager/nodeinfomanager.go), pure: the Node's
 * `csi.volume.kubernetes.io/nodeid` annotation (a JSON map driver → node ID) and its topology
 * labels; the CSINode named after the Node, owned by it, listing each driver with its node ID,
 * topology keys and volume limit, and annotated with the in-tree plugins migrated to CSI.
 */
import type { CSINode, CSINodeDriver, NodeObject, OwnerReference } from '../../api/cluster.ts';

export const NODE_ID_ANNOTATION = 'csi.volume.kubernetes.io/nodeid';
/** v1.MigratedPluginsAnnotationKey. */
export const MIGRATED_PLUGINS_ANNOTATION = 'storage.alpha.kubernetes.io/migrated-plugins';

/**
 * The in-tree plugins migrated to CSI: all of csi_plugin.go Init's list, each on for good in 1.37
 * (csi-translation-lib plugin names), sorted as the annotation lists them.
 */
export const MIGRATED_PLUGINS = [
  'kubernetes.io/aws-ebs',
  'kubernetes.io/azure-disk',
  'kubernetes.io/azure-file',
  'kubernetes.io/cinder',
  'kubernetes.io/gce-pd',
  'kubernetes.io/portworx-volume',
  'kubernetes.io/vsphere-volume',
] as const;

/** A strategic merge patch of the Node's metadata: a null value removes the key. */
export interface NodeMetadataPatch {
  annotations?: Record<string, string | null>;
  labels?: Record<string, string>;
}

/** The largest volume limit a CSINode holds (an int32; nodeinfomanager.go truncates to math.MaxInt32). */
const MAX_INT32 = 2 ** 31 - 1;

/** Go's json.Marshal of a map: keys sorted. */
const marshalMap = (map: Record<string, string>) => JSON.stringify(Object.fromEntries(Object.entries(map).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))));

/** buildNodeIDMapFromAnnotation: the annotation's map; throws when it is not a JSON map of strings. */
function nodeIdMap(node: NodeObject): Record<string, string> {
  const value = node.metadata.annotations?.[NODE_ID_ANNOTATION] ?? '';
  if (value === '') return {};
  let parsed: unknown;
  try {
    parsed = JSON.parse(value);
  } catch (err) {
    throw new Error(`failed to parse node's "${NODE_ID_ANNOTATION}" annotation value (${JSON.stringify(value)}) err=${(err as Error).message}`);
  }
  if (parsed === null) return {};
  if (typeof parsed !== 'object' || Array.isArray(parsed) || Object.values(parsed as object).some((v) => typeof v !== 'string')) {
    throw new Error(`failed to parse node's "${NODE_ID_ANNOTATION}" annotation value (${JSON.stringify(value)}) err=not a map of strings`);
  }
  return { ...(parsed as Record<string, string>) };
}

/**
 * InstallCSIDriver's change to the Node (updateNodeIDInNode, updateTopologyLabels): the driver's
 * node ID merged into the annotation, the topology segments added as labels; null: nothing to
 * change. Throws on a malformed annotation or a label the topology contradicts.
 */
export function nodeInstallPatch(node: NodeObject, driverName: string, driverNodeId: string, topology: Readonly<Record<string, string>>): NodeMetadataPatch | null {
  const patch: NodeMetadataPatch = {};
  const ids = nodeIdMap(node);
  if (ids[driverName] !== driverNodeId) patch.annotations = { [NODE_ID_ANNOTATION]: marshalMap({ ...ids, [driverName]: driverNodeId }) };
  const labels = node.metadata.labels ?? {};
  for (const [key, value] of Object.entries(topology)) {
    const current = labels[key];
    if (current !== undefined && current !== value) {
      throw new Error(`detected topology value collision: driver reported ${JSON.stringify(key)}:${JSON.stringify(value)} but existing label is ${JSON.stringify(key)}:${JSON.stringify(current)}`);
    }
  }
  // updateTopologyLabels reports a change whenever there is a topology, as the kubelet patches then.
  if (Object.keys(topology).length > 0) patch.labels = { ...topology };
  return patch.annotations || patch.labels ? patch : null;
}

/** UninstallCSIDriver's change to the Node (removeNodeIDFromNode): the driver out of the annotation, which goes when empty; labels stay. */
export function nodeUninstallPatch(node: NodeObject, driverName: string): NodeMetadataPatch | null {
  const ids = nodeIdMap(node);
  if (!(driverName in ids)) return null;
  delete ids[driverName];
  return { annotations: { [NODE_ID_ANNOTATION]: Object.keys(ids).length ? marshalMap(ids) : null } };
}

/** The Node as the CSINode's owner. */
export function nodeOwnerReference(nodeName: string, nodeUid: string): OwnerReference {
  return { apiVersion: 'v1', kind: 'Node', name: nodeName, uid: nodeUid };
}

/** CreateCSINode's object: owned by the Node, no drivers, the migrated plugins annotated. */
export function newCsiNode(nodeName: string, nodeUid: string): CSINode {
  return {
    metadata: { name: nodeName, ownerReferences: [nodeOwnerReference(nodeName, nodeUid)], annotations: { [MIGRATED_PLUGINS_ANNOTATION]: MIGRATED_PLUGINS.join(',') } },
    spec: { drivers: [] },
  };
}

/**
 * nodeOwnsCSINode: whether an owner reference of kind Node names this node with its UID; else the
 * UID of the last Node owner found ('' when none), for the message.
 */
export function csiNodeOwner(csiNode: CSINode, nodeName: string, nodeUid: string): { owned: boolean; ownerUid: string } {
  let ownerUid = '';
  for (const ref of csiNode.metadata.ownerReferences ?? []) {
    if (ref.kind !== 'Node') continue;
    ownerUid = ref.uid;
    if (ref.name === nodeName && ref.uid === nodeUid) return { owned: true, ownerUid };
  }
  return { owned: false, ownerUid };
}

const sameSet = (a: readonly string[], b: readonly string[]) => new Set(a).size === new Set(b).size && a.every((x) => b.includes(x));

/** setMigrationAnnotation: the CSINode with the annotation set to the migrated plugins; null when it already lists them. */
function withMigrationAnnotation(csiNode: CSINode): CSINode | null {
  const current = csiNode.metadata.annotations?.[MIGRATED_PLUGINS_ANNOTATION] ?? '';
  if (sameSet(current === '' ? [] : current.split(','), MIGRATED_PLUGINS)) return null;
  return { ...csiNode, metadata: { ...csiNode.metadata, annotations: { ...csiNode.metadata.annotations, [MIGRATED_PLUGINS_ANNOTATION]: MIGRATED_PLUGINS.join(',') } } };
}

/** InitializeCSINodeWithAnnotation's update of an existing CSINode; null: none needed. */
export const csiNodeInitialized = withMigrationAnnotation;

/** keepAllocatableCount: the entry's volume limit is the driver's (0: none). */
function sameAllocatable(driver: CSINodeDriver, maxVolumes: number): boolean {
  const count = driver.allocatable?.count;
  return maxVolumes === 0 ? count === undefined : count === maxVolumes;
}

/**
 * installDriverToCSINode: the CSINode with the driver's entry replaced by `{name, nodeID,
 * topologyKeys sorted, allocatable.count}` (a limit above 2³¹−1 truncated; a negative one left
 * out) and the migration annotation set; null when the entry and the annotation are already so.
 */
export function csiNodeWithDriver(csiNode: CSINode, driverName: string, driverNodeId: string, maxVolumes: number, topology: Readonly<Record<string, string>>): CSINode | null {
  const topologyKeys = Object.keys(topology).sort();
  const drivers = csiNode.spec.drivers ?? [];
  const existing = drivers.find((d) => d.name === driverName);
  const specModified = !(existing && existing.nodeID === driverNodeId && sameSet(existing.topologyKeys ?? [], topologyKeys) && sameAllocatable(existing, maxVolumes));
  const annotated = withMigrationAnnotation(csiNode);
  if (!specModified && !annotated) return null;
  const entry: CSINodeDriver = { name: driverName, nodeID: driverNodeId, topologyKeys, ...(maxVolumes > 0 ? { allocatable: { count: Math.min(maxVolumes, MAX_INT32) } } : {}) };
  const base = annotated ?? csiNode;
  return { ...base, spec: { ...base.spec, drivers: [...drivers.filter((d) => d.name !== driverName), entry] } };
}

/** uninstallDriverFromCSINode: the CSINode without the driver's entry; null when it has none. */
export function csiNodeWithoutDriver(csiNode: CSINode, driverName: string): CSINode | null {
  const drivers = csiNode.spec.drivers ?? [];
  if (!drivers.some((d) => d.name === driverName)) return null;
  return { ...csiNode, spec: { ...csiNode.spec, drivers: drivers.filter((d) => d.name !== driverName) } };
}
