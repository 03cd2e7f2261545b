/**
 * The kubelet's cgroup hierarchy and what each level of it gets (pkg/kubelet/cm: the container
 * manager), pure:
 *
 *   <root>/kubepods                  node allocatable: the pods together
 *   <root>/kubepods/burstable        the Burstable pods: CPU shares of their summed requests
 *   <root>/kubepods/besteffort       the BestEffort pods: the minimum CPU shares
 *   <root>/kubepods[/<qos>]/pod<uid> each pod (a Guaranteed pod sits right under kubepods)
 *
 * The runtime puts the pod's sandbox and containers under its pod cgroup (the sandbox's
 * cgroup_parent). Paths are the cgroupfs driver's (`/kubepods/burstable/pod<uid>`).
 */
import { podQos, type QosClass } from '../api/qos.ts';
import { amounts, type ResourceAmounts } from '../api/quantity.ts';
import type { Container, Pod } from '../api/types.ts';
import { podRequests } from '../admission/resources.ts';
import type { PodCgroupResources, PodCgroupSettings } from '../kuberuntime/podResize.ts';
import { QUOTA_PERIOD_US, hugePageSizeOfResource, milliCpuToQuota, milliCpuToShares } from '../kuberuntime/resources.ts';

/** cm/helpers_linux.go MinShares: a BestEffort pod's, and the besteffort cgroup's. */
const MIN_SHARES = 2;

/** What a cgroup is given; an absent field is left as the kernel has it (no limit). */
export interface CgroupConfig {
  cpuShares?: number;
  /** Microseconds per period; -1: no quota. */
  cpuQuota?: number;
  cpuPeriod?: number;
  memoryLimitBytes?: number;
  pidsLimit?: number;
  /**
   * HugeTLB limits by page size as runc names it (`2MB` → bytes); 0 denies that size. Written only
   * where the hugetlb controller exists (cgroupfs.ts).
   */
  hugePageLimits?: Record<string, number>;
}

/** The kubepods cgroup under `--cgroup-root` (cm.cgroupRoot with cgroupsPerQOS). */
export function kubepodsCgroup(cgroupRoot: string): string {
  return joinCgroup(cgroupRoot, 'kubepods');
}

/** A QoS class's cgroup: Guaranteed pods sit in kubepods itself (qos_container_manager_linux.go). */
export function qosCgroup(cgroupRoot: string, qos: QosClass): string {
  const kubepods = kubepodsCgroup(cgroupRoot);
  return qos === 'Guaranteed' ? kubepods : joinCgroup(kubepods, qos === 'Burstable' ? 'burstable' : 'besteffort');
}

/** The pod's cgroup (pod_container_manager_linux.go GetPodContainerName): `pod<uid>` under its QoS class's. */
export function podCgroup(cgroupRoot: string, pod: Pod): string {
  return joinCgroup(qosCgroup(cgroupRoot, podQos(pod)), `pod${pod.metadata.uid}`);
}

/** The UID of a pod cgroup's directory name (`pod<uid>`), or null for any other name. */
export function podUidOfCgroup(name: string): string | null {
  return /^pod(.+)$/.exec(name)?.[1] ?? null;
}

function joinCgroup(parent: string, child: string): string {
  return parent === '/' || parent === '' ? `/${child}` : `${parent.replace(/\/+$/, '')}/${child}`;
}

const limitsOf = (c: Container) => amounts(c.resources?.limits);

/**
 * The pod's limits (resource.PodLimits): the regular containers and the sidecars summed, or, if
 * larger, an init container's own plus those of the sidecars started before it; pod-level limits
 * (`spec.resources.limits`) in place of the containers' for CPU and memory; plus the overhead.
 * And whether a CPU and a memory limit are declared: at the pod level, or by every container.
 */
