/**
 * Carries out the resize part of a sync's plan (pkg/kubelet/kuberuntime/kuberuntime_manager.go
 * doPodResizeAction, updatePodContainerResources; kuberuntime_container.go updateContainerResources):
 * SyncPod's step 6, after the kills and the sandbox and before any container starts. The order is
 * decided in podResize.ts: memory, then CPU; for each, the pod cgroup's growth before the
 * containers and its shrinking after them (the pod's cgroup through `PodResizeCgroups`, src/cm), and
 * the containers' decreases before their increases, each one a CRI UpdateContainerResources with
 * the new values of that resource and the last applied ones of the other. Each container the
 * runtime took new values for is recorded as actuated at once, so that a resize that fails midway
 * is resumed, not repeated, by the next sync. A memory limit that would fall to or below what is in
 * use (ListContainerStats) is refused before anything changes.
 *
 * The result is the error the kubelet reports as the `PodResizeInProgress` condition's message
 * (reason `Error`), or null. UpdatePodSandboxResources, the runtime's best-effort notice of the new
 * pod-level values, is not sent: containerd 1.6 does not have it and sim:// keeps no pod-level
 * settings of its own.
 */
import type { Container, Pod, PodCondition, ResourceRequirements } from '../api/types.ts';
import type { RuntimePodStatus } from '../api/runtimeView.ts';
import type { CallOptions, LinuxContainerResources, RuntimeService } from '../runtime/types.ts';
import { errorText } from './images.ts';
import { Label } from './labels.ts';
import {
  type ActuatedResources,
  type MemoryUsage,
  type PodCgroupResources,
  type PodCgroupSettings,
  type PodResizeActions,
  type ResizableResource,
  type ResizeAmounts,
  type ResizeStep,
  appliedAmounts,
  containerUpdateResources,
  memoryDecreaseErrors,
  memoryDecreases,
  resizeSteps,
  withoutZeros,
} from './podResize.ts';

/** The pod cgroup as a resize reads and sets it (the kubelet's PodContainerManager). */
export interface PodResizeCgroups {
  /** Its settings now; rejects when they cannot be read. */
  podResources(pod: Pod): Promise<PodCgroupResources>;
  /** What the (allocated) pod's cgroup should have (ResourceConfigForPod): absent fields have no value to set. */
  resizeConfig(pod: Pod): PodCgroupSettings;
  setPodResources(pod: Pod, settings: PodCgroupSettings): Promise<void>;
}

/** The resources the runtime last took for each container (the kubelet's actuated state). */
export interface ActuatedStore {
  /** The pod's record by container name; empty when there is none. */
  of(uid: string): ActuatedResources;
  set(uid: string, container: string, resources: ResourceRequirements): void;
}

/**
 * What a pod's effects read and write of the node's in-place resize records (the kubelet's status
 * manager's resize conditions and its runtime manager's actuated state): the allocation manager
 * keeps them (src/allocation/manager.ts).
 */
export interface PodResizeState {
  actuated: ActuatedStore;
  /** InitializeActuatedPod: a pod without a record starts with its allocated resources as actuated. */
  initializeActuated(pod: Pod): void;
  /** The pod's PodResizePending and PodResizeInProgress conditions. */
  conditions(uid: string): PodCondition[];
  setInProgress(uid: string, reason: string, message: string, generation: number): { changed: boolean; generation: number };
  /** The generation of the in-progress condition cleared, or null when there was none. */
  clearInProgress(uid: string): number | null;
  clearConditions(uid: string): void;
}

export interface PodResizeDeps {
  runtime: RuntimeService;
  /** The pod's cgroup; absent: containers only (a node without pod cgroups). */
  cgroups?: PodResizeCgroups;
  actuated: ActuatedStore;
  /** The CRI values of a container (resources.ts containerResources for the node). */
  containerResources(pod: Pod, container: Container): LinuxContainerResources;
}

/** format.Pod: `<name>_<namespace>(<uid>)`, as the kubelet names a pod in its errors. */
const podName = (pod: Pod) => `${pod.metadata.name}_${pod.metadata.namespace}(${pod.metadata.uid})`;

const INFINITE = Number.POSITIVE_INFINITY;

/** The memory in use by the pod's running containers, by name, and in all (the kubelet reads the pod's cgroup). */
async function memoryUsage(runtime: RuntimeService, pod: Pod, status: RuntimePodStatus, opts: CallOptions): Promise<MemoryUsage> {
  const running = new Map(status.containers.filter((c) => c.state === 'CONTAINER_RUNNING').map((c) => [c.id, c.name]));
  const stats = await runtime.listContainerStats({ labelSelector: { [Label.podUid]: pod.metadata.uid } }, opts);
  const usage: MemoryUsage = { containers: {} };
  let total = 0;
  let any = false;
  for (const s of stats) {
    const name = running.get(s.attributes.id);
    if (name === undefined) continue;
    const used = s.memory?.usageBytes ?? s.memory?.workingSetBytes;
    usage.containers[name] = used;
    if (used !== undefined) {
      total += used;
      any = true;
    }
  }
  if (any) usage.pod = total;
  return usage;
}

