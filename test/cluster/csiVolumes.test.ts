/**
 * End to end: a static PersistentVolume with a `csi` source, served by Kubernetes' CSI mock driver
 * (test/support/csiMock.ts) run as a plain process that registers with a running statelet through
 * its plugin registry (sim://, a real API server and the upstream controller-manager: the
 * PersistentVolume binder and the attach-detach controller):
 *   - with a CSIDriver saying `attachRequired: false`: the pod runs once the driver has staged and
 *     published the volume at the kubelet's paths; deleting it unpublishes, then unstages;
 *   - with no CSIDriver (attach required): statelet reports the volume in the Node's
 *     `status.volumesInUse`, the attach-detach controller creates the VolumeAttachment, the test
 *     sets its status as an external attacher would, the controller lists the volume in
 *     `status.volumesAttached`, and the pod runs with the attachment's metadata as the publish
 *     context; deleting the pod takes the volume out of `volumesInUse`;
 *   - an inline CSI volume of a driver whose CSIDriver has the Ephemeral lifecycle mode: published
 *     (never staged nor attached) with the volume handle made from the pod, unpublished when it goes.
 * On containerd, with the mock binding its own directory for the volume, a pod writes a file into it.
 * Where Go (or containerd) is missing the tests skip, loudly, outside CI.
 */
import { StorageV1Api, type V1Node, type V1Pod } from '@kubernetes/client-node';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { CSINode } from '../../src/api/cluster.ts';
import { attachmentName, inlineVolumeHandle, publishTargetPath, stagingTargetPath } from '../../src/volumes/csi/paths.ts';
import { type CsiMock, type CsiMockCall, startCsiMock } from '../support/csiMock.ts';
import { clusterNode } from '../support/clusterNode.ts';
import { type ControlPlane, nodes, pods, waitFor } from '../support/controlPlane.ts';
import { BUSYBOX_IMAGE, startContainerd } from '../containerd/harness.ts';

const NODE = 'node-csi-volumes';
const csiNodes = { path: '/apis/storage.k8s.io/v1/csinodes' };
const volumeAttachments = { path: '/apis/storage.k8s.io/v1/volumeattachments' };
const idle = "trap 'exit 0' TERM; while true; do sleep 1; done";

const nodeRpcs = async (mock: CsiMock): Promise<CsiMockCall[]> => (await mock.calls()).filter((c) => c.method.startsWith('/csi.v1.Node/') && c.rpc !== 'NodeGetCapabilities' && c.rpc !== 'NodeGetInfo');

/** A PV of the mock's volume `handle` pre-bound to `<namespace>/data`, and that claim. */
async function staticVolume(cp: ControlPlane, namespace: string, pvName: string, driver: string, handle: string): Promise<void> {
  const storage = { storage: '1Gi' };
  await cp.core.createPersistentVolume({
    body: {
      metadata: { name: pvName },
      spec: {
        capacity: storage,
        accessModes: ['ReadWriteOnce'],
        storageClassName: '',
        claimRef: { namespace, name: 'data' },
        csi: { driver, volumeHandle: handle, fsType: 'ext4', volumeAttributes: { tier: 'gold' } },
      },
    },
  });
  await cp.core.createNamespacedPersistentVolumeClaim({ namespace, body: { metadata: { name: 'data' }, spec: { storageClassName: '', volumeName: pvName, accessModes: ['ReadWriteOnce'], resources: { requests: storage } } } });
}

const claimPod = (name: string): V1Pod => ({
  metadata: { name },
  spec: {
    nodeName: NODE,
    terminationGracePeriodSeconds: 1,
    containers: [{ name: 'app', image: 'busybox', command: ['sh', '-c', idle], volumeMounts: [{ name: 'data', mountPath: '/data' }] }],
    volumes: [{ name: 'data', persistentVolumeClaim: { claimName: 'data' } }],
  },
});

const running = (p: V1Pod | null) => p?.status?.phase === 'Running';

