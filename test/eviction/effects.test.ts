/**
 * The eviction manager's effects (src/eviction/effects.ts) on a fake node, for what depends on a
 * dedicated image filesystem (eviction_manager.go synchronize, reclaimNodeLevelResources;
 * helpers.go buildSignalToNodeReclaimFuncs, buildSignalToRankFunc): which node-level reclaims run
 * for a threshold, how pods are ranked for it, and where the answer comes from (each Summary, the
 * last known one kept when a Summary cannot tell).
 */
import { describe, expect, it, vi } from 'vitest';
import type { Pod } from '../../src/api/types.ts';
import { createEvictionEffects } from '../../src/eviction/effects.ts';
import type { Signal, Threshold } from '../../src/eviction/thresholds.ts';
import type { LogFields, LogLevel } from '../../src/log.ts';
import type { PodSummary, Summary } from '../../src/stats/summary.ts';
import { basePod, ctr } from '../support/podFixtures.ts';
import { RecordedEvents } from '../support/recordedEvents.ts';

const Mi = 1024 * 1024;
const Gi = 1024 * Mi;
const T0 = Date.parse('2026-03-01T12:00:00Z');

function pod(name: string, extra: Partial<Pod['spec']> = {}): Pod {
  const p = basePod({ containers: [ctr('main')], ...extra });
  p.metadata = { ...p.metadata, name, uid: `uid-${name}` };
  return p;
}

// `layers` holds most in its writable layer, `volumes` in its emptyDir.
const layers = pod('layers');
const volumes = pod('volumes', { volumes: [{ name: 'cache', emptyDir: {} }] });
const podStats = (p: Pod, rootfs: number, cache?: number): PodSummary => ({
  podRef: { name: p.metadata.name, namespace: p.metadata.namespace, uid: p.metadata.uid },
  startTime: T0,
  containers: [{ name: 'main', startTime: T0, rootfs: { time: T0, usedBytes: rootfs }, logs: { time: T0, usedBytes: 0 } }],
  ...(cache !== undefined ? { volume: [{ name: 'cache', time: T0, usedBytes: cache }] } : {}),
});
const PODS = [podStats(layers, 900 * Mi), podStats(volumes, 1 * Mi, 500 * Mi)];

/**
 * A node whose reads (of the node alone or with its pods) say, in turn, what `dedicated` lists
 * (the last repeats; undefined: cannot tell).
 */
function node(dedicated: (boolean | undefined)[], options: { failContainers?: boolean } = {}) {
  let reads = 0;
  const calls: string[] = [];
  const lines: [LogLevel, string, LogFields | undefined][] = [];
  const recorder = new RecordedEvents();
  const readNode = vi.fn(async (): Promise<Omit<Summary, 'pods'>> => {
    const answer = dedicated[Math.min(reads++, dedicated.length - 1)];
    return {
      node: { nodeName: 'n', startTime: T0, fs: { time: T0 + reads, availableBytes: 5 * Gi, capacityBytes: 100 * Gi } },
      ...(answer !== undefined ? { dedicatedImageFs: answer } : {}),
    };
  });
  const summary = vi.fn(async (): Promise<Summary> => ({ ...(await readNode()), pods: PODS }));
  const effects = createEvictionEffects({
    nodeName: 'n',
    stats: { summary, readNode },
    activePods: () => [volumes, layers],
    podCleanedUp: () => true,
    deleteAllUnusedContainers: async () => {
      calls.push('deleteAllUnusedContainers');
      if (options.failContainers) throw new Error('ListContainers failed (UNAVAILABLE)');
    },
    deleteUnusedImages: async () => {
      calls.push('deleteUnusedImages');
    },
    recorder,
    now: () => T0,
    log: (level, message, fields) => lines.push([level, message, fields]),
  });
  return { effects, calls, lines, recorder, summary, readNode };
}

const threshold = (signal: Signal): Threshold => ({ signal, value: { percentage: 0.1 }, gracePeriodMs: 0 });

describe('eviction effects with or without a dedicated image filesystem', () => {
  it.each<[Signal, boolean, string[]]>([
    ['nodefs.available', false, ['deleteAllUnusedContainers', 'deleteUnusedImages']],
    ['imagefs.available', false, ['deleteAllUnusedContainers', 'deleteUnusedImages']],
    ['nodefs.available', true, []],
    ['nodefs.inodesFree', true, []],
    ['imagefs.available', true, ['deleteAllUnusedContainers', 'deleteUnusedImages']],
    ['imagefs.inodesFree', true, ['deleteAllUnusedContainers', 'deleteUnusedImages']],
    ['memory.available', false, []],
  ])('%s, dedicated %s: reclaims %j, after its EvictionThresholdMet event', async (signal, dedicated, expected) => {
    const { effects, calls, recorder } = node([dedicated]);
    await effects.observe();
    const after = await effects.reclaimNodeResources(threshold(signal));
    expect(calls).toEqual(expected);
    // Nothing reclaimed: straight to evicting (null); else the node measured again.
    expect(after === null).toBe(expected.length === 0);
    expect(recorder.lines()).toHaveLength(1);
    expect(recorder.lines()[0]).toMatch(/^EvictionThresholdMet: Attempting to reclaim /);
  });

  it('runs the image reclaim after a failed container reclaim, says so, and measures the node again', async () => {
    const { effects, calls, lines, summary, readNode } = node([false], { failContainers: true });
    await effects.observe();
    const after = await effects.reclaimNodeResources(threshold('nodefs.available'));
    expect(calls).toEqual(['deleteAllUnusedContainers', 'deleteUnusedImages']);
    expect(after?.['nodefs.available']).toMatchObject({ available: 5 * Gi, capacity: 100 * Gi });
    // The signals are the node's: neither read lists the pods.
    expect(readNode).toHaveBeenCalledTimes(2);
    expect(summary).not.toHaveBeenCalled();
    expect(lines).toContainEqual(['info', 'Eviction manager: unexpected error when attempting to reduce resource pressure', { resourceName: 'ephemeral-storage', err: expect.any(Error) }]);
  });

  it.each<[Signal, boolean, string]>([
    // One disk: all a pod holds (901Mi against 501Mi).
    ['nodefs.available', false, 'layers'],
    // Dedicated: nodefs counts logs and volumes (0 against 500Mi), imagefs writable layers.
    ['nodefs.available', true, 'volumes'],
    ['imagefs.available', true, 'layers'],
  ])('%s, dedicated %s: evicts %s first', async (signal, dedicated, expected) => {
    const { effects } = node([dedicated]);
    const choice = await effects.selectPod(threshold(signal), {}, 30);
    expect(choice?.pod).toBe(`default/${expected}`);
  });

  it('keeps the last answer through a Summary that cannot tell, and counts the node as one disk before any', async () => {
    const first = node([undefined]);
    await first.effects.observe();
    expect(await first.effects.reclaimNodeResources(threshold('nodefs.available'))).not.toBeNull();
    expect(first.calls).toHaveLength(2);

    // Dedicated at the first read, then unknown: nodefs still reclaims nothing and ranks by volumes.
    const later = node([true, undefined]);
    await later.effects.observe();
    await later.effects.observe();
    expect(await later.effects.reclaimNodeResources(threshold('nodefs.available'))).toBeNull();
    expect(later.calls).toEqual([]);
    expect((await later.effects.selectPod(threshold('nodefs.available'), {}, 30))?.pod).toBe('default/volumes');
  });
});
