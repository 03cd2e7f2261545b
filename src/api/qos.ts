/**
 * A pod's quality-of-service class (pkg/apis/core/v1/helper/qos/qos.go ComputePodQOS), pure: only
 * CPU and memory count. A pod that sets pod-level `spec.resources` for one of them
 * (component-helpers resource.IsPodLevelResourcesSet; PodLevelResources and
 * PodLevelResourcesFixKubeletQOSClass, on in v1.37) takes its class from them alone; otherwise each
 * init and regular container has one, and the pod is Guaranteed or BestEffort when all of its
 * containers are, else Burstable. A set of requirements is BestEffort when it asks nothing,
 * Guaranteed when CPU and memory both have a request equal to a non-zero limit
 * (requirementsQOS, resourceQOS), with requests as the API server defaults them. The status
 * reports it; the pod's cgroup, the containers' OOM scores and admission follow it.
 */
import { formatCpu, quantityValue } from './quantity.ts';
import type { Pod, ResourceRequirements } from './types.ts';

export type QosClass = 'Guaranteed' | 'Burstable' | 'BestEffort';

const COMPUTE = ['cpu', 'memory'] as const;
type Compute = (typeof COMPUTE)[number];

/** The class of one set of requirements, `request(name)` the request as defaulted (requirementsQOS). */
function requirementsQos(resources: ResourceRequirements | undefined, request: (name: Compute) => number): QosClass {
  const asked = Object.keys(resources?.requests ?? {}).length + Object.keys(resources?.limits ?? {}).length;
  if (asked === 0) return 'BestEffort';
  const classes = COMPUTE.map((name): QosClass => {
    const limit = quantityValue(resources?.limits?.[name]);
    const wanted = request(name);
    if (wanted !== limit) return 'Burstable';
    return wanted === 0 ? 'BestEffort' : 'Guaranteed';
  });
  return classes.every((c) => c === classes[0]) ? classes[0]! : 'Burstable';
}

/** A container's request for `name`: its own, else its limit (SetDefaults_Pod). */
function containerRequest(resources: ResourceRequirements | undefined, name: Compute): number {
  const request = resources?.requests?.[name];
  return request !== undefined ? quantityValue(request) : quantityValue(resources?.limits?.[name]);
}

/**
 * The pod-level request for `name` as the API server defaults it (defaults.go defaultPodRequests):
 * its own; else, with pod-level limits, the containers' summed requests where any asks, else the
 * pod-level limit.
 */
function podLevelRequest(pod: Pod, name: Compute): number {
  const resources = pod.spec.resources;
  const own = resources?.requests?.[name];
  if (own !== undefined) return quantityValue(own);
  if (Object.keys(resources?.limits ?? {}).length === 0) return 0;
  const containers = [...(pod.spec.initContainers ?? []), ...pod.spec.containers];
  if (containers.some((c) => c.resources?.requests?.[name] !== undefined || c.resources?.limits?.[name] !== undefined)) {
    return containers.reduce((sum, c) => sum + containerRequest(c.resources, name), 0);
  }
  return quantityValue(resources?.limits?.[name]);
}

/** Pod-level resources are set when they name CPU, memory or hugepages (IsPodLevelResourcesSet). */
function hasPodLevelResources(pod: Pod): boolean {
  const names = [...Object.keys(pod.spec.resources?.requests ?? {}), ...Object.keys(pod.spec.resources?.limits ?? {})];
  return names.some((name) => name === 'cpu' || name === 'memory' || name.startsWith('hugepages-'));
}

export function podQos(pod: Pod): QosClass {
  if (hasPodLevelResources(pod)) return requirementsQos(pod.spec.resources, (name) => podLevelRequest(pod, name));
  let podClass: QosClass | undefined;
  for (const c of [...(pod.spec.initContainers ?? []), ...pod.spec.containers]) {
    const own = requirementsQos(c.resources, (name) => containerRequest(c.resources, name));
    if (own === 'Burstable' || (podClass !== undefined && podClass !== own)) return 'Burstable';
    podClass = own;
  }
  return podClass ?? 'BestEffort';
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
