/**
 * The eviction manager machine (src/eviction/evictionManager.ts) with fake effects and a
 * SimulatedClock, run as the child of a stand-in syncLoop that records what it is sent: one round
 * per monitoring interval, NODE.PRESSURE when the conditions change, the local-storage evictions
 * first (several a round, no DisruptionTarget, no threshold eviction after them), node-level
 * reclaim before eviction, one NODE.EVICT_POD a round for a threshold, and the wait for the evicted
 * pods' cleanup.
 */
import { describe, expect, it, vi } from 'vitest';
import { type EventObject, SimulatedClock, createActor, setup } from 'xstate';
import { type EvictionChoice, type EvictionEffects, type EvictionInput, type Reading, evictionManagerMachineWith } from '../../src/eviction/evictionManager.ts';
import type { Observations } from '../../src/eviction/synchronize.ts';
import type { Threshold } from '../../src/eviction/thresholds.ts';

const Mi = 1024 * 1024;
const Gi = 1024 * Mi;
const T0 = Date.parse('2026-03-01T12:00:00Z');
const INTERVAL = 10_000;

const memoryHard: Threshold = { signal: 'memory.available', value: { quantity: 500 * Mi }, gracePeriodMs: 0 };
/** 10% of 100Gi, and once met, 5% more (15Gi) before it is resolved. */
const diskHard: Threshold = { signal: 'nodefs.available', value: { percentage: 0.1 }, gracePeriodMs: 0, minReclaim: { percentage: 0.05 } };

const hog: EvictionChoice = {
  uid: 'uid-hog',
  pod: 'default/hog',
  gracePeriodSeconds: 1,
  message: 'The node was low on resource: memory. Threshold quantity: 500Mi, available: 400Mi. Container hog was using 600Mi, request is 0, has larger consumption of memory. ',
};

/** What the fake node shows at a round: memory and nodefs available, or a failed read. */
type NodeState = { memory?: number; disk?: number } | Error;

interface HarnessOptions {
  thresholds: Threshold[];
  /** The node at the n-th read (0-based); the last entry repeats. */
  script: NodeState[];
  transitionPeriodMs?: number;
  maxPodGracePeriodSeconds?: number;
  reclaim?: (threshold: Threshold) => Observations | null;
  choice?: EvictionChoice | null;
  /** The pods over a local-storage limit at the n-th check (0-based); the last entry repeats; none by default. */
  overLimits?: (EvictionChoice[] | Error)[];
  cleanedUp?: (call: number, uid: string) => boolean;
}

const settle = async () => {
  for (let i = 0; i < 10; i++) await new Promise<void>((resolve) => setImmediate(resolve));
};

