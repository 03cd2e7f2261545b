/**
 * The test control plane itself: a real kube-apiserver with etcd, where the node identity has a
 * node's rights and no more (Node authorizer, NodeRestriction). The agent's cluster tests stand
 * on this.
 */
import * as k8s from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ControlPlane, startControlPlane } from '../support/controlPlane.ts';

let cp: ControlPlane | null = null;

beforeAll(async () => {
  cp = await startControlPlane({ nodeNames: ['node-a'] });
}, 15 * 60_000);

afterAll(async () => {
  await cp?.close();
});

const nodeClient = <T extends k8s.ApiType>(api: new (config: k8s.Configuration) => T): T => {
  const config = new k8s.KubeConfig();
  config.loadFromFile(cp!.nodeKubeconfig('node-a'));
  return config.makeApiClient(api);
};

const status = (err: unknown) => (err instanceof k8s.ApiException ? err.code : err);

describe('test control plane', () => {
  it('lets the node create its own Node and Lease, and nothing beyond a node\'s rights', async ({ skip }) => {
    if (!cp) return skip();
    const core = nodeClient(k8s.CoreV1Api);
    const created = await core.createNode({ body: { metadata: { name: 'node-a' } } });
    expect(created.metadata?.uid).toBeTruthy();
    const leases = nodeClient(k8s.CoordinationV1Api);
    await leases.createNamespacedLease({
      namespace: 'kube-node-lease',
      body: { metadata: { name: 'node-a' }, spec: { holderIdentity: 'node-a', leaseDurationSeconds: 40 } },
    });
    // Another node's Node, and a Secret no pod of this node references: forbidden.
    await expect(core.createNode({ body: { metadata: { name: 'node-b' } } }).catch(status)).resolves.toBe(403);
    await cp.core.createNamespacedSecret({ namespace: 'default', body: { metadata: { name: 'unrelated' }, stringData: { a: 'b' } } });
    await expect(core.readNamespacedSecret({ namespace: 'default', name: 'unrelated' }).catch(status)).resolves.toBe(403);
    // Creating an ordinary (non-mirror) pod is refused by NodeRestriction.
    await expect(
      core
        .createNamespacedPod({ namespace: 'default', body: { metadata: { name: 'p' }, spec: { nodeName: 'node-a', containers: [{ name: 'c', image: 'i' }] } } })
        .catch(status),
    ).resolves.toBe(403);
    expect(await cp.kubectl(['get', 'nodes', '-o', 'name'])).toContain('node/node-a');
  });
});
