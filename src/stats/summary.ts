/**
 * The node's resource usage as the kubelet serves it, computed from CRI stats and the host's /proc
 * figures, pure (no I/O, no clock): `/stats/summary` (the Summary of
 * k8s.io/kubelet/pkg/apis/stats/v1alpha1 types.go) and `/metrics/resource`
 * (pkg/kubelet/metrics/collectors/resource_metrics.go). `provider.ts` gathers the inputs.
 *
 * Times are milliseconds since the epoch until `summaryJson` writes them as RFC 3339 (metav1.Time:
 * whole seconds) and the exposition text as sample timestamps.
 */
import { type Container, type ContainerStats, type CpuUsage, type MemoryUsage, type PodSandbox, type PodSandboxStats, definedOnly } from '../runtime/types.ts';

interface CpuStats {
  time: number;
  usageNanoCores?: number;
  usageCoreNanoSeconds?: number;
}

interface MemoryStats {
  time: number;
  availableBytes?: number;
  usageBytes?: number;
  workingSetBytes?: number;
  rssBytes?: number;
  pageFaults?: number;
  majorPageFaults?: number;
}

export interface FsStats {
  time: number;
  availableBytes?: number;
  capacityBytes?: number;
  usedBytes?: number;
  inodesFree?: number;
  inodes?: number;
  inodesUsed?: number;
}

/** A pod volume's usage (VolumeStats): its name, the claim it comes from (`pvcRef`), and its files' figures. */
export interface VolumeStats extends FsStats {
  name: string;
  pvcRef?: { name: string; namespace: string };
}

/** The node's process limit and count (RlimitStats). */
export interface RlimitStats {
  time: number;
  maxpid?: number;
  curproc?: number;
}

interface SwapStats {
  time: number;
  swapAvailableBytes?: number;
  swapUsageBytes?: number;
}

interface ContainerSummary {
  name: string;
  startTime: number;
  cpu?: CpuStats;
  memory?: MemoryStats;
  rootfs?: FsStats;
  logs?: FsStats;
  swap?: SwapStats;
}

export interface PodSummary {
  podRef: { name: string; namespace: string; uid: string };
  startTime: number;
  containers: ContainerSummary[];
  cpu?: CpuStats;
  memory?: MemoryStats;
  swap?: SwapStats;
  /** Its volumes: an emptyDir by what its directory holds, a local PersistentVolume by its filesystem. */
  volume?: VolumeStats[];
  process_stats?: { process_count?: number };
}

interface NodeSummary {
  nodeName: string;
  startTime: number;
  cpu?: CpuStats;
  memory?: MemoryStats;
  swap?: SwapStats;
  /** The filesystem under --root-dir (nodefs). */
  fs?: FsStats;
  /**
   * The runtime's filesystems (RuntimeStats), where the runtime names one: its image filesystem
   * (imagefs), and the one of the containers' writable layers, which the kubelet's CRI stats
   * provider reports as the image filesystem itself (it supports no split disk).
   */
  runtime?: { imageFs?: FsStats; containerFs?: FsStats };
  rlimit?: RlimitStats;
}

export interface Summary {
  node: NodeSummary;
  pods: PodSummary[];
  /**
   * Whether the image filesystem is on another device than --root-dir (the kubelet's
   * HasDedicatedImageFs), for the eviction manager; absent when unknown. Statelet's own: not part
   * of `/stats/summary`.
   */
  dedicatedImageFs?: boolean;
}

// ------------------------------------------------------------------------------------------------
// The host (the node's own figures)

/**
 * What the node uses, from /proc/stat and /proc/meminfo. The kubelet takes it from cAdvisor's root
 * cgroup; for a cgroup v2 root (which has no memory.current) runc's libcontainer reads
 * /proc/meminfo itself (libcontainer/cgroups/fs2/memory.go rootStatsFromMeminfo). Statelet reads
 * /proc on both cgroup versions: the same figures whether the agent runs on the host or inside a
 * container of its own (where /sys/fs/cgroup is that container's, not the node's).
 */