function harness(options: HarnessOptions) {
  const clock = new SimulatedClock();
  clock.set(T0);
  let reads = 0;
  const observationsOf = (state: { memory?: number; disk?: number }): Observations => ({
    ...(state.memory !== undefined ? { 'memory.available': { available: state.memory, capacity: 4 * Gi, time: clock.now() } } : {}),
    ...(state.disk !== undefined ? { 'nodefs.available': { available: state.disk, capacity: 100 * Gi, time: clock.now() } } : {}),
  });
  let cleanupCalls = 0;
  let limitChecks = 0;
  const effects = {
    observe: vi.fn(async (): Promise<Reading> => {
      const state = options.script[Math.min(reads++, options.script.length - 1)]!;
      if (state instanceof Error) throw state;
      return { observations: observationsOf(state), at: clock.now() };
    }),
    localStorageEviction: vi.fn(async (): Promise<EvictionChoice[]> => {
      const script = options.overLimits ?? [[]];
      const over = script[Math.min(limitChecks++, script.length - 1)]!;
      if (over instanceof Error) throw over;
      return over;
    }),
    reclaimNodeResources: vi.fn(async (threshold: Threshold) => (options.reclaim ? options.reclaim(threshold) : null)),
    selectPod: vi.fn(async (_threshold: Threshold, _observations: Observations, _max: number) => (options.choice === undefined ? hog : options.choice)),
    podCleanedUp: vi.fn(async (uid: string) => (options.cleanedUp ? options.cleanedUp(cleanupCalls++, uid) : true)),
  } satisfies EvictionEffects;
  const input: EvictionInput = {
    thresholds: options.thresholds,
    monitoringIntervalMs: INTERVAL,
    transitionPeriodMs: options.transitionPeriodMs ?? 5 * 60_000,
    maxPodGracePeriodSeconds: options.maxPodGracePeriodSeconds ?? 30,
  };
  /** Stands in for the syncLoop: runs the eviction manager and records what it is sent, and when. */
  const reports: { at: number; event: EventObject }[] = [];
  const parentMachine = setup({ types: { children: {} as { evictionManager: 'evictionManager' } }, actors: { evictionManager: evictionManagerMachineWith(effects) } }).createMachine({
    invoke: { id: 'evictionManager', src: 'evictionManager', input },
    on: { '*': { actions: ({ event }) => reports.push({ at: clock.now(), event }) } },
  });
  const parent = createActor(parentMachine, { clock }).start();
  const manager = parent.getSnapshot().children.evictionManager!;
  return {
    clock,
    effects,
    manager,
    state: () => manager.getSnapshot().value,
    context: () => manager.getSnapshot().context,
    /** What the syncLoop was sent, oldest first. */
    sent: () => reports.map((r) => r.event),
    sentAt: () => reports.map((r) => [r.at - T0, r.event.type]),
    /** Moves the clock `ms` forward, a second at a time, letting each step's effects finish. */
    async advance(ms: number) {
      for (let left = ms; left > 0; left -= Math.min(left, 1_000)) {
        clock.increment(Math.min(left, 1_000));
        await settle();
      }
    },
    stop: () => parent.stop(),
  };
}

const pressure = (...conditions: string[]) => ({ type: 'NODE.PRESSURE', conditions });
const evict = (choice: EvictionChoice) => ({
  type: 'NODE.EVICT_POD',
  uid: choice.uid,
  gracePeriodSeconds: choice.gracePeriodSeconds,
  status: { reason: 'Evicted', message: choice.message, disruptionReason: 'TerminationByKubelet' },
});
/** A local-storage eviction: no DisruptionTarget condition. */
const evictForStorage = (choice: EvictionChoice) => ({
  type: 'NODE.EVICT_POD',
  uid: choice.uid,
  gracePeriodSeconds: choice.gracePeriodSeconds,
  status: { reason: 'Evicted', message: choice.message },
});

describe('evictionManager: rounds', () => {
  it('reads the node once per monitoring interval, and does nothing more while no threshold is met', async () => {
    const h = harness({ thresholds: [memoryHard], script: [{ memory: 2 * Gi }] });
    await h.advance(INTERVAL - 1_000);
    expect(h.effects.observe).not.toHaveBeenCalled();
    await h.advance(1_000);
    expect(h.effects.observe).toHaveBeenCalledTimes(1);
    await h.advance(2 * INTERVAL);
    expect(h.effects.observe).toHaveBeenCalledTimes(3);
    expect(h.state()).toBe('waiting');
    expect(h.effects.reclaimNodeResources).not.toHaveBeenCalled();
    expect(h.effects.selectPod).not.toHaveBeenCalled();
    expect(h.sent()).toEqual([]);
    expect(h.context().observations['memory.available']?.available).toBe(2 * Gi);
    h.stop();
  });

  it('on memory below a hard threshold: tells the syncLoop MemoryPressure, reclaims, then evicts the pod selectPod chose', async () => {
    const h = harness({ thresholds: [memoryHard], script: [{ memory: 400 * Mi }], maxPodGracePeriodSeconds: 45, cleanedUp: () => false });
    await h.advance(INTERVAL);
    expect(h.sent()).toEqual([pressure('MemoryPressure'), evict(hog)]);
    expect(h.sentAt()).toEqual([
      [INTERVAL, 'NODE.PRESSURE'],
      [INTERVAL, 'NODE.EVICT_POD'],
    ]);
    // Memory has nothing of the node's to reclaim (null), so a pod is chosen, for that threshold.
    expect(h.effects.reclaimNodeResources).toHaveBeenCalledExactlyOnceWith(memoryHard);
    expect(h.effects.selectPod).toHaveBeenCalledExactlyOnceWith(memoryHard, { 'memory.available': { available: 400 * Mi, capacity: 4 * Gi, time: T0 + INTERVAL } }, 45);
    expect(h.effects.podCleanedUp).toHaveBeenCalledWith('uid-hog');
    expect(h.state()).toEqual({ awaitingCleanup: 'pausing' });
    expect(h.context()).toMatchObject({ conditions: ['MemoryPressure'], evictions: 1, lastEviction: hog, evicting: [hog], lastError: null });
    h.stop();
  });

  it('passes the chosen grace period and message through to NODE.EVICT_POD as they are', async () => {
    const soft: EvictionChoice = { uid: 'uid-soft', pod: 'team/batch', gracePeriodSeconds: 17, message: 'The node was low on resource: memory. ' };
    const h = harness({ thresholds: [memoryHard], script: [{ memory: 400 * Mi }], choice: soft });
    await h.advance(INTERVAL);
    expect(h.sent()).toEqual([pressure('MemoryPressure'), evict(soft)]);
    h.stop();
  });

  it('evicts nobody when selectPod finds no pod that may go, and carries on', async () => {
    const h = harness({ thresholds: [memoryHard], script: [{ memory: 400 * Mi }], choice: null });
    await h.advance(INTERVAL);
    expect(h.sent()).toEqual([pressure('MemoryPressure')]);
    expect(h.state()).toBe('waiting');
    expect(h.context().evictions).toBe(0);
    await h.advance(INTERVAL);
    expect(h.effects.selectPod).toHaveBeenCalledTimes(2);
    h.stop();
  });
});

