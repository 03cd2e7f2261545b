/**
 * What the suites with several sim:// nodes share: the Nodes' pod CIDRs once node IPAM has set
 * them and the Nodes are Ready, and a Deployment spread evenly over the nodes.
 */
import { randomInt } from 'node:crypto';
import type * as k8s from '@kubernetes/client-node';
import { type ControlPlane, startControlPlane } from './controlPlane.ts';

/**
 * The control plane with its controllers and node IPAM (a /24 per Node) on a cluster CIDR of its
 * own, so that no other suite's sim:// ranges on this host overlap it; null where it cannot run.
 * Making a pod CIDR local to the host needs root: without it the suite fails on CI and skips,
 * loudly, elsewhere.
 */
export async function startIpamControlPlane(suite: string, nodeNames: string[]): Promise<{ cp: ControlPlane; clusterCidr: string } | null> {
  if (process.getuid?.() !== 0) {
    if (process.env.CI === 'true') throw new Error(`the ${suite} suite needs root on CI (a local route per pod CIDR)`);
    console.warn(`\n${'!'.repeat(78)}\n!! SKIPPING the ${suite} suite: making a pod CIDR local to the host needs root.\n${'!'.repeat(78)}\n`);
    return null;
  }
  const clusterCidr = `10.${150 + randomInt(100)}.0.0/16`;
  const cp = await startControlPlane({
    nodeNames,
    controllers: true,
    controllerManagerArgs: ['--allocate-node-cidrs=true', `--cluster-cidr=${clusterCidr}`, '--node-cidr-mask-size=24'],
  });
  return cp ? { cp, clusterCidr } : null;
}

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
