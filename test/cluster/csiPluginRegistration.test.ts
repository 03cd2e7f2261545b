/**
 * End to end: Kubernetes' CSI mock driver (test/support/csiMock.ts), run as a plain process with
 * its registration socket in a running statelet's `<root-dir>/plugins_registry` (sim://, a real
 * API server), registers as it would with the kubelet: the plugin manager finds the socket, asks
 * GetInfo, the CSI handler asks the driver's NodeGetInfo over the CSI client and writes the Node
 * and the CSINode, and the driver is told it is registered; when the driver stops (its sockets
 * removed, as node-driver-registrar removes its own on SIGTERM) it is deregistered.
 * Where Go is missing the test skips, loudly, outside CI.
 */
import type { V1Node } from '@kubernetes/client-node';
import { afterAll, describe, expect, it } from 'vitest';
import type { CSINode } from '../../src/api/cluster.ts';
import { type CsiMock, startCsiMock } from '../support/csiMock.ts';
import { clusterNode } from '../support/clusterNode.ts';
import { nodes } from '../support/controlPlane.ts';

const NODE = 'node-csi-e2e';
const DRIVER = 'io.kubernetes.storage.mock';
const csiNodes = { path: '/apis/storage.k8s.io/v1/csinodes' };

describe('a CSI driver registering with statelet through its plugin registry (sim://, a real API server)', () => {
  const cluster = clusterNode({ node: NODE, args: () => ['--container-runtime-endpoint=sim://'] });
  let mock: CsiMock | null = null;
  afterAll(async () => mock?.stop());

  it('is registered into the Node and the CSINode, and deregistered when it stops', { timeout: 180_000 }, async ({ skip }) => {
    const cp = cluster.cp;
    if (!cp || !cluster.agent) return skip();
    // The CSINode is initialized once the agent runs: the Node turns Ready only then.
    await cp.waitFor<V1Node>(nodes, NODE, (n) => n?.status?.conditions?.find((c) => c.type === 'Ready')?.status === 'True', 60_000);
    const initialized = await cp.waitFor<CSINode>(csiNodes, NODE, (c) => c !== null);
    expect(initialized?.metadata.annotations?.['storage.alpha.kubernetes.io/migrated-plugins']).toContain('kubernetes.io/gce-pd');

    mock = await startCsiMock({ rootDir: cluster.agent.rootDir, nodeId: `mock-${NODE}`, maxVolumesPerNode: 4, topology: { 'topology.csimock/node': NODE } });
    if (!mock) return skip();
    const csiNode = await cp.waitFor<CSINode>(csiNodes, NODE, (c) => (c?.spec.drivers ?? []).some((d) => d.name === DRIVER), 60_000);
    expect(csiNode?.spec.drivers).toEqual([{ name: DRIVER, nodeID: `mock-${NODE}`, topologyKeys: ['topology.csimock/node'], allocatable: { count: 4 } }]);
    const node = (await cp.waitFor<V1Node>(nodes, NODE, (n) => !!n?.metadata?.annotations?.['csi.volume.kubernetes.io/nodeid']))!;
    expect(JSON.parse(node.metadata!.annotations!['csi.volume.kubernetes.io/nodeid']!)).toEqual({ [DRIVER]: `mock-${NODE}` });
    expect(node.metadata?.labels?.['topology.csimock/node']).toBe(NODE);
    // The kubelet's sequence on the two sockets: GetInfo, NodeGetInfo, then the status, registered.
    const rpcs = (await mock.calls()).map((call) => call.rpc);
    expect(rpcs.filter((rpc) => ['GetInfo', 'NodeGetInfo', 'NotifyRegistrationStatus'].includes(rpc))).toEqual(['GetInfo', 'NodeGetInfo', 'NotifyRegistrationStatus']);
    expect((await mock.calls()).find((call) => call.rpc === 'NotifyRegistrationStatus')?.request).toEqual({ plugin_registered: true });

    await mock.stop();
    await cp.waitFor<CSINode>(csiNodes, NODE, (c) => c !== null && !(c.spec.drivers ?? []).some((d) => d.name === DRIVER), 30_000);
    const after = (await cp.waitFor<V1Node>(nodes, NODE, (n) => !n?.metadata?.annotations?.['csi.volume.kubernetes.io/nodeid'], 30_000))!;
    expect(after.metadata?.labels?.['topology.csimock/node']).toBe(NODE);
  });
});