const cache: EvictionChoice = { uid: 'uid-cache', pod: 'default/cache', gracePeriodSeconds: 1, message: 'Usage of EmptyDir volume "cache" exceeds the limit "1Mi". ' };
const scratch: EvictionChoice = { uid: 'uid-scratch', pod: 'team/scratch', gracePeriodSeconds: 1, message: 'Container app exceeded its local ephemeral storage limit "1Mi". ' };

describe('evictionManager: local storage limits', () => {
  it('checks them every round, after the signals, and evicts nobody while no pod is over a limit', async () => {
    const h = harness({ thresholds: [memoryHard], script: [{ memory: 2 * Gi }] });
    await h.advance(2 * INTERVAL);
    expect(h.effects.localStorageEviction).toHaveBeenCalledTimes(2);
    expect(h.effects.observe.mock.invocationCallOrder[0]).toBeLessThan(h.effects.localStorageEviction.mock.invocationCallOrder[0]!);
    expect(h.sent()).toEqual([]);
    expect(h.state()).toBe('waiting');
    h.stop();
  });

  it('evicts every pod over a limit in one round, without a DisruptionTarget condition, and waits for all of them', async () => {
    const cleaned = new Set<string>();
    const h = harness({
      thresholds: [memoryHard],
      script: [{ memory: 2 * Gi }],
      overLimits: [[cache, scratch], []],
      // cache is gone at once, scratch at the third look.
      cleanedUp: (call, uid) => {
        if (uid === 'uid-cache' || call >= 4) cleaned.add(uid);
        return cleaned.has(uid);
      },
    });
    await h.advance(INTERVAL);
    expect(h.sent()).toEqual([evictForStorage(cache), evictForStorage(scratch)]);
    expect(h.context()).toMatchObject({ evictions: 2, lastEviction: scratch, evicting: [cache, scratch] });
    expect(h.manager.getSnapshot().matches('awaitingCleanup')).toBe(true);
    expect(h.effects.podCleanedUp.mock.calls.map(([uid]) => uid)).toEqual(['uid-cache', 'uid-scratch']);
    await h.advance(1_000);
    expect(h.manager.getSnapshot().matches('awaitingCleanup')).toBe(true);
    await h.advance(1_000);
    // Both gone: the next round at once, with nobody over a limit.
    expect(h.effects.observe).toHaveBeenCalledTimes(2);
    expect(h.state()).toBe('waiting');
    expect(h.context().evicting).toEqual([]);
    expect(h.sent()).toHaveLength(2);
    h.stop();
  });

  it('ends the round there: no threshold reclaim or eviction in a round that evicted for local storage', async () => {
    const h = harness({ thresholds: [memoryHard], script: [{ memory: 400 * Mi }], overLimits: [[cache], []] });
    await h.advance(INTERVAL);
    // The conditions come first (the round's bookkeeping), then the local-storage eviction, and nothing else.
    expect(h.sent()).toEqual([pressure('MemoryPressure'), evictForStorage(cache)]);
    expect(h.effects.reclaimNodeResources).not.toHaveBeenCalled();
    expect(h.effects.selectPod).not.toHaveBeenCalled();
    // The round after cleanup, at once, has no fresher stats; the one after acts on the threshold.
    await h.advance(INTERVAL);
    expect(h.effects.selectPod).toHaveBeenCalledTimes(1);
    expect(h.sent()).toEqual([pressure('MemoryPressure'), evictForStorage(cache), evict(hog)]);
    expect(h.context().evictions).toBe(2);
    h.stop();
  });

  it('keeps a failed check in lastError and goes on with the thresholds in the same round', async () => {
    const h = harness({ thresholds: [memoryHard], script: [{ memory: 400 * Mi }], overLimits: [new Error('stats: summary unavailable'), []], cleanedUp: () => false });
    await h.advance(INTERVAL);
    expect(h.context().lastError).toBe('stats: summary unavailable');
    expect(h.effects.selectPod).toHaveBeenCalledTimes(1);
    expect(h.sent()).toEqual([pressure('MemoryPressure'), evict(hog)]);
    h.stop();
  });

  it('checks them with no threshold configured at all', async () => {
    const h = harness({ thresholds: [], script: [{ memory: 2 * Gi }], overLimits: [[scratch], []] });
    await h.advance(INTERVAL);
    expect(h.sent()).toEqual([evictForStorage(scratch)]);
    h.stop();
  });
});

