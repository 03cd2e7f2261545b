/**
 * --cloud-provider=external and --provider-id through a real kube-apiserver + etcd, statelet as the
 * node on sim:// (kubelet_node_status.go initialNode, nodestatus/setters.go NodeAddress): the Node
 * is registered with the uninitialized taint, its providerID and the provided-node-ip annotation;
 * what a cloud controller manager then does to it (its addresses, the taint removed) stays.
 */
import type { V1Node } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { clusterNode } from '../support/clusterNode.ts';
import { nodes } from '../support/controlPlane.ts';

const NODE = 'cloud-node';
const UNINITIALIZED = { key: 'node.cloudprovider.kubernetes.io/uninitialized', value: 'true', effect: 'NoSchedule' };
// Addresses as a cloud controller manager sets them, in place of the node's own.
const CCM_ADDRESSES = [
  { type: 'InternalIP', address: '127.0.0.1' },
  { type: 'ExternalIP', address: '203.0.113.7' },
  { type: 'Hostname', address: 'cloud-node.example' },
];

describe('statelet with an external cloud provider', () => {
  // A status write every second, so a write after the controller's changes comes soon.
  const cluster = clusterNode({
    node: NODE,
    args: () => ['--container-runtime-endpoint=sim://', '--cloud-provider=external', '--provider-id=statelet:///test/cloud-node', '--node-status-update-frequency=1s', '--node-status-report-frequency=1s'],
  });

  const readyHeartbeat = (node: V1Node | null) => node?.status?.conditions?.find((c) => c.type === 'Ready')?.lastHeartbeatTime;

  it('registers the Node with the uninitialized taint, its provider ID and its IP for the controller', async ({ skip }) => {
    const cp = cluster.cp;
    if (!cp) return skip();
    const node = (await cp.waitFor<V1Node>(nodes, NODE, (n) => n !== null))!;
    expect(node.spec?.taints).toContainEqual(UNINITIALIZED);
    expect(node.spec?.providerID).toBe('statelet:///test/cloud-node');
    expect(node.metadata?.annotations?.['alpha.kubernetes.io/provided-node-ip']).toBe('127.0.0.1');
  });

  it("keeps the controller's addresses and does not put the taint back once it is removed", { timeout: 60_000 }, async ({ skip }) => {
    const cp = cluster.cp;
    if (!cp) return skip();
    await cp.kubectl(['patch', 'node', NODE, '--subresource=status', '--type=merge', '-p', JSON.stringify({ status: { addresses: CCM_ADDRESSES } })]);
    await cp.kubectl(['taint', 'node', NODE, `${UNINITIALIZED.key}-`]);
    const changedAt = readyHeartbeat(await cp.waitFor<V1Node>(nodes, NODE, (n) => n !== null));
    // Two status writes of the node's after the changes.
    let writes = 0;
    let last = changedAt;
    const node = await cp.waitFor<V1Node>(nodes, NODE, (n) => {
      const heartbeat = readyHeartbeat(n);
      if (heartbeat !== last) {
        writes++;
        last = heartbeat;
      }
      return writes >= 2;
    }, 30_000);
    expect(node?.status?.addresses).toEqual(CCM_ADDRESSES);
    expect(node?.spec?.taints ?? []).not.toContainEqual(UNINITIALIZED);
  });
});