export interface HostUsage {
  /** Milliseconds since the epoch (`btime`). */
  bootTime: number;
  /** All CPUs' busy time: user, nice, system, irq, softirq and steal (guest time is within user). */
  cpuNanoseconds: number;
  memTotalBytes: number;
  memFreeBytes: number;
  inactiveFileBytes: number;
  swapTotalBytes: number;
  swapFreeBytes: number;
}

/** /proc/stat counts in USER_HZ, which the kernel fixes at 100 for userspace on every architecture. */
const NANOSECONDS_PER_TICK = 1e9 / 100;

export function parseProcStat(text: string): Pick<HostUsage, 'bootTime' | 'cpuNanoseconds'> {
  const cpu = /^cpu\s+(.*)$/m.exec(text)?.[1]?.trim().split(/\s+/).map(Number);
  const btime = /^btime\s+(\d+)$/m.exec(text)?.[1];
  if (!cpu || cpu.length < 8 || cpu.some(Number.isNaN) || btime === undefined) throw new Error('/proc/stat has no "cpu" or "btime" line');
  const [user, nice, system, , , irq, softirq, steal] = cpu as [number, number, number, number, number, number, number, number];
  return { bootTime: Number(btime) * 1000, cpuNanoseconds: (user + nice + system + irq + softirq + steal) * NANOSECONDS_PER_TICK };
}

export function parseMeminfo(text: string): Omit<HostUsage, 'bootTime' | 'cpuNanoseconds'> {
  const kib = (key: string): number => {
    const value = new RegExp(`^${key.replace(/[()]/g, '\\$&')}:\\s+(\\d+) kB$`, 'm').exec(text)?.[1];
    if (value === undefined) throw new Error(`/proc/meminfo has no "${key}"`);
    return Number(value) * 1024;
  };
  return {
    memTotalBytes: kib('MemTotal'),
    memFreeBytes: kib('MemFree'),
    inactiveFileBytes: kib('Inactive(file)'),
    swapTotalBytes: kib('SwapTotal'),
    swapFreeBytes: kib('SwapFree'),
  };
}

/**
 * The node's stats: usage is everything not free, the working set leaves out inactive file pages
 * (cAdvisor's workingSet = usage - inactive_file), available is capacity minus working set. Swap
 * only where the node has swap.
 */
export function nodeSummary(nodeName: string, host: HostUsage, time: number, rates: CpuRates): NodeSummary {
  const usage = host.memTotalBytes - host.memFreeBytes;
  const workingSet = Math.max(0, usage - host.inactiveFileBytes);
  const cpu: CpuUsage = { timestamp: time, usageCoreNanoSeconds: host.cpuNanoseconds };
  const node: NodeSummary = {
    nodeName,
    startTime: host.bootTime,
    cpu: definedOnly({ time, usageCoreNanoSeconds: host.cpuNanoseconds, usageNanoCores: rates.update(NODE_KEY, cpu) }),
    memory: { time, availableBytes: host.memTotalBytes - workingSet, usageBytes: usage, workingSetBytes: workingSet },
  };
  if (host.swapTotalBytes > 0) node.swap = { time, swapAvailableBytes: host.swapFreeBytes, swapUsageBytes: host.swapTotalBytes - host.swapFreeBytes };
  return node;
}

// ------------------------------------------------------------------------------------------------
// CPU rates

/** The node's entry in CpuRates (no container or sandbox id is empty). */
const NODE_KEY = '';

/**
 * usageNanoCores from two cumulative samples, as the kubelet's CRI stats provider computes it
 * (pkg/kubelet/stats/cri_stats_provider.go getAndUpdateContainerUsageNanoCores): the runtime's
 * own figure when it gives one; otherwise the usage since the previous sample of the same id over
 * the time between them; nothing for a first sample or after a counter reset. Kept per container,
 * per pod sandbox and for the node. The kubelet refreshes its samples from the eviction manager
 * every 10 s; statelet's eviction manager reads the pods only when a round needs their figures
 * (StatsProvider.readNode), so each `/stats/summary` and `/metrics/resource` request takes a
 * sample, and a rate covers the time since the previous read. A sample no newer than the previous
 * one (two requests in the same instant) gets the previous rate.
 */
