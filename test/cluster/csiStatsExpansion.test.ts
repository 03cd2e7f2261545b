/**
 * End to end on sim://, a real API server and the upstream controller-manager, with Kubernetes'
 * CSI mock driver (test/support/csiMock.ts) registered with statelet, for a static CSI
 * PersistentVolume bound to a claim:
 *   - volume stats: NodeGetVolumeStats of the published volume (GET_VOLUME_STATS) each
 *     --volume-stats-agg-period (1s here), the usage in /stats/summary with the claim as `pvcRef`
 *     and in `kubelet_volume_stats_*`; a driver failing the call takes the entry out, and it is
 *     back once the driver answers again;
 *   - online expansion: the test raises the PV's capacity and sets the claim's status as the
 *     external resizer does after ControllerExpandVolume (allocatedResources,
 *     `NodeResizePending`, `FileSystemResizePending`); at the pod's next sync statelet marks the
 *     claim `NodeResizeInProgress`, calls NodeExpandVolume with the kubelet's arguments, and
 *     patches the claim's status to the new capacity with the resize status and condition gone,
 *     with `FileSystemResizeSuccessful` events on the pod and the claim;
 *   - expansion during mount: a volume the resizer grew while no pod used it is expanded after its
 *     publish and before the pod runs.
 * On sim:// and on containerd (where the mock binds its own directory for the volume and answers
 * NodeGetVolumeStats from its filesystem); and with sim://'s own CSI driver, whose reported usage
 * follows the expansion. Where Go or containerd is missing the tests skip, loudly, outside CI.
 */
import { StorageV1Api, type CoreV1Event, type V1PersistentVolumeClaim, type V1Pod } from '@kubernetes/client-node';
import { afterAll, describe, expect, it } from 'vitest';
import type { CSINode } from '../../src/api/cluster.ts';
import { publishTargetPath, stagingTargetPath } from '../../src/volumes/csi/paths.ts';
import { type CsiMock, startCsiMock } from '../support/csiMock.ts';
import { clusterNode } from '../support/clusterNode.ts';
import { type ControlPlane, pods, waitFor } from '../support/controlPlane.ts';
import { BUSYBOX_IMAGE, startContainerd } from '../containerd/harness.ts';

const DRIVER = 'stats.csimock.test';
const csiNodes = { path: '/apis/storage.k8s.io/v1/csinodes' };
const claims = (namespace: string) => ({ path: `/api/v1/namespaces/${namespace}/persistentvolumeclaims` });
const idle = "trap 'exit 0' TERM; while true; do sleep 1; done";
const running = (p: V1Pod | null) => p?.status?.phase === 'Running';

interface SummaryVolume {
  name: string;
  pvcRef?: { name: string; namespace: string };
  capacityBytes?: number;
  availableBytes?: number;
  usedBytes?: number;
}
type Summary = { pods: { podRef: { name: string; namespace: string }; volume?: SummaryVolume[] }[] };

/** As the external resizer after ControllerExpandVolume (csi-resizer markForPendingNodeExpansion): the PV at 2Gi, the claim pending a node resize. */
async function resizedOnController(cp: ControlPlane, namespace: string, pvName: string): Promise<void> {
  await cp.kubectl(['patch', 'pv', pvName, '--type=merge', '-p', JSON.stringify({ spec: { capacity: { storage: '2Gi' } } })]);
  await cp.kubectl([
    ...['patch', 'pvc', 'data', '-n', namespace, '--subresource=status', '--type=merge', '-p'],
    JSON.stringify({
      status: {
        allocatedResources: { storage: '2Gi' },
        allocatedResourceStatuses: { storage: 'NodeResizePending' },
        conditions: [{ type: 'FileSystemResizePending', status: 'True', message: 'Waiting for user to (re-)start a pod to finish file system resize of volume on node.' }],
      },
    }),
  ]);
}

