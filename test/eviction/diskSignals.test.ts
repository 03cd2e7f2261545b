/**
 * What each signal reclaims of the node's and what a pod's disk usage counts for it, on one disk
 * and with a dedicated image filesystem (src/eviction/diskSignals.ts; pkg/kubelet/eviction/helpers.go
 * buildSignalToNodeReclaimFuncs, buildSignalToRankFunc).
 */
import { describe, expect, it } from 'vitest';
import { type DiskUsagePart, type NodeReclaim, diskUsageCountedFor, nodeReclaimsFor } from '../../src/eviction/diskSignals.ts';
import { SIGNALS, type Signal } from '../../src/eviction/thresholds.ts';

const DISK: NodeReclaim[] = ['deleteAllUnusedContainers', 'deleteUnusedImages'];

describe('nodeReclaimsFor and diskUsageCountedFor', () => {
  it.each<[Signal, boolean, NodeReclaim[], DiskUsagePart[]]>([
    // One disk: either fs signal frees it the same ways, and a pod counts all it holds there.
    ['nodefs.available', false, DISK, ['rootfs', 'logs', 'localVolumes']],
    ['nodefs.inodesFree', false, DISK, ['rootfs', 'logs', 'localVolumes']],
    ['imagefs.available', false, DISK, ['rootfs', 'logs', 'localVolumes']],
    ['imagefs.inodesFree', false, DISK, ['rootfs', 'logs', 'localVolumes']],
    // Dedicated: containers and images are on imagefs; nodefs holds logs and volumes and has nothing of the node's to free.
    ['nodefs.available', true, [], ['logs', 'localVolumes']],
    ['nodefs.inodesFree', true, [], ['logs', 'localVolumes']],
    ['imagefs.available', true, DISK, ['rootfs']],
    ['imagefs.inodesFree', true, DISK, ['rootfs']],
    // Memory and pids: no node-level reclaim, no disk usage, either way.
    ['memory.available', false, [], []],
    ['memory.available', true, [], []],
    ['pid.available', false, [], []],
    ['pid.available', true, [], []],
  ])('%s, dedicated %s: reclaims %j, counts %j', (signal, dedicated, reclaims, counted) => {
    expect(nodeReclaimsFor(signal, dedicated)).toEqual(reclaims);
    expect(diskUsageCountedFor(signal, dedicated)).toEqual(counted);
  });

  it('covers every signal', () => {
    // A new signal must be placed in the table above.
    expect(Object.keys(SIGNALS).sort()).toEqual(['imagefs.available', 'imagefs.inodesFree', 'memory.available', 'nodefs.available', 'nodefs.inodesFree', 'pid.available']);
  });
});
