/**
 * A pod's quality-of-service class (pkg/apis/core/v1/helper/qos/qos.go ComputePodQOS), pure: only
 * CPU and memory count, over init and regular containers, with requests as the API server
 * defaults them (a limit without a request is its request). Guaranteed: every container has CPU and
 * memory limits, and the summed requests equal the summed limits; BestEffort: nothing asked;
 * Burstable: the rest. The status reports it; the container's OOM score and cgroups follow it.
 */
import { quantityValue } from './quantity.ts';
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