describe('CSI persistent volumes on statelet (sim://, a real cluster, the CSI mock driver)', () => {
  const cluster = clusterNode({ node: NODE, controllers: true, args: () => ['--container-runtime-endpoint=sim://'] });
  const mocks: CsiMock[] = [];
  afterAll(async () => {
    for (const mock of mocks) await mock.stop();
  });

  /** Starts a mock in the agent's plugin registry and waits until statelet has registered it. */
  async function registeredMock(cp: ControlPlane, driverName: string, attach: boolean): Promise<CsiMock | null> {
    const mock = await startCsiMock({ rootDir: cluster.agent!.rootDir, driverName, nodeId: `mock-${NODE}`, attach });
    if (!mock) return null;
    mocks.push(mock);
    await cp.waitFor<CSINode>(csiNodes, NODE, (c) => (c?.spec.drivers ?? []).some((d) => d.name === driverName), 60_000);
    return mock;
  }

  it('stages and publishes a volume whose CSIDriver needs no attach, runs the pod, and unpublishes then unstages when it goes', { timeout: 240_000 }, async ({ skip }) => {
    const cp = cluster.cp;
    if (!cp || !cluster.agent) return skip();
    const driver = 'noattach.csimock.test';
    const mock = await registeredMock(cp, driver, false);
    if (!mock) return skip();
    const storage = cp.admin.makeApiClient(StorageV1Api);
    await storage.createCSIDriver({ body: { metadata: { name: driver }, spec: { attachRequired: false, podInfoOnMount: true, fsGroupPolicy: 'File' } } });
    const namespace = await cp.namespace('csi-noattach');
    await staticVolume(cp, namespace, `csi-noattach-${process.pid}`, driver, '1');
    await cp.core.createNamespacedPod({ namespace, body: claimPod('app') });
    const pod = (await cp.waitFor<V1Pod>(pods(namespace), 'app', running, 120_000))!;
    const uid = pod.metadata!.uid!;

    const rootDir = cluster.agent.rootDir;
    const staging = stagingTargetPath(rootDir, driver, '1');
    const target = publishTargetPath(rootDir, uid, `csi-noattach-${process.pid}`);
    const calls = await nodeRpcs(mock);
    expect(calls.map((c) => c.rpc)).toEqual(['NodeStageVolume', 'NodePublishVolume']);
    expect(calls[0]!.request).toMatchObject({ volume_id: '1', staging_target_path: staging, volume_context: { tier: 'gold' } });
    expect(calls[1]!.request).toMatchObject({
      volume_id: '1',
      staging_target_path: staging,
      target_path: target,
      volume_context: { tier: 'gold', 'csi.storage.k8s.io/pod.name': 'app', 'csi.storage.k8s.io/pod.namespace': namespace, 'csi.storage.k8s.io/pod.uid': uid, 'csi.storage.k8s.io/ephemeral': 'false' },
    });
    expect(calls.some((c) => 'publish_context' in c.request)).toBe(false);
    expect((await cp.core.readNode({ name: NODE })).status?.volumesInUse ?? []).toEqual([]);

    await cp.core.deleteNamespacedPod({ namespace, name: 'app' });
    await waitFor(async () => (await nodeRpcs(mock)).map((c) => c.rpc).join() === 'NodeStageVolume,NodePublishVolume,NodeUnpublishVolume,NodeUnstageVolume', 'the unpublish and unstage', 60_000);
    expect((await nodeRpcs(mock)).slice(2).map((c) => c.request)).toEqual([
      { volume_id: '1', target_path: target },
      { volume_id: '1', staging_target_path: staging },
    ]);
  });

  it('waits for the attach-detach controller and the external attacher of a driver without a CSIDriver, then mounts with the attachment metadata', { timeout: 300_000 }, async ({ skip }) => {
    const cp = cluster.cp;
    if (!cp || !cluster.agent) return skip();
    const driver = 'attach.csimock.test';
    const mock = await registeredMock(cp, driver, true);
    if (!mock) return skip();
    const pvName = `csi-attach-${process.pid}`;
    const unique = `kubernetes.io/csi/${driver}^2`;
    const vaName = attachmentName('2', driver, NODE);
    const namespace = await cp.namespace('csi-attach');
    await staticVolume(cp, namespace, pvName, driver, '2');
    await cp.core.createNamespacedPod({ namespace, body: claimPod('app') });

    // statelet reports it in use; the controller creates the VolumeAttachment for the external attacher.
    await cp.waitFor<V1Node>(nodes, NODE, (n) => (n?.status?.volumesInUse ?? []).includes(unique), 60_000);
    await cp.waitFor(volumeAttachments, vaName, (va) => va !== null, 60_000);
    expect(await nodeRpcs(mock)).toEqual([]);
    // As the external attacher: attached, with the device in the metadata (the mock wants publish_context.device).
    await cp.kubectl(['patch', 'volumeattachment', vaName, '--subresource=status', '--type=merge', '-p', JSON.stringify({ status: { attached: true, attachmentMetadata: { device: '/dev/mock-2' } } })]);
    await cp.waitFor<V1Node>(nodes, NODE, (n) => (n?.status?.volumesAttached ?? []).some((v) => v.name === unique), 120_000);
    await cp.waitFor<V1Pod>(pods(namespace), 'app', running, 120_000);
    const calls = await nodeRpcs(mock);
    expect(calls.map((c) => c.rpc)).toEqual(['NodeStageVolume', 'NodePublishVolume']);
    for (const call of calls) expect(call.request['publish_context']).toEqual({ device: '/dev/mock-2' });

    await cp.core.deleteNamespacedPod({ namespace, name: 'app' });
    await waitFor(async () => (await nodeRpcs(mock)).some((c) => c.rpc === 'NodeUnstageVolume'), 'the unstage', 60_000);
    await cp.waitFor<V1Node>(nodes, NODE, (n) => !(n?.status?.volumesInUse ?? []).includes(unique), 60_000);
  });

  it('publishes an inline volume of a driver with the Ephemeral lifecycle mode for its pod, and unpublishes it when the pod goes', { timeout: 240_000 }, async ({ skip }) => {
    const cp = cluster.cp;
    if (!cp || !cluster.agent) return skip();
    const driver = 'inline.csimock.test';
    const mock = await registeredMock(cp, driver, false);
    if (!mock) return skip();
    await cp.admin.makeApiClient(StorageV1Api).createCSIDriver({ body: { metadata: { name: driver }, spec: { attachRequired: false, podInfoOnMount: true, volumeLifecycleModes: ['Ephemeral'] } } });
    const namespace = await cp.namespace('csi-inline');
    await cp.core.createNamespacedPod({
      namespace,
      body: {
        metadata: { name: 'app' },
        spec: {
          nodeName: NODE,
          terminationGracePeriodSeconds: 1,
          containers: [{ name: 'app', image: 'busybox', command: ['sh', '-c', idle], volumeMounts: [{ name: 'scratch', mountPath: '/scratch' }] }],
          volumes: [{ name: 'scratch', csi: { driver, volumeAttributes: { size: '1Gi' } } }],
        },
      },
    });
    const pod = (await cp.waitFor<V1Pod>(pods(namespace), 'app', running, 120_000))!;
    const uid = pod.metadata!.uid!;
    const calls = await nodeRpcs(mock);
    expect(calls.map((c) => c.rpc)).toEqual(['NodePublishVolume']);
    expect(calls[0]!.request).toMatchObject({
      volume_id: inlineVolumeHandle(uid, 'scratch'),
      target_path: publishTargetPath(cluster.agent.rootDir, uid, 'scratch'),
      volume_context: { size: '1Gi', 'csi.storage.k8s.io/ephemeral': 'true', 'csi.storage.k8s.io/pod.uid': uid },
    });
    expect(calls[0]!.request).not.toHaveProperty('staging_target_path');

    await cp.core.deleteNamespacedPod({ namespace, name: 'app' });
    await waitFor(async () => (await nodeRpcs(mock)).map((c) => c.rpc).join() === 'NodePublishVolume,NodeUnpublishVolume', 'the unpublish', 60_000);
  });
});

