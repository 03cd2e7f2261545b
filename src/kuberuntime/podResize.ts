/**
 * In-place pod resize, the runtime's side, pure: what the sync must do so that the containers and
 * the pod's cgroup run with the pod's allocated resources (pkg/kubelet/kuberuntime/
 * kuberuntime_manager.go computePodResizeAction, startingResizedContainer, IsPodResizeInProgress,
 * doPodResizeAction, validateMemoryResizeAction, updatePodContainerResources).
 *
 * Three records of a container's resources are compared: the pod the sync runs is the *allocated*
 * one (src/allocation: the spec with the resources the node accepted), the *actuated* resources
 * are the last ones the runtime took (at CreateContainer, or a successful UpdateContainerResources;
 * the kubelet's `actuated_pods_state` checkpoint), and what the runtime reports
 * (ContainerStatus.resources) only feeds the status. A running container whose allocated CPU or
 * memory differs from its actuated ones is resized: restarted when the resource's `resizePolicy`
 * says `RestartContainer`, else updated in place. Only regular containers and sidecars are resized
 * (an ephemeral or a non-sidecar init container never is: isResizableContainer).
 *
 * The executor (resize.ts) applies memory first, then CPU; for each, an increase of the pod's
 * cgroup comes before the containers, a decrease after them, the limits before the requests when
 * growing and after them when shrinking (resizeSteps), and the containers' decreases before their
 * increases (the order of `containersToUpdate`). A memory limit that would fall to or below what is
 * in use is refused before anything is changed (memoryDecreaseErrors).
 */
import { amount } from '../api/quantity.ts';
import type { Container, Pod, ResourceRequirements } from '../api/types.ts';
import { isSidecar } from '../api/types.ts';
import { type RuntimeContainerStatus, type RuntimePodStatus, newestContainer } from '../api/runtimeView.ts';
import type { PodActions } from './computePodActions.ts';

export type ResizableResource = 'cpu' | 'memory';

/** A container's CPU and memory (resourceRequirements): millicores and bytes, 0 for none. */
export interface ResizeAmounts {
  cpuRequest: number;
  cpuLimit: number;
  memoryRequest: number;
  memoryLimit: number;
}

/** The resources the runtime last took for each container of a pod, by container name (the actuated state). */
export type ActuatedResources = Readonly<Record<string, ResourceRequirements>>;

/** One container to update in place for one resource (containerToUpdateInfo). */
export interface ContainerUpdate {
  name: string;
  /** The runtime's container ID. */
  id: string;
  desired: ResizeAmounts;
  /** What the container was last given; the executor keeps it current between the memory and CPU passes. */
  current: ResizeAmounts;
}

export interface PodResizeActions {
  /** Containers to update in place, per resource, in the order they are updated: decreases, then increases. */
  containersToUpdate: Record<ResizableResource, ContainerUpdate[]>;
  /** The pod's cgroup is brought to the allocated resources even with no container to update: one restarts or starts resized (UpdatePodResources). */
  updatePodResources: boolean;
}

export const noResize = (): PodResizeActions => ({ containersToUpdate: { memory: [], cpu: [] }, updatePodResources: false });

/** The sync has resize work to do (SyncPod step 6). */
export function hasResizeWork(resize: PodResizeActions): boolean {
  return resize.updatePodResources || resize.containersToUpdate.memory.length > 0 || resize.containersToUpdate.cpu.length > 0;
}

/** containerResourcesFromRequirements: the four values resize compares (quantities rounded up, as MilliValue and Value do). */
export function resizeAmounts(resources: ResourceRequirements | undefined): ResizeAmounts {
  return {
    cpuRequest: amount('cpu', resources?.requests?.['cpu']),
    cpuLimit: amount('cpu', resources?.limits?.['cpu']),
    memoryRequest: amount('memory', resources?.requests?.['memory']),
    memoryLimit: amount('memory', resources?.limits?.['memory']),
  };
}

