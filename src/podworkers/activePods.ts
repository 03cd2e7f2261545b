/**
 * The node's active pods, once (pkg/kubelet/kubelet_pods.go GetActivePods, filterOutInactivePods):
 * the pods that have a worker and still hold what the node gave them — admitted and not yet
 * terminated, a terminal one only while its containers are being stopped (admission/active.ts
 * isPodInactive) — each as the node allocated it (UpdatePodFromAllocation: its accepted resources,
 * not a resize still pending). A pod that left config while its worker stops it is counted with the
 * spec its worker runs: its containers still hold their resources. Admission, in-place resizes, the
 * burstable cgroup's shares and the eviction manager all read this one list.
 */
import type { Pod, PodStatus } from '../api/types.ts';
import { isPodInactive } from '../admission/active.ts';
import type { PodWorkerStages } from './podStages.ts';

export interface ActivePodsSources {
  stages: PodWorkerStages;
  /** The desired pod of a UID (the pod manager). */
  desired(uid: string): Pod | undefined;
  /** The agent's own status of a pod (the status manager). */
  status(uid: string): PodStatus | undefined;
  /** The pod with the resources the node allocated it. */
  allocated(pod: Pod): Pod;
}

export function activePods({ stages, desired, status, allocated }: ActivePodsSources): Pod[] {
  const active: Pod[] = [];
  for (const [uid, worker] of stages.entries()) {
    const pod = desired(uid) ?? worker.pod;
    if (!isPodInactive(pod, status(uid), worker.stage)) active.push(allocated(pod));
  }
  return active;
}
