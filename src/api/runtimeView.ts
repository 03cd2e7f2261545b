/**
 * The runtime's view of one pod: its sandboxes and containers as CRI reports them, grouped by the
 * `io.kubernetes.pod.uid` label and sorted newest first. Plain data that every decision reads
 * (computePodActions, progress, status generation); `kuberuntime/podStatus.ts` reads it from the
 * runtime, afresh at the start of every sync.
 */
import type { ContainerState, NamespaceMode, SandboxState } from '../runtime/types.ts';

export interface SandboxSummary {
  id: string;
  state: SandboxState;
  attempt: number;
  createdAt: number;
  /** Empty when the sandbox has no pod-network address (hostNetwork or not yet set up). */
  ip: string;
  networkMode: NamespaceMode | undefined;
}

export interface RuntimeContainerStatus {
  id: string;
  name: string;
  sandboxId: string;
  state: ContainerState;
  createdAt: number;
  startedAt: number;
  finishedAt: number;
  exitCode: number;
  reason: string;
  message: string;
  image: string;
  imageRef: string;
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
