/**
 * Stopping a runtime pod that no pod actor owns (pkg/kubelet/kubelet_pods.go HandlePodCleanups,
 * which kills running runtime pods that are not desired): every container is stopped with a
 * one-second grace period, its spec restored from the container's labels and annotations since
 * the pod is gone (kill.ts restoreKillSpec), then the sandboxes; then all of it is removed.
 */
import { readdir } from 'node:fs/promises';
import { type RuntimeDeps, killPodRuntime, removePodRuntime, tearDownVolumes } from './execute.ts';
import { readPodStatus } from './podStatus.ts';

const orphanGracePeriodSeconds = 1;

export async function killOrphanPod(deps: RuntimeDeps, uid: string): Promise<void> {
  await killPodRuntime(deps, undefined, await readPodStatus(deps.runtime, uid, undefined, undefined, deps.podIds), orphanGracePeriodSeconds, {});
  await removePodRuntime(deps, await readPodStatus(deps.runtime, uid, undefined, undefined, deps.podIds), {});
}

/**
 * Tears down the volumes and removes `<podsDir>/<uid>` of every pod `isOrphan` says nobody owns
 * (pkg/kubelet/kubelet_volumes.go cleanupOrphanedPodDirs; the kubelet waits for its volume
 * manager to unmount them, statelet unmounts them here, as it mounted them).
 */
export async function removeOrphanedPodDirs(deps: RuntimeDeps, isOrphan: (uid: string) => boolean): Promise<void> {
  if (!deps.podsDir) return;
  const entries = await readdir(deps.podsDir).catch(() => [] as string[]);
  for (const uid of entries.filter(isOrphan)) {
    await tearDownVolumes(deps, uid, { removeDir: true });
    deps.log('info', 'Removed the directory of a pod nobody owns', { podUID: uid });
  }
}
