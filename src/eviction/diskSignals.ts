/**
 * What each signal reclaims of the node's own and what a pod's disk usage counts when pods are
 * ranked for it, by whether the runtime's image filesystem is dedicated, pure
 * (pkg/kubelet/eviction/helpers.go buildSignalToNodeReclaimFuncs, buildSignalToRankFunc; the
 * eviction manager builds both from HasDedicatedImageFs in eviction_manager.go synchronize).
 * Dedicated means the image filesystem is on another device than --root-dir:
 *
 *   one disk    nodefs and imagefs are the same disk, so either signal frees it the same ways:
 *               dead containers, then unused images; and a pod's usage is all it holds there,
 *               its containers' writable layers, its logs and its local volumes;
 *   dedicated   nodefs holds the logs and the pods' volumes, imagefs the images and the writable
 *               layers: removing containers or images frees nothing on nodefs, so nodefs reclaims
 *               nothing and counts logs and local volumes; imagefs reclaims dead containers, then
 *               unused images, and counts the writable layers only.
 *
 * Memory and pid signals reclaim nothing of the node's and count no disk usage.
 */
import { SIGNALS, type Signal } from './thresholds.ts';

/** A node-level reclaim (containerGC DeleteAllUnusedContainers, imageGC DeleteUnusedImages), in the order they run. */
export type NodeReclaim = 'deleteAllUnusedContainers' | 'deleteUnusedImages';

/** A part of a pod's disk usage (fsStatsType): its containers' writable layers, their logs, its local volumes. */
export type DiskUsagePart = 'rootfs' | 'logs' | 'localVolumes';

/** Everything a pod holds on one disk (no dedicated image filesystem). */
export const ALL_DISK_USAGE: readonly DiskUsagePart[] = ['rootfs', 'logs', 'localVolumes'];

const RECLAIM_DISK: readonly NodeReclaim[] = ['deleteAllUnusedContainers', 'deleteUnusedImages'];

const isImageFsSignal = (signal: Signal) => signal === 'imagefs.available' || signal === 'imagefs.inodesFree';

/** The node-level reclaims for the signal, in order (buildSignalToNodeReclaimFuncs); none: straight to evicting pods. */
export function nodeReclaimsFor(signal: Signal, dedicatedImageFs: boolean): readonly NodeReclaim[] {
  if (SIGNALS[signal].condition !== 'DiskPressure') return [];
  return !dedicatedImageFs || isImageFsSignal(signal) ? RECLAIM_DISK : [];
}

/** What counts of a pod's disk usage when ranking for the signal (buildSignalToRankFunc); empty for memory and pids. */
export function diskUsageCountedFor(signal: Signal, dedicatedImageFs: boolean): readonly DiskUsagePart[] {
  if (SIGNALS[signal].condition !== 'DiskPressure') return [];
  if (!dedicatedImageFs) return ALL_DISK_USAGE;
  return isImageFsSignal(signal) ? ['rootfs'] : ['logs', 'localVolumes'];
}