export class CpuRates {
  private readonly previous = new Map<string, { timestamp: number; usage: number; rate: number | undefined }>();

  update(id: string, cpu: CpuUsage): number | undefined {
    if (cpu.usageNanoCores !== undefined) return cpu.usageNanoCores;
    const usage = cpu.usageCoreNanoSeconds;
    if (usage === undefined) return undefined;
    const cached = this.previous.get(id);
    if (cached && cpu.timestamp <= cached.timestamp) return cached.rate;
    const rate = cached && usage >= cached.usage ? Math.floor(((usage - cached.usage) * 1000) / (cpu.timestamp - cached.timestamp)) : undefined;
    this.previous.set(id, { timestamp: cpu.timestamp, usage, rate });
    return rate;
  }

  /**
   * Forgets the samples of everything not in `live` (the node's entry stays): containers and pods
   * that went are dropped at the next request, so the cache never outgrows what the node runs. The
   * kubelet drops samples older than 10 minutes instead (cleanupOutdatedCaches).
   */
  retain(live: ReadonlySet<string>): void {
    for (const id of this.previous.keys()) if (id !== NODE_KEY && !live.has(id)) this.previous.delete(id);
  }

  get size(): number {
    return this.previous.size;
  }
}

// ------------------------------------------------------------------------------------------------
// Pods

/**
 * What the runtime said: its sandboxes and containers, and either its pod sandbox stats or (when
 * ListPodSandboxStats could not answer) its container stats.
 */
export interface RuntimeStats {
  sandboxes: PodSandbox[];
  containers: Container[];
  stats: { sandboxes: PodSandboxStats[] } | { containers: ContainerStats[] };
}

interface PodSummaryOptions {
  /** Only CPU and memory (`?only_cpu_and_memory=true`, GetCPUAndMemoryStats): no rootfs, logs or process stats. */
  onlyCpuAndMemory: boolean;
  /** When a stat is missing: the kubelet writes zeros at this time (makeContainerCPUAndMemoryStats). */
  now: number;
  /** A container's log usage (the kubelet measures its log directory on the host). */
  logs?(container: Container): FsStats | undefined;
}

/**
 * Keeps one sandbox per pod name and namespace: every ready one, else the newest
 * (cri_stats_provider.go removeTerminatedPods; a pod recreated under the same name has two).
 */
export function removeTerminatedPods(sandboxes: readonly PodSandbox[]): PodSandbox[] {
  const byPod = new Map<string, PodSandbox[]>();
  for (const sandbox of [...sandboxes].sort((a, b) => a.createdAt - b.createdAt)) {
    const key = JSON.stringify([sandbox.metadata.namespace, sandbox.metadata.name]);
    byPod.set(key, [...(byPod.get(key) ?? []), sandbox]);
  }
  const result: PodSandbox[] = [];
  for (const group of byPod.values()) {
    const ready = group.filter((s) => s.state === 'SANDBOX_READY');
    result.push(...(ready.length > 0 ? ready : group.slice(-1)));
  }
  return result;
}

/** Running containers only: the others are not used for usage (cri_stats_provider.go removeTerminatedContainers). */
export function removeTerminatedContainers(containers: readonly Container[]): Container[] {
  return containers.filter((c) => c.state === 'CONTAINER_RUNNING');
}

/**
 * The pods' stats, as the kubelet's CRI stats provider makes them: with sandbox stats, the pod's
 * figures are the sandbox's (listPodStatsStrictlyFromCRI); with container stats only, they are
 * the sums of its containers' (listPodStatsPartiallyFromCRI and addPodCPUMemoryStats, the branch
 * for a pod cAdvisor knows nothing of). Pods and containers the runtime no longer runs are left
 * out; every id seen is kept in `rates`, every other forgotten.
 */