interface Runtime {
  node: string;
  image: string;
  /** The mock binds a directory of its own onto the target path, and answers NodeGetVolumeStats from its statfs (a root agent). */
  bindMounts: boolean;
}

function defineCsiStatsExpansionScenarios({ node: NODE, image, bindMounts }: Runtime, cluster: ReturnType<typeof clusterNode>): void {
  let mock: CsiMock | null = null;
  afterAll(async () => {
    await mock?.stop();
  });

  /** The test's pod deleted (its volume unstaged), the mock driver stopped and its CSIDriver gone from the CSINode. */
  async function podAndDriverGone(cp: ControlPlane, namespace: string): Promise<void> {
    await cp.core.deleteNamespacedPod({ namespace, name: 'app' });
    await waitFor(async () => (await mock!.calls()).some((c) => c.rpc === 'NodeUnstageVolume'), 'the unstage', 60_000);
    await mock!.stop();
    mock = null;
    await cp.admin.makeApiClient(StorageV1Api).deleteCSIDriver({ name: DRIVER });
    await cp.waitFor<CSINode>(csiNodes, NODE, (c) => !(c?.spec.drivers ?? []).some((d) => d.name === DRIVER), 60_000);
  }

  /** The mock with stats and expansion, registered; a CSIDriver without attach; PV `pvName` of the mock's volume "1" bound to `<namespace>/data`; a pod on it, running. */
  async function podOnMockVolume(cp: ControlPlane, pvName: string, beforePod?: (namespace: string) => Promise<void>): Promise<{ namespace: string; pod: V1Pod } | null> {
    mock = await startCsiMock({ rootDir: cluster.agent!.rootDir, driverName: DRIVER, nodeId: `mock-${NODE}`, nodeCapabilities: ['STAGE_UNSTAGE_VOLUME', 'GET_VOLUME_STATS', 'EXPAND_VOLUME'], bindMounts });
    if (!mock) return null;
    await cp.waitFor<CSINode>(csiNodes, NODE, (c) => (c?.spec.drivers ?? []).some((d) => d.name === DRIVER), 60_000);
    await cp.admin.makeApiClient(StorageV1Api).createCSIDriver({ body: { metadata: { name: DRIVER }, spec: { attachRequired: false } } });
    const namespace = await cp.namespace('csi-stats');
    const storage = { storage: '1Gi' };
    await cp.core.createPersistentVolume({
      body: {
        metadata: { name: pvName },
        spec: { capacity: storage, accessModes: ['ReadWriteOnce'], storageClassName: '', claimRef: { namespace, name: 'data' }, csi: { driver: DRIVER, volumeHandle: '1', fsType: 'ext4' } },
      },
    });
    await cp.core.createNamespacedPersistentVolumeClaim({ namespace, body: { metadata: { name: 'data' }, spec: { storageClassName: '', volumeName: pvName, accessModes: ['ReadWriteOnce'], resources: { requests: storage } } } });
    await beforePod?.(namespace);
    await cp.core.createNamespacedPod({
      namespace,
      body: {
        metadata: { name: 'app' },
        spec: {
          nodeName: NODE,
          terminationGracePeriodSeconds: 1,
          containers: [{ name: 'app', image, command: ['sh', '-c', idle], volumeMounts: [{ name: 'data', mountPath: '/data' }] }],
          volumes: [{ name: 'data', persistentVolumeClaim: { claimName: 'data' } }],
        },
      },
    });
    const pod = (await cp.waitFor<V1Pod>(pods(namespace), 'app', running, 120_000))!;
    return { namespace, pod };
  }

  it('reports the volume usage the driver gives in /stats/summary and kubelet_volume_stats_*, and leaves it out while the driver fails the call', { timeout: 300_000 }, async ({ skip }) => {
    const cp = cluster.cp;
    if (!cp || !cluster.agent) return skip();
    const pvName = `csi-stats-${process.pid}`;
    const started = await podOnMockVolume(cp, pvName);
    if (!started) return skip();
    const { namespace, pod } = started;
    const readOnly = `http://127.0.0.1:${cluster.agent.readOnlyPort}`;
    const dataVolume = async () => {
      const summary = (await (await fetch(`${readOnly}/stats/summary`)).json()) as Summary;
      return summary.pods.find((p) => p.podRef.namespace === namespace && p.podRef.name === 'app')?.volume?.find((v) => v.name === 'data');
    };
    await waitFor(async () => (await dataVolume()) !== undefined, 'the CSI volume in /stats/summary', 30_000);
    const stats = (await mock!.calls()).filter((c) => c.rpc === 'NodeGetVolumeStats');
    const target = publishTargetPath(cluster.agent.rootDir, pod.metadata!.uid!, pvName);
    // csi_client.go NodeGetVolumeStats: the volume and its target path, nothing else.
    expect(stats[0]!.request).toEqual({ volume_id: '1', volume_path: target });
    // The mock reports its volume's size as the BYTES total (its directory's filesystem with bind mounts).
    const total = Number((stats[0]!.response as { usage: { total?: string; unit: string }[] }).usage.find((u) => u.unit === 'BYTES')!.total);
    expect(total).toBeGreaterThan(0);
    expect(await dataVolume()).toMatchObject({ pvcRef: { name: 'data', namespace }, capacityBytes: total, availableBytes: expect.any(Number), usedBytes: expect.any(Number) });
    const metrics = await (await fetch(`${readOnly}/metrics`)).text();
    expect(metrics).toContain(`kubelet_volume_stats_capacity_bytes{namespace="${namespace}",persistentvolumeclaim="data"} ${total}`);

    // The driver fails the call: the entry goes, the pod and the node are untouched; it comes back with the driver.
    await mock!.fail([{ method: 'NodeGetVolumeStats', code: 13, message: 'the disk is gone' }]);
    await waitFor(async () => (await dataVolume()) === undefined, 'the failing volume out of /stats/summary', 30_000);
    expect(await (await fetch(`${readOnly}/metrics`)).text()).not.toContain(`persistentvolumeclaim="data"`);
    expect(running(await cp.core.readNamespacedPod({ namespace, name: 'app' }))).toBe(true);
    await mock!.fail([]);
    await waitFor(async () => (await dataVolume()) !== undefined, 'the volume back in /stats/summary', 30_000);

    await podAndDriverGone(cp, namespace);
  });

  it('expands the mounted volume online once the resizer grew it: NodeExpandVolume, the claim status, the events', { timeout: 300_000 }, async ({ skip }) => {
    const cp = cluster.cp;
    if (!cp || !cluster.agent) return skip();
    const pvName = `csi-expand-${process.pid}`;
    const started = await podOnMockVolume(cp, pvName);
    if (!started) return skip();
    const { namespace, pod } = started;
    expect((await cp.core.readNamespacedPersistentVolumeClaim({ namespace, name: 'data' })).status?.capacity).toEqual({ storage: '1Gi' });

    await resizedOnController(cp, namespace, pvName);
    const done = await cp.waitFor<V1PersistentVolumeClaim>(claims(namespace), 'data', (c) => c?.status?.capacity?.['storage'] === '2Gi', 60_000);
    expect(done!.status?.allocatedResourceStatuses ?? {}).toEqual({});
    // The resize condition goes; the others (the API server's own `Unused`, say) stay.
    expect((done!.status?.conditions ?? []).map((c) => c.type)).not.toContain('FileSystemResizePending');
    expect(done!.status?.allocatedResources).toEqual({ storage: '2Gi' });

    const expands = (await mock!.calls()).filter((c) => c.rpc === 'NodeExpandVolume');
    expect(expands).toHaveLength(1);
    expect(expands[0]!.request).toEqual({
      volume_id: '1',
      volume_path: publishTargetPath(cluster.agent.rootDir, pod.metadata!.uid!, pvName),
      staging_target_path: stagingTargetPath(cluster.agent.rootDir, DRIVER, '1'),
      capacity_range: { required_bytes: String(2 * 2 ** 30) },
      volume_capability: { mount: { fs_type: 'ext4' }, access_mode: { mode: 'SINGLE_NODE_WRITER' } },
    });

    const message = `MountVolume.NodeExpandVolume succeeded for volume "${pvName}" ${NODE}`;
    const resized = async () => ((await cp.core.listNamespacedEvent({ namespace })).items as CoreV1Event[]).filter((e) => e.reason === 'FileSystemResizeSuccessful');
    await waitFor(async () => (await resized()).length === 2, 'the FileSystemResizeSuccessful events', 30_000);
    expect((await resized()).map((e) => [e.involvedObject.kind, e.involvedObject.name, e.type, e.message]).sort()).toEqual([
      ['PersistentVolumeClaim', 'data', 'Normal', message],
      ['Pod', 'app', 'Normal', message],
    ]);
    expect(running(await cp.core.readNamespacedPod({ namespace, name: 'app' }))).toBe(true);

    await podAndDriverGone(cp, namespace);
  });

  it('expands, as it mounts it, a volume the resizer grew while no pod used it, before the pod runs', { timeout: 300_000 }, async ({ skip }) => {
    const cp = cluster.cp;
    if (!cp || !cluster.agent) return skip();
    const pvName = `csi-offline-${process.pid}`;
    const started = await podOnMockVolume(cp, pvName, async (namespace) => {
      await cp.waitFor<V1PersistentVolumeClaim>(claims(namespace), 'data', (c) => c?.status?.phase === 'Bound', 60_000);
      await resizedOnController(cp, namespace, pvName);
    });
    if (!started) return skip();
    const { namespace } = started;
    // Running: expanded already, after the publish (SetUp) and before the volume counted as mounted.
    const rpcs = (await mock!.calls()).filter((c) => c.method.startsWith('/csi.v1.Node/') && ['NodeStageVolume', 'NodePublishVolume', 'NodeExpandVolume'].includes(c.rpc));
    expect(rpcs.map((c) => c.rpc)).toEqual(['NodeStageVolume', 'NodePublishVolume', 'NodeExpandVolume']);
    expect(rpcs[2]!.request).toMatchObject({ volume_id: '1', capacity_range: { required_bytes: String(2 * 2 ** 30) } });
    const pvc = await cp.core.readNamespacedPersistentVolumeClaim({ namespace, name: 'data' });
    expect(pvc.status?.capacity).toEqual({ storage: '2Gi' });
    expect(pvc.status?.allocatedResourceStatuses ?? {}).toEqual({});
    // Nothing left mounted for the next scenario or the machine.
    await cp.core.deleteNamespacedPod({ namespace, name: 'app' });
    await waitFor(async () => (await mock!.calls()).some((c) => c.rpc === 'NodeUnstageVolume'), 'the unstage', 60_000);
  });
}