function podLimits(pod: Pod): { limits: ResourceAmounts; cpuDeclared: boolean; memoryDeclared: boolean } {
  const all = [...(pod.spec.initContainers ?? []), ...pod.spec.containers];
  const add = (into: ResourceAmounts, more: ResourceAmounts) => {
    for (const [name, value] of Object.entries(more)) into[name] = (into[name] ?? 0) + value;
  };
  const limits: ResourceAmounts = {};
  for (const c of pod.spec.containers) add(limits, limitsOf(c));
  const sidecars: ResourceAmounts = {};
  const initPeak: ResourceAmounts = {};
  for (const c of pod.spec.initContainers ?? []) {
    const own = limitsOf(c);
    const whileRunning = { ...sidecars };
    add(whileRunning, own);
    for (const [name, value] of Object.entries(whileRunning)) initPeak[name] = Math.max(initPeak[name] ?? 0, value);
    if (c.restartPolicy === 'Always') {
      add(limits, own);
      add(sidecars, own);
    }
  }
  for (const [name, value] of Object.entries(initPeak)) limits[name] = Math.max(limits[name] ?? 0, value);
  const podLevel = amounts(pod.spec.resources?.limits);
  for (const name of ['cpu', 'memory']) if (podLevel[name] !== undefined) limits[name] = podLevel[name]!;
  add(limits, amounts(pod.spec.overhead));
  return {
    limits,
    cpuDeclared: (podLevel['cpu'] ?? 0) > 0 || all.every((c) => (limitsOf(c)['cpu'] ?? 0) > 0),
    memoryDeclared: (podLevel['memory'] ?? 0) > 0 || all.every((c) => (limitsOf(c)['memory'] ?? 0) > 0),
  };
}

/**
 * The pod's HugeTLB limits (HugePageLimits over PodRequests, then the cgroup manager's
 * maybeSetHugetlb): its requests of each page size summed, and 0 for every size the host has that
 * the pod does not ask for, so the pod's containers cannot take huge pages it was not given.
 */
export function podHugePageLimits(pod: Pod, hostSizes: readonly string[]): Record<string, number> {
  const limits: Record<string, number> = {};
  for (const [resource, bytes] of Object.entries(podRequests(pod))) {
    const size = hugePageSizeOfResource(resource);
    if (size !== null) limits[size] = (limits[size] ?? 0) + Math.ceil(bytes);
  }
  for (const size of hostSizes) limits[size] ??= 0;
  return limits;
}

/**
 * The pod cgroup's settings (cm/helpers_linux.go ResourceConfigForPod): Guaranteed, CPU shares
 * from its requests, its CPU quota and memory from its limits; Burstable, the shares, and the
 * quota or memory limit only when every container declares one; BestEffort, the minimum shares.
 * `podPidsLimit` (--pod-max-pids) when positive. Whatever the class, its HugeTLB limits over the
 * host's page sizes (`hugePageSizes`, `2MB` form).
 */
export function podCgroupConfig(pod: Pod, podPidsLimit: number, hugePageSizes: readonly string[]): CgroupConfig {
  const qos = podQos(pod);
  const config: CgroupConfig = {};
  if (qos === 'BestEffort') config.cpuShares = MIN_SHARES;
  else {
    const { limits, cpuDeclared, memoryDeclared } = podLimits(pod);
    config.cpuShares = milliCpuToShares(podRequests(pod)['cpu'] ?? 0);
    if (qos === 'Guaranteed' || cpuDeclared) {
      config.cpuQuota = milliCpuToQuota(limits['cpu'] ?? 0);
      config.cpuPeriod = QUOTA_PERIOD_US;
    }
    if (qos === 'Guaranteed' || memoryDeclared) config.memoryLimitBytes = limits['memory'] ?? 0;
  }
  if (podPidsLimit > 0) config.pidsLimit = podPidsLimit;
  const hugePages = podHugePageLimits(pod, hugePageSizes);
  if (Object.keys(hugePages).length) config.hugePageLimits = hugePages;
  return config;
}

/** The files PodCgroupResources is read from, on each version. */
export const POD_RESOURCE_FILES: Record<1 | 2, readonly string[]> = {
  1: ['cpu.shares', 'cpu.cfs_quota_us', 'cpu.cfs_period_us', 'memory.limit_in_bytes'],
  2: ['cpu.weight', 'cpu.max', 'memory.max'],
};

/** A v1 memory limit at or above this is the kernel's "no limit" (PAGE_COUNTER_MAX pages, 9223372036854771712). */
const V1_UNLIMITED = 2 ** 62;

/** cm/cgroup_manager_linux.go CpuWeightToCpuShares: a v2 weight (1…10000) back to shares. */
export function weightToShares(weight: number): number {
  return Math.floor(((weight - 1) * 262142) / 9999) + 2;
}

/**
 * PodCgroupResources from the files of POD_RESOURCE_FILES as read (cgroup_v1_manager_linux.go and
 * cgroup_v2_manager_linux.go GetCgroupConfig): v1 `cpu.shares`, `cpu.cfs_quota_us` (-1: none),
 * `cpu.cfs_period_us`, `memory.limit_in_bytes`; v2 `cpu.weight` (converted to shares), `cpu.max`
 * (`max 100000`: none), `memory.max` (`max`: none).
 */
