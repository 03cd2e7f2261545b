/** The pod startup latency tracker (src/kubelet/podStartupLatency.ts): one observation per pod, image pulls left out of the SLI. */
import { describe, expect, it } from 'vitest';
import type { Pod, PodStatus } from '../../src/api/types.ts';
import { type PodStartRecord, PodStartupLatency, hasPodStarted, podStartStep } from '../../src/kubelet/podStartupLatency.ts';
import { ManualClock } from '../support/manualClock.ts';
import { makePod } from '../support/pods.ts';

const T0 = Date.parse('2026-01-01T00:00:00Z');
const seenAt = (ms: number, extra: Partial<Pod['spec']> = {}): Pod => {
  const pod = makePod('web', extra);
  pod.metadata.annotations = { 'kubernetes.io/config.seen': new Date(ms).toISOString() };
  return pod;
};
const running = (startedAt?: string) => ({ name: 'main', state: startedAt ? { running: { startedAt } } : { waiting: { reason: 'ContainerCreating' } } });
const status = (phase: PodStatus['phase'], ...containers: ReturnType<typeof running>[]) => ({ phase, containerStatuses: containers }) as unknown as PodStatus;
const record: PodStartRecord = { seenMs: T0, firstPullStartMs: null, lastPullEndMs: null, runningSeen: false };

describe('podStartStep', () => {
  it.each<[string, PodStartRecord | undefined, PodStatus | undefined, number, Partial<ReturnType<typeof podStartStep>>]>([
    ['starts tracking at the first Pending status, from the seen annotation', undefined, status('Pending', running()), T0 + 500, { record }],
    ['does not track a pod first seen Running (adopted)', undefined, status('Running', running('x')), T0 + 500, { record: undefined }],
    ['observes Running once, every container started at once', record, status('Running', running('x')), T0 + 3_000, { record: undefined, startSeconds: 3, sliSeconds: 3 }],
    ['observes Running before every container has started', record, status('Running', running('x'), running()), T0 + 2_000, { record: { ...record, runningSeen: true }, startSeconds: 2 }],
    ['leaves the pull time out of the SLI', { ...record, runningSeen: true, firstPullStartMs: T0 + 1_000, lastPullEndMs: T0 + 3_500 }, status('Running', running('x')), T0 + 5_000, { record: undefined, sliSeconds: 2.5 }],
    ['counts no pull that never finished', { ...record, firstPullStartMs: T0 + 1_000 }, status('Running', running('x')), T0 + 4_000, { sliSeconds: 4, startSeconds: 4 }],
    ['forgets a pod that failed before running', record, status('Failed', running()), T0 + 1_000, { record: undefined }],
    ['forgets a deleted pod', record, undefined, T0 + 1_000, { record: undefined }],
  ])('%s', (_, before, next, nowMs, expected) => {
    const step = podStartStep(before, seenAt(T0), next, nowMs);
    expect(step).toEqual({ record: undefined, ...expected });
  });

  it('takes the first Pending status as first sight when the source did not say', () => {
    expect(podStartStep(undefined, makePod('web'), status('Pending', running()), T0 + 42).record?.seenMs).toBe(T0 + 42);
  });

  it('holds a pod as started only when it has containers and every one runs', () => {
    expect(hasPodStarted(status('Running'))).toBe(false);
    expect(hasPodStarted(status('Running', running('x'), running()))).toBe(false);
    expect(hasPodStarted(status('Running', running('x'), running('y')))).toBe(true);
  });
});

describe('PodStartupLatency', () => {
  function tracker() {
    const clock = new ManualClock(T0);
    const starts: number[] = [];
    const slis: [number, boolean][] = [];
    const latency = new PodStartupLatency(() => clock.now(), { podStarted: (s) => starts.push(s), podStartedSli: (s, first) => slis.push([s, first]) });
    return { clock, starts, slis, latency };
  }

  it('observes a pod whose image took 2 s to pull once, its SLI 2 s shorter than its start', () => {
    const { clock, starts, slis, latency } = tracker();
    const pod = seenAt(T0);
    clock.advance(300);
    latency.statusChanged('uid-web', pod, status('Pending', running()));
    clock.advance(200);
    latency.pullStarted('uid-web');
    clock.advance(2_000);
    latency.pullFinished('uid-web');
    clock.advance(700);
    latency.statusChanged('uid-web', pod, status('Running', running('x')));
    latency.statusChanged('uid-web', pod, status('Running', running('x')));
    expect(starts).toEqual([3.2]);
    expect(slis).toEqual([[1.2, true]]);
    expect(latency.size).toBe(0);
  });

  it('keeps only the first pull start and the last pull end, and ignores pulls of pods it does not track', () => {
    const { clock, slis, latency } = tracker();
    latency.pullStarted('uid-web');
    latency.statusChanged('uid-web', seenAt(T0), status('Pending', running()));
    latency.pullStarted('uid-web');
    clock.advance(1_000);
    latency.pullStarted('uid-web');
    latency.pullFinished('uid-web');
    clock.advance(1_000);
    latency.pullFinished('uid-web');
    clock.advance(500);
    latency.statusChanged('uid-web', seenAt(T0), status('Running', running('x')));
    expect(slis).toEqual([[0.5, true]]);
  });

  it('labels only the first pod with a network first_with_network', () => {
    const { slis, latency } = tracker();
    const hostPod = seenAt(T0, { hostNetwork: true });
    for (const [uid, pod] of [['a', hostPod], ['b', seenAt(T0)], ['c', seenAt(T0)]] as const) {
      latency.statusChanged(uid, pod, status('Pending', running()));
      latency.statusChanged(uid, pod, status('Running', running('x')));
    }
    expect(slis.map(([, first]) => first)).toEqual([false, true, false]);
  });

  it('forgets a pod that ends before it starts', () => {
    const { latency, starts } = tracker();
    latency.statusChanged('uid-web', seenAt(T0), status('Pending', running()));
    latency.statusChanged('uid-web', seenAt(T0), undefined);
    expect(latency.size).toBe(0);
    latency.statusChanged('uid-web', seenAt(T0), status('Running', running('x')));
    expect(starts).toEqual([]);
  });
});