describe('evictionManager: disk reclaim before eviction', () => {
  it.each<[string, Observations | null, boolean]>([
    // 20Gi available is above 10Gi + the 5Gi minimum reclaim: resolved.
    ['back above threshold and minimum reclaim: no eviction', { 'nodefs.available': { available: 20 * Gi, capacity: 100 * Gi, time: 0 } }, false],
    // 12Gi is above the threshold but not above it plus the minimum reclaim.
    ['above the threshold but within the minimum reclaim: eviction', { 'nodefs.available': { available: 12 * Gi, capacity: 100 * Gi, time: 0 } }, true],
    ['still below the threshold: eviction', { 'nodefs.available': { available: 6 * Gi, capacity: 100 * Gi, time: 0 } }, true],
    ['nothing reclaimed (null): eviction', null, true],
  ])('%s', async (_case, afterReclaim, evicts) => {
    const h = harness({ thresholds: [diskHard], script: [{ disk: 5 * Gi }], reclaim: () => afterReclaim });
    await h.advance(INTERVAL);
    expect(h.effects.reclaimNodeResources).toHaveBeenCalledExactlyOnceWith(diskHard);
    expect(h.effects.selectPod).toHaveBeenCalledTimes(evicts ? 1 : 0);
    expect(h.sent()).toEqual(evicts ? [pressure('DiskPressure'), evict(hog)] : [pressure('DiskPressure')]);
    h.stop();
  });

  it('counts every threshold after reclaim, not only the one reclaimed', async () => {
    // Reclaim brings the disk back, but memory is still under its threshold in what reclaim read.
    const h = harness({
      thresholds: [diskHard, memoryHard],
      script: [{ disk: 5 * Gi, memory: 1 * Gi }],
      reclaim: () => ({ 'nodefs.available': { available: 50 * Gi, capacity: 100 * Gi, time: 0 }, 'memory.available': { available: 100 * Mi, capacity: 4 * Gi, time: 0 } }),
    });
    await h.advance(INTERVAL);
    expect(h.effects.reclaimNodeResources).toHaveBeenCalledExactlyOnceWith(diskHard);
    expect(h.effects.selectPod).toHaveBeenCalledTimes(1);
    h.stop();
  });
});

