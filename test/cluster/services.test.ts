/**
 * Two statelet nodes on sim:// as a cluster's network: the upstream kube-controller-manager
 * allocates each Node a pod CIDR (node IPAM), statelet forwards it to sim:// (CRI
 * UpdateRuntimeConfig), sim:// makes the range local to the host and gives pods its addresses. A
 * Service's EndpointSlice then lists every ready pod of a Deployment spread over both nodes (the
 * API server refuses loopback addresses there), and a pod on one node fetches a page from a pod
 * on the other by its address.
 *
 * The route that makes a range local needs root: CI runs as root; elsewhere the suite skips, loudly.
 */
import * as k8s from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type AgentProcess, runStatelet } from '../support/agentProcess.ts';
import { type ControlPlane, waitFor } from '../support/controlPlane.ts';
import { readyWithPodCidrs, spreadDeployment, startIpamControlPlane } from '../support/simNodes.ts';

const NODES = ['sim-a', 'sim-b'];
let clusterCidr = '';

let cp: ControlPlane | null = null;
const agents: AgentProcess[] = [];

beforeAll(async () => {
  const started = await startIpamControlPlane('Services', NODES);
  if (!started) return;
  ({ cp, clusterCidr } = started);
  for (const node of NODES) {
    agents.push(
      await runStatelet([
        '--container-runtime-endpoint=sim://',
        `--kubeconfig=${cp.nodeKubeconfig(node)}`,
        `--hostname-override=${node}`,
        '--node-ip=127.0.0.1',
        `--client-ca-file=${cp.kubeletClientCaFile}`,
      ]),
    );
  }
}, 30 * 60_000);

afterAll(async () => {
  await Promise.all(agents.map((agent) => agent.stop()));
  await cp?.close();
});

/** `waitFor`, failing with what was last seen and the agents' and controllers' logs. */
async function eventually(check: () => Promise<boolean>, what: string, seen: () => unknown, timeoutMs = 90_000): Promise<void> {
  try {
    await waitFor(check, what, timeoutMs);
  } catch (err) {
    const logs = [...agents.map((agent, i) => `--- ${NODES[i]}:\n${agent.output().slice(-3000)}`), `--- kube-controller-manager:\n${cp!.output('kube-controller-manager').slice(-3000)}`];
    throw new Error([String(err), `saw: ${JSON.stringify(seen())}`, ...logs].join('\n'));
  }
}

/** Whether `ip` is in `cidr` (IPv4). */
function inCidr(ip: string, cidr: string): boolean {
  const toNumber = (text: string) => text.split('.').reduce((n, part) => n * 256 + Number(part), 0);
  const [base = '', bits = '32'] = cidr.split('/');
  const size = 2 ** (32 - Number(bits));
  return Math.floor(toNumber(ip) / size) === Math.floor(toNumber(base) / size);
}

