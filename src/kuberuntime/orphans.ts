/**
 * Stopping a runtime pod that no pod actor owns (pkg/kubelet/kubelet_pods.go HandlePodCleanups,
 * which kills running runtime pods that are not desired): every container is stopped with a
 * one-second grace period, its spec restored from the container's labels and annotations since
 * the pod is gone (kill.ts restoreKillSpec), then the sandboxes; then all of it is removed.
 */
import { readdir } from 'node:fs/promises';
import { killPodRuntime, removePodRuntime, tearDownVolumes } from './execute.ts';
import type { PodWork } from './podWork.ts';
import { readPodStatus } from './podStatus.ts';

const orphanGracePeriodSeconds = 1;

export async function killOrphanPod(deps: PodWork, uid: string): Promise<void> {
  await killPodRuntime(deps, undefined, await readPodStatus(deps.cri.runtime, uid, undefined, undefined, deps.cri.podIds), orphanGracePeriodSeconds, {});
  await removePodRuntime(deps, await readPodStatus(deps.cri.runtime, uid, undefined, undefined, deps.cri.podIds), {});
}

/**
 * Tears down the volumes and removes `<podsDir>/<uid>` of every pod `isOrphan` says nobody owns
 * (pkg/kubelet/kubelet_volumes.go cleanupOrphanedPodDirs; the kubelet waits for its volume
 * manager to unmount them, statelet unmounts them here, as it mounted them).
 */
export async function removeOrphanedPodDirs(deps: PodWork, isOrphan: (uid: string) => boolean): Promise<void> {
  if (!deps.host.podsDir) return;
  const entries = await readdir(deps.host.podsDir).catch(() => [] as string[]);
  for (const uid of entries.filter(isOrphan)) {
    await tearDownVolumes(deps, uid, { removeDir: true });
    deps.observe.log('info', 'Removed the directory of a pod nobody owns', { podUID: uid });
  }
}

/** What housekeeping asks of the runtime about pods nobody owns, over the node's pod work. */
export function orphanCleanup(
  work: PodWork,
  /** The UIDs of pods the runtime still runs something for (the PLEG's last relist). */
  running: () => Promise<Set<string>> | Set<string>,
  /** The node's pod cgroups; absent: none are kept. */
  cgroups?: { removeOrphans(isOrphan: (uid: string) => boolean): Promise<unknown> },
) {
  return {
    runningPodUids: running,
    killOrphanPod: (uid: string) => killOrphanPod(work, uid),
    removeOrphanedPodDirs: async (isOrphan: (uid: string) => boolean) => {
      await removeOrphanedPodDirs(work, isOrphan);
      // And their cgroups (kubelet_pods.go cleanupOrphanedPodCgroups).
      await cgroups?.removeOrphans(isOrphan);
    },
  };
}