describe('evictionManager: waiting for the evicted pod', () => {
  it('polls podCleanedUp each second while the pod is not cleaned up, and gives up after 30 s', async () => {
    const h = harness({ thresholds: [memoryHard], script: [{ memory: 400 * Mi }, { memory: 2 * Gi }], cleanedUp: () => false });
    await h.advance(INTERVAL);
    expect(h.effects.podCleanedUp).toHaveBeenCalledTimes(1);
    for (let second = 1; second < 30; second++) {
      await h.advance(1_000);
      expect(h.manager.getSnapshot().matches('awaitingCleanup')).toBe(true);
      expect(h.effects.podCleanedUp).toHaveBeenCalledTimes(second + 1);
    }
    // No new round while waiting.
    expect(h.effects.observe).toHaveBeenCalledTimes(1);
    await h.advance(1_000);
    expect(h.state()).toBe('waiting');
    expect(h.context().evicting).toEqual([]);
    const polls = h.effects.podCleanedUp.mock.calls.length;
    expect(polls).toBeGreaterThanOrEqual(30);
    expect(polls).toBeLessThanOrEqual(31);
    // Given up: the next round comes at once (the kubelet's loop does not sleep after an eviction), then one per interval; no more polling.
    expect(h.effects.observe).toHaveBeenCalledTimes(2);
    await h.advance(INTERVAL);
    expect(h.effects.podCleanedUp).toHaveBeenCalledTimes(polls);
    expect(h.effects.observe).toHaveBeenCalledTimes(3);
    h.stop();
  });

  it('stops waiting as soon as the pod is cleaned up', async () => {
    const h = harness({ thresholds: [memoryHard], script: [{ memory: 400 * Mi }, { memory: 2 * Gi }], cleanedUp: (call) => call >= 2 });
    await h.advance(INTERVAL);
    expect(h.manager.getSnapshot().matches('awaitingCleanup')).toBe(true);
    await h.advance(1_000);
    expect(h.manager.getSnapshot().matches('awaitingCleanup')).toBe(true);
    await h.advance(1_000);
    expect(h.state()).toBe('waiting');
    expect(h.effects.podCleanedUp).toHaveBeenCalledTimes(3);
    expect(h.context()).toMatchObject({ evicting: [], lastEviction: hog, evictions: 1 });
    // The next round comes at once, and the node, fine now, is left alone.
    expect(h.effects.observe).toHaveBeenCalledTimes(2);
    await h.advance(INTERVAL);
    expect(h.effects.observe).toHaveBeenCalledTimes(3);
    expect(h.effects.selectPod).toHaveBeenCalledTimes(1);
    h.stop();
  });

  it('keeps polling when podCleanedUp fails', async () => {
    let calls = 0;
    const h = harness({
      thresholds: [memoryHard],
      script: [{ memory: 400 * Mi }, { memory: 2 * Gi }],
      cleanedUp: () => {
        calls++;
        if (calls === 1) throw new Error('pod worker gone');
        return calls >= 3;
      },
    });
    await h.advance(INTERVAL);
    await h.advance(1_000);
    expect(h.manager.getSnapshot().matches('awaitingCleanup')).toBe(true);
    await h.advance(1_000);
    expect(h.state()).toBe('waiting');
    expect(calls).toBe(3);
    h.stop();
  });
});