export function podSummaries(input: RuntimeStats, rates: CpuRates, options: PodSummaryOptions): PodSummary[] {
  const sandboxes = new Map(removeTerminatedPods(input.sandboxes).map((s) => [s.id, s]));
  const containers = new Map(removeTerminatedContainers(input.containers).map((c) => [c.id, c]));
  const live = new Set<string>();
  const containerSummary = (stats: ContainerStats): ContainerSummary | undefined => {
    const container = containers.get(stats.attributes.id);
    if (!container) return undefined;
    live.add(container.id);
    return makeContainerSummary(stats, container, rates, options);
  };
  const pods: PodSummary[] = [];
  if ('sandboxes' in input.stats) {
    for (const stats of input.stats.sandboxes) {
      const sandbox = sandboxes.get(stats.attributes.id);
      if (!sandbox) continue;
      live.add(sandbox.id);
      const pod = buildPodSummary(sandbox);
      pod.containers = (stats.linux?.containers ?? []).map(containerSummary).filter((c) => c !== undefined);
      const linux = stats.linux;
      if (linux?.cpu) pod.cpu = cpuStats(sandbox.id, linux.cpu, rates);
      if (linux?.memory) pod.memory = memoryStats(linux.memory);
      if (!options.onlyCpuAndMemory && linux?.process) pod.process_stats = definedOnly({ process_count: linux.process.processCount });
      pods.push(pod);
    }
  } else {
    const bySandbox = new Map<string, PodSummary>();
    for (const stats of input.stats.containers) {
      const sandbox = sandboxes.get(containers.get(stats.attributes.id)?.podSandboxId ?? '');
      const summary = sandbox && containerSummary(stats);
      if (!sandbox || !summary) continue;
      let pod = bySandbox.get(sandbox.id);
      if (!pod) {
        pod = buildPodSummary(sandbox);
        bySandbox.set(sandbox.id, pod);
        pods.push(pod);
      }
      pod.containers.push(summary);
      addToPod(pod, summary);
    }
  }
  rates.retain(live);
  return pods;
}

function buildPodSummary(sandbox: PodSandbox): PodSummary {
  const { name, namespace, uid } = sandbox.metadata;
  // The StartTime in the summary API is the pod creation time (cri_stats_provider.go buildPodStats).
  return { podRef: { name, namespace, uid }, startTime: sandbox.createdAt, containers: [] };
}

function makeContainerSummary(stats: ContainerStats, container: Container, rates: CpuRates, options: PodSummaryOptions): ContainerSummary {
  const { now } = options;
  const summary: ContainerSummary = {
    name: stats.attributes.metadata.name,
    // The StartTime in the summary API is the container creation time.
    startTime: container.createdAt,
    cpu: stats.cpu ? cpuStats(container.id, stats.cpu, rates) : { time: now, usageCoreNanoSeconds: 0, usageNanoCores: 0 },
    memory: stats.memory ? memoryStats(stats.memory) : { time: now, availableBytes: 0, usageBytes: 0, workingSetBytes: 0, rssBytes: 0, pageFaults: 0, majorPageFaults: 0 },
  };
  if (stats.swap) summary.swap = definedOnly({ time: stats.swap.timestamp, swapUsageBytes: stats.swap.swapUsageBytes, swapAvailableBytes: stats.swap.swapAvailableBytes });
  if (options.onlyCpuAndMemory) return summary;
  const layer = stats.writableLayer;
  if (layer) summary.rootfs = definedOnly({ time: layer.timestamp, usedBytes: layer.usedBytes, inodesUsed: layer.inodesUsed });
  const logs = options.logs?.(container);
  if (logs) summary.logs = logs;
  return summary;
}

function cpuStats(id: string, cpu: CpuUsage, rates: CpuRates): CpuStats {
  return definedOnly({ time: cpu.timestamp, usageCoreNanoSeconds: cpu.usageCoreNanoSeconds, usageNanoCores: rates.update(id, cpu) });
}

function memoryStats(memory: MemoryUsage): MemoryStats {
  const { timestamp, ...values } = memory;
  return { time: timestamp, ...values };
}

const MEMORY_SUMS = ['availableBytes', 'usageBytes', 'workingSetBytes', 'rssBytes', 'pageFaults', 'majorPageFaults'] as const;

