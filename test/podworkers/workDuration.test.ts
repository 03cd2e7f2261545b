/** Pod worker durations by the kubelet's operation type (src/podworkers/workDuration.ts). */
import { describe, expect, it } from 'vitest';
import type { PodEffects, SyncOutcome } from '../../src/pod/pod.ts';
import { type PodWorkType, syncWorkType, timedPodEffects } from '../../src/podworkers/workDuration.ts';
import type { CallTrace } from '../../src/runtime/callTrace.ts';
import { ManualClock } from '../support/manualClock.ts';
import { makePod } from '../support/pods.ts';

const pod = makePod('web');
const updated = { ...pod, spec: { ...pod.spec } };

describe('syncWorkType', () => {
  it.each([
    ['create', undefined, pod],
    ['sync', pod, pod],
    ['update', pod, updated],
  ] as const)('%s', (type, previous, next) => {
    expect(syncWorkType(previous, next)).toBe(type);
  });
});

describe('timedPodEffects', () => {
  it('times each piece of work on the clock under its type, failures included, and starts over after a termination', async () => {
    const clock = new ManualClock();
    const wait = (ms: number) => new Promise<void>((resolve) => clock.setTimeout(resolve, ms));
    const outcome = { errors: [] } as unknown as SyncOutcome;
    const effects: PodEffects = {
      syncPod: async (request) => {
        await wait(request.pod === updated ? 2_000 : 250);
        if (request.pod === updated) throw new Error('sync failed');
        return outcome;
      },
      terminatePod: () => wait(5_000),
      cleanupPod: () => wait(100),
    };
    const observed: [PodWorkType, number][] = [];
    const timed = timedPodEffects(effects, () => clock.now(), (type, seconds) => observed.push([type, seconds]));
    const calls = {} as CallTrace;
    const signal = new AbortController().signal;
    const memory = { backoff: {}, reasons: {} };
    const run = async <T>(work: Promise<T>, ms: number) => {
      const settled = work.then(
        () => undefined,
        () => undefined,
      );
      await clock.settle(ms);
      await settled;
      return work;
    };
    await run(timed.syncPod({ pod, memory }, signal, calls), 250);
    await run(timed.syncPod({ pod, memory }, signal, calls), 250);
    await expect(run(timed.syncPod({ pod: updated, memory }, signal, calls), 2_000)).rejects.toThrow('sync failed');
    await run(timed.terminatePod({ pod: updated, gracePeriodSeconds: 5, memory }, signal, calls), 5_000);
    await run(timed.cleanupPod({ pod: updated, removeRuntime: true, memory }, signal, calls), 100);
    await run(timed.syncPod({ pod: updated, memory }, signal, calls).catch(() => outcome), 2_000);
    expect(observed).toEqual([
      ['create', 0.25],
      ['sync', 0.25],
      ['update', 2],
      ['kill', 5],
      ['terminated', 0.1],
      ['create', 2],
    ]);
  });
});