/**
 * On containerd the same volume holds data: the mock in its bind-mount mode binds its own
 * directory for the volume onto the target path statelet gave it, and what the pod's container
 * writes there is in the driver's directory (a root agent, as on CI).
 */
const CONTAINERD_NODE = 'node-csi-containerd';
const containerd = await startContainerd();
if (!containerd) {
  it.skip('CSI volumes on containerd (containerd not available here; see the message above)', () => {});
} else {
  afterAll(() => containerd.stop(), 180_000);
  describe('CSI persistent volumes on statelet (containerd, a real cluster, the CSI mock driver binding its directories)', () => {
    const cluster = clusterNode({ node: CONTAINERD_NODE, controllers: true, args: () => [`--container-runtime-endpoint=${containerd.endpoint}`] });
    let mock: CsiMock | null = null;
    afterAll(async () => mock?.stop());

    it("lets the pod write through the driver's mount; the file is in the driver's volume", { timeout: 300_000 }, async ({ skip }) => {
      const cp = cluster.cp;
      if (!cp || !cluster.agent) return skip();
      const driver = 'bind.csimock.test';
      mock = await startCsiMock({ rootDir: cluster.agent.rootDir, driverName: driver, nodeId: `mock-${CONTAINERD_NODE}`, bindMounts: true });
      if (!mock) return skip();
      await cp.waitFor<CSINode>(csiNodes, CONTAINERD_NODE, (c) => (c?.spec.drivers ?? []).some((d) => d.name === driver), 60_000);
      await cp.admin.makeApiClient(StorageV1Api).createCSIDriver({ body: { metadata: { name: driver }, spec: { attachRequired: false, fsGroupPolicy: 'None' } } });
      const namespace = await cp.namespace('csi-bind');
      await staticVolume(cp, namespace, `csi-bind-${process.pid}`, driver, '3');
      await cp.core.createNamespacedPod({
        namespace,
        body: {
          metadata: { name: 'writer' },
          spec: {
            nodeName: CONTAINERD_NODE,
            restartPolicy: 'Never',
            terminationGracePeriodSeconds: 1,
            containers: [{ name: 'app', image: BUSYBOX_IMAGE, command: ['sh', '-c', 'echo written through CSI > /data/greeting'], volumeMounts: [{ name: 'data', mountPath: '/data' }] }],
            volumes: [{ name: 'data', persistentVolumeClaim: { claimName: 'data' } }],
          },
        },
      });
      await cp.waitFor<V1Pod>(pods(namespace), 'writer', (p) => p?.status?.phase === 'Succeeded', 180_000);
      expect(readFileSync(path.join(mock.stateDir!, '3', 'greeting'), 'utf8')).toBe('written through CSI\n');
      await cp.core.deleteNamespacedPod({ namespace, name: 'writer' });
      await waitFor(async () => (await nodeRpcs(mock!)).some((c) => c.rpc === 'NodeUnstageVolume'), 'the unstage', 60_000);
      expect((await nodeRpcs(mock)).find((c) => c.rpc === 'NodePublishVolume')?.bindMount).toMatchObject({ mounted: true });
    });
  });
}
