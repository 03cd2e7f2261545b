/**
 * End to end: statelet killed (SIGKILL) and started again over the same root directory while pods
 * with CSI volumes run, through a real API server, with sim:// served from this process (so the pods
 * outlive the agent, as containerd's do) and Kubernetes' CSI mock driver as a plain process
 * registered through statelet's plugin registry:
 *   - the pod that still runs keeps running (the same container, no restart) and its volume is
 *     never unpublished nor unstaged: the restarted agent reconstructs it and stages and publishes
 *     it again with the same requests (drivers are idempotent), as the kubelet does;
 *   - the pod deleted while the agent was down has its volume unpublished, then unstaged, and its
 *     directory removed, once the restarted agent has seen the API's pods.
 * On containerd the same, with the mock bind-mounting its own directory onto each target path: the
 * restarted agent leaves the driver's mounts to the driver (NodeUnpublishVolume unmounts them)
 * before the deleted pod's directory goes.
 * And raw block volumes (a local PersistentVolume of volumeMode Block on a loop device, root
 * only): the deleted pod's map (its bind mount on the global map file, the loop device over it,
 * its link) undone by the restarted agent, the running pod's device mapped again in place.
 * The claims are bound by the test (no controller-manager: the PersistentVolumes are pre-bound and
 * the claims' status written as the binder would). Where Go, the control plane or containerd is
 * missing the tests skip, loudly, outside CI.
 */
import { StorageV1Api, type V1Pod } from '@kubernetes/client-node';
import { existsSync } from 'node:fs';
import { execFile, execFileSync } from 'node:child_process';
import { mkdtemp, readFile, readlink, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CSINode } from '../../src/api/cluster.ts';
import { startSimRuntime, type SimRuntime } from '../../src/runtime/sim/server.ts';
import { publishTargetPath, stagingTargetPath } from '../../src/volumes/csi/paths.ts';
import { localGlobalMapPath } from '../../src/volumes/localBlock.ts';
import { mountPointsUnder } from '../../src/volumes/mounter.ts';
import { rootOrSkip } from '../support/smallFilesystem.ts';
import { type AgentProcess, runStatelet } from '../support/agentProcess.ts';
import { type CsiMock, type CsiMockCall, startCsiMock } from '../support/csiMock.ts';
import { type ControlPlane, pods, startControlPlane, waitFor } from '../support/controlPlane.ts';
import { BUSYBOX_IMAGE, startContainerd } from '../containerd/harness.ts';

const csiNodes = { path: '/apis/storage.k8s.io/v1/csinodes' };
const idle = "trap 'exit 0' TERM; while true; do sleep 1; done";

const nodeRpcs = async (mock: CsiMock): Promise<CsiMockCall[]> => (await mock.calls()).filter((c) => c.method.startsWith('/csi.v1.Node/') && c.rpc !== 'NodeGetCapabilities' && c.rpc !== 'NodeGetInfo');

/** Where the pods run: a CRI endpoint that outlives the agent, the image, whether the mock bind-mounts. */
interface Runtime {
  endpoint: string;
  image: string;
  bindMounts: boolean;
}

