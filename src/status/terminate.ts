/**
 * The pod's final status once its termination is complete: the kubelet's TerminatePod
 * (pkg/kubelet/status/status_manager.go), pure. The pod actor applies it after its cleanup (the
 * end of SyncTerminatedPod), to the status it has just generated; nothing generates a status for
 * the pod after it.
 *
 * - Once the pod has initialized (hasPodInitialized), a regular container that is not terminated
 *   is reported terminated `ContainerStatusUnknown` (137): it will never run, and whether it would
 *   have succeeded is not known. A pod that never initialized (its init container failed under
 *   `restartPolicy: Never`) keeps its app containers `waiting` (PodInitializing), as the upstream
 *   conformance spec "should not start app containers and fail the pod if init containers fail
 *   on a RestartNever pod" checks.
 * - Init containers likewise, but for the trailing ones that never started (initializedContainers):
 *   an init container after the one that failed stays `waiting`.
 * - A pod from the API still Pending or Running ends `Failed`: a terminated pod is terminal. A
 *   static pod keeps its phase (the kubelet's TODO #116484: static pods get no terminal phase).
 */
import type { ContainerStatus, Pod, PodStatus } from '../api/types.ts';
import { isSidecar, isStaticPod } from '../api/types.ts';

export const TerminatedUnknownMessage = 'The container could not be located when the pod was terminated';

const unknownTermination = (s: ContainerStatus): ContainerStatus =>
  s.state.terminated
    ? s
    : { ...s, ready: false, state: { terminated: { exitCode: 137, reason: 'ContainerStatusUnknown', message: TerminatedUnknownMessage } } };

export function terminatedPodStatus(pod: Pod, status: PodStatus): PodStatus {
  const next: PodStatus = { ...status };
  if (status.containerStatuses && hasPodInitialized(pod, status)) {
    next.containerStatuses = status.containerStatuses.map(unknownTermination);
  }
  if (status.initContainerStatuses) {
    const started = initializedContainers(status.initContainerStatuses);
    next.initContainerStatuses = status.initContainerStatuses.map((s, i) => (i < started ? unknownTermination(s) : s));
  }
  if (!isStaticPod(pod) && next.phase !== 'Succeeded' && next.phase !== 'Failed') next.phase = 'Failed';
  return next;
}

/**
 * Whether the pod shows any sign of having initialized (status_manager.go hasPodInitialized): it
 * has no init containers; or a regular container left `waiting` at some point (it runs, ran, or
 * has a last termination); or its last init container completed with 0 (a regular one) or runs
 * and has started (a sidecar). The kubelet reads the pod's API status here; statelet reads its own
 * newest status, which that API status only follows.
 */
export function hasPodInitialized(pod: Pod, status: PodStatus): boolean {
  const inits = pod.spec.initContainers ?? [];
  if (inits.length === 0) return true;
  if ((status.containerStatuses ?? []).some((s) => s.lastState.terminated !== undefined || s.state.waiting === undefined)) return true;
  const statuses = status.initContainerStatuses ?? [];
  const last = statuses.at(-1);
  if (!last) return false;
  // The kubelet takes the spec container at the same index (kubeutil.GetContainerByIndex), and
  // gives up on a mismatch of names.
  const container = inits[statuses.length - 1];
  if (!container || container.name !== last.name) return false;
  if (isSidecar(container)) return last.state.running !== undefined && last.started === true;
  return last.lastState.terminated?.exitCode === 0 || last.state.terminated?.exitCode === 0;
}

/**
 * How many of the init container statuses, from the first, have any evidence of a start: all up
 * to the last one that is out of `waiting` or has a last termination, and at least the first
 * (status_manager.go initializedContainers).
 */
export function initializedContainers(statuses: readonly ContainerStatus[]): number {
  for (let i = statuses.length - 1; i >= 0; i--) {
    const s = statuses[i]!;
    if (s.state.waiting === undefined || s.lastState.terminated !== undefined) return i + 1;
  }
  return statuses.length > 0 ? 1 : 0;
}