const settings = ['--volume-stats-agg-period=1s', '--sync-frequency=3s'];

describe('CSI volume stats and online expansion on statelet (sim://, a real cluster, the CSI mock driver)', () => {
  const node = 'node-csi-stats';
  const cluster = clusterNode({ node, controllers: true, args: () => ['--container-runtime-endpoint=sim://', ...settings] });
  defineCsiStatsExpansionScenarios({ node, image: 'busybox', bindMounts: false }, cluster);
});

/**
 * sim://'s own CSI driver (`sim://?csi=<driver>`, src/simcsi) reports a volume's capacity as its
 * `size` attribute, then as what NodeExpandVolume last asked for: the usage statelet reports
 * follows the expansion it made.
 */
describe("CSI volume stats and online expansion on statelet with sim://'s CSI driver (a real cluster)", () => {
  const node = 'node-csi-stats-simcsi';
  const driver = 'hostpath.csi.sim';
  const cluster = clusterNode({ node, controllers: true, args: () => [`--container-runtime-endpoint=sim://?csi=${driver}`, ...settings] });

  it('reports the claim at its size, expands it when the resizer grew it, then reports the new size', { timeout: 300_000 }, async ({ skip }) => {
    const cp = cluster.cp;
    if (!cp || !cluster.agent) return skip();
    await cp.waitFor<CSINode>(csiNodes, node, (c) => (c?.spec.drivers ?? []).some((d) => d.name === driver), 60_000);
    await cp.admin.makeApiClient(StorageV1Api).createCSIDriver({ body: { metadata: { name: driver }, spec: { attachRequired: false } } });
    const namespace = await cp.namespace('simcsi-stats');
    const pvName = `simcsi-stats-${process.pid}`;
    const storage = { storage: '1Gi' };
    await cp.core.createPersistentVolume({
      body: { metadata: { name: pvName }, spec: { capacity: storage, accessModes: ['ReadWriteOnce'], storageClassName: '', claimRef: { namespace, name: 'data' }, csi: { driver, volumeHandle: 'stats-1', volumeAttributes: { size: '1Gi' } } } },
    });
    await cp.core.createNamespacedPersistentVolumeClaim({ namespace, body: { metadata: { name: 'data' }, spec: { storageClassName: '', volumeName: pvName, accessModes: ['ReadWriteOnce'], resources: { requests: storage } } } });
    await cp.core.createNamespacedPod({
      namespace,
      body: {
        metadata: { name: 'app' },
        spec: {
          nodeName: node,
          terminationGracePeriodSeconds: 1,
          containers: [{ name: 'app', image: 'busybox', command: ['sh', '-c', idle], volumeMounts: [{ name: 'data', mountPath: '/data' }] }],
          volumes: [{ name: 'data', persistentVolumeClaim: { claimName: 'data' } }],
        },
      },
    });
    await cp.waitFor<V1Pod>(pods(namespace), 'app', running, 120_000);
    const readOnly = `http://127.0.0.1:${cluster.agent.readOnlyPort}`;
    const capacity = async () => {
      const summary = (await (await fetch(`${readOnly}/stats/summary`)).json()) as Summary;
      return summary.pods.find((p) => p.podRef.namespace === namespace && p.podRef.name === 'app')?.volume?.find((v) => v.name === 'data')?.capacityBytes;
    };
    await waitFor(async () => (await capacity()) === 2 ** 30, 'the claim at 1Gi in /stats/summary', 30_000);
    await resizedOnController(cp, namespace, pvName);
    await cp.waitFor<V1PersistentVolumeClaim>(claims(namespace), 'data', (c) => c?.status?.capacity?.['storage'] === '2Gi', 60_000);
    await waitFor(async () => (await capacity()) === 2 * 2 ** 30, 'the claim at 2Gi in /stats/summary', 30_000);
    const metrics = await (await fetch(`${readOnly}/metrics`)).text();
    expect(metrics).toContain(`kubelet_volume_stats_capacity_bytes{namespace="${namespace}",persistentvolumeclaim="data"} ${2 * 2 ** 30}`);
  });
});

const containerd = await startContainerd();
if (!containerd) {
  it.skip('CSI volume stats and expansion on containerd (containerd not available here; see the message above)', () => {});
} else {
  afterAll(() => containerd.stop(), 180_000);
  describe('CSI volume stats and online expansion on statelet (containerd, a real cluster, the CSI mock driver binding its directories)', () => {
    const node = 'node-csi-stats-containerd';
    const cluster = clusterNode({ node, controllers: true, args: () => [`--container-runtime-endpoint=${containerd.endpoint}`, ...settings] });
    defineCsiStatsExpansionScenarios({ node, image: BUSYBOX_IMAGE, bindMounts: true }, cluster);
  });
}