const sameAmounts = (a: ResizeAmounts, b: ResizeAmounts) =>
  a.cpuRequest === b.cpuRequest && a.cpuLimit === b.cpuLimit && a.memoryRequest === b.memoryRequest && a.memoryLimit === b.memoryLimit;

/** A container whose resources can change in place (kuberuntime_manager.go isResizableContainer): a regular container or a sidecar. */
export function isResizableContainer(container: Container, type: 'init' | 'regular'): boolean {
  return type === 'regular' || isSidecar(container);
}

/** The restart policy of `resource` in the container's resizePolicy; none written means NotRequired. */
function restartsFor(container: Container, resource: ResizableResource): boolean {
  return container.resizePolicy?.find((p) => p.resourceName === resource)?.restartPolicy === 'RestartContainer';
}

/**
 * computePodResizeAction for one running container: 'restart' when a changed resource's policy is
 * RestartContainer, else 'keep', with the in-place updates it needs queued in `into`: per resource,
 * the limit's change if it has one, else the request's; a decrease ahead of the list, an increase
 * at its end.
 */
export function containerResizeAction(container: Container, running: RuntimeContainerStatus, actuated: ResourceRequirements | undefined, into: PodResizeActions): 'keep' | 'restart' {
  if (running.state !== 'CONTAINER_RUNNING') return 'keep';
  const desired = resizeAmounts(container.resources);
  // A missing record counts as nothing applied: at worst one update too many, which is idempotent.
  const current = resizeAmounts(actuated);
  if (sameAmounts(desired, current)) return 'keep';
  const changed = {
    memoryLimit: desired.memoryLimit !== current.memoryLimit,
    memoryRequest: desired.memoryRequest !== current.memoryRequest,
    cpuLimit: desired.cpuLimit !== current.cpuLimit,
    cpuRequest: desired.cpuRequest !== current.cpuRequest,
  };
  const restart =
    ((changed.memoryLimit || changed.memoryRequest) && restartsFor(container, 'memory')) || ((changed.cpuLimit || changed.cpuRequest) && restartsFor(container, 'cpu'));
  if (restart) return 'restart';
  const queue = (resource: ResizableResource, next: number, previous: number) => {
    const update: ContainerUpdate = { name: container.name, id: running.id, desired, current };
    if (next > previous) into.containersToUpdate[resource].push(update);
    else if (next < previous) into.containersToUpdate[resource].unshift(update);
  };
  if (changed.memoryLimit) queue('memory', desired.memoryLimit, current.memoryLimit);
  else if (changed.memoryRequest) queue('memory', desired.memoryRequest, current.memoryRequest);
  if (changed.cpuLimit) queue('cpu', desired.cpuLimit, current.cpuLimit);
  else if (changed.cpuRequest) queue('cpu', desired.cpuRequest, current.cpuRequest);
  return 'keep';
}

/**
 * The resize part of a sync's plan, laid over the plan computePodActions made (the kubelet
 * computes both in one pass): each running regular container and sidecar the plan keeps is
 * resized (containerResizeAction); one to restart is killed (`Container <name> resize requires
 * restart`) and started again, and the pod's cgroup follows (UpdatePodResources), as it does when
 * a container the plan starts was last given other resources than its allocated ones
 * (startingResizedContainer). Nothing is resized in a pod whose sandbox goes.
 */