/** A container's CPU and memory added to its pod's, absent values as 0 (addPodCPUMemoryStats). */
function addToPod(pod: PodSummary, container: ContainerSummary): void {
  if (container.cpu) {
    const cpu = (pod.cpu ??= { time: 0 });
    cpu.time = container.cpu.time;
    cpu.usageCoreNanoSeconds = (cpu.usageCoreNanoSeconds ?? 0) + (container.cpu.usageCoreNanoSeconds ?? 0);
    cpu.usageNanoCores = (cpu.usageNanoCores ?? 0) + (container.cpu.usageNanoCores ?? 0);
  }
  if (container.memory) {
    const memory = (pod.memory ??= { time: 0 });
    memory.time = container.memory.time;
    for (const key of MEMORY_SUMS) memory[key] = (memory[key] ?? 0) + (container.memory[key] ?? 0);
  }
  if (container.swap) {
    const swap = (pod.swap ??= { time: container.swap.time });
    swap.swapUsageBytes = (swap.swapUsageBytes ?? 0) + (container.swap.swapUsageBytes ?? 0);
    swap.swapAvailableBytes = (swap.swapAvailableBytes ?? 0) + (container.swap.swapAvailableBytes ?? 0);
  }
}

// ------------------------------------------------------------------------------------------------
// Output

/** metav1.Time: RFC 3339 in UTC, whole seconds. */
function rfc3339(ms: number): string {
  return new Date(Math.floor(ms / 1000) * 1000).toISOString().replace('.000Z', 'Z');
}

/** The Summary as `/stats/summary` writes it. */
export function summaryJson(summary: Summary): string {
  const { node, pods } = summary;
  return JSON.stringify({ node, pods }, (key, value: unknown) => ((key === 'time' || key === 'startTime') && typeof value === 'number' ? rfc3339(value) : value));
}

/** `only_cpu_and_memory` as the kubelet reads it (strconv.ParseBool; anything else is false). */
export function onlyCpuAndMemory(params: URLSearchParams): boolean {
  const values = params.getAll('only_cpu_and_memory');
  return values.length === 1 && ['1', 't', 'T', 'TRUE', 'true', 'True'].includes(values[0]!);
}

interface Family {
  name: string;
  help: string;
  type: 'counter' | 'gauge';
  samples: string[];
}

/** One sample line: labels in name order, value, and a timestamp in ms when the kubelet sets one. */
function sample(name: string, labels: Record<string, string>, value: number, time?: number): string {
  const pairs = Object.keys(labels)
    .sort()
    .map((key) => `${key}="${labels[key]!.replace(/\\/g, '\\\\').replace(/\n/g, '\\n').replace(/"/g, '\\"')}"`);
  return `${name}${pairs.length ? `{${pairs.join(',')}}` : ''} ${value}${time === undefined ? '' : ` ${Math.floor(time)}`}`;
}

/**
 * `/metrics/resource` in the Prometheus text format (version 0.0.4), with the kubelet's metric
 * names, help texts, labels and explicit sample timestamps (the stats' own times, in ms;
 * container_start_time_seconds has none), families in name order as client_golang writes them.
 * `summary` null means the stats could not be read: only `resource_scrape_error 1`. The deprecated
 * `scrape_error` (hidden since 1.29) is not written.
 */
