/**
 * The agent's actors wired as `startAgent` wires them, on the FakeRuntime and one SimulatedClock:
 * the syncLoop with the real pod workers, pod machine, effects and PLEG. Tests add what they look
 * at (orphan kills, the container GC, a probe manager) and drive time and config themselves.
 */
import { type AnyActorLogic, type AnyActorRef, type SimulatedClock, createActor, fromCallback } from 'xstate';
import { createPodEffects } from '../../src/pod/podEffects.ts';
import { createRelister } from '../../src/pleg/relister.ts';
import { silentLogger } from '../../src/log.ts';
import { createPlegMachine } from '../../src/pleg/pleg.ts';
import { createPodMachine } from '../../src/pod/pod.ts';
import { PodManager } from '../../src/pod/podManager.ts';
import { type PodWorkersDeps, createPodWorkersLogic } from '../../src/podworkers/podWorkers.ts';
import { createSyncLoopMachine } from '../../src/kubelet/syncLoop.ts';
import type { SourceName } from '../../src/api/types.ts';
import { FakeRuntime } from '../../src/runtime/fake.ts';
import { StatusManager } from '../../src/status/manager.ts';
import { IMAGE, fakeRuntimeDeps, testClock } from './pods.ts';

export interface FakeNodeOptions {
  maxPods?: number;
  /** Sources the syncLoop waits for before housekeeping; none by default (housekeeping at once). */
  expectedSources?: SourceName[];
  /** Housekeeping's runtime hooks; by default they do nothing. */
  killOrphanPod?: PodWorkersDeps['killOrphanPod'];
  collectGarbage?: PodWorkersDeps['collectGarbage'];
  /** The probe manager, given the node's parts; none by default. */
  probes?: (node: { clock: SimulatedClock; runtime: FakeRuntime; statuses: StatusManager; podManager: PodManager }) => AnyActorLogic;
}

export function startFakeNode(options: FakeNodeOptions = {}) {
  const clock = testClock();
  const now = () => clock.now();
  const runtime = new FakeRuntime({ now });
  runtime.addImage(IMAGE);
  const statuses = new StatusManager();
  const podManager = new PodManager();
  const podMachine = createPodMachine(createPodEffects({ ...fakeRuntimeDeps(runtime, now), statuses, runtimeName: 'fake' }));
  const relister = createRelister(runtime, now);
  const machine = createSyncLoopMachine({
    sources: fromCallback(() => {}),
    pods: createPodWorkersLogic({
      podMachine,
      podManager,
      statuses,
      node: { name: 'node-a', maxPods: options.maxPods ?? 110, labels: {}, os: 'linux' },
      syncFrequencyMs: 60_000,
      errorBackoffMs: 10_000,
      now,
      random: () => 0,
      log: silentLogger,
      listRuntimePodUids: async () => relister.runningPodUids(),
      killOrphanPod: options.killOrphanPod ?? (async () => {}),
      collectGarbage: options.collectGarbage ?? (async () => {}),
      containerGcPeriodMs: 60_000,
    }),
    pleg: createPlegMachine(relister),
    ...(options.probes ? { probes: options.probes({ clock, runtime, statuses, podManager }) } : {}),
  });
  const syncLoop = createActor(machine, {
    clock,
    input: { expectedSources: options.expectedSources ?? [], syncTickMs: 1_000, housekeepingMs: 2_000, plegPeriodMs: 1_000 },
  });
  syncLoop.start();
  const podActor = (uid: string) => syncLoop.system.get(`pod/${uid}`) as AnyActorRef | undefined;
  return { clock, now, runtime, statuses, podManager, syncLoop, podActor };
}
