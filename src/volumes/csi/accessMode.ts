/**
 * A PersistentVolume's access mode as the CSI volume capability's, pure
 * (pkg/volume/csi/csi_client.go asCSIAccessModeV1, asSingleNodeMultiWriterCapableCSIAccessModeV1):
 * the kubelet picks the table by whether the driver has the SINGLE_NODE_MULTI_WRITER node
 * capability, asked before each stage, publish and expand.
 */

/** A Kubernetes access mode (core/v1 PersistentVolumeAccessMode). */
export type PersistentVolumeAccessMode = 'ReadWriteOnce' | 'ReadOnlyMany' | 'ReadWriteMany' | 'ReadWriteOncePod';

/** csi.v1 VolumeCapability.AccessMode.Mode, by name. */
export type CsiAccessMode =
  | 'UNKNOWN'
  | 'SINGLE_NODE_WRITER'
  | 'SINGLE_NODE_READER_ONLY'
  | 'MULTI_NODE_READER_ONLY'
  | 'MULTI_NODE_SINGLE_WRITER'
  | 'MULTI_NODE_MULTI_WRITER'
  | 'SINGLE_NODE_SINGLE_WRITER'
  | 'SINGLE_NODE_MULTI_WRITER';

const WITHOUT_SINGLE_NODE_MULTI_WRITER: Record<PersistentVolumeAccessMode, CsiAccessMode> = {
  ReadWriteOnce: 'SINGLE_NODE_WRITER',
  ReadOnlyMany: 'MULTI_NODE_READER_ONLY',
  ReadWriteMany: 'MULTI_NODE_MULTI_WRITER',
  // So that drivers without SINGLE_NODE_MULTI_WRITER work with ReadWriteOncePod (asCSIAccessModeV1).
  ReadWriteOncePod: 'SINGLE_NODE_WRITER',
};

const WITH_SINGLE_NODE_MULTI_WRITER: Record<PersistentVolumeAccessMode, CsiAccessMode> = {
  ReadWriteOnce: 'SINGLE_NODE_MULTI_WRITER',
  ReadOnlyMany: 'MULTI_NODE_READER_ONLY',
  ReadWriteMany: 'MULTI_NODE_MULTI_WRITER',
  ReadWriteOncePod: 'SINGLE_NODE_SINGLE_WRITER',
};

/** The CSI access mode of `mode`; UNKNOWN for a mode Kubernetes does not define, as upstream. */
export function csiAccessMode(mode: string, singleNodeMultiWriter: boolean): CsiAccessMode {
  const table = singleNodeMultiWriter ? WITH_SINGLE_NODE_MULTI_WRITER : WITHOUT_SINGLE_NODE_MULTI_WRITER;
  return Object.hasOwn(table, mode) ? table[mode as PersistentVolumeAccessMode] : 'UNKNOWN';
}
