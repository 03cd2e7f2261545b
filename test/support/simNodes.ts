/**
 * What the suites with several sim:// nodes share: the Nodes' pod CIDRs once node IPAM has set
 * them and the Nodes are Ready, and a Deployment spread evenly over the nodes.
 */
import type * as k8s from '@kubernetes/client-node';

/** Adds to `podCidrs` each named Node that is Ready with a pod CIDR; true once all are. */
export async function readyWithPodCidrs(core: k8s.CoreV1Api, names: readonly string[], podCidrs: Map<string, string>): Promise<boolean> {
  for (const name of names) {
    const node = await core.readNode({ name }).catch(() => null);
    const ready = node?.status?.conditions?.find((c) => c.type === 'Ready')?.status === 'True';
    if (ready && node?.spec?.podCIDR) podCidrs.set(name, node.spec.podCIDR);
  }
  return names.every((name) => podCidrs.has(name));
}

/** A Deployment whose pods spread over the nodes at most one apart (topology spread on the hostname). */
export function spreadDeployment(name: string, replicas: number, podSpec: Omit<k8s.V1PodSpec, 'topologySpreadConstraints'>): k8s.V1Deployment {
  const labels = { app: name };
  return {
    metadata: { name },
    spec: {
      replicas,
      selector: { matchLabels: labels },
      template: {
        metadata: { labels },
        spec: { ...podSpec, topologySpreadConstraints: [{ maxSkew: 1, topologyKey: 'kubernetes.io/hostname', whenUnsatisfiable: 'DoNotSchedule', labelSelector: { matchLabels: labels } }] },
      },
    },
  };
}