export function planPodResize(pod: Pod, status: RuntimePodStatus, actions: PodActions, actuated: ActuatedResources): { actions: PodActions; resize: PodResizeActions } {
  const resize = noResize();
  if (actions.killPod || actions.createSandbox) return { actions, resize };
  const plan: PodActions = {
    ...actions,
    initContainersToStart: [...actions.initContainersToStart],
    containersToStart: [...actions.containersToStart],
    containersToKill: [...actions.containersToKill],
  };
  const killed = new Set(plan.containersToKill.map((k) => k.id));
  const consider = (container: Container, index: number, type: 'init' | 'regular') => {
    if (!isResizableContainer(container, type)) return;
    const current = newestContainer(status, container.name);
    if (!current || current.state !== 'CONTAINER_RUNNING' || killed.has(current.id)) return;
    if (containerResizeAction(container, current, actuated[container.name], resize) === 'keep') return;
    plan.containersToKill.push({ id: current.id, name: container.name, reason: 'Resize', message: `Container ${container.name} resize requires restart` });
    (type === 'init' ? plan.initContainersToStart : plan.containersToStart).push(index);
    resize.updatePodResources = true;
  };
  for (const [index, container] of (pod.spec.initContainers ?? []).entries()) consider(container, index, 'init');
  for (const [index, container] of pod.spec.containers.entries()) consider(container, index, 'regular');
  if (!resize.updatePodResources) {
    const resized = (container: Container | undefined) => container !== undefined && !sameAmounts(resizeAmounts(container.resources), resizeAmounts(actuated[container.name]));
    resize.updatePodResources =
      plan.containersToStart.some((i) => resized(pod.spec.containers[i])) || plan.initContainersToStart.some((i) => resized(pod.spec.initContainers?.[i]));
  }
  return { actions: plan, resize };
}

/**
 * IsPodResizeInProgress: a running regular container or sidecar whose allocated CPU or memory
 * (requests and limits) differs from what the runtime last took. A container not running is not
 * in progress: it gets its allocated resources when it starts.
 */
export function isPodResizeInProgress(pod: Pod, status: RuntimePodStatus, actuated: ActuatedResources): boolean {
  const inProgress = (container: Container, type: 'init' | 'regular') => {
    if (!isResizableContainer(container, type)) return false;
    if (newestContainer(status, container.name)?.state !== 'CONTAINER_RUNNING') return false;
    return !sameAmounts(resizeAmounts(container.resources), resizeAmounts(actuated[container.name]));
  };
  return (pod.spec.initContainers ?? []).some((c) => inProgress(c, 'init')) || pod.spec.containers.some((c) => inProgress(c, 'regular'));
}

/** A pod cgroup's CPU and memory settings as the kernel shows them (pod_container_manager_linux.go GetPodCgroupConfig). */
export interface PodCgroupResources {
  cpuShares: number;
  /** Microseconds per period; -1: no quota. */
  cpuQuota: number;
  cpuPeriod: number;
  /** Bytes; null: no limit. */
  memoryLimitBytes: number | null;
}

/** Settings to give a pod cgroup; an absent one is left as it is (cm.ResourceConfig's nil fields). */
export interface PodCgroupSettings {
  cpuShares?: number;
  cpuQuota?: number;
  cpuPeriod?: number;
  memoryLimitBytes?: number;
}

/** One step of resizing a resource: the pod cgroup's limit or request, or the containers' updates. */
export type ResizeStep = 'podLimit' | 'podRequest' | 'containers';

/**
 * The order of doPodResizeAction's resizeContainers for one resource, from the pod cgroup's current
 * and new limit and request: growing, the pod's limit then its request before the containers (so
 * that requests stay within limits, and the containers fit in the pod); shrinking, after them, the
 * request then the limit. Unchanged values take no step. Memory has no request in the cgroups (0, 0).
 */
export function resizeSteps(current: { limit: number; request: number }, next: { limit: number; request: number }, containers: boolean): ResizeStep[] {
  const steps: ResizeStep[] = [];
  if (next.limit > current.limit) steps.push('podLimit');
  if (next.request > current.request) steps.push('podRequest');
  if (containers) steps.push('containers');
  if (next.request < current.request) steps.push('podRequest');
  if (next.limit < current.limit) steps.push('podLimit');
  return steps;
}

/**
 * The resources a container is updated with for one resource (updatePodContainerResources): the
 * new values of that resource with the ones last applied of the other, so that each update changes
 * one resource only. Zeros are written (a request of 0 CPU is the minimum shares, as the kubelet sends it).
 */
export function containerUpdateResources(update: Pick<ContainerUpdate, 'desired' | 'current'>, resource: ResizableResource): ResourceRequirements {
  const { desired, current } = update;
  const cpu = resource === 'cpu' ? desired : current;
  const memory = resource === 'memory' ? desired : current;
  return {
    limits: { cpu: `${cpu.cpuLimit}m`, memory: String(memory.memoryLimit) },
    requests: { cpu: `${cpu.cpuRequest}m`, memory: String(memory.memoryRequest) },
  };
}

