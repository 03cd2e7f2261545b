/**
 * Stopping a runtime pod that no pod actor owns (pkg/kubelet/kubelet_pods.go HandlePodCleanups,
 * which kills running runtime pods that are not desired): every container is stopped with a
 * one-second grace period, its spec restored from the container's labels and annotations since
 * the pod is gone (kill.ts restoreKillSpec), then the sandboxes; then all of it is removed.
 */
import { type RuntimeDeps, killPodRuntime, removePodRuntime } from './execute.ts';
import { readPodStatus } from './podStatus.ts';

const orphanGracePeriodSeconds = 1;

export async function killOrphanPod(deps: RuntimeDeps, uid: string): Promise<void> {
  await killPodRuntime(deps, undefined, await readPodStatus(deps.runtime, uid), orphanGracePeriodSeconds, {});
  await removePodRuntime(deps, await readPodStatus(deps.runtime, uid), {});
}
