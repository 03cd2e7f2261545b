/**
 * What an in-place resize shows in a pod's status, pure:
 *   - `containerStatuses[].allocatedResources` and `.resources` (pkg/kubelet/kubelet_pods.go
 *     convertToAPIContainerStatuses, convertContainerStatusResources; kuberuntime_container.go
 *     toKubeContainerStatus; kuberuntime_container_linux.go toKubeContainerResources);
 *   - the `PodResizePending` and `PodResizeInProgress` conditions as the kubelet's status manager
 *     keeps them (pkg/kubelet/status/status_manager.go SetPodResizePendingCondition,
 *     SetPodResizeInProgressCondition, ClearPodResize*Condition, BackfillPodResizeConditions,
 *     updatedPodResizeCondition);
 *   - the resize events' messages (pkg/kubelet/events/resize.go).
 */
import type { Container, ContainerStatus, Pod, PodCondition, ResourceRequirements } from '../api/types.ts';
import { amount } from '../api/quantity.ts';
import type { RuntimeContainerStatus } from '../api/runtimeView.ts';
import type { LinuxContainerResources } from '../runtime/types.ts';

/** cm/helpers_linux.go: the smallest shares, and the CPU limit below which quotas are all alike (10m: 1 ms per 100 ms). */
const MIN_SHARES = 2;
const MIN_MILLI_CPU_LIMIT = 10;

/** A container's resources as the runtime reports them (kubecontainer.ContainerResources): millicores and bytes. */
export interface ReportedResources {
  cpuRequest?: number;
  cpuLimit?: number;
  memoryRequest?: number;
  memoryLimit?: number;
}

/** cm/helpers_linux.go SharesToMilliCPU: shares back to millicores, rounded up; 0 below the minimum. */
export function sharesToMilliCpu(shares: number): number {
  return shares >= MIN_SHARES ? Math.ceil((shares * 1000) / 1024) : 0;
}

/** cm/helpers_linux.go QuotaToMilliCPU: -1 (no quota) is 0. */
export function quotaToMilliCpu(quota: number, period: number): number {
  if (quota === -1) return 0;
  return Math.trunc((quota * 1000) / period);
}

/**
 * toKubeContainerResources, then toKubeContainerStatus's filling in: the CPU limit from the quota
 * and period, the CPU request from the shares, the memory limit (each only when positive), as the
 * runtime reports them; when it reports none, what the runtime last took (the actuated record);
 * the memory request, which no runtime reports, from that record too.
 */
export function reportedResources(linux: LinuxContainerResources | undefined, actuated: ResourceRequirements | undefined): ReportedResources | undefined {
  let reported: ReportedResources | undefined;
  if (linux) {
    const cpuLimit = linux.cpuPeriod > 0 ? quotaToMilliCpu(linux.cpuQuota, linux.cpuPeriod) : 0;
    const cpuRequest = linux.cpuShares > 0 ? sharesToMilliCpu(linux.cpuShares) : 0;
    const found: ReportedResources = {};
    if (cpuLimit > 0) found.cpuLimit = cpuLimit;
    if (cpuRequest > 0) found.cpuRequest = cpuRequest;
    if (linux.memoryLimitInBytes > 0) found.memoryLimit = linux.memoryLimitInBytes;
    if (Object.keys(found).length) reported = found;
  }
  if (!actuated) return reported;
  const recorded = (list: Record<string, string | number> | undefined, name: string) => (list?.[name] !== undefined ? amount(name, list[name]) : undefined);
  if (!reported) {
    // Only what the record holds: the kubelet would show a missing value as 0 here.
    const fromRecord: ReportedResources = {};
    const values: [keyof ReportedResources, number | undefined][] = [
      ['cpuRequest', recorded(actuated.requests, 'cpu')],
      ['cpuLimit', recorded(actuated.limits, 'cpu')],
      ['memoryRequest', recorded(actuated.requests, 'memory')],
      ['memoryLimit', recorded(actuated.limits, 'memory')],
    ];
    for (const [key, value] of values) if (value !== undefined) fromRecord[key] = value;
    return fromRecord;
  }
  const memoryRequest = recorded(actuated.requests, 'memory');
  if (reported.memoryRequest === undefined && memoryRequest) reported.memoryRequest = memoryRequest;
  return reported;
}

/** A CPU amount as resource.NewMilliQuantity prints it: `250m`, `1`. */
export function formatMilliCpu(milli: number): string {
  return milli % 1000 === 0 ? String(milli / 1000) : `${milli}m`;
}

const BINARY_SUFFIXES = ['', 'Ki', 'Mi', 'Gi', 'Ti', 'Pi', 'Ei'];
const DECIMAL_SUFFIXES = ['', 'k', 'M', 'G', 'T', 'P', 'E'];

/**
 * Bytes as the API server shows them once written: the largest binary suffix that divides exactly
 * (`50Mi`, resource.NewQuantity(…, BinarySI)); a count no power of 1024 divides is read back as a
 * decimal quantity and shown with the largest decimal suffix that divides it (`100M`, `1536`), so
 * the status the agent keeps is the one the API has, and is not written again and again.
 */
