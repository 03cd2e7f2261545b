/**
 * A container's CPU and memory settings for the runtime (pkg/kubelet/kuberuntime/
 * kuberuntime_container_linux.go generateLinuxContainerResources, calculateLinuxResources,
 * GetHugepageLimitsFromResources, configureContainerSwapResources; cm/helpers_linux.go
 * MilliCPUToShares and MilliCPUToQuota; qos/policy.go GetContainerOOMScoreAdjust), pure: the CFS
 * shares from the CPU request, the quota from the CPU limit over a 100 ms period, the memory limit,
 * the OOM score by QoS class, so the kernel kills the least important container first when the node
 * runs out; a HugeTLB limit for each page size the host has (0, denied, unless the container's
 * `limits.hugepages-<size>` allows it); no swap (NoSwap, the only swap behaviour statelet has):
 * on cgroup v1 a memory+swap limit equal to the memory limit, on v2 `memory.swap.max: 0`, each only
 * where the kernel has the swap controller; and on v2 `memory.oom.group: 1`, so an OOM kill takes
 * the whole container.
 */
import { podQos } from '../api/qos.ts';
import { parseQuantity, quantityValue } from '../api/quantity.ts';
import type { Container, Pod } from '../api/types.ts';
import type { HugepageLimit, LinuxContainerResources } from '../runtime/types.ts';

/** cm/helpers_linux.go: the CFS bounds and period. */
const MIN_SHARES = 2;
const MAX_SHARES = 262_144;
const SHARES_PER_CPU = 1024;
export const QUOTA_PERIOD_US = 100_000;
const MIN_QUOTA_US = 1_000;

/** qos/policy.go: the scores of the classes at either end. */
const GUARANTEED_OOM_SCORE_ADJ = -997;
const BESTEFFORT_OOM_SCORE_ADJ = 1000;

export function milliCpuToShares(milli: number): number {
  if (milli === 0) return MIN_SHARES;
  return Math.min(MAX_SHARES, Math.max(MIN_SHARES, Math.floor((milli * SHARES_PER_CPU) / 1000)));
}

/** 0 (no quota) without a limit; never below the kernel's 1 ms minimum. */
export function milliCpuToQuota(milli: number, periodUs = QUOTA_PERIOD_US): number {
  if (milli === 0) return 0;
  return Math.max(MIN_QUOTA_US, Math.floor((milli * periodUs) / 1000));
}

const milli = (cores: number) => Math.round(cores * 1000);

/**
 * The container's OOM score: Guaranteed and node-critical pods -997, BestEffort 1000, Burstable
 * 1000 less its share of the machine's memory in thousandths, kept within 3…999 so it stays above
 * the guaranteed ones and below the best-effort ones.
 */
export function oomScoreAdj(pod: Pod, container: Container, memoryCapacityBytes: number): number {
  if (pod.spec.priorityClassName === 'system-node-critical') return GUARANTEED_OOM_SCORE_ADJ;
  const qos = podQos(pod);
  if (qos === 'Guaranteed') return GUARANTEED_OOM_SCORE_ADJ;
  if (qos === 'BestEffort') return BESTEFFORT_OOM_SCORE_ADJ;
  const request = quantityValue(container.resources?.requests?.memory ?? container.resources?.limits?.memory);
  const score = 1000 - Math.floor((1000 * request) / memoryCapacityBytes);
  return score < 3 ? 3 : score === 1000 ? 999 : score;
}

/**
 * What the node's kernel offers that shapes a container's memory settings, found once at start
 * (src/cm/memoryFeatures.ts): the same for every container.
 */
export interface MemoryFeatures {
  /** The cgroup version the runtime makes containers' cgroups in. */
  cgroupVersion: 1 | 2;
  /** The kernel accounts swap per cgroup: v1 `memory.memsw.limit_in_bytes`, v2 `memory.swap.max`. */
  swapController: boolean;
  /** The huge page sizes the kernel offers, as runc names them (`2MB`, `1GB`). */
  hugePageSizes: readonly string[];
}

/** What containerResources reads of the node. */
export interface ContainerResourcesNode extends MemoryFeatures {
  /** The machine's memory: a Burstable container's OOM score is its request's share of it. */
  memoryCapacityBytes: number;
}

