/** The reliability suite's invariants (test/chaos/invariants.ts), each shown to catch what it is for. */
import { describe, expect, it } from 'vitest';
import type { Pod } from '../../src/api/types.ts';
import type { Container, PodSandbox } from '../../src/runtime/types.ts';
import { PodHistory, notConverged, runtimeViolations } from './invariants.ts';

const pod = (uid: string, phase: string, restarts: Record<string, number> = {}, containers = Object.keys(restarts)): Pod =>
  ({
    metadata: { name: `pod-${uid}`, namespace: 'default', uid },
    spec: { containers: containers.map((name) => ({ name, image: 'busybox' })) },
    status: { phase, containerStatuses: Object.entries(restarts).map(([name, restartCount]) => ({ name, restartCount, ready: true, image: '', imageID: '', state: {}, lastState: {} })) },
  }) as unknown as Pod;

const container = (id: string, uid: string, name: string, attempt: number, state: Container['state']): Container =>
  ({ id, podSandboxId: `s-${uid}`, metadata: { name, attempt }, image: 'busybox', imageRef: '', state, createdAt: 0, labels: { 'io.kubernetes.pod.uid': uid }, annotations: {} }) as Container;

const sandbox = (uid: string, state: PodSandbox['state']): PodSandbox =>
  ({ id: `s-${uid}`, metadata: { name: `pod-${uid}`, namespace: 'default', uid, attempt: 0 }, state, createdAt: 0, labels: {}, annotations: {} }) as PodSandbox;

describe('PodHistory', () => {
  it('catches a restart count going down and a phase leaving Succeeded, and nothing else', () => {
    const history = new PodHistory();
    expect(history.observe([pod('a', 'Running', { app: 2 }), pod('b', 'Succeeded')])).toEqual([]);
    expect(history.observe([pod('a', 'Running', { app: 3 }), pod('b', 'Succeeded')])).toEqual([]);
    // Not known yet (an agent that just started): not a change of phase.
    expect(history.observe([pod('a', 'Running', { app: 3 }), pod('b', '')])).toEqual([]);
    expect(history.observe([pod('a', 'Running', { app: 0 }), pod('b', 'Running')]).map((v) => v.invariant)).toEqual(['restart count never decreases', 'terminal phase kept']);
  });
});

describe('runtimeViolations', () => {
  it.each([
    ['nothing wrong', [container('1', 'a', 'app', 0, 'CONTAINER_EXITED'), container('2', 'a', 'app', 1, 'CONTAINER_RUNNING')], []],
    ['two containers for one restart', [container('1', 'a', 'app', 1, 'CONTAINER_EXITED'), container('2', 'a', 'app', 1, 'CONTAINER_RUNNING')], ['one container per restart']],
    ['two running for one pod and name', [container('1', 'a', 'app', 0, 'CONTAINER_RUNNING'), container('2', 'a', 'app', 1, 'CONTAINER_RUNNING')], ['one running container per pod and name']],
  ])('%s', (_, containers, expected) => {
    expect(runtimeViolations({ containers, sandboxes: [] }).map((v) => v.invariant)).toEqual(expected);
  });
});

describe('notConverged', () => {
  const runs = () => true;
  it('is empty when the runtime runs exactly the listed pods and there is an actor each', () => {
    expect(notConverged([pod('a', 'Running', { app: 0 })], runs, { containers: [container('1', 'a', 'app', 0, 'CONTAINER_RUNNING')], sandboxes: [sandbox('a', 'SANDBOX_READY')] }, 1)).toEqual([]);
  });

  it('names a container or sandbox left for a pod that is gone, a container not running, and extra actors', () => {
    const reasons = notConverged(
      [pod('a', 'Running', { app: 0 }, ['app', 'side'])],
      runs,
      { containers: [container('1', 'a', 'app', 0, 'CONTAINER_RUNNING'), container('9', 'gone', 'app', 0, 'CONTAINER_RUNNING')], sandboxes: [sandbox('a', 'SANDBOX_READY'), sandbox('gone', 'SANDBOX_READY')] },
      2,
    );
    expect(reasons).toEqual([
      'container app (9) runs for a pod the agent does not list (gone)',
      'sandbox pod-gone (s-gone) is ready for a pod the agent does not list',
      'pod pod-a: container side is not running',
      '2 pod actors for 1 listed pods',
    ]);
  });

  it('lets a lagging pod (its termination held) keep its runtime objects and its actor, and nothing more', () => {
    const runtime = { containers: [container('1', 'a', 'app', 0, 'CONTAINER_RUNNING'), container('9', 'gone', 'app', 0, 'CONTAINER_RUNNING')], sandboxes: [sandbox('a', 'SANDBOX_READY'), sandbox('gone', 'SANDBOX_READY')] };
    const listed = [pod('a', 'Running', { app: 0 })];
    expect(notConverged(listed, runs, runtime, 2, new Set(['gone']))).toEqual([]);
    expect(notConverged(listed, runs, runtime, 1, new Set(['gone']))).toEqual([]);
    expect(notConverged(listed, runs, runtime, 3, new Set(['gone']))).toEqual(['3 pod actors for 1 listed pods']);
  });
});
