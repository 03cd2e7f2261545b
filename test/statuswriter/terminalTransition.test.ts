/**
 * A pod's terminal phase reaches the API only once its containers have stopped (the kubelet's
 * mergePodStatus with CouldHaveRunningContainers, then TerminatePod's forced update): the real pod
 * actor and its effects on the TestRuntime, the StatusWriter on the in-memory API, wired as
 * composeNode wires them (the pod workers' stages, learned from the actor's reports, answer "could it
 * still have running containers"; POD.TERMINATED tells the writer).
 */
import { describe, expect, it, vi } from 'vitest';
import { createActor, fromCallback, waitFor, type EventObject } from 'xstate';
import type { Pod, PodStatus } from '../../src/api/types.ts';
import { silentLogger } from '../../src/log.ts';
import { podMachineWith } from '../../src/pod/pod.ts';
import { createPodEffects } from '../../src/pod/podEffects.ts';
import { StatusManager } from '../../src/status/manager.ts';
import { StatusWriter } from '../../src/statuswriter/effects.ts';
import { PodStages } from '../../src/podworkers/podStages.ts';
import { lifecycleRig } from '../kuberuntime/support.ts';
import { ManualClock } from '../support/manualClock.ts';
import { MemoryApi } from '../support/memoryApi.ts';
import { container, makePod } from '../support/pods.ts';

function rig(spec: Partial<Pod['spec']>, options: { podTerminated?: boolean } = {}) {
  const runtime = lifecycleRig();
  const api = new MemoryApi();
  const statuses = new StatusManager();
  const effects = createPodEffects({ work: runtime.deps, statuses, runtimeName: 'fake' });
  const stages = new PodStages();
  const created = api.putPod({ ...makePod('deadline', spec), metadata: { ...makePod('deadline').metadata, annotations: { 'kubernetes.io/config.source': 'api' } }, status: { phase: 'Pending' } });
  const writer = new StatusWriter({
    api,
    statuses,
    // The agent's copy of the pod follows the API, as the watch keeps it.
    pod: (uid) => {
      const current = api.pod('default', 'deadline');
      return current?.metadata.uid === uid ? current : undefined;
    },
    stages,
    log: silentLogger,
  });
  // The pod workers' part (src/podworkers/podWorkers.ts reported): each report recorded as the pod's stage.
  const parent = createActor(
    fromCallback<EventObject>(({ receive }) => {
      receive((event) => {
        const uid = created.metadata.uid;
        if (event.type === 'POD.TERMINATING') stages.terminating(uid);
        if (event.type === 'POD.TERMINATED') stages.terminated(uid);
        if (event.type === 'POD.TERMINATED' && options.podTerminated !== false) writer.podTerminated(uid);
      });
    }),
    { clock: runtime.clock },
  );
  parent.start();
  stages.started(created);
  const actor = createActor(podMachineWith(effects), { parent, input: { pod: created }, clock: runtime.clock });
  actor.start();
  const apiStatus = (): PodStatus => api.pod('default', 'deadline')?.status ?? {};
  return { ...runtime, api, statuses, writer, actor, apiStatus };
}

// A container that takes its time to stop: its StopContainer is held until the test lets it go.
const deadlinePod = { activeDeadlineSeconds: 3, restartPolicy: 'Never' as const, containers: [container('app')] };

describe('the terminal phase in the API waits for the containers to stop', () => {
  it('a pod past its activeDeadlineSeconds shows its prior phase while its container is being stopped, then Failed / DeadlineExceeded', async () => {
    const h = rig(deadlinePod);
    await waitFor(h.actor, (s) => s.matches({ syncing: { worker: 'idle' } }));
    await vi.waitFor(() => expect(h.apiStatus().phase).toBe('Running'));

    const stop = h.runtime.holdCalls('stopContainer');
    h.clock.increment(3_000);
    h.actor.send({ type: 'POD.SYNC' });
    await stop.whenPending(1);
    // The agent knows the pod Failed; the API is told everything else (Ready False), not the phase.
    expect(h.statuses.get('uid-deadline')).toMatchObject({ phase: 'Failed', reason: 'DeadlineExceeded' });
    await vi.waitFor(() => expect(h.apiStatus().conditions?.find((c) => c.type === 'Ready')).toMatchObject({ status: 'False', reason: 'PodFailed' }));
    expect(h.apiStatus().phase).toBe('Running');
    expect(h.apiStatus().reason).toBeUndefined();
    expect(h.apiStatus().message).toBeUndefined();
    expect(h.apiStatus().containerStatuses?.[0]?.state.running).toBeDefined();

    stop.releaseAll();
    await waitFor(h.actor, (s) => s.hasTag('terminated'));
    await vi.waitFor(() =>
      expect(h.apiStatus()).toMatchObject({
        phase: 'Failed',
        reason: 'DeadlineExceeded',
        message: 'Pod was active on the node longer than the specified deadline',
      }),
    );
    expect(h.apiStatus().containerStatuses?.[0]?.state.terminated).toBeDefined();
    h.writer.stop();
  });

  it('a terminal phase held back is written when the actor says its containers stopped, or on the next resync if that word is missed', async () => {
    for (const told of [true, false]) {
      const api = new MemoryApi();
      const clock = new ManualClock();
      const statuses = new StatusManager();
      api.putPod({ ...makePod('p'), metadata: { ...makePod('p').metadata, annotations: { 'kubernetes.io/config.source': 'api' } }, status: { phase: 'Running' } });
      let running = true;
      const writer = new StatusWriter({
        api,
        statuses,
        pod: () => api.pod('default', 'p'),
        stages: { isFinished: () => false, couldHaveRunningContainers: () => running },
        log: silentLogger,
      });
      statuses.setPodStatus('uid-p', { phase: 'Failed', reason: 'DeadlineExceeded', conditions: [{ type: 'Ready', status: 'False', reason: 'PodFailed' }] });
      await clock.settle(0);
      expect(api.pod('default', 'p')?.status).toMatchObject({ phase: 'Running', conditions: [{ type: 'Ready', status: 'False' }] });
      expect(api.pod('default', 'p')?.status?.reason).toBeUndefined();
      running = false;
      if (told) writer.podTerminated('uid-p');
      await clock.settle(0);
      expect(api.pod('default', 'p')?.status?.phase, told ? 'told' : 'not told').toBe(told ? 'Failed' : 'Running');
      writer.resync();
      await clock.settle(0);
      expect(api.pod('default', 'p')?.status).toMatchObject({ phase: 'Failed', reason: 'DeadlineExceeded' });
      expect(api.count('patchPodStatus')).toBe(2);
      writer.stop();
    }
  });
});
