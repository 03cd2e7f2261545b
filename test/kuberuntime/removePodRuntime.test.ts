/** Removing a terminated pod's runtime (src/kuberuntime/execute.ts removePodRuntime): the order of the removals. */
import { describe, expect, it } from 'vitest';
import { removePodRuntime } from '../../src/kuberuntime/execute.ts';
import { readPodStatus } from '../../src/kuberuntime/podStatus.ts';
import { makePod } from '../support/pods.ts';
import { containersByName, lifecycleRig, syncOnce } from './support.ts';

describe('removePodRuntime', () => {
  it("removes a pod's containers oldest first, so a status read meanwhile never shows an older container as the current one", async () => {
    const rig = lifecycleRig();
    const pod = makePod('restarted');
    await syncOnce(rig, pod);
    const first = (await containersByName(rig, pod)).get(pod.spec.containers[0]!.name)!;
    rig.runtime.exitContainer(first.id, 1);
    // Past the first restart's back-off (10 s), the container starts again: a second one.
    for (let i = 0; i < 5 && (await readPodStatus(rig.runtime, pod.metadata.uid)).containers.length < 2; i++) {
      rig.clock.increment(11_000);
      await syncOnce(rig, pod);
    }
    const status = await readPodStatus(rig.runtime, pod.metadata.uid);
    expect(status.containers.map((c) => c.restartCount)).toEqual([1, 0]);
    // Terminated: nothing of it runs any more.
    rig.runtime.exitContainer(status.containers[0]!.id, 0);
    const before = rig.runtime.calls.length;
    await removePodRuntime(rig.deps, status, {});
    const removed = rig.runtime.calls.slice(before).filter((c) => c.method === 'removeContainer').map((c) => c.target);
    expect(removed).toEqual([first.id, status.containers[0]!.id]);
  });
});
