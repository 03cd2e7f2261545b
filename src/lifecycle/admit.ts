/**
 * Pod admission (pkg/kubelet/lifecycle/predicate.go Admit, generalPredicates), the predicates that apply on this agent, pure: the first
 * failure wins and names the kubelet's reason. A rejected pod is never started; its status
 * becomes Failed with `Pod was rejected: <message>`.
 */
import type { Pod } from '../api/types.ts';

export interface NodeInfo {
  name: string;
  maxPods: number;
  labels: Readonly<Record<string, string>>;
  os: string;
}

export type Admission = { admit: true } | { admit: false; reason: string; message: string };

function hostPorts(pod: Pod): string[] {
  const ports: string[] = [];
  for (const c of [...(pod.spec.initContainers ?? []), ...pod.spec.containers]) {
    for (const p of c.ports ?? []) {
      if (p.hostPort) ports.push(`${p.protocol ?? 'TCP'}/${p.hostIP || '0.0.0.0'}/${p.hostPort}`);
    }
  }
  return ports;
}

function portsConflict(a: string, b: string): boolean {
  const [protoA, ipA, portA] = a.split('/');
  const [protoB, ipB, portB] = b.split('/');
  if (protoA !== protoB || portA !== portB) return false;
  return ipA === ipB || ipA === '0.0.0.0' || ipB === '0.0.0.0';
}

/** Decides whether `pod` may run next to the already admitted, still active `active` pods. */
export function admitPod(pod: Pod, active: readonly Pod[], node: NodeInfo): Admission {
  const osLabel = pod.metadata.labels?.['kubernetes.io/os'];
  if (osLabel !== undefined && osLabel !== node.os) {
    return { admit: false, reason: 'PodOSSelectorNodeLabelDoesNotMatch', message: `Failed to admit pod as the \`kubernetes.io/os\` label doesn't match node label` };
  }
  const specOs = (pod.spec.os as { name?: string } | undefined)?.name;
  if (specOs !== undefined && specOs !== node.os) {
    return { admit: false, reason: 'PodOSNotSupported', message: `Failed to admit pod as the OS field doesn't match node OS` };
  }
  if (active.length + 1 > node.maxPods) {
    return { admit: false, reason: 'OutOfpods', message: `Node didn't have enough resource: pods, requested: 1, used: ${active.length}, capacity: ${node.maxPods}` };
  }
  // The scheduler's AdmissionCheck order: resources, node affinity, node name, host ports.
  for (const [key, value] of Object.entries(pod.spec.nodeSelector ?? {})) {
    if (node.labels[key] !== value) {
      return { admit: false, reason: 'NodeAffinity', message: `Predicate NodeAffinity failed: node(s) didn't match Pod's node affinity/selector` };
    }
  }
  if (pod.spec.nodeName && pod.spec.nodeName !== node.name) {
    return { admit: false, reason: 'NodeName', message: `Predicate NodeName failed: node(s) didn't match the requested node name` };
  }
  const wanted = hostPorts(pod);
  if (wanted.length) {
    const used = active.flatMap(hostPorts);
    if (wanted.some((w) => used.some((u) => portsConflict(w, u)))) {
      return { admit: false, reason: 'NodePorts', message: `Predicate NodePorts failed: node(s) didn't have free ports for the requested pod ports` };
    }
  }
  return { admit: true };
}
