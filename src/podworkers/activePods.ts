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

/** The pods as the rest of the node asks about them: desired, where their workers stand, active, deleted. */
export interface NodePods {
  /** The desired pod of a UID (the pod manager). */
  desired(uid: string): Pod | undefined;
  stages: PodWorkerStages;
  /** The active pods, as allocated (`activePods`). */
  active(): Pod[];
  activeUids(): ReadonlySet<string>;
  /** Nothing owns the pod any more: neither config nor a worker (ShouldPodContentBeRemoved). */
  isDeleted(uid: string): boolean;
}

export function nodePods(sources: ActivePodsSources & { desiredHas(uid: string): boolean }): NodePods {
  const active = () => activePods(sources);
  return {
    desired: sources.desired,
    stages: sources.stages,
    active,
    activeUids: () => new Set(active().map((pod) => pod.metadata.uid)),
    isDeleted: (uid) => !sources.desiredHas(uid) && !sources.stages.has(uid),
  };
}