const HUGE_PAGE_UNITS = ['B', 'KB', 'MB', 'GB', 'TB', 'PB'];
const HUGE_PAGES_PREFIX = 'hugepages-';

/**
 * A page size in bytes as runc and the CRI name it (v1helper.HugePageUnitSizeFromByteSize):
 * 2097152 → `2MB`, 1073741824 → `1GB`; null for a size no unit divides (1536 KiB).
 */
export function hugePageSizeName(bytes: number): string | null {
  if (!Number.isSafeInteger(bytes) || bytes <= 0) return null;
  let size = bytes;
  let unit = 0;
  while (size % 1024 === 0 && unit < HUGE_PAGE_UNITS.length - 1) {
    size /= 1024;
    unit++;
  }
  if (size > 1024 && unit < HUGE_PAGE_UNITS.length - 1) return null;
  return `${size}${HUGE_PAGE_UNITS[unit]}`;
}

/**
 * The page size a `hugepages-<size>` resource names (`hugepages-2Mi` → `2MB`), or null for any
 * other resource or a size that does not parse.
 */
export function hugePageSizeOfResource(resource: string): string | null {
  if (!resource.startsWith(HUGE_PAGES_PREFIX)) return null;
  const bytes = parseQuantity(resource.slice(HUGE_PAGES_PREFIX.length));
  return bytes instanceof Error ? null : hugePageSizeName(bytes);
}

/**
 * The container's HugeTLB limits (GetHugepageLimitsFromResources): one per page size the host has,
 * its `limits.hugepages-<size>` in bytes, else 0, so huge pages are denied unless asked for. A
 * limit for a size the host lacks is dropped (the scheduler does not place such a pod here).
 */
export function hugepageLimits(container: Container, hostSizes: readonly string[]): HugepageLimit[] {
  const asked = new Map<string, number>();
  for (const [resource, quantity] of Object.entries(container.resources?.limits ?? {})) {
    const pageSize = hugePageSizeOfResource(resource);
    if (pageSize !== null) asked.set(pageSize, Math.ceil(quantityValue(quantity)));
  }
  return hostSizes.map((pageSize) => ({ pageSize, limit: asked.get(pageSize) ?? 0 }));
}

/**
 * The cgroup v2 files the kubelet asks the runtime to write (calculateLinuxResources,
 * ConfigureNoSwap): `memory.oom.group: 1` (the default since singleProcessOOMKill came in 1.32,
 * always from 1.28 to 1.31), and `memory.swap.max: 0` where the swap controller exists. Nothing on v1.
 */
function unifiedFor(node: MemoryFeatures): Record<string, string> {
  if (node.cgroupVersion !== 2) return {};
  return { 'memory.oom.group': '1', ...(node.swapController ? { 'memory.swap.max': '0' } : {}) };
}

/** The LinuxContainerResources sent with the container's config. */
export function containerResources(pod: Pod, container: Container, node: ContainerResourcesNode): LinuxContainerResources {
  const { requests = {}, limits = {} } = container.resources ?? {};
  const cpuRequest = requests['cpu'] ?? limits['cpu'];
  const memoryLimitInBytes = Math.floor(quantityValue(limits['memory']));
  const hugepages = hugepageLimits(container, node.hugePageSizes);
  const unified = unifiedFor(node);
  // NoSwap on v1: memory+swap no more than memory. Without a memory limit there is nothing to equal.
  const swapLimit = node.cgroupVersion === 1 && node.swapController ? memoryLimitInBytes : 0;
  return {
    cpuShares: milliCpuToShares(milli(quantityValue(cpuRequest))),
    cpuQuota: milliCpuToQuota(milli(quantityValue(limits['cpu']))),
    cpuPeriod: QUOTA_PERIOD_US,
    memoryLimitInBytes,
    oomScoreAdj: oomScoreAdj(pod, container, node.memoryCapacityBytes),
    ...(hugepages.length ? { hugepageLimits: hugepages } : {}),
    ...(Object.keys(unified).length ? { unified } : {}),
    ...(swapLimit > 0 ? { memorySwapLimitInBytes: swapLimit } : {}),
  };
}
