/**
 * One round of the eviction manager (src/eviction/synchronize.ts; pkg/kubelet/eviction/
 * eviction_manager.go synchronize and helpers.go makeSignalObservations, thresholdsMet,
 * thresholdsMetGracePeriod, nodeConditionsObservedSince, thresholdsUpdatedStats,
 * byEvictionPriority): the signals read from the Summary, and what a round decides from them and
 * from what the previous round left.
 */
import { describe, expect, it } from 'vitest';
import type { Summary } from '../../src/stats/summary.ts';
import { type EvictionMemory, NO_MEMORY, type Observation, type Observations, evaluate, metThresholds, observe } from '../../src/eviction/synchronize.ts';
import type { Signal, Threshold } from '../../src/eviction/thresholds.ts';

const Mi = 1024 * 1024;
const Gi = 1024 * Mi;
const T0 = Date.parse('2026-03-01T12:00:00Z');
/** The kubelet's default --eviction-pressure-transition-period. */
const TRANSITION = 5 * 60_000;

const obs = (available: number, capacity: number, time: number): Observation => ({ available, capacity, time });
const memory = (available: number, time: number): Observations => ({ 'memory.available': obs(available, 4 * Gi, time) });

const hard = (signal: Signal, value: Threshold['value'], minReclaim?: Threshold['value']): Threshold => ({ signal, value, gracePeriodMs: 0, ...(minReclaim ? { minReclaim } : {}) });
const soft = (signal: Signal, value: Threshold['value'], gracePeriodMs: number): Threshold => ({ signal, value, gracePeriodMs });

describe('observe: the signals of the Summary', () => {
  const full: Summary = {
    node: {
      nodeName: 'node-a',
      startTime: T0,
      memory: { time: T0 + 1, availableBytes: 300 * Mi, workingSetBytes: 700 * Mi, usageBytes: 900 * Mi },
      fs: { time: T0 + 2, availableBytes: 40 * Gi, capacityBytes: 100 * Gi, usedBytes: 60 * Gi, inodesFree: 5_000, inodes: 50_000, inodesUsed: 45_000 },
      runtime: { imageFs: { time: T0 + 3, availableBytes: 7 * Gi, capacityBytes: 20 * Gi, inodesFree: 900, inodes: 1_000 } },
      rlimit: { time: T0 + 4, maxpid: 4_194_304, curproc: 250 },
    },
    pods: [],
  };

  it('reads every signal from a full Summary: capacity of memory is available plus working set, pids left are maxpid minus curproc', () => {
    expect(observe(full)).toEqual({
      'memory.available': { available: 300 * Mi, capacity: 1000 * Mi, time: T0 + 1 },
      'nodefs.available': { available: 40 * Gi, capacity: 100 * Gi, time: T0 + 2 },
      'nodefs.inodesFree': { available: 5_000, capacity: 50_000, time: T0 + 2 },
      'imagefs.available': { available: 7 * Gi, capacity: 20 * Gi, time: T0 + 3 },
      'imagefs.inodesFree': { available: 900, capacity: 1_000, time: T0 + 3 },
      'pid.available': { available: 4_194_304 - 250, capacity: 4_194_304, time: T0 + 4 },
    });
  });

  const without = (change: (s: Summary['node']) => void): Summary => {
    const node = structuredClone(full.node);
    change(node);
    return { node, pods: [] };
  };

  it.each<[string, Summary, Signal[]]>([
    ['no memory figures', without((n) => delete n.memory), ['nodefs.available', 'nodefs.inodesFree', 'imagefs.available', 'imagefs.inodesFree', 'pid.available']],
    ['memory without a working set', without((n) => delete n.memory!.workingSetBytes), ['nodefs.available', 'nodefs.inodesFree', 'imagefs.available', 'imagefs.inodesFree', 'pid.available']],
    ['nodefs without inode counts', without((n) => delete n.fs!.inodes), ['memory.available', 'nodefs.available', 'imagefs.available', 'imagefs.inodesFree', 'pid.available']],
    ['nodefs without its capacity', without((n) => delete n.fs!.capacityBytes), ['memory.available', 'nodefs.inodesFree', 'imagefs.available', 'imagefs.inodesFree', 'pid.available']],
    ['no image filesystem', without((n) => delete n.runtime), ['memory.available', 'nodefs.available', 'nodefs.inodesFree', 'pid.available']],
    ['no process limit', without((n) => delete n.rlimit!.maxpid), ['memory.available', 'nodefs.available', 'nodefs.inodesFree', 'imagefs.available', 'imagefs.inodesFree']],
    ['nothing at all', { node: { nodeName: 'node-a', startTime: T0 }, pods: [] }, []],
  ])('leaves out what is missing: %s', (_case, summary, signals) => {
    expect(Object.keys(observe(summary)).sort()).toEqual([...signals].sort());
  });
});

