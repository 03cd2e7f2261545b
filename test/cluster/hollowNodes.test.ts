/**
 * `statelet --nodes=3`: three simulated nodes in one process, each with its own credentials
 * (`{node}` in --kubeconfig), Node, Lease, pod CIDR (from the upstream controller-manager's node
 * IPAM), address (127.0.1.1 and on, where its servers listen) and pods, behind a real kube-apiserver, kube-scheduler and kube-controller-manager. A
 * Deployment spreads over them and every pod turns Ready; one SIGTERM stops them all.
 *
 * Making the pod CIDRs local to the host needs root (CI runs as root); elsewhere the suite skips, loudly.
 */
import path from 'node:path';
import * as k8s from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { canBind } from '../../src/runtime/sim/localRange.ts';
import { type AgentProcess, runStatelet } from '../support/agentProcess.ts';
import { type ControlPlane, leases, waitFor } from '../support/controlPlane.ts';
import { readyWithPodCidrs, spreadDeployment, startIpamControlPlane } from '../support/simNodes.ts';

const NODES = ['hollow-0', 'hollow-1', 'hollow-2'];

let cp: ControlPlane | null = null;
let agent: AgentProcess | undefined;

beforeAll(async () => {
  const started = await startIpamControlPlane('hollow nodes', NODES);
  if (!started) return;
  cp = started.cp;
  agent = await runStatelet([
    '--container-runtime-endpoint=sim://',
    '--nodes=3',
    '--hostname-override=hollow',
    `--kubeconfig=${path.join(path.dirname(cp.nodeKubeconfig(NODES[0]!)), '{node}.kubeconfig')}`,
    `--client-ca-file=${cp.kubeletClientCaFile}`,
  ], { nodeAddresses: true });
}, 30 * 60_000);

afterAll(async () => {
  await agent?.stop();
  await cp?.close();
});

async function eventually(check: () => Promise<boolean>, what: string, seen: () => unknown, timeoutMs = 90_000): Promise<void> {
  try {
    await waitFor(check, what, timeoutMs);
  } catch (err) {
    throw new Error([String(err), `saw: ${JSON.stringify(seen())}`, `--- statelet:\n${agent?.output().slice(-4000)}`].join('\n'));
  }
}

describe('statelet --nodes=3', () => {
  it('registers three Nodes that turn Ready, each with its Lease and pod CIDR; a Deployment over them turns Ready; SIGTERM stops them all', async ({ skip }) => {
    if (!cp || !agent) return skip();
    const core = cp.core;
    const podCidrs = new Map<string, string>();
    await eventually(() => readyWithPodCidrs(core, NODES, podCidrs), 'three Nodes Ready with pod CIDRs', () => [...podCidrs]);
    for (const name of NODES) {
      const lease = await cp.waitFor<k8s.V1Lease>(leases, name, (l) => !!l?.spec?.renewTime);
      expect(lease!.spec?.holderIdentity).toBe(name);
    }
    // Each node tells its runtime its range at its next status round (up to 10 s after node IPAM
    // set it, as the kubelet); pods started before that have addresses of sim's default range.
    const told = (name: string) => agent!.output().split('\n').some((line) => line.includes('Updating Pod CIDR') && line.includes(`node="${name}"`) && line.includes(podCidrs.get(name)!));
    await eventually(async () => NODES.every(told), 'each node to tell its runtime its pod CIDR', () => NODES.map(told));

    const namespace = await cp.namespace('hollow');
    await cp.admin.makeApiClient(k8s.AppsV1Api).createNamespacedDeployment({
      namespace,
      body: spreadDeployment('spread', 6, { containers: [{ name: 'c', image: 'busybox', command: ['sh', '-c', 'echo "up on $HOSTNAME"; while true; do sleep 1; done'] }] }),
    });
    let pods: k8s.V1Pod[] = [];
    await eventually(
      async () => {
        pods = (await core.listNamespacedPod({ namespace })).items;
        return pods.length === 6 && pods.every((pod) => pod.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True'));
      },
      '6 pods Ready',
      () => pods.map((pod) => [pod.spec?.nodeName, pod.status?.phase, pod.status?.podIP]),
    );
    const perNode = new Map<string, number>();
    for (const pod of pods) {
      const nodeName = pod.spec!.nodeName!;
      perNode.set(nodeName, (perNode.get(nodeName) ?? 0) + 1);
      const [base = ''] = podCidrs.get(nodeName)!.split('/');
      expect(pod.status?.podIP?.startsWith(base.slice(0, base.lastIndexOf('.') + 1))).toBe(true);
    }
    expect(Object.fromEntries(perNode)).toEqual({ 'hollow-0': 2, 'hollow-1': 2, 'hollow-2': 2 });

    // The API server reaches each node's own server at its InternalIP: a pod's logs through kubectl.
    const nodeIps = await Promise.all(NODES.map(async (name) => (await core.readNode({ name })).status?.addresses?.find((a) => a.type === 'InternalIP')?.address));
    expect(nodeIps).toEqual(['127.0.1.1', '127.0.1.2', '127.0.1.3']);
    const onLast = pods.find((pod) => pod.spec?.nodeName === 'hollow-2')!;
    // The line is in the log once the runtime has flushed it (Ready does not wait for that).
    let log = '';
    await eventually(
      async () => (log = await cp!.kubectl(['get', '--raw', `/api/v1/namespaces/${namespace}/pods/${onLast.metadata!.name}/log`])) !== '',
      "the pod's log through its node's server",
      () => log,
    );
    expect(log).toBe(`up on ${onLast.metadata!.name}\n`);

    agent.child.kill('SIGTERM');
    expect(await agent.waitForExit(30_000)).toBe(0);
    for (const cidr of podCidrs.values()) {
      const [base = ''] = cidr.split('/');
      expect(await canBind(`${base.slice(0, base.lastIndexOf('.') + 1)}2`)).toBe(false);
    }
  });
});