describe('Services on sim:// nodes', () => {
  it('every ready pod of a Deployment over two nodes is an endpoint at an address of its node, and a pod on one node reaches a pod on the other', async ({ skip }) => {
    if (!cp) return skip();
    const core = cp.core;
    const podCidrs = new Map<string, string>();
    await eventually(() => readyWithPodCidrs(core, NODES, podCidrs), 'both Nodes Ready with a pod CIDR from node IPAM', () => [...podCidrs]);
    for (const cidr of podCidrs.values()) expect(inCidr(cidr.split('/')[0]!, clusterCidr)).toBe(true);
    // Each node tells its runtime its range at its next status round (up to 10 s after node IPAM
    // set it, as the kubelet); pods started before that have addresses of sim's default range.
    const told = (i: number) => agents[i]!.output().split('\n').some((line) => line.includes('Updating Pod CIDR') && line.includes(podCidrs.get(NODES[i]!)!));
    await eventually(async () => NODES.every((_, i) => told(i)), 'each node to tell its runtime its pod CIDR', () => NODES.map((_, i) => told(i)));

    const namespace = await cp.namespace('svc');
    const labels = { app: 'web' };
    const apps = cp.admin.makeApiClient(k8s.AppsV1Api);
    await apps.createNamespacedDeployment({
      namespace,
      body: spreadDeployment('web', 4, {
        // The not-ready taint the node controller adds on registration is tolerated, as a DaemonSet's pods would.
        tolerations: [{ key: 'node.kubernetes.io/not-ready', operator: 'Exists', effect: 'NoSchedule' }],
        containers: [
          {
            name: 'web',
            image: 'busybox',
            command: ['sh', '-c', 'mkdir -p /www; echo "hello from $HOSTNAME" > /www/index.html; httpd -f -p 8080 -h /www'],
            ports: [{ containerPort: 8080 }],
            readinessProbe: { httpGet: { path: '/', port: 8080 }, periodSeconds: 1 },
          },
        ],
      }),
    });
    await core.createNamespacedService({ namespace, body: { metadata: { name: 'web' }, spec: { selector: labels, ports: [{ port: 80, targetPort: 8080 }] } } });

    let pods: k8s.V1Pod[] = [];
    await eventually(
      async () => {
        pods = (await core.listNamespacedPod({ namespace, labelSelector: 'app=web' })).items;
        return pods.length === 4 && pods.every((pod) => pod.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True'));
      },
      '4 web pods Ready',
      () => pods.map((pod) => [pod.spec?.nodeName, pod.status?.phase, pod.status?.podIP]),
    );
    for (const pod of pods) expect(inCidr(pod.status!.podIP!, podCidrs.get(pod.spec!.nodeName!)!)).toBe(true);
    expect(new Set(pods.map((pod) => pod.spec?.nodeName))).toEqual(new Set(NODES));

    const discovery = cp.admin.makeApiClient(k8s.DiscoveryV1Api);
    let endpoints: k8s.V1Endpoint[] = [];
    await eventually(
      async () => {
        const slices = (await discovery.listNamespacedEndpointSlice({ namespace, labelSelector: 'kubernetes.io/service-name=web' })).items;
        endpoints = slices.flatMap((slice) => slice.endpoints);
        return endpoints.length === 4 && endpoints.every((endpoint) => endpoint.conditions?.ready === true);
      },
      "the Service's EndpointSlice with 4 ready endpoints",
      () => endpoints,
    );
    const byPod = (list: { ip: string; node: string; pod: string }[]) => list.sort((a, b) => a.pod.localeCompare(b.pod));
    expect(byPod(endpoints.map((e) => ({ ip: e.addresses[0]!, node: e.nodeName!, pod: e.targetRef!.name! })))).toEqual(
      byPod(pods.map((pod) => ({ ip: pod.status!.podIP!, node: pod.spec!.nodeName!, pod: pod.metadata!.name! }))),
    );

    // Pod to pod, across nodes: a client on sim-a fetches the page of a web pod on sim-b by its address.
    const target = pods.find((pod) => pod.spec?.nodeName === 'sim-b')!;
    await core.createNamespacedPod({
      namespace,
      body: {
        metadata: { name: 'client' },
        spec: {
          nodeName: 'sim-a',
          restartPolicy: 'Never',
          containers: [{ name: 'client', image: 'busybox', command: ['wget', '-q', '-O', '-', `http://${target.status!.podIP}:8080/`] }],
        },
      },
    });
    let client: k8s.V1Pod | undefined;
    await eventually(
      async () => {
        client = await core.readNamespacedPod({ namespace, name: 'client' });
        return client.status?.phase === 'Succeeded' || client.status?.phase === 'Failed';
      },
      'the client pod to finish',
      () => client?.status,
    );
    expect(client!.status?.phase).toBe('Succeeded');
    expect(await cp.kubectl(['logs', '-n', namespace, 'client'])).toBe(`hello from ${target.metadata!.name}\n`);
  });
});