export function formatBinaryBytes(bytes: number): string {
  if (bytes === 0) return '0';
  let value = bytes;
  let unit = 0;
  if (value % 1024 === 0) {
    while (value % 1024 === 0 && unit < BINARY_SUFFIXES.length - 1) {
      value /= 1024;
      unit++;
    }
    return `${value}${BINARY_SUFFIXES[unit]}`;
  }
  while (value % 1000 === 0 && unit < DECIMAL_SUFFIXES.length - 1) {
    value /= 1000;
    unit++;
  }
  return `${value}${DECIMAL_SUFFIXES[unit]}`;
}

const copyList = (list: Record<string, string | number> | undefined) => (list ? { ...list } : undefined);

/**
 * `containerStatuses[].resources` (convertContainerStatusResources): the allocated requests and
 * limits, with the CPU and memory the runtime reports in their place for a running container. A
 * value the runtime does not report keeps the one shown before for the same running instance; a
 * CPU amount at or below the smallest the kernel tells apart (requests of 2m, limits of 10m) stays
 * the allocated one when that is small too, so that `1m` does not come back as `2m`. A container not
 * running shows its allocated resources. Lists the allocation does not have are not added.
 */
export function containerStatusResources(
  allocated: Container,
  runtime: Pick<RuntimeContainerStatus, 'id' | 'state'>,
  reported: ReportedResources | undefined,
  previous: ContainerStatus | undefined,
  runtimeName: string,
): ResourceRequirements {
  const limits = copyList(allocated.resources?.limits);
  const requests = copyList(allocated.resources?.requests);
  const result = (): ResourceRequirements => ({ ...(limits ? { limits } : {}), ...(requests ? { requests } : {}) });
  if (runtime.state !== 'CONTAINER_RUNNING') return result();
  const sameInstance = previous?.state.running !== undefined && previous.containerID === `${runtimeName}://${runtime.id}`;
  const preserve = (into: Record<string, string | number>, name: string, old: Record<string, string | number> | undefined) => {
    if (sameInstance && old?.[name] !== undefined) into[name] = old[name]!;
  };
  // A value equal to the allocated one keeps the allocation's spelling (the API's own).
  const set = (into: Record<string, string | number>, name: 'cpu' | 'memory', value: number) => {
    if (into[name] !== undefined && amount(name, into[name]) === value) return;
    into[name] = name === 'cpu' ? formatMilliCpu(value) : formatBinaryBytes(value);
  };
  if (limits) {
    if (reported?.cpuLimit !== undefined) {
      if (reported.cpuLimit > MIN_MILLI_CPU_LIMIT || amount('cpu', limits['cpu']) > MIN_MILLI_CPU_LIMIT) set(limits, 'cpu', reported.cpuLimit);
    } else preserve(limits, 'cpu', previous?.resources?.limits);
    if (reported?.memoryLimit !== undefined) set(limits, 'memory', reported.memoryLimit);
    else preserve(limits, 'memory', previous?.resources?.limits);
  }
  if (requests) {
    // The kubelet compares millicores with the minimum shares here (cm.MinShares), as written.
    if (reported?.cpuRequest !== undefined) {
      if (reported.cpuRequest > MIN_SHARES || amount('cpu', requests['cpu']) > MIN_SHARES) set(requests, 'cpu', reported.cpuRequest);
    } else preserve(requests, 'cpu', previous?.resources?.requests);
    if (reported?.memoryRequest !== undefined) set(requests, 'memory', reported.memoryRequest);
    else preserve(requests, 'memory', previous?.resources?.requests);
  }
  return result();
}

// ------------------------------------------------------------------------------------------------
// Conditions

export const POD_RESIZE_PENDING = 'PodResizePending';
export const POD_RESIZE_IN_PROGRESS = 'PodResizeInProgress';

/** A pod's two resize conditions, as the status manager keeps them between syncs. */
export interface ResizeConditions {
  pending?: PodCondition;
  inProgress?: PodCondition;
}

export type PendingReason = 'Deferred' | 'Infeasible';

/** Any reason but Infeasible (an admit handler's `OutOfcpu`, …) makes a resize Deferred: it may fit later. */
export function pendingReason(reason: string): PendingReason {
  return reason === 'Infeasible' ? 'Infeasible' : 'Deferred';
}

/** updatedPodResizeCondition: True, probed now, its transition time kept while its reason stays. */
function updatedCondition(type: string, old: PodCondition | undefined, reason: string, message: string, generation: number, now: string): PodCondition {
  return {
    type,
    status: 'True',
    ...(reason ? { reason } : {}),
    ...(message ? { message } : {}),
    ...(generation > 0 ? { observedGeneration: generation } : {}),
    lastProbeTime: now,
    lastTransitionTime: old && (old.reason ?? '') === reason ? (old.lastTransitionTime ?? now) : now,
  };
}

