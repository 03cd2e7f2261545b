/**
 * End to end: the CSI driver sim:// offers (`sim://?csi=<driver>`, src/simcsi) on a statelet node
 * of a real cluster (kube-apiserver, etcd, the upstream scheduler and controller-manager):
 *   - the agent's plugin manager finds its registration socket and registers it as any driver:
 *     the CSINode lists it with the node's name as node ID and its topology key, the Node carries
 *     the node-ID annotation and the topology label;
 *   - with a CSIDriver (attachRequired: false) and a static PersistentVolume of that driver bound
 *     to a claim, one pod writes a file to the claim and the next pod reads it back, as with the CSI
 *     mock on containerd (csiVolumes.test.ts); the data is the driver's volume directory;
 *   - an inline CSI volume (the CSIDriver's Ephemeral lifecycle mode) is made for its pod and
 *     deleted when the pod goes;
 *   - a StatefulSet with volumeClaimTemplates over pre-created CSI PersistentVolumes of the driver
 *     (bound by the controller-manager's binder): a replica's replacement pod finds what the pod
 *     before it wrote.
 * Where the control plane cannot be built the tests skip, loudly, outside CI.
 */
import { AppsV1Api, StorageV1Api, type V1Node, type V1Pod, type V1Volume } from '@kubernetes/client-node';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import type { CSINode } from '../../src/api/cluster.ts';
import { simCsiDataDir } from '../../src/simcsi/server.ts';
import { inlineVolumeHandle } from '../../src/volumes/csi/paths.ts';
import { clusterNode } from '../support/clusterNode.ts';
import { type ControlPlane, nodes, pods, waitFor } from '../support/controlPlane.ts';

const NODE = 'node-sim-csi';
const DRIVER = 'hostpath.csi.sim';
const csiNodes = { path: '/apis/storage.k8s.io/v1/csinodes' };
const idle = "trap 'exit 0' TERM; while true; do sleep 1; done";

/** A pod of `command` in a busybox container with `volume` at /data. */
const podWith = (name: string, command: string, volume: V1Volume, restartPolicy = 'Never'): V1Pod => ({
  metadata: { name },
  spec: {
    nodeName: NODE,
    restartPolicy,
    terminationGracePeriodSeconds: 1,
    containers: [{ name: 'app', image: 'busybox', command: ['sh', '-c', command], volumeMounts: [{ name: volume.name, mountPath: '/data' }] }],
    volumes: [volume],
  },
});

const phase = (wanted: string) => (p: V1Pod | null) => p?.status?.phase === wanted;