function restartSuite(title: string, NODE: string, runtime: () => Promise<Runtime | null>) {
  describe(title, () => {
    const DRIVER = `${NODE}.csimock.test`;
    let cp: ControlPlane | null = null;
    let rt: Runtime | null = null;
    let agent: AgentProcess | null = null;
    let mock: CsiMock | null = null;
    let dir = '';
    const rootDir = () => path.join(dir, 'root');
    const start = async () => {
      agent = await runStatelet([`--kubeconfig=${cp!.nodeKubeconfig(NODE)}`, `--hostname-override=${NODE}`, '--node-ip=127.0.0.1', `--container-runtime-endpoint=${rt!.endpoint}`], { rootDir: rootDir() });
    };

    beforeAll(async () => {
      cp = await startControlPlane({ nodeNames: [NODE] });
      if (!cp) return;
      dir = await mkdtemp(path.join(os.tmpdir(), 'statelet-csi-restart-'));
      rt = await runtime();
      if (!rt) return;
      await start();
      mock = await startCsiMock({ rootDir: rootDir(), driverName: DRIVER, nodeId: `mock-${NODE}`, bindMounts: rt.bindMounts });
      if (!mock) return;
      await cp.waitFor<CSINode>(csiNodes, NODE, (c) => (c?.spec.drivers ?? []).some((d) => d.name === DRIVER), 60_000);
    }, 5 * 60_000);
    afterAll(async () => {
      await agent?.stop();
      await mock?.stop();
      await cp?.close();
      if (dir) {
        // What the killed agent left mapped or mounted (none but a failed test's): loop devices over its files first.
        for (const line of execFileSync('losetup', ['-a'], { encoding: 'utf8' }).split('\n').filter((l) => l.includes(`(${dir}/`))) execFileSync('losetup', ['-d', line.split(':')[0]!]);
        for (const point of mountPointsUnder(await readFile('/proc/self/mountinfo', 'utf8'), dir)) await promisify(execFile)('umount', [point]).catch(() => {});
        await rm(dir, { recursive: true, force: true });
      }
    }, 180_000);

    /**
     * A PV of the mock's volume `handle` (or of a local block device) pre-bound to
     * `<namespace>/<claim>`, and that claim, Bound as the binder would leave it.
     */
    async function boundClaim(namespace: string, claim: string, handle: string, localBlockDevice?: string): Promise<string> {
      const pvName = `${localBlockDevice ? 'block' : 'csi'}-restart-${handle}-${process.pid}`;
      const storage = { storage: '1Gi' };
      const volumeMode = localBlockDevice ? 'Block' : 'Filesystem';
      const created = await cp!.core.createNamespacedPersistentVolumeClaim({ namespace, body: { metadata: { name: claim }, spec: { storageClassName: '', volumeName: pvName, volumeMode, accessModes: ['ReadWriteOnce'], resources: { requests: storage } } } });
      const source = localBlockDevice
        ? { local: { path: localBlockDevice }, nodeAffinity: { required: { nodeSelectorTerms: [{ matchExpressions: [{ key: 'kubernetes.io/hostname', operator: 'In', values: [NODE] }] }] } } }
        : { csi: { driver: DRIVER, volumeHandle: handle } };
      await cp!.core.createPersistentVolume({
        body: { metadata: { name: pvName }, spec: { capacity: storage, accessModes: ['ReadWriteOnce'], storageClassName: '', volumeMode, claimRef: { namespace, name: claim, uid: created.metadata!.uid! }, ...source } },
      });
      await cp!.kubectl(['-n', namespace, 'patch', 'pvc', claim, '--subresource=status', '--type=merge', '-p', JSON.stringify({ status: { phase: 'Bound', accessModes: ['ReadWriteOnce'], capacity: storage } })]);
      return pvName;
    }

    /** A pod of the claim: the volume mounted at /data, or (`device`) its raw device at /dev/xvda. */
    const claimPod = (name: string, claim: string, device = false): V1Pod => ({
      metadata: { name },
      spec: {
        nodeName: NODE,
        terminationGracePeriodSeconds: 1,
        // No controller-manager publishes kube-root-ca.crt here.
        automountServiceAccountToken: false,
        containers: [{ name: 'app', image: rt!.image, command: ['sh', '-c', idle], ...(device ? { volumeDevices: [{ name: 'data', devicePath: '/dev/xvda' }] } : { volumeMounts: [{ name: 'data', mountPath: '/data' }] }) }],
        volumes: [{ name: 'data', persistentVolumeClaim: { claimName: claim } }],
      },
    });

    /** The agent killed (SIGKILL), `deleted` deleted at once meanwhile (no agent to wait for), the agent started again over the same root. */
    async function killDeleteRestart(namespace: string, deleted: string): Promise<void> {
      agent!.child.kill('SIGKILL');
      await agent!.waitForExit();
      await cp!.core.deleteNamespacedPod({ namespace, name: deleted, gracePeriodSeconds: 0 });
      await start();
    }

    it("keeps the running pod's volume and unpublishes then unstages the volume of a pod deleted while the agent was down", { timeout: 300_000 }, async ({ skip }) => {
      if (!cp || !rt || !mock) return skip();
      await cp.admin.makeApiClient(StorageV1Api).createCSIDriver({ body: { metadata: { name: DRIVER }, spec: { attachRequired: false } } });
      const namespace = await cp.namespace('csi-restart');
      const keptPV = await boundClaim(namespace, 'kept', '1');
      const gonePV = await boundClaim(namespace, 'gone', '2');
      await cp.core.createNamespacedPod({ namespace, body: claimPod('keep', 'kept') });
      await cp.core.createNamespacedPod({ namespace, body: claimPod('drop', 'gone') });
      const running = (p: V1Pod | null) => p?.status?.phase === 'Running';
      const kept = (await cp.waitFor<V1Pod>(pods(namespace), 'keep', running, 120_000))!;
      const dropped = (await cp.waitFor<V1Pod>(pods(namespace), 'drop', running, 120_000))!;
      const keptUid = kept.metadata!.uid!;
      const droppedUid = dropped.metadata!.uid!;
      const containerId = kept.status!.containerStatuses![0]!.containerID;
      const before = await nodeRpcs(mock);
      expect(before.map((c) => c.rpc).sort()).toEqual(['NodePublishVolume', 'NodePublishVolume', 'NodeStageVolume', 'NodeStageVolume']);
      // On containerd the driver's bind mounts are real: the restarted agent must leave them to the driver.
      if (rt!.bindMounts) for (const call of before.filter((c) => c.rpc === 'NodePublishVolume')) expect(call.bindMount).toMatchObject({ mounted: true });

      // The agent dies; one pod is deleted meanwhile.
      await killDeleteRestart(namespace, 'drop');

      const volumeRpcs = async (handle: string) => (await nodeRpcs(mock!)).slice(before.length).filter((c) => c.request['volume_id'] === handle);
      await waitFor(async () => (await volumeRpcs('2')).map((c) => c.rpc).join() === 'NodeUnpublishVolume,NodeUnstageVolume', 'the deleted pod volume unpublished and unstaged', 90_000);
      expect((await volumeRpcs('2')).map((c) => c.request)).toEqual([
        { volume_id: '2', target_path: publishTargetPath(rootDir(), droppedUid, gonePV) },
        { volume_id: '2', staging_target_path: stagingTargetPath(rootDir(), DRIVER, '2') },
      ]);
      await waitFor(async () => !existsSync(path.join(rootDir(), 'pods', droppedUid)), "the deleted pod's directory removed", 60_000);

      // The running pod: its volume staged and published again, with the same requests, never torn down.
      await waitFor(async () => (await volumeRpcs('1')).length >= 2, 'the running pod volume mounted again', 60_000);
      const again = await volumeRpcs('1');
      expect(again.map((c) => c.rpc)).toEqual(['NodeStageVolume', 'NodePublishVolume']);
      expect(again.map((c) => c.request)).toEqual(before.filter((c) => c.request['volume_id'] === '1').map((c) => c.request));
      expect(again[1]!.request['target_path']).toBe(publishTargetPath(rootDir(), keptUid, keptPV));
      const now = (await cp.core.readNamespacedPod({ namespace, name: 'keep' })).status!;
      expect(now.phase).toBe('Running');
      expect(now.containerStatuses![0]).toMatchObject({ containerID: containerId, restartCount: 0 });
      expect(existsSync(path.join(rootDir(), 'pods', keptUid, 'volumes', 'kubernetes.io~csi', keptPV, 'vol_data.json'))).toBe(true);
    });

    it("undoes the raw block map of a pod deleted while the agent was down (bind mount, loop device, link) and keeps the running pod's device", { timeout: 300_000 }, async ({ skip }) => {
      if (!cp || !rt) return skip();
      if (!rootOrSkip('raw block volumes across an agent kill (a loop device)')) return skip();
      const image = path.join(dir, `disk-${NODE}.img`);
      execFileSync('truncate', ['-s', '1M', image]);
      const device = execFileSync('losetup', ['-f', '--show', image], { encoding: 'utf8' }).trim();
      try {
        const namespace = await cp.namespace('block-restart');
        const pv = await boundClaim(namespace, 'blk', NODE, device);
        await cp.core.createNamespacedPod({ namespace, body: claimPod('bkeep', 'blk', true) });
        await cp.core.createNamespacedPod({ namespace, body: claimPod('bdrop', 'blk', true) });
        const running = (p: V1Pod | null) => p?.status?.phase === 'Running';
        const kept = (await cp.waitFor<V1Pod>(pods(namespace), 'bkeep', running, 120_000))!;
        const dropped = (await cp.waitFor<V1Pod>(pods(namespace), 'bdrop', running, 120_000))!;
        const keptUid = kept.metadata!.uid!;
        const droppedUid = dropped.metadata!.uid!;
        const containerId = kept.status!.containerStatuses![0]!.containerID;
        // The global map: the device bind-mounted on a file per pod, each held open by a loop device over it.
        const global = localGlobalMapPath(path.join(rootDir(), 'pods'), pv);
        const mapped = async () => mountPointsUnder(await readFile('/proc/self/mountinfo', 'utf8'), global);
        const loopsOver = (uid: string) => execFileSync('losetup', ['-a'], { encoding: 'utf8' }).split('\n').filter((line) => line.includes(`(${path.join(global, uid)})`));
        expect((await mapped()).sort()).toEqual([path.join(global, keptUid), path.join(global, droppedUid)].sort());
        for (const uid of [keptUid, droppedUid]) expect(loopsOver(uid)).toHaveLength(1);

        await killDeleteRestart(namespace, 'bdrop');
        await waitFor(async () => !existsSync(path.join(rootDir(), 'pods', droppedUid)), "the deleted pod's directory removed, its map undone first", 90_000);
        expect(await mapped()).toEqual([path.join(global, keptUid)]);
        expect(loopsOver(droppedUid)).toEqual([]);
        // The running pod: its device mapped again in place (one bind mount, one loop device), the same container.
        expect(loopsOver(keptUid)).toHaveLength(1);
        expect(await readlink(path.join(rootDir(), 'pods', keptUid, 'volumeDevices', 'kubernetes.io~local-volume', pv))).toBe(device);
        const now = (await cp.core.readNamespacedPod({ namespace, name: 'bkeep' })).status!;
        expect(now.containerStatuses![0]).toMatchObject({ containerID: containerId, restartCount: 0 });

        // Its last pod gone, the volume's global map goes too.
        await cp.core.deleteNamespacedPod({ namespace, name: 'bkeep' });
        await waitFor(async () => !existsSync(global), "the volume's global map removed after its last pod", 90_000);
        expect(loopsOver(keptUid)).toEqual([]);
      } finally {
        execFileSync('losetup', ['-d', device]);
      }
    });
  });
}

let sim: SimRuntime | null = null;
let simDir = '';
afterAll(async () => {
  await sim?.close();
  if (simDir) await rm(simDir, { recursive: true, force: true });
});
restartSuite('CSI volumes across an agent kill and restart (sim:// outliving the agent, a real API server, the CSI mock driver)', 'node-csi-restart', async () => {
  const dir = (simDir = await mkdtemp(path.join(os.tmpdir(), 'statelet-csi-restart-sim-')));
  sim = await startSimRuntime({ socketPath: path.join(dir, 'sim.sock'), pullDelayMs: 0 });
  return { endpoint: sim.endpoint, image: 'busybox', bindMounts: false };
});

const containerd = await startContainerd();
if (!containerd) {
  it.skip('CSI volumes across an agent kill and restart on containerd (containerd not available here; see the message above)', () => {});
} else {
  afterAll(() => containerd.stop(), 180_000);
  restartSuite('CSI volumes across an agent kill and restart (containerd, a real API server, the CSI mock driver binding its directories)', 'node-csi-restart-ctd', async () => ({ endpoint: containerd.endpoint, image: BUSYBOX_IMAGE, bindMounts: true }));
}