/** `amounts` after a successful update of `resource`: its values are now the desired ones. */
export function appliedAmounts(current: ResizeAmounts, desired: ResizeAmounts, resource: ResizableResource): ResizeAmounts {
  return resource === 'cpu'
    ? { ...current, cpuLimit: desired.cpuLimit, cpuRequest: desired.cpuRequest }
    : { ...current, memoryLimit: desired.memoryLimit, memoryRequest: desired.memoryRequest };
}

/** Resource requirements without their zero entries: what the actuated record keeps of an update. */
export function withoutZeros(resources: ResourceRequirements): ResourceRequirements {
  const keep = (list: Record<string, string | number> | undefined) => {
    const kept = Object.fromEntries(Object.entries(list ?? {}).filter(([name, quantity]) => amount(name, quantity) !== 0));
    return Object.keys(kept).length ? kept : undefined;
  };
  const requests = keep(resources.requests);
  const limits = keep(resources.limits);
  return { ...(limits ? { limits } : {}), ...(requests ? { requests } : {}) };
}

/** The memory limits a resize lowers (or sets where there was none): the pod's, and each container's, in bytes. */
export interface MemoryDecreases {
  pod?: number;
  containers: Record<string, number>;
}

/**
 * validateMemoryResizeAction, the first half: which memory limits go down. The pod's when it gets
 * one (`podLimit`; undefined: it has none) below its cgroup's (`podCurrent`; null: none); a
 * container's when its new limit is set and lower than its last one, or it had none. Null when
 * nothing goes down (nothing to check).
 */
export function memoryDecreases(podLimit: number | undefined, podCurrent: number | null, memoryUpdates: readonly ContainerUpdate[]): MemoryDecreases | null {
  const decreases: MemoryDecreases = { containers: {} };
  if (podLimit !== undefined && (podCurrent === null || podLimit < podCurrent)) decreases.pod = podLimit;
  for (const update of memoryUpdates) {
    const limit = update.desired.memoryLimit;
    if (limit !== 0 && (update.current.memoryLimit === 0 || limit < update.current.memoryLimit)) decreases.containers[update.name] = limit;
  }
  return decreases.pod === undefined && Object.keys(decreases.containers).length === 0 ? null : decreases;
}

/** Memory in use, in bytes: the pod's, and each container's the runtime has stats of (undefined: stats without memory). */
export interface MemoryUsage {
  pod?: number;
  containers: Record<string, number | undefined>;
}

/**
 * validateMemoryResizeAction, the second half: the resize is refused when a lowered limit is not
 * above what is in use, with the kubelet's message (`cannot decrease memory limits: …`, the
 * reasons joined as utilerrors' aggregate joins them). A container the runtime has no stats of is
 * not checked, as the kubelet only walks the stats it has. Null: the resize may go ahead.
 * (The kubelet prints the pod's usage in a container's message; here it is the container's own.)
 */
export function memoryDecreaseErrors(decreases: MemoryDecreases, usage: MemoryUsage): string | null {
  const errors: string[] = [];
  if (decreases.pod !== undefined) {
    if (usage.pod === undefined) errors.push('missing pod memory usage');
    else if (usage.pod >= decreases.pod) errors.push(`attempting to set pod memory limit (${decreases.pod}) below current usage (${usage.pod})`);
  }
  for (const [name, used] of Object.entries(usage.containers)) {
    const limit = decreases.containers[name];
    if (limit === undefined) continue;
    if (used === undefined) errors.push(`missing container "${name}" memory usage`);
    else if (used >= limit) errors.push(`attempting to set container "${name}" memory limit (${limit}) below current usage (${used})`);
  }
  if (errors.length === 0) return null;
  const unique = [...new Set(errors)];
  return `cannot decrease memory limits: ${unique.length === 1 ? unique[0] : `[${unique.join(', ')}]`}`;
}
