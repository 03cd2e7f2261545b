/**
 * Reading a pod's status by the sandbox and container IDs the node made (podIds.ts) instead of
 * listing by its UID: the same picture as a listing, without the list calls; a pod not seen yet,
 * or one whose creation failed (it may have happened all the same), is listed; an ID the runtime
 * no longer knows is dropped.
 */
import { describe, expect, it } from 'vitest';
import type { Pod } from '../../src/api/types.ts';
import { computePodActions } from '../../src/kuberuntime/computePodActions.ts';
import { executePlan } from '../../src/kuberuntime/execute.ts';
import { RuntimePodIds, recordingPodIds } from '../../src/kuberuntime/podIds.ts';
import { readPodStatus } from '../../src/kuberuntime/podStatus.ts';
import { CriError, type RuntimeService } from '../../src/runtime/types.ts';
import { container, makePod } from '../support/pods.ts';
import { lifecycleRig } from './support.ts';

function rigWithIds(wrap: (runtime: RuntimeService) => RuntimeService = (r) => r) {
  const rig = lifecycleRig();
  const ids = new RuntimePodIds();
  const runtime = recordingPodIds(wrap(rig.deps.cri.runtime), ids);
  rig.deps = { ...rig.deps, cri: { ...rig.deps.cri, runtime, podIds: ids } };
  const read = (pod: Pod) => readPodStatus(runtime, pod.metadata.uid, undefined, undefined, ids);
  const sync = async (pod: Pod) => {
    const status = await read(pod);
    return executePlan(rig.deps, pod, status, computePodActions(pod, status), { backoff: {}, reasons: {} }, {});
  };
  const lists = () => rig.runtime.callLog().filter((c) => c.startsWith('listPodSandbox') || c.startsWith('listContainers')).length;
  return { rig, ids, runtime, read, sync, lists };
}

describe('reading a pod by the IDs the node made', () => {
  it('lists a pod not seen yet, then asks about its IDs only, with the same picture as a listing', async () => {
    const { rig, ids, read, sync, lists } = rigWithIds();
    const pod = makePod('web', { containers: [container('app'), container('side')] });
    expect((await read(pod)).containers).toEqual([]);
    expect(lists()).toBe(2);
    await sync(pod);
    rig.runtime.clearCalls();
    const known = await read(pod);
    expect(lists()).toBe(0);
    expect(known.containers.map((c) => [c.name, c.state])).toEqual(expect.arrayContaining([['app', 'CONTAINER_RUNNING'], ['side', 'CONTAINER_RUNNING']]));
    expect(known).toEqual(await readPodStatus(rig.runtime, pod.metadata.uid));
    expect(ids.of(pod.metadata.uid)?.containers.size).toBe(2);
  });

  it('drops a container removed through the node, and one the runtime no longer knows', async () => {
    const { rig, ids, runtime, read, sync, lists } = rigWithIds();
    const pod = makePod('web', { containers: [container('app'), container('side')] });
    await sync(pod);
    const [first, second] = (await read(pod)).containers;
    await runtime.stopContainer(first!.id, 0);
    await runtime.removeContainer(first!.id);
    expect(ids.of(pod.metadata.uid)?.containers.has(first!.id)).toBe(false);
    // Behind the node's back: the next read finds it gone (NOT_FOUND) and forgets it.
    await rig.runtime.stopContainer(second!.id, 0);
    await rig.runtime.removeContainer(second!.id);
    rig.runtime.clearCalls();
    expect((await read(pod)).containers).toEqual([]);
    expect(lists()).toBe(0);
    expect(ids.of(pod.metadata.uid)?.containers.size).toBe(0);
  });

  it('lists again after a creation that failed, and finds the container the runtime made all the same', async () => {
    // CreateContainer's deadline passes after the runtime has made the container.
    const late = (runtime: RuntimeService): RuntimeService =>
      new Proxy(runtime, {
        get: (target, property) => {
          if (property === 'createContainer') {
            return async (...args: Parameters<RuntimeService['createContainer']>) => {
              await target.createContainer(...args);
              throw new CriError('CreateContainer', 'DEADLINE_EXCEEDED', 'context deadline exceeded');
            };
          }
          const value: unknown = Reflect.get(target, property, target);
          return typeof value === 'function' ? value.bind(target) : value;
        },
      });
    const { rig, read, sync, lists } = rigWithIds(late);
    const pod = makePod('web', { containers: [container('app')] });
    await read(pod);
    await sync(pod);
    rig.runtime.clearCalls();
    const status = await read(pod);
    expect(lists()).toBe(2);
    expect(status.containers.map((c) => c.name)).toEqual(['app']);
    rig.runtime.clearCalls();
    await read(pod);
    expect(lists()).toBe(0);
  });
});
