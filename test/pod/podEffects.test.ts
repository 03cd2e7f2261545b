import { describe, expect, it } from 'vitest';
import { createActor, waitFor } from 'xstate';
import type { Pod } from '../../src/api/types.ts';
import { createPodEffects, untilActiveDeadlineMs } from '../../src/pod/podEffects.ts';
import { podMachineWith } from '../../src/pod/pod.ts';
import type { CallTrace } from '../../src/runtime/callTrace.ts';
import type { PodSandboxConfig } from '../../src/runtime/types.ts';
import { StatusManager } from '../../src/status/manager.ts';
import { type LifecycleRig, lifecycleRig } from '../kuberuntime/support.ts';
import { container, createRecorder, makePod } from '../support/pods.ts';

const noMemory = { backoff: {}, reasons: {} };
const noTrace: CallTrace = { started: () => {}, finished: () => {} };

/** A trace that keeps what it is told, as `started Call target` / `finished Call target [error]` lines. */
function recordingTrace() {
  const lines: string[] = [];
  const durations: number[] = [];
  const underWay = new Set<number>();
  const trace: CallTrace = {
    started: ({ id, call, target }) => {
      underWay.add(id);
      lines.push(`started ${call} ${target}`.trimEnd());
    },
    finished: ({ id, call, target }, durationMs, error) => {
      if (!underWay.delete(id)) throw new Error(`call ${id} finished without having started`);
      durations.push(durationMs);
      lines.push(`finished ${call} ${target}${error ? ` [${error instanceof Error ? error.message : String(error)}]` : ''}`.trimEnd());
    },
  };
  return { trace, lines, durations, underWay };
}

function effectsRig() {
  const rig = lifecycleRig();
  const statuses = new StatusManager();
  const effects = createPodEffects({ work: rig.deps, statuses, runtimeName: 'fake' });
  const recorder = createRecorder();
  const parent = createActor(recorder.logic, { clock: rig.clock });
  parent.start();
  const start = (pod: Pod) => {
    const actor = createActor(podMachineWith(effects), { parent, input: { pod }, clock: rig.clock });
    actor.start();
    return actor;
  };
  return { ...rig, statuses, effects, reports: recorder.reports, start };
}

const stopTimeouts = (rig: LifecycleRig) => rig.runtime.calls.filter((c) => c.method === 'stopContainer').map((c) => c.timeoutSeconds);
const killLogs = (rig: LifecycleRig) => rig.events.events.filter((e) => e.reason === 'Killing').length;

describe('a second, shorter kill', () => {
  it('reuses the preStop hook already under way and counts its time against the shorter grace period', async () => {
    const rig = effectsRig();
    const pod = makePod('p', { terminationGracePeriodSeconds: 30, containers: [container('main', { lifecycle: { preStop: { exec: { command: ['drain'] } } } })] });
    const actor = rig.start(pod);
    await waitFor(actor, (s) => s.matches({ syncing: { worker: 'idle' } }));
    const hold = rig.runtime.holdCalls('execSync');

    actor.send({ type: 'POD.KILL' });
    await hold.whenPending(1);
    rig.clock.increment(4_000);
    actor.send({ type: 'POD.KILL', gracePeriodSeconds: 10 });
    expect(actor.getSnapshot().context.gracePeriodSeconds).toBe(10);
    // The second termination reached the container and waits on the same hook run.
    await expect.poll(() => killLogs(rig)).toBe(2);
    rig.clock.increment(2_000);
    hold.releaseAll();

    await waitFor(actor, (s) => s.hasTag('terminated'));
    expect(rig.runtime.callLog('execSync')).toHaveLength(1);
    // 10 s of grace, 6 of them spent in preStop since the first kill started it.
    expect(stopTimeouts(rig)).toEqual([4]);
  });

  it('forgets finished preStop runs: a later kill of a new container runs its own hook', async () => {
    const rig = effectsRig();
    const pod = makePod('p', { containers: [container('main', { lifecycle: { preStop: { exec: { command: ['drain'] } } } })] });
    const actor = rig.start(pod);
    await waitFor(actor, (s) => s.matches({ syncing: { worker: 'idle' } }));
    actor.send({ type: 'POD.KILL', deleted: true });
    await waitFor(actor, (s) => s.matches({ terminated: 'finished' }));
    expect(rig.runtime.callLog('execSync')).toHaveLength(1);
    expect(stopTimeouts(rig)).toEqual([5]);
  });
});

