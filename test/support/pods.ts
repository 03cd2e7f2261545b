/** Pod fixtures and a harness that runs pod actors against the TestRuntime. */
import { type AnyActorRef, type EventObject, SimulatedClock, createActor, fromCallback, waitFor } from 'xstate';
import type { Container, Pod } from '../../src/api/types.ts';
import { createPodEffects } from '../../src/pod/podEffects.ts';
import type { PodWork } from '../../src/kuberuntime/podWork.ts';
import { ImagePuller } from '../../src/kuberuntime/images.ts';
import { UserNamespaceManager } from '../../src/userns/manager.ts';
import { VolumeWorld } from '../../src/volumes/world.ts';
import { realClock } from '../../src/clock.ts';
import { crashLoopPolicy } from '../../src/kuberuntime/backoff.ts';
import type { MemoryFeatures } from '../../src/kuberuntime/resources.ts';
import { type PodMachine, podMachineWith } from '../../src/pod/pod.ts';
import { TestRuntime } from './testRuntime.ts';
import { StatusManager } from '../../src/status/manager.ts';
import { type Logger, silentLogger } from '../../src/log.ts';
import { RecordedEvents } from './recordedEvents.ts';

export const IMAGE = 'statelet.local/busybox:1';

/** A machine on cgroup v1 without swap accounting or huge pages: containers get CPU and memory settings only. */
export const NO_MEMORY_FEATURES: MemoryFeatures = { cgroupVersion: 1, swapController: false, hugePageSizes: [] };

/** A pod's work over a TestRuntime (it is its own image service), with the default crash-loop policy and no files, cgroups or cluster. */
export function fakePodWork(runtime: TestRuntime, now: () => number, log: Logger = silentLogger, recorder = new RecordedEvents()): PodWork {
  return {
    cri: { runtime, images: runtime, puller: new ImagePuller(runtime, 1) },
    host: {
      now,
      podLogsRoot: '/tmp/statelet-test-logs',
      security: { seccompDefault: false, seccompProfileRoot: '/var/lib/statelet/seccomp' },
      memoryCapacityBytes: 8 * 2 ** 30,
      memoryFeatures: NO_MEMORY_FEATURES,
      crashLoop: crashLoopPolicy,
      // No pod directories and no runtime Status read: a pod asking for a user namespace of its own is refused.
      userNamespaces: new UserNamespaceManager('/nonexistent/statelet-test-pods', () => null, log),
      // No pod directories: no volume is ever set up.
      volumes: new VolumeWorld({ clock: realClock }),
    },
    observe: { log, recorder },
  };
}

/** A SimulatedClock at 2026-01-01T00:00:00Z. */
export function testClock(): SimulatedClock {
  const clock = new SimulatedClock();
  clock.set(Date.parse('2026-01-01T00:00:00Z'));
  return clock;
}

/** A pod of the API server bound to `nodeName`, as the status writer finds it before writing: Pending, UID `uid-<name>`. */
export function apiPod(name: string, nodeName = 'node-a'): Pod {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace: 'default', uid: `uid-${name}`, annotations: { 'kubernetes.io/config.source': 'api' } },
    spec: { nodeName, containers: [{ name: 'app', image: 'busybox:1' }] },
    status: { phase: 'Pending' },
  };
}

export function container(name: string, extra: Partial<Container> = {}): Container {
  return { name, image: IMAGE, imagePullPolicy: 'IfNotPresent', ...extra };
}

export function makePod(name: string, spec: Partial<Pod['spec']> = {}, uid = `uid-${name}`): Pod {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace: 'default', uid },
    spec: { containers: [container('main')], restartPolicy: 'Always', terminationGracePeriodSeconds: 5, ...spec },
  };
}

/** A parent that records what pod actors report to it. */
export function createRecorder() {
  const reports: EventObject[] = [];
  const logic = fromCallback<EventObject>(({ receive }) => {
    receive((event) => reports.push(event));
  });
  return { logic, reports };
}

export interface PodHarness {
  runtime: TestRuntime;
  statuses: StatusManager;
  clock: SimulatedClock;
  machine: PodMachine;
  reports: EventObject[];
  parent: AnyActorRef;
  start(pod: Pod): ReturnType<typeof createActor<PodMachine>>;
}

export function podHarness(): PodHarness {
  const clock = testClock();
  const now = () => clock.now();
  const runtime = new TestRuntime({ clock });
  runtime.addImage(IMAGE);
  const statuses = new StatusManager();
  const effects = createPodEffects({ work: fakePodWork(runtime, now), statuses, runtimeName: 'fake' });
  const machine = podMachineWith(effects);
  const recorder = createRecorder();
  const parent = createActor(recorder.logic, { clock });
  parent.start();
  return {
    runtime,
    statuses,
    clock,
    machine,
    reports: recorder.reports,
    parent,
    start(pod) {
      const actor = createActor(machine, { parent, input: { pod } });
      actor.start();
      return actor;
    },
  };
}

/** Waits until the actor's worker is idle (its last sync has finished). */
export async function settled(actor: ReturnType<PodHarness['start']>) {
  return waitFor(actor, (s) => s.matches({ syncing: { worker: 'idle' } }) || s.hasTag('terminated') || s.hasTag('terminating'));
}
