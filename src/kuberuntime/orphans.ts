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
 * Removes `<podsDir>/<uid>` of every pod `isOrphan` says nobody owns (pkg/kubelet/kubelet_volumes.go
 * cleanupOrphanedPodDirs): the volume manager is told the pod is gone and tears its volumes down
 * (those an earlier run left, found at start, included); while any may still be set up the
 * directory is left for a later pass (podVolumesExist), then it is removed as the kubelet removes
 * it (src/volumes/orphanedPodDir.ts). One pod's failure does not keep the others' directories;
 * the failures are logged once a pass, as the kubelet rolls them up.
 */
export async function removeOrphanedPodDirs(deps: PodWork, isOrphan: (uid: string) => boolean): Promise<void> {
  if (!deps.host.podsDir) return;
  const entries = await readdir(deps.host.podsDir).catch(() => [] as string[]);
  const errors: unknown[] = [];
  for (const uid of entries.filter(isOrphan)) {
    if (deps.host.volumes.releasePod(uid)) {
      deps.observe.log('debug', 'Orphaned pod found, but volumes are not cleaned up', { podUID: uid });
      continue;
    }
    try {
      await tearDownVolumes(deps, uid, { removeDir: true });
      deps.observe.log('info', 'Removed the directory of a pod nobody owns', { podUID: uid });
    } catch (err) {
      errors.push(err);
    }
  }
  if (errors.length > 0) deps.observe.log('error', 'There were many similar errors. Turn up verbosity to see them.', { err: errors[0], numErrs: errors.length });
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
