/**
 * Which of a pod's mounted volumes have their usage measured outside the pod's directory walk, and
 * how their entry in the Summary reads (pkg/kubelet/server/stats/volume_stat_calculator.go
 * calcAndStoreStats, parsePodVolumeStats): each volume plugin's metrics provider decides
 *   - a local PersistentVolume: statfs of its mount (local.go's MetricsStatFS);
 *   - a CSI volume, of a claim or inline: its driver's NodeGetVolumeStats (csi_metrics.go), when
 *     the driver has GET_VOLUME_STATS;
 *   - a hostPath PersistentVolume: none (MetricsNil);
 *   - a mapped raw block volume: none here (see volumeMeasure).
 * An entry carries `pvcRef` when the pod's volume is a claim or a generic ephemeral volume (the
 * claim `<pod>-<volume>`), and every figure, 0 where the plugin reported none, as the kubelet's
 * parsePodVolumeStats fills them.
 */
import type { MountedVolume } from '../volumes/world.ts';
import type { FsStats, VolumeStats } from './summary.ts';

export type VolumeMeasure = 'statfs' | 'csi';

/** What one round of volume stats calculation did: the volumes measured, and those whose measure failed (each logged once). */
export interface VolumeStatsRound {
  measured: number;
  failed: number;
}

/** How the volume's usage is measured; null: it is not (emptyDir is walked apart, payload volumes and hostPath report none). */
export function volumeMeasure(volume: Pick<MountedVolume, 'kind' | 'csi' | 'mapped'>): VolumeMeasure | null {
  // A mapped raw block volume: the kubelet's MetricsBlock (a local device's size) and a CSI block volume's stats at its publish path are not built.
  if (volume.mapped) return null;
  if (volume.kind === 'localPV') return 'statfs';
  if ((volume.kind === 'csiPV' || volume.kind === 'csiInline') && volume.csi) return 'csi';
  return null;
}

/** The volume's entry: its pod's name for it, its claim, and every figure (0 where none was measured). */
export function volumeStatsEntry(volume: Pick<MountedVolume, 'outerName' | 'claim'>, fs: FsStats): VolumeStats {
  return {
    name: volume.outerName,
    ...(volume.claim ? { pvcRef: { name: volume.claim.name, namespace: volume.claim.namespace } } : {}),
    time: fs.time,
    availableBytes: fs.availableBytes ?? 0,
    capacityBytes: fs.capacityBytes ?? 0,
    usedBytes: fs.usedBytes ?? 0,
    inodesFree: fs.inodesFree ?? 0,
    inodes: fs.inodes ?? 0,
    inodesUsed: fs.inodesUsed ?? 0,
  };
}
