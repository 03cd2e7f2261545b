/**
 * How long each piece of a pod worker's work takes, by the kubelet's operation type
 * (pkg/kubelet/pod_workers.go podWorkerLoop observes PodWorkerDuration once the work completes,
 * labelled with its UpdateType; terminated work is labelled `terminated`):
 *   create      the first sync of a pod actor (HandlePodAdditions, or a UID started afresh);
 *   update      a sync of a spec that changed since the previous sync (HandlePodUpdates);
 *   sync        a resync of the same spec (the periodic resync, a PLEG event, a probe result);
 *   kill        stopping the pod's containers (terminatePod);
 *   terminated  the final cleanup (cleanupPod).
 * The effects are timed around each run on the node's clock, errors included; the pod each UID last
 * synced is kept until its termination, which ends that actor's syncs.
 */
import type { Pod } from '../api/types.ts';
import type { PodEffects } from '../pod/pod.ts';

export type PodWorkType = 'create' | 'update' | 'sync' | 'kill' | 'terminated';

/** The kind of a sync of `pod`, given the pod the actor synced before (none: its first sync). */
export function syncWorkType(previous: Pod | undefined, pod: Pod): PodWorkType {
  if (previous === undefined) return 'create';
  return previous === pod ? 'sync' : 'update';
}

export function timedPodEffects(effects: PodEffects, now: () => number, observe: (type: PodWorkType, seconds: number) => void): PodEffects {
  const lastSynced = new Map<string, Pod>();
  const timed = async <T>(type: PodWorkType, run: () => Promise<T>): Promise<T> => {
    const startedAt = now();
    try {
      return await run();
    } finally {
      observe(type, (now() - startedAt) / 1000);
    }
  };
  return {
    syncPod(request, signal, calls) {
      const uid = request.pod.metadata.uid;
      const type = syncWorkType(lastSynced.get(uid), request.pod);
      lastSynced.set(uid, request.pod);
      return timed(type, () => effects.syncPod(request, signal, calls));
    },
    terminatePod(request, signal, calls) {
      lastSynced.delete(request.pod.metadata.uid);
      return timed('kill', () => effects.terminatePod(request, signal, calls));
    },
    cleanupPod: (request, signal, calls) => timed('terminated', () => effects.cleanupPod(request, signal, calls)),
  };
}