describe('metThresholds', () => {
  const thresholds = [hard('memory.available', { quantity: 100 * Mi }, { quantity: 50 * Mi }), hard('nodefs.available', { percentage: 0.1 })];
  it.each<[string, Observations, boolean, number[]]>([
    ['available below the value', memory(99 * Mi, T0), false, [0]],
    ['available equal to the value (not met: the operator is LessThan)', memory(100 * Mi, T0), false, []],
    ['available above the value', memory(101 * Mi, T0), false, []],
    ['above the value, below value + minimum reclaim, counting minimum reclaim', memory(120 * Mi, T0), true, [0]],
    ['above value + minimum reclaim, counting minimum reclaim', memory(150 * Mi, T0), true, []],
    ['10% of 1000 is 100: 99 available meets it', { 'nodefs.available': obs(99, 1000, T0) }, false, [1]],
    ['10% of 1000 is 100: 100 available does not', { 'nodefs.available': obs(100, 1000, T0) }, false, []],
    ['a signal not observed meets nothing', {}, false, []],
  ])('%s', (_case, observations, enforce, expected) => {
    expect(metThresholds(thresholds, observations, enforce)).toEqual(expected);
  });
});

describe('evaluate: hard thresholds', () => {
  const thresholds = [hard('memory.available', { quantity: 100 * Mi })];

  it.each<[string, number, string[], number | null]>([
    ['met: MemoryPressure, and the threshold to reclaim', 50 * Mi, ['MemoryPressure'], 0],
    ['not met: nothing', 200 * Mi, [], null],
    ['exactly at the value: not met', 100 * Mi, [], null],
  ])('%s', (_case, available, conditions, reclaim) => {
    const round = evaluate(thresholds, NO_MEMORY, memory(available, T0), T0, TRANSITION);
    expect(round.conditions).toEqual(conditions);
    expect(round.reclaim).toBe(reclaim);
  });

  it('remembers what it met, since when, the condition, and the observations', () => {
    const observations = memory(50 * Mi, T0 - 500);
    const round = evaluate(thresholds, NO_MEMORY, observations, T0, TRANSITION);
    expect(round.memory).toEqual({ met: [0], firstObservedAt: { 0: T0 }, conditionsLastObservedAt: { MemoryPressure: T0 }, lastObservations: observations });
  });

  it.each<[Signal, string]>([
    ['nodefs.available', 'DiskPressure'],
    ['nodefs.inodesFree', 'DiskPressure'],
    ['imagefs.available', 'DiskPressure'],
    ['imagefs.inodesFree', 'DiskPressure'],
    ['pid.available', 'PIDPressure'],
  ])('a met %s threshold raises %s', (signal, condition) => {
    const round = evaluate([hard(signal, { percentage: 0.1 })], NO_MEMORY, { [signal]: obs(5, 100, T0) }, T0, TRANSITION);
    expect(round.conditions).toEqual([condition]);
    expect(round.reclaim).toBe(0);
  });

  it("reports the conditions in the kubelet's order: memory, disk, pids", () => {
    const all = [hard('pid.available', { quantity: 100 }), hard('nodefs.available', { percentage: 0.1 }), hard('memory.available', { quantity: 100 * Mi })];
    const observations: Observations = { 'pid.available': obs(10, 1000, T0), 'nodefs.available': obs(1, 100, T0), ...memory(1 * Mi, T0) };
    expect(evaluate(all, NO_MEMORY, observations, T0, TRANSITION).conditions).toEqual(['MemoryPressure', 'DiskPressure', 'PIDPressure']);
  });
});

/** Runs rounds one after the other, carrying each round's memory to the next. */
function rounds(thresholds: Threshold[], steps: { at: number; observations: Observations }[], transition = TRANSITION) {
  let carried: EvictionMemory = NO_MEMORY;
  return steps.map(({ at, observations }) => {
    const round = evaluate(thresholds, carried, observations, at, transition);
    carried = round.memory;
    return { conditions: round.conditions, reclaim: round.reclaim };
  });
}

