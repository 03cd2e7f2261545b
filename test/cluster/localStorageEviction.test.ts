/**
 * Eviction for local ephemeral storage limits (pkg/kubelet/eviction/eviction_manager.go
 * localStorageEviction), against a real kube-apiserver + etcd with the node's own identity, on
 * sim:// with no threshold anywhere near met (`memory.available<1Mi`):
 *   - a pod whose emptyDir has `sizeLimit: 1Mi` writes 2 MiB into it (a write under a mount is the
 *     host's directory, which the stats provider measures): evicted with the emptyDir message;
 *   - a pod whose container is limited to 1Mi of ephemeral storage writes 2 MiB into its own
 *     filesystem (its writable layer, as CRI stats report it), beside a container allowed 10Mi so
 *     that the pod as a whole is within its 11Mi: evicted with the container message;
 *   - the same container alone: the pod's total is over the pod's 1Mi first, so the pod message
 *     (the kubelet checks the pod before its containers);
 * each Failed, reason Evicted, without a DisruptionTarget condition, with its Evicted event, while a
 * pod within its limits keeps running and the node reports no pressure.
 */
import type { CoreV1Event, V1Node, V1Pod } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { clusterNode } from '../support/clusterNode.ts';
import { nodes, pods, waitFor } from '../support/controlPlane.ts';

const NODE = 'node-local-storage';

const condition = (node: V1Node | null, type: string) => node?.status?.conditions?.find((c) => c.type === type);
const evicted = (p: V1Pod | null) => p?.status?.phase === 'Failed' && !!p.status.containerStatuses?.[0]?.state?.terminated;

describe('eviction for local ephemeral storage limits (sim://, a real API server)', () => {
  // No threshold pressure can interfere: only the local storage limits evict.
  const cluster = clusterNode({ node: NODE, args: () => ['--container-runtime-endpoint=sim://', '--eviction-hard=memory.available<1Mi'] });

  it('evicts the pods over an emptyDir sizeLimit, a container limit or the pod limit, and no other', { timeout: 120_000 }, async ({ skip }) => {
    const cp = cluster.cp;
    if (!cp) return skip();
    const namespace = await cp.namespace('local-storage');
    await cp.waitFor<V1Node>(nodes, NODE, (n) => condition(n, 'Ready')?.status === 'True');

    await cp.core.createNamespacedPod({
      namespace,
      body: {
        metadata: { name: 'within' },
        spec: {
          nodeName: NODE,
          volumes: [{ name: 'cache', emptyDir: { sizeLimit: '10Mi' } }],
          containers: [
            {
              name: 'app',
              image: 'busybox',
              command: ['sh', '-c', 'dd if=/dev/zero of=/cache/fill bs=1M count=1 && dd if=/dev/zero of=/tmp/fill bs=1M count=1 && sleep 3600'],
              volumeMounts: [{ name: 'cache', mountPath: '/cache' }],
              resources: { limits: { 'ephemeral-storage': '10Mi' } },
            },
          ],
        },
      },
    });
    await cp.core.createNamespacedPod({
      namespace,
      body: {
        metadata: { name: 'cache-filler' },
        spec: {
          nodeName: NODE,
          volumes: [{ name: 'cache', emptyDir: { sizeLimit: '1Mi' } }],
          containers: [
            { name: 'app', image: 'busybox', command: ['sh', '-c', 'dd if=/dev/zero of=/cache/fill bs=1M count=2 && sleep 3600'], volumeMounts: [{ name: 'cache', mountPath: '/cache' }] },
          ],
        },
      },
    });
    await cp.core.createNamespacedPod({
      namespace,
      body: {
        metadata: { name: 'layer-filler' },
        spec: {
          nodeName: NODE,
          containers: [
            { name: 'app', image: 'busybox', command: ['sh', '-c', 'dd if=/dev/zero of=/tmp/fill bs=1M count=2 && sleep 3600'], resources: { limits: { 'ephemeral-storage': '1Mi' } } },
            { name: 'side', image: 'busybox', command: ['sleep', '3600'], resources: { limits: { 'ephemeral-storage': '10Mi' } } },
          ],
        },
      },
    });
    await cp.core.createNamespacedPod({
      namespace,
      body: {
        metadata: { name: 'lone-filler' },
        spec: {
          nodeName: NODE,
          containers: [
            { name: 'app', image: 'busybox', command: ['sh', '-c', 'dd if=/dev/zero of=/tmp/fill bs=1M count=2 && sleep 3600'], resources: { limits: { 'ephemeral-storage': '1Mi' } } },
          ],
        },
      },
    });

    // One monitoring interval (10 s) after the writes, all three go in the same round.
    const cacheFiller = (await cp.waitFor<V1Pod>(pods(namespace), 'cache-filler', evicted, 60_000))!;
    expect(cacheFiller.status).toMatchObject({ phase: 'Failed', reason: 'Evicted', message: 'Usage of EmptyDir volume "cache" exceeds the limit "1Mi". ' });
    const layerFiller = (await cp.waitFor<V1Pod>(pods(namespace), 'layer-filler', evicted, 60_000))!;
    expect(layerFiller.status).toMatchObject({ phase: 'Failed', reason: 'Evicted', message: 'Container app exceeded its local ephemeral storage limit "1Mi". ' });
    const loneFiller = (await cp.waitFor<V1Pod>(pods(namespace), 'lone-filler', evicted, 60_000))!;
    expect(loneFiller.status).toMatchObject({ phase: 'Failed', reason: 'Evicted', message: 'Pod ephemeral local storage usage exceeds the total limit of containers 1Mi. ' });
    // localStorageEviction gives evictPod no condition.
    for (const p of [cacheFiller, layerFiller, loneFiller]) expect(p.status?.conditions?.find((c) => c.type === 'DisruptionTarget')).toBeUndefined();

    const events = async (): Promise<CoreV1Event[]> => (await cp.core.listNamespacedEvent({ namespace })).items;
    await waitFor(
      async () => {
        const evictedEvents = (await events()).filter((e) => e.reason === 'Evicted' && e.type === 'Warning');
        return ['cache-filler', 'layer-filler', 'lone-filler'].every((name) => evictedEvents.some((e) => e.involvedObject.name === name));
      },
      'the Evicted events of the three pods',
    );
    const messages = (await events()).filter((e) => e.reason === 'Evicted').map((e) => [e.involvedObject.name, e.message]);
    expect(messages).toEqual(
      expect.arrayContaining([
        ['cache-filler', 'Usage of EmptyDir volume "cache" exceeds the limit "1Mi". '],
        ['layer-filler', 'Container app exceeded its local ephemeral storage limit "1Mi". '],
        ['lone-filler', 'Pod ephemeral local storage usage exceeds the total limit of containers 1Mi. '],
      ]),
    );

    // The pod within its limits runs on, and no threshold was involved.
    const within = (await cp.core.readNamespacedPod({ namespace, name: 'within' })) as V1Pod;
    expect(within.status?.phase).toBe('Running');
    expect(within.status?.containerStatuses?.[0]?.restartCount).toBe(0);
    const node = (await cp.core.readNode({ name: NODE })) as V1Node;
    expect(condition(node, 'DiskPressure')?.status).toBe('False');
    expect(condition(node, 'MemoryPressure')?.status).toBe('False');
    const nodeEvents = (await cp.core.listNamespacedEvent({ namespace: 'default' })).items;
    expect(nodeEvents.filter((e) => e.reason === 'EvictionThresholdMet')).toEqual([]);
  });
});
