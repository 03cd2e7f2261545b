import { afterEach, describe, expect, it, vi } from 'vitest';
import { type EventObject, createActor, fromCallback } from 'xstate';
import type { EventOf } from '../../src/events.ts';
import { createPodEffects } from '../../src/pod/podEffects.ts';
import { podMachineWith } from '../../src/pod/pod.ts';
import { PodStages } from '../../src/podworkers/podStages.ts';
import { PodWorkers } from '../../src/podworkers/podWorkers.ts';
import { StatusManager } from '../../src/status/manager.ts';
import type { CriErrorCode } from '../../src/runtime/types.ts';
import { ManualClock } from '../support/manualClock.ts';
import { IMAGE, fakePodWork, makePod } from '../support/pods.ts';
import { TestRuntime } from '../support/testRuntime.ts';

const isSynced = (event: EventObject): event is EventOf<'POD.SYNCED'> => event.type === 'POD.SYNCED';

/**
 * The pod workers' registry and work queue over real pod actors on the TestRuntime, every clock
 * the manual one: the shared sync tick is `syncDue`, called by the test as the sync loop would.
 */
function workersOnManualClock(random: number) {
  const clock = new ManualClock();
  const now = () => clock.now();
  const runtime = new TestRuntime({ clock });
  runtime.addImage(IMAGE);
  const effects = createPodEffects({ work: fakePodWork(runtime, now), statuses: new StatusManager(), runtimeName: 'fake' });
  const reports: EventObject[] = [];
  let workers: PodWorkers | undefined;
  // The supervisor (src/kubelet/dispatch.ts, reduced): each sync report goes to the work queue.
  const parent = createActor(
    fromCallback<EventObject>(({ receive }) => {
      receive((event) => {
        reports.push(event);
        if (isSynced(event)) workers?.schedule(event);
      });
    }),
    { clock },
  );
  parent.start();
  workers = new PodWorkers({
    podMachine: podMachineWith(effects),
    parent,
    stages: new PodStages(),
    desired: () => undefined,
    onEnded: () => {},
    syncFrequencyMs: 60_000,
    errorBackoffMs: 10_000,
    now,
    random: () => random,
  });
  const synced = () => reports.filter((r) => r.type === 'POD.SYNCED');
  return { clock, runtime, workers, reports, synced };
}

let stop: (() => void) | undefined;
afterEach(() => stop?.());

describe('the pod workers retry a failed sync', () => {
  const start = (code: CriErrorCode, message: string) => {
    const h = workersOnManualClock(0.5);
    stop = () => h.workers.releaseAll();
    h.runtime.failNext('runPodSandbox', code, message);
    h.workers.start(makePod('net'));
    return h;
  };
  /** Moves the clock to `ms` after the failed sync and runs the shared tick there. */
  const tickAt = async (h: ReturnType<typeof start>, failedAt: number, ms: number) => {
    h.clock.advance(failedAt + ms - h.clock.now());
    h.workers.syncDue();
    await new Promise((resolve) => setImmediate(resolve));
  };
  const sandboxCalls = (h: ReturnType<typeof start>) => h.runtime.callLog('runPodSandbox').length;

  it('after 1–1.5 s when the network is not ready (backOffOnTransientErrorPeriod), not the 10 s error back-off', async () => {
    const h = start('UNKNOWN', 'network is not ready: container runtime network not ready: NetworkReady=false reason:NetworkPluginNotReady message:Network plugin returns error: cni plugin not initialized');
    await vi.waitFor(() => expect(h.synced()).toHaveLength(1));
    expect(h.synced()[0]).toMatchObject({ ok: false, error: expect.stringContaining('network is not ready') });
    const failedAt = h.clock.now();
    // 1 s × 1.25 with this draw of the jitter: not due a millisecond before.
    await tickAt(h, failedAt, 1_249);
    expect(sandboxCalls(h)).toBe(1);
    await tickAt(h, failedAt, 1_250);
    await vi.waitFor(() => expect(h.synced()).toHaveLength(2));
    expect(h.synced()[1]).toMatchObject({ ok: true });
    expect(sandboxCalls(h)).toBe(2);
  });

  it('after the error back-off (10 s × [1, 1.5)) for any other error', async () => {
    const h = start('UNAVAILABLE', 'connection refused');
    await vi.waitFor(() => expect(h.synced()).toHaveLength(1));
    const failedAt = h.clock.now();
    await tickAt(h, failedAt, 1_250);
    await tickAt(h, failedAt, 12_499);
    expect(sandboxCalls(h)).toBe(1);
    await tickAt(h, failedAt, 12_500);
    await vi.waitFor(() => expect(h.synced()).toHaveLength(2));
    expect(sandboxCalls(h)).toBe(2);
  });
});
