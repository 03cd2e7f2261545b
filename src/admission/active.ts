/**
 * Which pods admission looks at, and which it leaves alone (pkg/kubelet/kubelet.go
 * HandlePodAdditions; kubelet_pods.go filterOutInactivePods, isPodInactive, isAdmittedPodTerminal),
 * pure:
 *   - a pod that is terminal (Succeeded or Failed in the API, or in the agent's own status) is never
 *     admitted again: after a restart of the agent a completed pod comes back as an addition, and
 *     admission against the node as it is now could only rewrite its record ("Pod was rejected");
 *     it gets its actor all the same, which sees it terminal and runs nothing of it;
 *   - a pod counts against admission (is active) until its actor has terminated it; a terminal pod
 *     counts only while its actor is stopping its containers.
 */
import type { Pod, PodStatus } from '../api/types.ts';

/** Where the pod's actor is, as admission asks: none, running the pod, stopping it, done. */
export type WorkerStage = 'none' | 'syncing' | 'terminating' | 'terminated';

const terminal = (status: PodStatus | undefined) => status?.phase === 'Succeeded' || status?.phase === 'Failed';

/**
 * The pod has reached a terminal phase: its source says so, or the agent has said so and its
 * source has not caught up yet (a rejected pod, a pod that just completed).
 */
export function isAdmittedPodTerminal(pod: Pod, local: PodStatus | undefined): boolean {
  return terminal(pod.status) || terminal(local);
}

/** Admission runs for a pod unless its termination was requested or it is terminal. */
export function needsAdmission(pod: Pod, local: PodStatus | undefined, worker: WorkerStage): boolean {
  return worker !== 'terminating' && worker !== 'terminated' && !isAdmittedPodTerminal(pod, local);
}

/** The pod no longer holds resources admission counts: terminated, or terminal and not being stopped. */
export function isPodInactive(pod: Pod, local: PodStatus | undefined, worker: WorkerStage): boolean {
  if (worker === 'terminated') return true;
  return isAdmittedPodTerminal(pod, local) && worker !== 'terminating';
}
