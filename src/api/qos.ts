/**
 * A pod's quality-of-service class (pkg/apis/core/v1/helper/qos/qos.go ComputePodQOS), pure: only
 * CPU and memory count, over init and regular containers, with requests as the API server
 * defaults them (a limit without a request is its request). Guaranteed: every container has CPU and
 * memory limits, and the summed requests equal the summed limits; BestEffort: nothing asked;
 * Burstable: the rest. The status reports it; the container's OOM score and cgroups follow it.
 */
import { formatCpu, quantityValue } from './quantity.ts';
import type { Pod } from './types.ts';

export type QosClass = 'Guaranteed' | 'Burstable' | 'BestEffort';

const COMPUTE = ['cpu', 'memory'] as const;

export function podQos(pod: Pod): QosClass {
  const requests: Partial<Record<string, number>> = {};
  const limits: Partial<Record<string, number>> = {};
  let guaranteed = true;
  for (const c of [...(pod.spec.initContainers ?? []), ...pod.spec.containers]) {
    const limited = new Set<string>();
    for (const name of COMPUTE) {
      const limit = quantityValue(c.resources?.limits?.[name]);
      const request = c.resources?.requests?.[name] !== undefined ? quantityValue(c.resources.requests[name]) : limit;
      if (request > 0) requests[name] = (requests[name] ?? 0) + request;
      if (limit > 0) {
        limited.add(name);
        limits[name] = (limits[name] ?? 0) + limit;
      }
    }
    if (limited.size < COMPUTE.length) guaranteed = false;
  }
  const asked = Object.keys(requests);
  if (asked.length === 0 && Object.keys(limits).length === 0) return 'BestEffort';
  if (guaranteed && asked.length === Object.keys(limits).length && asked.every((name) => limits[name] === requests[name])) return 'Guaranteed';
  return 'Burstable';
}

/**
 * The pod's CPU and memory limits in a line (`cpu 100m · memory 64Mi`): each summed over its regular
 * containers when every one of them sets it, as the pod's cgroup would be; `` when none is bounded.
 */
export function podLimitsLine(pod: Pod): string {
  const parts: string[] = [];
  for (const name of COMPUTE) {
    const limits = pod.spec.containers.map((c) => c.resources?.limits?.[name]);
    if (limits.some((l) => l === undefined)) continue;
    const total = limits.reduce((sum: number, l) => sum + quantityValue(l), 0);
    parts.push(`${name} ${name === 'cpu' ? formatCpu(total) : formatMemory(total)}`);
  }
  return parts.join(' · ');
}

/** Bytes in the largest binary unit that writes them whole (`64Mi`, `1Gi`, `1536Ki`). */
function formatMemory(bytes: number): string {
  for (const [unit, size] of [['Gi', 2 ** 30], ['Mi', 2 ** 20], ['Ki', 2 ** 10]] as const) if (bytes >= size && bytes % size === 0) return `${bytes / size}${unit}`;
  return String(bytes);
}