export function resourceMetricsText(summary: Summary | null): string {
  const families: Family[] = [];
  const family = (name: string, type: Family['type'], stability: 'STABLE' | 'ALPHA', help: string): string[] => {
    const f: Family = { name, help: `[${stability}] ${help}`, type, samples: [] };
    families.push(f);
    return f.samples;
  };
  const containerCpu = family('container_cpu_usage_seconds_total', 'counter', 'STABLE', 'Cumulative cpu time consumed by the container in core-seconds');
  const containerMemory = family('container_memory_working_set_bytes', 'gauge', 'STABLE', 'Current working set of the container in bytes');
  const containerStart = family('container_start_time_seconds', 'gauge', 'STABLE', 'Start time of the container since unix epoch in seconds');
  const containerSwapLimit = family('container_swap_limit_bytes', 'gauge', 'ALPHA', 'Current amount of the container swap limit in bytes. Reported only on non-windows systems');
  const containerSwap = family('container_swap_usage_bytes', 'gauge', 'ALPHA', 'Current amount of the container swap usage in bytes. Reported only on non-windows systems');
  const nodeCpu = family('node_cpu_usage_seconds_total', 'counter', 'STABLE', 'Cumulative cpu time consumed by the node in core-seconds');
  const nodeMemory = family('node_memory_working_set_bytes', 'gauge', 'STABLE', 'Current working set of the node in bytes');
  const nodeSwap = family('node_swap_usage_bytes', 'gauge', 'ALPHA', 'Current swap usage of the node in bytes. Reported only on non-windows systems');
  const podCpu = family('pod_cpu_usage_seconds_total', 'counter', 'STABLE', 'Cumulative cpu time consumed by the pod in core-seconds');
  const podMemory = family('pod_memory_working_set_bytes', 'gauge', 'STABLE', 'Current working set of the pod in bytes');
  const podSwap = family('pod_swap_usage_bytes', 'gauge', 'ALPHA', 'Current amount of the pod swap usage in bytes. Reported only on non-windows systems');
  const scrapeError = family('resource_scrape_error', 'gauge', 'STABLE', '1 if there was an error while getting container metrics, 0 otherwise');
  scrapeError.push(sample('resource_scrape_error', {}, summary ? 0 : 1));

  if (summary) {
    const { node } = summary;
    if (node.cpu?.usageCoreNanoSeconds !== undefined) nodeCpu.push(sample('node_cpu_usage_seconds_total', {}, node.cpu.usageCoreNanoSeconds / 1e9, node.cpu.time));
    if (node.memory?.workingSetBytes !== undefined) nodeMemory.push(sample('node_memory_working_set_bytes', {}, node.memory.workingSetBytes, node.memory.time));
    // The kubelet stamps node swap with the memory sample's time (collectNodeSwapMetrics).
    if (node.swap?.swapUsageBytes !== undefined && node.memory) nodeSwap.push(sample('node_swap_usage_bytes', {}, node.swap.swapUsageBytes, node.memory.time));
    for (const pod of summary.pods) {
      const podLabels = { pod: pod.podRef.name, namespace: pod.podRef.namespace };
      for (const c of pod.containers) {
        const labels = { container: c.name, ...podLabels };
        if (c.startTime > 0) containerStart.push(sample('container_start_time_seconds', labels, c.startTime / 1000));
        if (c.cpu?.usageCoreNanoSeconds !== undefined) containerCpu.push(sample('container_cpu_usage_seconds_total', labels, c.cpu.usageCoreNanoSeconds / 1e9, c.cpu.time));
        if (c.memory?.workingSetBytes !== undefined) containerMemory.push(sample('container_memory_working_set_bytes', labels, c.memory.workingSetBytes, c.memory.time));
        if (c.swap?.swapUsageBytes !== undefined) containerSwap.push(sample('container_swap_usage_bytes', labels, c.swap.swapUsageBytes, c.swap.time));
        if (c.swap?.swapAvailableBytes !== undefined) containerSwapLimit.push(sample('container_swap_limit_bytes', labels, c.swap.swapAvailableBytes + (c.swap.swapUsageBytes ?? 0), c.swap.time));
      }
      if (pod.cpu?.usageCoreNanoSeconds !== undefined) podCpu.push(sample('pod_cpu_usage_seconds_total', podLabels, pod.cpu.usageCoreNanoSeconds / 1e9, pod.cpu.time));
      if (pod.memory?.workingSetBytes !== undefined) podMemory.push(sample('pod_memory_working_set_bytes', podLabels, pod.memory.workingSetBytes, pod.memory.time));
      if (pod.swap?.swapUsageBytes !== undefined) podSwap.push(sample('pod_swap_usage_bytes', podLabels, pod.swap.swapUsageBytes, pod.swap.time));
    }
  }
  // client_golang leaves out families without samples.
  return families
    .filter((f) => f.samples.length > 0)
    .map((f) => `# HELP ${f.name} ${f.help}\n# TYPE ${f.name} ${f.type}\n${f.samples.join('\n')}\n`)
    .join('');
}