describe('evaluate: soft thresholds wait out their grace period', () => {
  const thresholds = [soft('memory.available', { quantity: 1 * Gi }, 60_000)];
  const low = (at: number) => ({ at, observations: memory(512 * Mi, at) });

  it('raises the condition at once, and reclaims only once the threshold has been met for the grace period', () => {
    expect(rounds(thresholds, [low(T0), low(T0 + 10_000), low(T0 + 59_999), low(T0 + 60_000), low(T0 + 70_000)])).toEqual([
      { conditions: ['MemoryPressure'], reclaim: null },
      { conditions: ['MemoryPressure'], reclaim: null },
      { conditions: ['MemoryPressure'], reclaim: null },
      { conditions: ['MemoryPressure'], reclaim: 0 },
      { conditions: ['MemoryPressure'], reclaim: 0 },
    ]);
  });

  it('starts the grace period over when the threshold stops being met in between', () => {
    const ok = (at: number) => ({ at, observations: memory(2 * Gi, at) });
    const result = rounds(thresholds, [low(T0), ok(T0 + 30_000), low(T0 + 40_000), low(T0 + 60_000), low(T0 + 100_000)]);
    expect(result.map((r) => r.reclaim)).toEqual([null, null, null, null, 0]);
  });

  it('does not count the grace period without the previous round (a fresh memory sees the threshold first now)', () => {
    expect(evaluate(thresholds, NO_MEMORY, memory(512 * Mi, T0 + 60_000), T0 + 60_000, TRANSITION).reclaim).toBeNull();
  });
});

describe('evaluate: the pressure transition period', () => {
  const thresholds = [hard('memory.available', { quantity: 100 * Mi })];
  const low = (at: number) => ({ at, observations: memory(50 * Mi, at) });
  const ok = (at: number) => ({ at, observations: memory(1 * Gi, at) });

  it('keeps the condition True until the period has passed since the threshold was last met, then clears it', () => {
    const result = rounds(thresholds, [low(T0), low(T0 + 10_000), ok(T0 + 20_000), ok(T0 + 10_000 + TRANSITION - 1), ok(T0 + 10_000 + TRANSITION), ok(T0 + 20_000 + TRANSITION)]);
    expect(result).toEqual([
      { conditions: ['MemoryPressure'], reclaim: 0 },
      { conditions: ['MemoryPressure'], reclaim: 0 },
      // Recovered: no reclaim, but the condition holds.
      { conditions: ['MemoryPressure'], reclaim: null },
      { conditions: ['MemoryPressure'], reclaim: null },
      { conditions: [], reclaim: null },
      { conditions: [], reclaim: null },
    ]);
  });

  it('holds each condition from when its own thresholds were last met: memory clears before disk', () => {
    const both = [hard('memory.available', { quantity: 100 * Mi }), hard('nodefs.available', { percentage: 0.1 })];
    const disk = (available: number, at: number): Observations => ({ 'nodefs.available': obs(available, 100, at) });
    const result = rounds(both, [
      // Memory met at T0 only, disk at T0 + 60 s only.
      { at: T0, observations: { ...memory(50 * Mi, T0), ...disk(50, T0) } },
      { at: T0 + 60_000, observations: { ...memory(1 * Gi, T0 + 60_000), ...disk(5, T0 + 60_000) } },
      { at: T0 + TRANSITION - 1, observations: { ...memory(1 * Gi, T0 + TRANSITION - 1), ...disk(50, T0 + TRANSITION - 1) } },
      { at: T0 + TRANSITION, observations: { ...memory(1 * Gi, T0 + TRANSITION), ...disk(50, T0 + TRANSITION) } },
      { at: T0 + 60_000 + TRANSITION, observations: { ...memory(1 * Gi, T0 + 60_000 + TRANSITION), ...disk(50, T0 + 60_000 + TRANSITION) } },
    ]);
    expect(result.map((r) => r.conditions)).toEqual([['MemoryPressure'], ['MemoryPressure', 'DiskPressure'], ['MemoryPressure', 'DiskPressure'], ['DiskPressure'], []]);
  });
});

