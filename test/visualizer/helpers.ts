import { type AnyActorRef, createActor, fromCallback } from 'xstate';
import type { Pod } from '../../src/api/types.ts';
import { type PodEffects, type SyncOutcome, podMachineWith } from '../../src/pod/pod.ts';
import type { VisualizerHub } from '../../src/visualizer/stream.ts';

/** A pod carrying everything that must never reach the wire. */
export function secretPod(uid = 'uid-1'): Pod {
  return {
    metadata: {
      name: 'web',
      namespace: 'default',
      uid,
      annotations: { 'example.com/token': 'annotation-secret-value', 'kubernetes.io/config.source': 'file' },
    },
    spec: {
      containers: [
        {
          name: 'app',
          image: 'statelet.local/busybox:1',
          command: ['sh', '-c', 'echo command-line-secret'],
          env: [
            { name: 'SECRET', valueFrom: { secretKeyRef: { name: 'db-credentials', key: 'password' } } },
            { name: 'TOKEN', value: 'hunter2' },
          ],
        },
      ],
      initContainers: [{ name: 'init', image: 'statelet.local/busybox:1', env: [{ name: 'INIT_TOKEN', value: 'hunter2' }] }],
      volumes: [{ name: 'creds', secret: { secretName: 'db-credentials' } }],
    } as Pod['spec'],
  };
}

/** Strings in `secretPod` that must not appear in anything sent. */
export const forbidden = ['hunter2', 'secretKeyRef', 'db-credentials', 'password', 'annotation-secret-value', 'command-line-secret', 'TOKEN'];

export const runningOutcome = (): SyncOutcome => ({
  memory: { backoff: {}, reasons: {} },
  progress: { stage: 'running' },
  phase: 'Running',
  isTerminal: false,
  errors: [],
});

export const fakeEffects = (overrides: Partial<PodEffects> = {}): PodEffects => ({
  syncPod: async () => runningOutcome(),
  terminatePod: async () => {},
  cleanupPod: async () => {},
  ...overrides,
});

/**
 * A root callback actor (the pod's supervisor, not tracked) whose system feeds `hub`, and a pod
 * actor under it, as podWorkers creates them.
 */
export function startPodSystem(hub: VisualizerHub, pod: Pod, effects = fakeEffects()) {
  const root = createActor(
    fromCallback(() => {}),
    { inspect: hub.inspect },
  );
  root.start();
  const actor = createActor(podMachineWith(effects), {
    parent: root as unknown as AnyActorRef,
    id: `pod/${pod.metadata.uid}`,
    systemId: `pod/${pod.metadata.uid}`,
    input: { pod },
  });
  actor.start();
  return { root, actor };
}

export const tick = (ms = 0) => new Promise<void>((resolve) => setTimeout(resolve, ms));