describe('activeDeadlineSeconds', () => {
  it('asks for the next sync no later than the deadline, then fails the pod with DeadlineExceeded', async () => {
    const rig = effectsRig();
    const pod = makePod('d', { activeDeadlineSeconds: 30 });
    let outcome = await rig.effects.syncPod({ pod, memory: noMemory }, new AbortController().signal, noTrace);
    expect(outcome.retryAfterMs).toBe(30_000);

    rig.clock.increment(12_500);
    outcome = await rig.effects.syncPod({ pod, memory: outcome.memory }, new AbortController().signal, noTrace);
    expect(outcome.retryAfterMs).toBe(17_500);
    expect(outcome.isTerminal).toBe(false);

    rig.clock.increment(17_500);
    outcome = await rig.effects.syncPod({ pod, memory: outcome.memory }, new AbortController().signal, noTrace);
    expect(outcome).toMatchObject({ isTerminal: true, phase: 'Failed' });
    expect(rig.statuses.get('uid-d')).toMatchObject({ phase: 'Failed', reason: 'DeadlineExceeded' });
  });

  it('keeps a sooner retry (a backoff) and ignores pods without a deadline', () => {
    const pod = makePod('d', { activeDeadlineSeconds: 10 });
    const status = { phase: 'Running' as const, startTime: '2026-01-01T00:00:00Z' };
    const start = Date.parse(status.startTime);
    expect(untilActiveDeadlineMs(pod, status, start + 4_000)).toBe(6_000);
    expect(untilActiveDeadlineMs(pod, status, start + 11_000)).toBe(0);
    expect(untilActiveDeadlineMs(makePod('n'), status, start)).toBeUndefined();
    expect(untilActiveDeadlineMs(pod, { ...status, phase: 'Failed' }, start)).toBeUndefined();
  });

  it('the pod actor reports the deadline to its supervisor and terminates on the sync that follows it', async () => {
    const rig = effectsRig();
    const actor = rig.start(makePod('d', { activeDeadlineSeconds: 3 }));
    await waitFor(actor, (s) => s.matches({ syncing: { worker: 'idle' } }));
    expect(rig.reports.at(-1)).toMatchObject({ type: 'POD.SYNCED', uid: 'uid-d', retryAfterMs: 3_000 });
    rig.clock.increment(3_000);
    actor.send({ type: 'POD.SYNC' });
    await waitFor(actor, (s) => s.hasTag('terminated'));
    expect(rig.statuses.get('uid-d')).toMatchObject({ phase: 'Failed', reason: 'DeadlineExceeded' });
    expect(await rig.runtime.listContainers({ state: 'CONTAINER_RUNNING' })).toEqual([]);
  });
});

describe('runtime calls are reported to the effect run\'s trace', () => {
  it('names each call and what it is about, with container names for IDs, and pairs every start with a finish', async () => {
    const rig = effectsRig();
    const pod = makePod('t', { containers: [container('web'), container('side')] });
    const { trace, lines, durations, underWay } = recordingTrace();
    await rig.effects.syncPod({ pod, memory: noMemory }, new AbortController().signal, trace);
    const finished = lines.filter((l) => l.startsWith('finished '));
    expect(lines.filter((l) => l.startsWith('started '))).toHaveLength(finished.length);
    expect(underWay.size).toBe(0);
    expect(finished).toEqual(expect.arrayContaining([
      'finished RunPodSandbox sandbox',
      'finished CreateContainer web',
      'finished StartContainer web',
      'finished CreateContainer side',
      'finished StartContainer side',
    ]));
    expect(lines.indexOf('started RunPodSandbox sandbox')).toBeLessThan(lines.indexOf('started CreateContainer web'));
    expect(durations.every((d) => d >= 0)).toBe(true);
    // Containers the run learned by listing are named too.
    const kill = recordingTrace();
    await rig.effects.terminatePod({ pod, gracePeriodSeconds: 1, memory: noMemory }, new AbortController().signal, kill.trace);
    expect(kill.lines).toEqual(expect.arrayContaining(['finished StopContainer web', 'finished StopContainer side', 'finished StopPodSandbox sandbox']));
  });

  it('reports a failed call with its error', async () => {
    const rig = effectsRig();
    rig.runtime.failNext('createContainer', 'INTERNAL', 'disk full');
    const { trace, lines } = recordingTrace();
    const outcome = await rig.effects.syncPod({ pod: makePod('f'), memory: noMemory }, new AbortController().signal, trace);
    expect(outcome.errors.length).toBeGreaterThan(0);
    expect(lines.find((l) => l.startsWith('finished CreateContainer'))).toMatch(/^finished CreateContainer main \[.*disk full.*\]$/);
  });
});

