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

/** The burstable cgroup's CPU shares: the summed CPU requests of the Burstable pods (setCPUCgroupConfig). */
export function burstableCgroupConfig(pods: readonly Pod[]): CgroupConfig {
  let milli = 0;
  for (const pod of pods) if (podQos(pod) === 'Burstable') milli += podRequests(pod)['cpu'] ?? 0;
  return { cpuShares: milliCpuToShares(milli) };
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