/** Runs the resize part of a plan; the error to report, or null. */
export async function executePodResize(deps: PodResizeDeps, pod: Pod, status: RuntimePodStatus, plan: PodResizeActions, opts: CallOptions): Promise<string | null> {
  const { cgroups } = deps;
  const uid = pod.metadata.uid;
  let current: PodCgroupResources | undefined;
  let wanted: PodCgroupSettings = {};
  if (cgroups) {
    wanted = cgroups.resizeConfig(pod);
    try {
      current = await cgroups.podResources(pod);
    } catch {
      return `unable to get pod cgroup config for pod "${podName(pod)}"`;
    }
  }

  // A best-effort check before anything changes, to avoid a partial resize (validatePodResizeAction).
  const memory = plan.containersToUpdate.memory;
  if (memory.length > 0 || plan.updatePodResources) {
    const decreases = memoryDecreases(wanted.memoryLimitBytes, current?.memoryLimitBytes ?? null, memory);
    if (decreases) {
      let usage: MemoryUsage;
      try {
        usage = await memoryUsage(deps.runtime, pod, status, opts);
      } catch {
        return `unable to read memory usage for pod "${podName(pod)}"`;
      }
      const refused = memoryDecreaseErrors(decreases, usage);
      if (refused) return refused;
    }
  }

  // What each container was last given, kept current across the memory and CPU passes.
  const given = new Map<string, ResizeAmounts>();
  for (const update of [...memory, ...plan.containersToUpdate.cpu]) if (!given.has(update.name)) given.set(update.name, { ...update.current });
  const containerOf = (name: string) => [...(pod.spec.initContainers ?? []), ...pod.spec.containers].find((c) => c.name === name);

  const updateContainers = async (resource: ResizableResource) => {
    for (const update of plan.containersToUpdate[resource]) {
      const container = containerOf(update.name);
      const last = given.get(update.name);
      if (!container || !last) continue;
      const resources = containerUpdateResources({ desired: update.desired, current: last }, resource);
      await deps.runtime.updateContainerResources(update.id, deps.containerResources(pod, { ...container, resources }), opts);
      // Accepted: the runtime may lag in showing it, so the record, not a status read, says what it has.
      deps.actuated.set(uid, update.name, withoutZeros(resources));
      given.set(update.name, appliedAmounts(last, update.desired, resource));
    }
  };

  const run = async (resource: ResizableResource, steps: ResizeStep[], podLimit: PodCgroupSettings, podRequest: PodCgroupSettings) => {
    for (const step of steps) {
      if (step === 'containers') await updateContainers(resource);
      else await cgroups?.setPodResources(pod, step === 'podLimit' ? podLimit : podRequest);
    }
  };

  try {
    if (memory.length > 0 || plan.updatePodResources) {
      // Without a pod limit to set, the pod's cgroup keeps the one it has (removing a limit is not supported).
      const currentLimit = current ? (current.memoryLimitBytes ?? INFINITE) : 0;
      const nextLimit = current ? (wanted.memoryLimitBytes ?? current.memoryLimitBytes ?? INFINITE) : 0;
      const steps = resizeSteps({ limit: currentLimit, request: 0 }, { limit: nextLimit, request: 0 }, memory.length > 0);
      await run('memory', steps, { memoryLimitBytes: wanted.memoryLimitBytes ?? 0 }, {});
    }
    const cpu = plan.containersToUpdate.cpu;
    if (cpu.length > 0 || plan.updatePodResources) {
      const currentQuota = current?.cpuQuota ?? 0;
      const nextQuota = current ? (wanted.cpuQuota ?? current.cpuQuota) : 0;
      const currentShares = current?.cpuShares ?? 0;
      const nextShares = current ? (wanted.cpuShares ?? current.cpuShares) : 0;
      const steps = resizeSteps({ limit: currentQuota, request: currentShares }, { limit: nextQuota, request: nextShares }, cpu.length > 0);
      const quota: PodCgroupSettings = { cpuQuota: wanted.cpuQuota ?? -1, ...(wanted.cpuPeriod !== undefined ? { cpuPeriod: wanted.cpuPeriod } : {}) };
      await run('cpu', steps, quota, wanted.cpuShares !== undefined ? { cpuShares: wanted.cpuShares } : {});
    }
  } catch (err) {
    return errorText(err);
  }
  return null;
}
