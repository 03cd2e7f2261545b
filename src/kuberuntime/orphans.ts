/**
 * Stopping a runtime pod that no pod actor owns (pkg/kubelet/kubelet_pods.go HandlePodCleanups,
 * which kills running runtime pods that are not desired): every container is stopped with a
 * one-second grace period, its spec restored from the container's labels and annotations since
 * the pod is gone (kill.ts restoreKillSpec), then the sandboxes; then all of it is removed.
 */
import { readdir, rm } from 'node:fs/promises';
import path from 'node:path';
import { type RuntimeDeps, killPodRuntime, removePodRuntime } from './execute.ts';
import { readPodStatus } from './podStatus.ts';

const orphanGracePeriodSeconds = 1;

export async function killOrphanPod(deps: RuntimeDeps, uid: string): Promise<void> {
  await killPodRuntime(deps, undefined, await readPodStatus(deps.runtime, uid), orphanGracePeriodSeconds, {});
  await removePodRuntime(deps, await readPodStatus(deps.runtime, uid), {});
}

/**
 * Removes `<podsDir>/<uid>` of every pod `isOrphan` says nobody owns (pkg/kubelet/kubelet_volumes.go
 * cleanupOrphanedPodDirs; there are no volume mounts under them yet, so nothing to unmount first).
 */
export async function removeOrphanedPodDirs(podsDir: string, isOrphan: (uid: string) => boolean, log: RuntimeDeps['log']): Promise<void> {
  const entries = await readdir(podsDir).catch(() => [] as string[]);
  for (const uid of entries.filter(isOrphan)) {
    await rm(path.join(podsDir, uid), { recursive: true, force: true });
    log('info', 'Removed the directory of a pod nobody owns', { podUID: uid });
  }
}
