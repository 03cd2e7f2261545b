/**
 * Which container instance `kubectl logs` reads, pure (pkg/kubelet/kubelet_pods.go
 * validateContainerLogStatus): from the pod's status as the agent reports it, the running
 * instance, else the one that terminated (or, with `previous`, the one before), with the kubelet's
 * messages when there is none: a container not in the pod is 404, one that has no instance to read
 * is 400.
 */
import { containerSpecOf, type Pod, type PodStatus } from '../../api/types.ts';

type LogTarget = { containerId: string } | { status: 400 | 404; message: string };

/** The runtime's own ID from a status's `<runtime>://<id>`. */
const runtimeId = (containerID: string | undefined) => (containerID ? containerID.replace(/^[a-z0-9.+-]+:\/\//, '') : '');

/** Waiting reasons of an image that cannot be had, which the kubelet words for people. */
const PULL_FAILURES = new Set(['ErrImagePull', 'ImagePullBackOff', 'ErrImageNeverPull', 'InvalidImageName', 'RegistryUnavailable']);

export function logTarget(pod: Pod, status: PodStatus | undefined, container: string, previous: boolean): LogTarget {
  const name = pod.metadata.name;
  if (!containerSpecOf(pod, container)) return { status: 404, message: `container "${container}" not found in pod "${name}"` };
  const found = [...(status?.initContainerStatuses ?? []), ...(status?.containerStatuses ?? []), ...(status?.ephemeralContainerStatuses ?? [])].find(
    (c) => c.name === container,
  );
  if (!found) return { status: 400, message: `container "${container}" in pod "${name}" is not available` };
  const lastTerminated = runtimeId(found.lastState?.terminated?.containerID);
  if (previous) {
    return lastTerminated ? { containerId: lastTerminated } : { status: 400, message: `previous terminated container "${container}" in pod "${name}" not found` };
  }
  if (found.state.running) {
    const id = runtimeId(found.containerID);
    if (id) return { containerId: id };
  }
  if (found.state.terminated) {
    const id = runtimeId(found.state.terminated.containerID) || runtimeId(found.containerID) || lastTerminated;
    return id ? { containerId: id } : { status: 400, message: `container "${container}" in pod "${name}" is terminated` };
  }
  if (lastTerminated) return { containerId: lastTerminated };
  const reason = found.state.waiting?.reason ?? '';
  if (found.state.waiting) {
    const why = PULL_FAILURES.has(reason) ? 'trying and failing to pull image' : reason;
    return { status: 400, message: `container "${container}" in pod "${name}" is waiting to start: ${why}` };
  }
  return { status: 400, message: `container "${container}" in pod "${name}" is not available` };
}