describe('evaluate: minimum reclaim', () => {
  // Met below 100Mi; once met, it stays met until 150Mi are available.
  const thresholds = [hard('memory.available', { quantity: 100 * Mi }, { quantity: 50 * Mi })];
  const at = (available: number, time: number) => ({ at: time, observations: memory(available, time) });

  it('keeps a threshold met at the last round met while available stays below its value plus minimum reclaim', () => {
    const result = rounds(thresholds, [at(90 * Mi, T0), at(120 * Mi, T0 + 10_000), at(149 * Mi, T0 + 20_000), at(150 * Mi, T0 + 30_000), at(120 * Mi, T0 + 40_000)]);
    expect(result.map((r) => r.reclaim)).toEqual([0, 0, 0, null, null]);
  });

  it('does not meet it from a fresh observation in that band without the previous round', () => {
    const round = evaluate(thresholds, NO_MEMORY, memory(120 * Mi, T0), T0, TRANSITION);
    expect(round).toMatchObject({ conditions: [], reclaim: null });
    expect(round.memory.met).toEqual([]);
  });

  it('counts a percentage minimum reclaim of the capacity', () => {
    // 10% of 1000 = 100; minimum reclaim 5% of 1000 = 50: met again up to 149 available.
    const disk = [hard('nodefs.available', { percentage: 0.1 }, { percentage: 0.05 })];
    const d = (available: number, time: number) => ({ at: time, observations: { 'nodefs.available': obs(available, 1000, time) } });
    expect(rounds(disk, [d(99, T0), d(149, T0 + 10_000), d(150, T0 + 20_000)]).map((r) => r.reclaim)).toEqual([0, 0, null]);
  });
});

describe('evaluate: which threshold to reclaim', () => {
  it('prefers memory.available over nodefs.available when both are met', () => {
    const thresholds = [hard('nodefs.available', { percentage: 0.1 }), hard('memory.available', { quantity: 100 * Mi })];
    const observations: Observations = { 'nodefs.available': obs(1, 100, T0), ...memory(50 * Mi, T0) };
    const round = evaluate(thresholds, NO_MEMORY, observations, T0, TRANSITION);
    expect(round.reclaim).toBe(1);
    expect(thresholds[round.reclaim!]!.signal).toBe('memory.available');
    expect(round.conditions).toEqual(['MemoryPressure', 'DiskPressure']);
  });

  it('otherwise takes the first met threshold in the configured order', () => {
    const thresholds = [hard('pid.available', { quantity: 100 }), hard('imagefs.available', { percentage: 0.15 }), hard('nodefs.available', { percentage: 0.1 })];
    const observations: Observations = { 'imagefs.available': obs(1, 100, T0), 'nodefs.available': obs(1, 100, T0), 'pid.available': obs(1_000, 2_000, T0) };
    expect(evaluate(thresholds, NO_MEMORY, observations, T0, TRANSITION).reclaim).toBe(1);
  });

  it('does not reclaim for a soft memory threshold still in its grace period, but does for a hard disk one', () => {
    const thresholds = [soft('memory.available', { quantity: 1 * Gi }, 60_000), hard('nodefs.available', { percentage: 0.1 })];
    const observations: Observations = { 'nodefs.available': obs(1, 100, T0), ...memory(50 * Mi, T0) };
    expect(evaluate(thresholds, NO_MEMORY, observations, T0, TRANSITION).reclaim).toBe(1);
  });
});

describe('evaluate: only observations newer than the last round drive reclaim (thresholdsUpdatedStats)', () => {
  const thresholds = [hard('memory.available', { quantity: 100 * Mi })];

  it.each<[string, number, number | null]>([
    ['the same stats time as the last round', T0 - 5_000, null],
    ['an older stats time', T0 - 6_000, null],
    ['a newer stats time', T0 - 4_999, 0],
  ])('%s', (_case, secondTime, reclaim) => {
    const first = evaluate(thresholds, NO_MEMORY, memory(50 * Mi, T0 - 5_000), T0, TRANSITION);
    expect(first.reclaim).toBe(0);
    const second = evaluate(thresholds, first.memory, memory(50 * Mi, secondTime), T0 + 10_000, TRANSITION);
    // The condition still holds: stale stats only keep the round from acting on them.
    expect(second.conditions).toEqual(['MemoryPressure']);
    expect(second.reclaim).toBe(reclaim);
  });

  it('judges freshness per signal', () => {
    const both = [hard('memory.available', { quantity: 100 * Mi }), hard('nodefs.available', { percentage: 0.1 })];
    const first = evaluate(both, NO_MEMORY, { ...memory(50 * Mi, T0), 'nodefs.available': obs(1, 100, T0) }, T0, TRANSITION);
    expect(first.reclaim).toBe(0);
    // Memory stats did not move on; the disk's did: the disk threshold is the one reclaimed.
    const second = evaluate(both, first.memory, { ...memory(50 * Mi, T0), 'nodefs.available': obs(1, 100, T0 + 10_000) }, T0 + 10_000, TRANSITION);
    expect(second.reclaim).toBe(1);
  });
});