describe("sim://'s CSI driver on statelet (a real cluster)", () => {
  const cluster = clusterNode({ node: NODE, controllers: true, args: () => [`--container-runtime-endpoint=sim://?csi=${DRIVER}`] });

  /** The CSIDriver of sim://'s driver: no attach, both lifecycle modes, pod info on mount (which tells it a volume is inline). */
  async function csiDriverObject(cp: ControlPlane): Promise<void> {
    const storage = cp.admin.makeApiClient(StorageV1Api);
    const existing = await storage.readCSIDriver({ name: DRIVER }).catch(() => null);
    if (existing) return;
    await storage.createCSIDriver({ body: { metadata: { name: DRIVER }, spec: { attachRequired: false, podInfoOnMount: true, volumeLifecycleModes: ['Persistent', 'Ephemeral'], fsGroupPolicy: 'File' } } });
  }

  it('is registered through the plugin registry: the CSINode lists it, the Node has its node ID and topology label', { timeout: 120_000 }, async ({ skip }) => {
    const cp = cluster.cp;
    if (!cp || !cluster.agent) return skip();
    const csiNode = (await cp.waitFor<CSINode>(csiNodes, NODE, (c) => (c?.spec.drivers ?? []).some((d) => d.name === DRIVER), 60_000))!;
    expect(csiNode.spec.drivers).toEqual([{ name: DRIVER, nodeID: NODE, topologyKeys: [`topology.${DRIVER}/node`] }]);
    const node = (await cp.waitFor<V1Node>(nodes, NODE, (n) => n?.metadata?.labels?.[`topology.${DRIVER}/node`] === NODE, 30_000))!;
    expect(JSON.parse(node.metadata!.annotations!['csi.volume.kubernetes.io/nodeid']!)).toEqual({ [DRIVER]: NODE });
  });

  it('runs a pod writing to a claim of a static CSI PersistentVolume, and the next pod of the claim reads it back', { timeout: 300_000 }, async ({ skip }) => {
    const cp = cluster.cp;
    if (!cp || !cluster.agent) return skip();
    await cp.waitFor<CSINode>(csiNodes, NODE, (c) => (c?.spec.drivers ?? []).some((d) => d.name === DRIVER), 60_000);
    await csiDriverObject(cp);
    const namespace = await cp.namespace('sim-csi');
    const pvName = `sim-csi-${process.pid}`;
    const storage = { storage: '1Gi' };
    await cp.core.createPersistentVolume({
      body: {
        metadata: { name: pvName },
        spec: { capacity: storage, accessModes: ['ReadWriteOnce'], storageClassName: '', claimRef: { namespace, name: 'data' }, csi: { driver: DRIVER, volumeHandle: 'data-1', volumeAttributes: { size: '1Gi' } } },
      },
    });
    await cp.core.createNamespacedPersistentVolumeClaim({ namespace, body: { metadata: { name: 'data' }, spec: { storageClassName: '', volumeName: pvName, accessModes: ['ReadWriteOnce'], resources: { requests: storage } } } });
    const claim = { name: 'data', persistentVolumeClaim: { claimName: 'data' } };

    await cp.core.createNamespacedPod({ namespace, body: podWith('writer', 'echo kept across pods > /data/greeting', claim) });
    await cp.waitFor<V1Pod>(pods(namespace), 'writer', phase('Succeeded'), 180_000);
    expect(readFileSync(path.join(simCsiDataDir(cluster.agent.rootDir, DRIVER), 'volumes', 'data-1', 'greeting'), 'utf8')).toBe('kept across pods\n');
    await cp.core.deleteNamespacedPod({ namespace, name: 'writer' });
    await waitFor(async () => (await cp.core.listNamespacedPod({ namespace })).items.length === 0, 'the writer to go', 60_000);

    // The reader fails (exits 1) unless the file holds what the writer wrote.
    await cp.core.createNamespacedPod({ namespace, body: podWith('reader', 'grep -q "kept across pods" /data/greeting', claim) });
    const reader = await cp.waitFor<V1Pod>(pods(namespace), 'reader', (p) => phase('Succeeded')(p) || phase('Failed')(p), 180_000);
    expect(reader?.status?.phase).toBe('Succeeded');
  });

  it('makes an inline CSI volume for its pod and deletes it when the pod goes', { timeout: 300_000 }, async ({ skip }) => {
    const cp = cluster.cp;
    if (!cp || !cluster.agent) return skip();
    await cp.waitFor<CSINode>(csiNodes, NODE, (c) => (c?.spec.drivers ?? []).some((d) => d.name === DRIVER), 60_000);
    await csiDriverObject(cp);
    const namespace = await cp.namespace('sim-csi-inline');
    const inline = { name: 'scratch', csi: { driver: DRIVER, volumeAttributes: { size: '16Mi' } } };
    await cp.core.createNamespacedPod({ namespace, body: podWith('app', `echo inline > /data/note; ${idle}`, inline, 'Always') });
    const pod = (await cp.waitFor<V1Pod>(pods(namespace), 'app', phase('Running'), 180_000))!;
    const data = path.join(simCsiDataDir(cluster.agent.rootDir, DRIVER), 'volumes', inlineVolumeHandle(pod.metadata!.uid!, 'scratch'));
    await waitFor(async () => existsSync(path.join(data, 'note')), 'the container to write its note', 30_000);
    expect(readFileSync(path.join(data, 'note'), 'utf8')).toBe('inline\n');

    await cp.core.deleteNamespacedPod({ namespace, name: 'app' });
    await waitFor(async () => !existsSync(data), 'the inline volume to be deleted', 60_000);
  });

  it("runs a StatefulSet over CSI PersistentVolumes of the driver: a replica's next pod finds what its last one wrote", { timeout: 300_000 }, async ({ skip }) => {
    const cp = cluster.cp;
    if (!cp || !cluster.agent) return skip();
    await cp.waitFor<CSINode>(csiNodes, NODE, (c) => (c?.spec.drivers ?? []).some((d) => d.name === DRIVER), 60_000);
    await csiDriverObject(cp);
    const namespace = await cp.namespace('sim-csi-sts');
    const storageClass = `sim-csi-${process.pid}`;
    await cp.admin.makeApiClient(StorageV1Api).createStorageClass({ body: { metadata: { name: storageClass }, provisioner: 'kubernetes.io/no-provisioner', volumeBindingMode: 'Immediate' } });
    for (const index of [0, 1]) {
      await cp.core.createPersistentVolume({
        body: {
          metadata: { name: `${storageClass}-${index}` },
          spec: { capacity: { storage: '1Gi' }, accessModes: ['ReadWriteOnce'], storageClassName: storageClass, csi: { driver: DRIVER, volumeHandle: `${storageClass}-web-${index}` } },
        },
      });
    }
    const template = {
      metadata: { labels: { app: 'web' } },
      spec: {
        terminationGracePeriodSeconds: 1,
        containers: [
          {
            name: 'app',
            image: 'busybox',
            env: [{ name: 'POD_UID', valueFrom: { fieldRef: { fieldPath: 'metadata.uid' } } }],
            command: ['sh', '-c', `echo $POD_UID >> /data/pods; ${idle}`],
            volumeMounts: [{ name: 'data', mountPath: '/data' }],
          },
        ],
      },
    };
    await cp.admin.makeApiClient(AppsV1Api).createNamespacedStatefulSet({
      namespace,
      body: {
        metadata: { name: 'web' },
        spec: {
          serviceName: 'web',
          replicas: 2,
          selector: { matchLabels: { app: 'web' } },
          template,
          volumeClaimTemplates: [{ metadata: { name: 'data' }, spec: { storageClassName: storageClass, accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } } } }],
        },
      },
    });
    const running = (p: V1Pod | null) => phase('Running')(p) && p?.status?.containerStatuses?.every((c) => !!c.state?.running) === true;
    const first = (await cp.waitFor<V1Pod>(pods(namespace), 'web-0', running, 180_000))!;
    await cp.waitFor<V1Pod>(pods(namespace), 'web-1', running, 180_000);
    // The volume of web-0's claim, in the driver's directory: the pods that used it, one line each.
    const claim = await cp.core.readNamespacedPersistentVolumeClaim({ namespace, name: 'data-web-0' });
    const handle = (await cp.core.readPersistentVolume({ name: claim.spec!.volumeName! })).spec!.csi!.volumeHandle;
    const seen = path.join(simCsiDataDir(cluster.agent.rootDir, DRIVER), 'volumes', handle, 'pods');
    await waitFor(async () => existsSync(seen), "web-0's first pod to write", 30_000);
    expect(readFileSync(seen, 'utf8')).toBe(`${first.metadata!.uid}\n`);

    await cp.core.deleteNamespacedPod({ namespace, name: 'web-0' });
    const next = (await cp.waitFor<V1Pod>(pods(namespace), 'web-0', (p) => running(p) && p?.metadata?.uid !== first.metadata!.uid, 180_000))!;
    await waitFor(async () => readFileSync(seen, 'utf8').split('\n').length === 3, "web-0's next pod to write", 30_000);
    expect(readFileSync(seen, 'utf8')).toBe(`${first.metadata!.uid}\n${next.metadata!.uid}\n`);
  });
});