describe('evictionManager: NODE.PRESSURE', () => {
  it('is sent when the conditions change only, and with no conditions once pressure clears after the transition period', async () => {
    const h = harness({
      thresholds: [memoryHard],
      // Low at the first two rounds, fine from then on. The eviction's cleanup is seen at once and
      // the second round follows at once, at T0+10s: its stats are no newer than the first's, so it
      // evicts nothing (thresholdsUpdatedStats) but keeps the condition.
      script: [{ memory: 400 * Mi }, { memory: 300 * Mi }, { memory: 2 * Gi }],
      transitionPeriodMs: 30_000,
    });
    await h.advance(INTERVAL);
    expect(h.sent()).toEqual([pressure('MemoryPressure'), evict(hog)]);
    expect(h.effects.observe).toHaveBeenCalledTimes(2);
    // Last met at T0+10s: still True at T0+20s and T0+30s, cleared at T0+40s.
    await h.advance(2 * INTERVAL);
    expect(h.sent().filter((e) => e.type === 'NODE.PRESSURE')).toHaveLength(1);
    expect(h.context().conditions).toEqual(['MemoryPressure']);
    await h.advance(INTERVAL);
    expect(h.sentAt().filter(([, type]) => type === 'NODE.PRESSURE')).toEqual([
      [INTERVAL, 'NODE.PRESSURE'],
      [4 * INTERVAL, 'NODE.PRESSURE'],
    ]);
    expect(h.sent().at(-1)).toEqual(pressure());
    expect(h.context().conditions).toEqual([]);
    // And nothing more while nothing changes.
    await h.advance(5 * INTERVAL);
    expect(h.sent()).toHaveLength(3);
    expect(h.effects.observe).toHaveBeenCalledTimes(10);
    h.stop();
  });

  it('is sent again when the set of conditions grows', async () => {
    const h = harness({
      thresholds: [memoryHard, diskHard],
      script: [{ memory: 400 * Mi, disk: 50 * Gi }, { memory: 400 * Mi, disk: 5 * Gi }],
      reclaim: () => null,
    });
    await h.advance(2 * INTERVAL);
    expect(h.sent().filter((e) => e.type === 'NODE.PRESSURE')).toEqual([pressure('MemoryPressure'), pressure('MemoryPressure', 'DiskPressure')]);
    // Memory goes first when both are met.
    expect(h.effects.reclaimNodeResources.mock.calls.map(([t]) => t.signal)).toEqual(['memory.available', 'memory.available']);
    h.stop();
  });

  it('comes at once for a soft threshold, while its eviction waits out the grace period', async () => {
    const softMemory: Threshold = { signal: 'memory.available', value: { quantity: 1 * Gi }, gracePeriodMs: 30_000 };
    const h = harness({ thresholds: [softMemory], script: [{ memory: 600 * Mi }] });
    await h.advance(INTERVAL);
    expect(h.sent()).toEqual([pressure('MemoryPressure')]);
    await h.advance(2 * INTERVAL);
    expect(h.effects.selectPod).not.toHaveBeenCalled();
    // First met at T0+10s: past its 30 s grace at T0+40s.
    await h.advance(INTERVAL);
    expect(h.effects.selectPod).toHaveBeenCalledExactlyOnceWith(softMemory, expect.anything(), 30);
    expect(h.sent()).toEqual([pressure('MemoryPressure'), evict(hog)]);
    h.stop();
  });
});

describe('evictionManager: failures', () => {
  it('records a failed read in lastError and keeps going', async () => {
    const h = harness({ thresholds: [memoryHard], script: [new Error('reading the summary: EIO'), { memory: 2 * Gi }] });
    await h.advance(INTERVAL);
    expect(h.state()).toBe('waiting');
    expect(h.context().lastError).toBe('reading the summary: EIO');
    expect(h.sent()).toEqual([]);
    await h.advance(INTERVAL);
    expect(h.effects.observe).toHaveBeenCalledTimes(2);
    // A good read clears it.
    expect(h.context().lastError).toBeNull();
    expect(h.context().observations['memory.available']?.available).toBe(2 * Gi);
    h.stop();
  });

  it('records a failed reclaim or pod selection in lastError, evicts nobody, and keeps going', async () => {
    const h = harness({ thresholds: [memoryHard], script: [{ memory: 400 * Mi }], choice: null });
    h.effects.selectPod.mockRejectedValueOnce(new Error('stats: summary unavailable'));
    await h.advance(INTERVAL);
    expect(h.state()).toBe('waiting');
    expect(h.context().lastError).toBe('stats: summary unavailable');
    expect(h.sent()).toEqual([pressure('MemoryPressure')]);
    h.effects.reclaimNodeResources.mockRejectedValueOnce(new Error('image service: UNAVAILABLE'));
    await h.advance(INTERVAL);
    expect(h.context().lastError).toBe('image service: UNAVAILABLE');
    expect(h.effects.selectPod).toHaveBeenCalledTimes(1);
    await h.advance(INTERVAL);
    expect(h.effects.observe).toHaveBeenCalledTimes(3);
    expect(h.effects.selectPod).toHaveBeenCalledTimes(2);
    h.stop();
  });
});
