/**
 * Which pod goes first, and what it is told, pure (pkg/kubelet/eviction/helpers.go
 * rankMemoryPressure, rankDiskPressureFunc, rankPIDPressure, evictionMessage):
 *
 *   memory  pods using more than they request first, then lower priority, then the larger use
 *           above the request;
 *   disk    the same with ephemeral storage (or inodes), counting what the signal's disk holds
 *           of the pod (diskSignals.ts): its containers' writable layers, their logs, its local
 *           volumes (emptyDir on disk, hostPath);
 *   pids    lower priority first, then more processes.
 *
 * A pod without stats goes first (nothing is known to spare it). QoS is not consulted: a
 * BestEffort pod requests nothing, so any use exceeds its request.
 */
import { quantityValue } from '../api/quantity.ts';
import type { Pod } from '../api/types.ts';
import { podRequests } from '../admission/resources.ts';
import type { PodSummary } from '../stats/summary.ts';
import { podVolumes } from '../volumes/plan.ts';
import { ALL_DISK_USAGE, type DiskUsagePart } from './diskSignals.ts';
import type { Observations } from './synchronize.ts';
import { SIGNALS, type Signal, type StarvedResource, type Threshold, formatQuantity, isHard, thresholdQuantity } from './thresholds.ts';

type StatsOf = (pod: Pod) => PodSummary | undefined;

/** The volumes of a pod that live on the node's disk (localVolumeNames). */
function localVolumeNames(pod: Pod): Set<string> {
  const names = new Set<string>();
  for (const volume of podVolumes(pod)) {
    if (volume.hostPath || (volume.emptyDir && (volume.emptyDir.medium ?? '') === '')) names.add(volume.name);
  }
  return names;
}

/**
 * The pod's disk use in bytes (`ephemeral-storage`) or inodes (podDiskUsage): of its containers'
 * writable layers and logs and of its local volumes, the parts `counted` names.
 */
export function podDiskUsage(pod: Pod, stats: PodSummary, resource: 'ephemeral-storage' | 'inodes', counted: readonly DiskUsagePart[] = ALL_DISK_USAGE): number {
  const key = resource === 'inodes' ? 'inodesUsed' : 'usedBytes';
  let total = 0;
  for (const c of stats.containers) {
    if (counted.includes('rootfs')) total += c.rootfs?.[key] ?? 0;
    if (counted.includes('logs')) total += c.logs?.[key] ?? 0;
  }
  if (!counted.includes('localVolumes')) return total;
  const local = localVolumeNames(pod);
  for (const v of stats.volume ?? []) if (local.has(v.name)) total += v[key] ?? 0;
  return total;
}

const memoryUse = (stats: PodSummary) => stats.memory?.workingSetBytes ?? 0;
const priority = (pod: Pod) => pod.spec.priority ?? 0;

/** Compares two pods: negative when `a` goes before `b`. */
type Order = (a: Pod, b: Pod) => number;

/** Usage above request: pods that exceed come first, then lower priority, then the larger excess. */
function byUseOverRequest(stats: StatsOf, use: (pod: Pod, s: PodSummary) => number, request: (pod: Pod) => number): Order[] {
  const exceeds = (pod: Pod) => {
    const s = stats(pod);
    return s ? use(pod, s) > request(pod) : true;
  };
  const excess = (pod: Pod) => {
    const s = stats(pod);
    return s ? use(pod, s) - request(pod) : Infinity;
  };
  return [(a, b) => Number(exceeds(b)) - Number(exceeds(a)), (a, b) => priority(a) - priority(b), (a, b) => excess(b) - excess(a)];
}

function orders(signal: Signal, stats: StatsOf, counted: readonly DiskUsagePart[]): Order[] {
  const missingFirst: Order = (a, b) => Number(stats(a) !== undefined) - Number(stats(b) !== undefined);
  const resource = SIGNALS[signal].resource;
  switch (resource) {
    case 'memory':
      return [missingFirst, ...byUseOverRequest(stats, (_pod, s) => memoryUse(s), (pod) => podRequests(pod).memory ?? 0)];
    case 'pids':
      return [(a, b) => priority(a) - priority(b), (a, b) => (stats(b)?.process_stats?.process_count ?? 0) - (stats(a)?.process_stats?.process_count ?? 0)];
    default:
      return [
        missingFirst,
        ...byUseOverRequest(
          stats,
          (pod, s) => podDiskUsage(pod, s, resource, counted),
          (pod) => (resource === 'inodes' ? 0 : (podRequests(pod)['ephemeral-storage'] ?? 0)),
        ),
      ];
  }
}

/**
 * The pods in the order the kubelet would evict them for `signal` (a stable sort); for a disk
 * signal, `counted` is what a pod's usage adds up (diskUsageCountedFor), everything by default.
 */
export function rankForEviction(signal: Signal, pods: readonly Pod[], stats: StatsOf, counted: readonly DiskUsagePart[] = ALL_DISK_USAGE): Pod[] {
  const compare = orders(signal, stats, counted);
  return [...pods].sort((a, b) => {
    for (const order of compare) {
      const result = order(a, b);
      if (result !== 0) return result;
    }
    return 0;
  });
}

/**
 * The evicted pod's message (evictionMessage): the starved resource, the threshold and what was
 * available, and each regular container using more than it requests. Each sentence ends with a
 * space, as the kubelet writes them.
 */
export function evictionMessage(resource: StarvedResource, threshold: Threshold, observations: Observations, pod: Pod, stats: PodSummary | undefined): string {
  let message = `The node was low on resource: ${resource}. `;
  const observed = observations[threshold.signal];
  if (observed) message += `Threshold quantity: ${formatQuantity(thresholdQuantity(threshold.value, observed.capacity))}, available: ${formatQuantity(observed.available)}. `;
  if (!stats || (resource !== 'memory' && resource !== 'ephemeral-storage')) return message;
  for (const container of stats.containers) {
    const spec = pod.spec.containers.find((c) => c.name === container.name);
    if (!spec) continue;
    const request = quantityValue(spec.resources?.requests?.[resource]);
    const usage =
      resource === 'memory'
        ? container.memory?.workingSetBytes
        : container.rootfs?.usedBytes !== undefined && container.logs?.usedBytes !== undefined
          ? container.rootfs.usedBytes + container.logs.usedBytes
          : undefined;
    if (usage !== undefined && usage > request) {
      message += `Container ${spec.name} was using ${formatQuantity(usage)}, request is ${formatQuantity(request)}, has larger consumption of ${resource}. `;
    }
  }
  return message;
}


/**
 * The grace period an evicted pod gets (eviction_manager.go synchronize): 1 s for a hard threshold
 * (immediateEvictionGracePeriodSeconds); for a soft one --eviction-max-pod-grace-period, capped by
 * the pod's own terminationGracePeriodSeconds.
 */
export function evictionGracePeriodSeconds(threshold: Threshold, pod: Pod, maxPodGracePeriodSeconds: number): number {
  if (isHard(threshold)) return 1;
  const own = pod.spec.terminationGracePeriodSeconds;
  return own !== undefined ? Math.min(maxPodGracePeriodSeconds, own) : maxPodGracePeriodSeconds;
}
