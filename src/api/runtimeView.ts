/**
 * The runtime's view of one pod: its sandboxes and containers as CRI reports them, grouped by the
 * `io.kubernetes.pod.uid` label and sorted newest first. Plain data that every decision reads
 * (computePodActions, progress, status generation); `kuberuntime/podStatus.ts` reads it from the
 * runtime, afresh at the start of every sync.
 */
import type { ContainerStatus, NamespaceMode, SandboxState } from '../runtime/types.ts';

export interface SandboxSummary {
  id: string;
  state: SandboxState;
  attempt: number;
  createdAt: number;
  /** Empty when the sandbox has no pod-network address (hostNetwork or not yet set up). */
  ip: string;
  networkMode: NamespaceMode | undefined;
}

/** One container as a sync reads it: the runtime's status, its name and sandbox, and what the agent's labels tell. */
export interface RuntimeContainerStatus
  extends Pick<ContainerStatus, 'id' | 'state' | 'createdAt' | 'startedAt' | 'finishedAt' | 'exitCode' | 'reason' | 'message' | 'image' | 'imageRef' | 'user' | 'resources'> {
  name: string;
  sandboxId: string;
  hash: string;
  restartCount: number;
}

export interface RuntimePodStatus {
  uid: string;
  /** Newest first. */
  sandboxes: SandboxSummary[];
  /** Newest first. */
  containers: RuntimeContainerStatus[];
}

/** A waiting reason the agent recorded for a container it could not (re)start (CrashLoopBackOff, ErrImagePull, …). */
export interface WaitingReason {
  reason: string;
  message: string;
}

/** The newest status of the named container, if the runtime has one. */
export function newestContainer(
  status: RuntimePodStatus,
  name: string,
): RuntimeContainerStatus | undefined {
  return status.containers.find((c) => c.name === name);
}