/** SetPodResizePendingCondition; `changed`: its reason or generation moved (the kubelet records an event then). */
export function setPending(conditions: ResizeConditions, reason: string, message: string, generation: number, now: string): { conditions: ResizeConditions; changed: boolean } {
  const kept = pendingReason(reason);
  const previous = conditions.pending;
  const pending = updatedCondition(POD_RESIZE_PENDING, previous, kept, message, generation, now);
  const changed = !previous || (previous.reason ?? '') !== kept || (previous.observedGeneration ?? 0) !== generation;
  return { conditions: { ...conditions, pending }, changed };
}

export function clearPending(conditions: ResizeConditions): ResizeConditions {
  const { pending: _, ...rest } = conditions;
  return rest;
}

/**
 * SetPodResizeInProgressCondition: an existing condition keeps its generation (clear it first to
 * move it) and, when none is given, its reason and message (an Error stays until cleared).
 * `changed`: anything but the times differs; `generation`: the condition's.
 */
export function setInProgress(
  conditions: ResizeConditions,
  reason: string,
  message: string,
  generation: number,
  now: string,
): { conditions: ResizeConditions; changed: boolean; generation: number } {
  const previous = conditions.inProgress;
  let keptReason = reason;
  let keptMessage = message;
  let keptGeneration = generation;
  if (previous) {
    if (reason === '' && message === '') {
      keptReason = previous.reason ?? '';
      keptMessage = previous.message ?? '';
    }
    keptGeneration = previous.observedGeneration ?? 0;
  }
  const inProgress = updatedCondition(POD_RESIZE_IN_PROGRESS, previous, keptReason, keptMessage, keptGeneration, now);
  const changed =
    !previous || (previous.reason ?? '') !== keptReason || (previous.message ?? '') !== keptMessage || (previous.observedGeneration ?? 0) !== keptGeneration || previous.lastTransitionTime !== inProgress.lastTransitionTime;
  return { conditions: { ...conditions, inProgress }, changed, generation: keptGeneration };
}

/** ClearPodResizeInProgressCondition; `cleared`: the generation of the condition that went, or null when there was none. */
export function clearInProgress(conditions: ResizeConditions): { conditions: ResizeConditions; cleared: number | null } {
  if (!conditions.inProgress) return { conditions, cleared: null };
  const { inProgress, ...rest } = conditions;
  return { conditions: rest, cleared: inProgress.observedGeneration ?? 0 };
}

/** The conditions in the order the kubelet lists them (PodResizePending, then PodResizeInProgress). */
export function resizeConditionList(conditions: ResizeConditions | undefined): PodCondition[] {
  return [conditions?.pending, conditions?.inProgress].filter((c): c is PodCondition => c !== undefined);
}

/** BackfillPodResizeConditions: the resize conditions an API pod's status carries, taken up again after a restart of the agent. */
export function backfillConditions(conditions: ResizeConditions, apiConditions: readonly PodCondition[] | undefined, now: string): ResizeConditions {
  let next = conditions;
  for (const c of apiConditions ?? []) {
    const filled = updatedCondition(c.type, undefined, c.reason ?? '', c.message ?? '', c.observedGeneration ?? 0, now);
    if (c.type === POD_RESIZE_PENDING) next = { ...next, pending: filled };
    else if (c.type === POD_RESIZE_IN_PROGRESS) next = { ...next, inProgress: filled };
  }
  return next;
}

// ------------------------------------------------------------------------------------------------
// Events

/** A ResourceRequirements as Go's encoding/json writes it: limits, then requests, map keys sorted, empty lists left out. */
function goResources(resources: ResourceRequirements | undefined): Record<string, Record<string, string>> {
  const sorted = (list: Record<string, string | number> | undefined) =>
    list && Object.keys(list).length ? Object.fromEntries(Object.keys(list).sort().map((k) => [k, String(list[k])])) : undefined;
  const limits = sorted(resources?.limits);
  const requests = sorted(resources?.requests);
  return { ...(limits ? { limits } : {}), ...(requests ? { requests } : {}) };
}

/**
 * A resize event's message (events/resize.go podResizeMessage): `<prefix>: ` and the JSON of every
 * init and regular container's name and resources in `pod`, the generation, and the error if any:
 *   Pod resize started: {"containers":[{"name":"c1","resources":{"requests":{"cpu":"25m"}}}],"generation":2}
 */
export function resizeEventMessage(prefix: string, pod: Pod, generation: number, error = ''): string {
  const entry = (c: Container) => ({ name: c.name, resources: goResources(c.resources) });
  const init = (pod.spec.initContainers ?? []).map(entry);
  const regular = pod.spec.containers.map(entry);
  const summary = { ...(init.length ? { initContainers: init } : {}), ...(regular.length ? { containers: regular } : {}), generation, ...(error ? { error } : {}) };
  return `${prefix}: ${JSON.stringify(summary)}`;
}