export function parsePodCgroupResources(version: 1 | 2, files: Readonly<Record<string, string>>): PodCgroupResources {
  const int = (text: string | undefined, fallback: number) => {
    const value = Number.parseInt((text ?? '').trim(), 10);
    return Number.isFinite(value) ? value : fallback;
  };
  if (version === 1) {
    const memory = Number((files['memory.limit_in_bytes'] ?? '').trim());
    return {
      cpuShares: int(files['cpu.shares'], 1024),
      cpuQuota: int(files['cpu.cfs_quota_us'], -1),
      cpuPeriod: int(files['cpu.cfs_period_us'], QUOTA_PERIOD_US),
      memoryLimitBytes: Number.isFinite(memory) && memory > 0 && memory < V1_UNLIMITED ? memory : null,
    };
  }
  const [quota, period] = (files['cpu.max'] ?? 'max').trim().split(/\s+/);
  const memory = (files['memory.max'] ?? 'max').trim();
  return {
    cpuShares: weightToShares(int(files['cpu.weight'], 100)),
    cpuQuota: quota === 'max' || quota === undefined ? -1 : int(quota, -1),
    cpuPeriod: int(period, QUOTA_PERIOD_US),
    memoryLimitBytes: memory === 'max' ? null : int(memory, 0) || null,
  };
}

/**
 * The CPU and memory settings an in-place resize gives the pod's cgroup (doPodResizeAction over
 * ResourceConfigForPod): those of podCgroupConfig, a memory limit only where there is one.
 */
export function podResizeConfig(pod: Pod): PodCgroupSettings {
  const { cpuShares, cpuQuota, cpuPeriod, memoryLimitBytes } = podCgroupConfig(pod, 0, []);
  return {
    ...(cpuShares !== undefined ? { cpuShares } : {}),
    ...(cpuQuota !== undefined && cpuQuota > 0 ? { cpuQuota, cpuPeriod: cpuPeriod ?? QUOTA_PERIOD_US } : {}),
    ...(memoryLimitBytes ? { memoryLimitBytes } : {}),
  };
}

/** The burstable cgroup's CPU shares: the summed CPU requests of the Burstable pods (setCPUCgroupConfig). */
export function burstableCgroupConfig(pods: readonly Pod[]): CgroupConfig {
  let milli = 0;
  for (const pod of pods) milli += burstableMilliCpu(pod);
  return { cpuShares: milliCpuToShares(milli) };
}

/**
 * What one pod adds to the burstable cgroup's CPU, kept per pod object (a pod's spec is never
 * changed in place; a resize makes a new object): the sum is taken over every active pod each
 * time a Burstable pod comes or goes.
 */
const burstableMilliCpuOf = new WeakMap<Pod, number>();
function burstableMilliCpu(pod: Pod): number {
  let milli = burstableMilliCpuOf.get(pod);
  if (milli === undefined) {
    milli = podQos(pod) === 'Burstable' ? (podRequests(pod)['cpu'] ?? 0) : 0;
    burstableMilliCpuOf.set(pod, milli);
  }
  return milli;
}

export const BESTEFFORT_CGROUP_CONFIG: CgroupConfig = { cpuShares: MIN_SHARES };

/**
 * The kubepods cgroup's settings (node_container_manager_linux.go enforceNodeAllocatableCgroups,
 * getCgroupConfig): the node's allocatable CPU as shares, memory and pids as limits. Allocatable
 * here is capacity less --system-reserved and --kube-reserved when `pods` is enforced
 * (--enforce-node-allocatable), else the capacity; the hard eviction thresholds are not taken off.
 */
export function kubepodsCgroupConfig(capacity: { milliCpu: number; memoryBytes: number; pids?: number }, reserved: ResourceAmounts, enforcePods: boolean): CgroupConfig {
  const held = (name: string) => (enforcePods ? (reserved[name] ?? 0) : 0);
  const config: CgroupConfig = {
    cpuShares: milliCpuToShares(Math.max(0, capacity.milliCpu - held('cpu'))),
    memoryLimitBytes: Math.max(0, capacity.memoryBytes - held('memory')),
  };
  if (enforcePods && reserved['pid'] !== undefined && capacity.pids !== undefined) config.pidsLimit = Math.max(0, capacity.pids - reserved['pid']);
  return config;
}
