/**
 * One round of the eviction manager, pure (pkg/kubelet/eviction/eviction_manager.go synchronize;
 * helpers.go makeSignalObservations, thresholdsMet, thresholdsFirstObservedAt,
 * nodeConditionsLastObservedAt, nodeConditionsObservedSince, thresholdsMetGracePeriod,
 * thresholdsUpdatedStats, byEvictionPriority):
 *
 *   1. the signals observed in the node's Summary (available and capacity, and when);
 *   2. the thresholds met now, plus those met at the last round whose signal has not yet climbed
 *      back above the threshold and its minimum reclaim;
 *   3. each met threshold's first sighting (soft thresholds wait out their grace period from it);
 *   4. the node conditions of the met thresholds, each held True until it has gone unseen for the
 *      pressure transition period;
 *   5. of the thresholds past their grace period and observed afresh, the one to reclaim: memory
 *      first, else the first in order.
 *
 * The memory of one round for the next is plain data (`EvictionMemory`), kept in the loop's context.
 */
import type { Summary } from '../stats/summary.ts';
import { PRESSURE_CONDITIONS, type PressureCondition, SIGNALS, type Signal, type Threshold, thresholdQuantity } from './thresholds.ts';

/** What a signal observes: available and capacity in its unit (bytes, inodes, pids), and when. */
export interface Observation {
  available: number;
  capacity: number;
  time: number;
}

export type Observations = Partial<Record<Signal, Observation>>;

/** What a round leaves to the next; thresholds by their index in the configured list. */
export interface EvictionMemory {
  /** Thresholds that drove the last round (met and past their grace period). */
  met: number[];
  /** When each threshold met now was first seen met. */
  firstObservedAt: Record<number, number>;
  /** When each condition was last seen. */
  conditionsLastObservedAt: Partial<Record<PressureCondition, number>>;
  lastObservations: Observations;
}

export const NO_MEMORY: EvictionMemory = { met: [], firstObservedAt: {}, conditionsLastObservedAt: {}, lastObservations: {} };

export interface RoundOutcome {
  memory: EvictionMemory;
  /** The node conditions to report True, in the kubelet's order. */
  conditions: PressureCondition[];
  /** The threshold to reclaim now (its index), or null: nothing to do. */
  reclaim: number | null;
}

/** The signals of the Summary (makeSignalObservations); a figure the Summary lacks leaves its signal unobserved. */
export function observe(summary: Pick<Summary, 'node'>): Observations {
  const out: Observations = {};
  const { memory, fs, runtime, rlimit } = summary.node;
  if (memory?.availableBytes !== undefined && memory.workingSetBytes !== undefined) {
    out['memory.available'] = { available: memory.availableBytes, capacity: memory.availableBytes + memory.workingSetBytes, time: memory.time };
  }
  const filesystem = (prefix: 'nodefs' | 'imagefs', stats: typeof fs) => {
    if (!stats) return;
    if (stats.availableBytes !== undefined && stats.capacityBytes !== undefined) out[`${prefix}.available`] = { available: stats.availableBytes, capacity: stats.capacityBytes, time: stats.time };
    if (stats.inodesFree !== undefined && stats.inodes !== undefined) out[`${prefix}.inodesFree`] = { available: stats.inodesFree, capacity: stats.inodes, time: stats.time };
  };
  filesystem('nodefs', fs);
  filesystem('imagefs', runtime?.imageFs);
  if (rlimit?.maxpid !== undefined && rlimit.curproc !== undefined) {
    out['pid.available'] = { available: rlimit.maxpid - rlimit.curproc, capacity: rlimit.maxpid, time: rlimit.time };
  }
  return out;
}

/** Whether the threshold is met: available below its value (plus its minimum reclaim, when enforced). */
function isMet(threshold: Threshold, observed: Observation | undefined, enforceMinReclaim: boolean): boolean {
  if (!observed) return false;
  let quantity = thresholdQuantity(threshold.value, observed.capacity);
  if (enforceMinReclaim && threshold.minReclaim) quantity += thresholdQuantity(threshold.minReclaim, observed.capacity);
  return quantity > observed.available;
}

/** Memory signals first, then the rest in their configured order (byEvictionPriority). */
function reclaimOrder(thresholds: readonly Threshold[], indices: readonly number[]): number[] {
  const memoryFirst = (i: number) => (thresholds[i]!.signal === 'memory.available' ? 0 : 1);
  return [...indices].sort((a, b) => memoryFirst(a) - memoryFirst(b) || a - b);
}

/** The thresholds met by the observations (thresholdsMet), by index; `enforceMinReclaim`: counting their minimum reclaim too. */
export function metThresholds(thresholds: readonly Threshold[], observations: Observations, enforceMinReclaim: boolean): number[] {
  const met: number[] = [];
  thresholds.forEach((t, i) => {
    if (isMet(t, observations[t.signal], enforceMinReclaim)) met.push(i);
  });
  return met;
}

export function evaluate(thresholds: readonly Threshold[], memory: EvictionMemory, observations: Observations, now: number, transitionPeriodMs: number): RoundOutcome {
  const metNow = new Set<number>(metThresholds(thresholds, observations, false));
  for (const i of memory.met) {
    const t = thresholds[i];
    if (t && isMet(t, observations[t.signal], true)) metNow.add(i);
  }
  const firstObservedAt: Record<number, number> = {};
  for (const i of metNow) firstObservedAt[i] = memory.firstObservedAt[i] ?? now;

  const conditionsLastObservedAt = { ...memory.conditionsLastObservedAt };
  for (const i of metNow) conditionsLastObservedAt[SIGNALS[thresholds[i]!.signal].condition] = now;
  const conditions = PRESSURE_CONDITIONS.filter((c) => {
    const at = conditionsLastObservedAt[c];
    return at !== undefined && now - at < transitionPeriodMs;
  });

  const pastGrace = [...metNow].filter((i) => now - firstObservedAt[i]! >= thresholds[i]!.gracePeriodMs).sort((a, b) => a - b);
  const fresh = pastGrace.filter((i) => {
    const signal = thresholds[i]!.signal;
    const last = memory.lastObservations[signal];
    return !last || observations[signal]!.time > last.time;
  });
  return {
    memory: { met: pastGrace, firstObservedAt, conditionsLastObservedAt, lastObservations: observations },
    conditions,
    reclaim: reclaimOrder(thresholds, fresh)[0] ?? null,
  };
}
