/** Which instance `kubectl logs` reads (target.ts), table-tested against the kubelet's messages. */
import { describe, expect, it } from 'vitest';
import type { ContainerStatus, Pod, PodStatus } from '../../../src/api/types.ts';
import { logTarget } from '../../../src/kuberuntime/logs/target.ts';

const pod = { metadata: { name: 'web', namespace: 'shop', uid: 'u1' }, spec: { containers: [{ name: 'app', image: 'busybox' }] } } as unknown as Pod;
const status = (c: Partial<ContainerStatus>): PodStatus => ({ phase: 'Running', containerStatuses: [{ name: 'app', ready: false, restartCount: 0, image: '', imageID: '', state: {}, lastState: {}, ...c }] }) as PodStatus;

describe('logTarget', () => {
  it.each<[string, PodStatus | undefined, boolean, unknown]>([
    ['running', status({ containerID: 'containerd://c2', state: { running: {} } }), false, { containerId: 'c2' }],
    ['previous', status({ containerID: 'containerd://c2', state: { running: {} }, lastState: { terminated: { exitCode: 1, containerID: 'containerd://c1' } } }), true, { containerId: 'c1' }],
    ['no previous', status({ containerID: 'containerd://c2', state: { running: {} } }), true, { status: 400, message: 'previous terminated container "app" in pod "web" not found' }],
    ['terminated', status({ state: { terminated: { exitCode: 0, containerID: 'sim://c3' } } }), false, { containerId: 'c3' }],
    ['waiting after a crash: the last instance', status({ state: { waiting: { reason: 'CrashLoopBackOff' } }, lastState: { terminated: { exitCode: 1, containerID: 'sim://c4' } } }), false, { containerId: 'c4' }],
    ['waiting to start', status({ state: { waiting: { reason: 'ContainerCreating' } } }), false, { status: 400, message: 'container "app" in pod "web" is waiting to start: ContainerCreating' }],
    ['image not pulled', status({ state: { waiting: { reason: 'ImagePullBackOff' } } }), false, { status: 400, message: 'container "app" in pod "web" is waiting to start: trying and failing to pull image' }],
    ['no status yet', undefined, false, { status: 400, message: 'container "app" in pod "web" is not available' }],
  ])('%s', (_, s, previous, expected) => {
    expect(logTarget(pod, s, 'app', previous)).toEqual(expected);
  });

  it('refuses a container the pod does not have with 404', () => {
    expect(logTarget(pod, undefined, 'nope', false)).toEqual({ status: 404, message: 'container "nope" not found in pod "web"' });
  });
});