describe('a pod\'s cleanup after its kill', () => {
  it('removes what the kill last saw without reading the runtime again; a cleanup without a kill before it reads', async () => {
    const rig = effectsRig();
    const pod = makePod('gone', { containers: [container('web')] });
    await rig.effects.syncPod({ pod, memory: noMemory }, new AbortController().signal, noTrace);
    await rig.effects.terminatePod({ pod, gracePeriodSeconds: 1, memory: noMemory }, new AbortController().signal, noTrace);
    const cleanup = recordingTrace();
    await rig.effects.cleanupPod({ pod, removeRuntime: true, memory: noMemory }, new AbortController().signal, cleanup.trace);
    expect(cleanup.lines.filter((l) => l.startsWith('started'))).toEqual(['started RemoveContainer web', 'started RemovePodSandbox sandbox']);
    expect(await rig.runtime.listContainers()).toEqual([]);
    expect(rig.statuses.get(pod.metadata.uid)?.containerStatuses?.[0]?.state.terminated).toBeDefined();
    // Again (a retry, or a pod cleaned without a kill in this run): read first.
    const again = recordingTrace();
    await rig.effects.cleanupPod({ pod, removeRuntime: true, memory: noMemory }, new AbortController().signal, again.trace);
    expect(again.lines.filter((l) => l.startsWith('started')).some((l) => /List|Status/.test(l))).toBe(true);
  });
});

describe("the pod's cgroup", () => {
  const cgroups = (failure?: string) => {
    const calls: string[] = [];
    return {
      calls,
      podCgroups: {
        parentOf: (pod: Pod) => `/kubepods/pod${pod.metadata.uid}`,
        ensurePod: async (pod: Pod) => {
          calls.push(`ensure ${pod.metadata.name}`);
          if (failure) throw Object.assign(new Error(`failed to ensure that the pod: ${pod.metadata.uid} cgroups exist and are correctly applied: ${failure}`), { causeText: failure });
        },
        destroyPod: async (pod: Pod) => void calls.push(`destroy ${pod.metadata.name}`),
      },
    };
  };

  it('is made before the sandbox, which gets it as its cgroup parent, and removed once the pod has terminated', async () => {
    const rig = lifecycleRig();
    const sandboxes: PodSandboxConfig[] = [];
    const runPodSandbox = rig.runtime.runPodSandbox.bind(rig.runtime);
    rig.runtime.runPodSandbox = (config, handler, opts) => {
      sandboxes.push(config);
      return runPodSandbox(config, handler, opts);
    };
    const { calls, podCgroups } = cgroups();
    const effects = createPodEffects({ work: { ...rig.deps, host: { ...rig.deps.host, podCgroups } }, statuses: new StatusManager(), runtimeName: 'fake' });
    const pod = makePod('p');
    await effects.syncPod({ pod, memory: noMemory }, new AbortController().signal, noTrace);
    expect(calls).toEqual(['ensure p']);
    expect(sandboxes.map((s) => s.linux?.cgroupParent)).toEqual([`/kubepods/pod${pod.metadata.uid}`]);
    await effects.terminatePod({ pod, gracePeriodSeconds: 1, memory: noMemory }, new AbortController().signal, noTrace);
    await effects.cleanupPod({ pod, removeRuntime: true, memory: noMemory }, new AbortController().signal, noTrace);
    expect(calls).toEqual(['ensure p', 'destroy p']);
  });

  it('that cannot be made holds the pod back: a sync error with the kubelet\'s message, a FailedToCreatePodContainer event, nothing created', async () => {
    const rig = lifecycleRig();
    const { podCgroups } = cgroups('EROFS: read-only file system');
    const effects = createPodEffects({ work: { ...rig.deps, host: { ...rig.deps.host, podCgroups } }, statuses: new StatusManager(), runtimeName: 'fake' });
    const pod = makePod('p');
    const outcome = await effects.syncPod({ pod, memory: noMemory }, new AbortController().signal, noTrace);
    expect(outcome.errors).toEqual([`failed to ensure that the pod: ${pod.metadata.uid} cgroups exist and are correctly applied: EROFS: read-only file system`]);
    expect(rig.events.events.filter((e) => e.reason === 'FailedToCreatePodContainer').map((e) => e.message)).toEqual(['unable to ensure pod container exists: EROFS: read-only file system']);
    expect(rig.runtime.calls.filter((c) => c.method === 'runPodSandbox')).toEqual([]);
  });
});
