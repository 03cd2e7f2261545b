/**
 * Raw block CSI volumes (volumeMode Block) through the volume manager against Kubernetes' own CSI
 * mock driver run as a process (test/csimock): the volume world, the volume manager's actors, the
 * block mapper (src/volumes/csi/block.ts, csi_block.go) and the in-memory API. What the driver was
 * asked is its call log; the node's files are read from the temporary root.
 *
 * The mock publishes a block volume as a directory (its NodePublishVolume makes the target path
 * a directory whatever the capability), so it is not a device: on a node that cannot mount the
 * map is the pod's link alone, and the container would get that link as its device; on a node
 * that mounts (root), the kubelet's bind mount of it onto the global map file fails, as it does for
 * the kubelet, and the pod gets `FailedMapVolume`.
 */
import { lstat, mkdtemp, readFile, readlink, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { CSIDriver, PersistentVolume } from '../../src/api/storage.ts';
import type { Container, Pod } from '../../src/api/types.ts';
import { silentLogger } from '../../src/log.ts';
import { blockVolumeDevices } from '../../src/kuberuntime/blockVolumes.ts';
import type { LoopDevices } from '../../src/volumes/blockMap.ts';
import { csiBlockPaths } from '../../src/volumes/csi/block.ts';
import { csiApiReads } from '../../src/volumes/csi/operations.ts';
import { attachmentName } from '../../src/volumes/csi/paths.ts';
import { type Mounter, diskOnly, systemMounter } from '../../src/volumes/mounter.ts';
import { type CsiMockCall, startCsiMock } from '../support/csiMock.ts';
import { MemoryApi } from '../support/memoryApi.ts';
import { RecordedEvents } from '../support/recordedEvents.ts';
import { rootOrSkip } from '../support/smallFilesystem.ts';
import { runningVolumeManager } from '../support/volumes.ts';
import type { VolumeWorld } from '../../src/volumes/world.ts';

const NODE = 'node-a';
const DRIVER = 'block.csimock.test';
const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

const container = (readOnlyDevice = false): Container => ({ name: 'app', image: 'busybox', volumeDevices: [{ name: 'data', devicePath: readOnlyDevice ? '/dev/ro' : '/dev/xvda' }] }) as unknown as Container;

const blockPod = (uid: string, readOnly = false): Pod =>
  ({
    metadata: { name: `db-${uid}`, namespace: 'shop', uid },
    spec: { containers: [container()], volumes: [{ name: 'data', persistentVolumeClaim: { claimName: 'data', ...(readOnly ? { readOnly: true } : {}) } }] },
  }) as unknown as Pod;

const blockPV = (): PersistentVolume => ({
  metadata: { name: 'pv-block' },
  spec: { claimRef: { namespace: 'shop', name: 'data', uid: 'claim-1' }, accessModes: ['ReadWriteOnce'], volumeMode: 'Block', csi: { driver: DRIVER, volumeHandle: '1', volumeAttributes: { tier: 'gold' } } },
});

/** Records the fd lock's calls instead of making loop devices over the mock's files. */
function recordedLoops(): LoopDevices & { attached: string[]; detached: string[] } {
  const attached: string[] = [];
  const detached: string[] = [];
  return { attached, detached, attach: async (file) => (attached.push(file), '/dev/loop-test'), detach: async (file) => void detached.push(file) };
}

/** `attach`: the driver has no CSIDriver (attach required) and its mock wants the attachment's `device` in the publish context. */
async function rig(mounter: Mounter, attach = false) {
  const root = await mkdtemp(path.join(os.tmpdir(), 'statelet-csiblock-'));
  cleanups.push(() => rm(root, { recursive: true, force: true }));
  const mock = await startCsiMock({ rootDir: root, driverName: DRIVER, nodeId: NODE, attach });
  if (!mock) return null;
  cleanups.push(() => mock.stop());
  const api = new MemoryApi();
  api.claims.set('shop/data', { metadata: { name: 'data', namespace: 'shop', uid: 'claim-1' }, spec: { volumeName: 'pv-block' }, status: { phase: 'Bound' } });
  api.volumes.set('pv-block', blockPV());
  const driver: CSIDriver = { metadata: { name: DRIVER }, spec: { attachRequired: false, podInfoOnMount: true, fsGroupPolicy: 'File' } };
  if (!attach) api.csiDrivers.set(DRIVER, driver);
  api.nodes.set(NODE, { metadata: { name: NODE }, status: {} });
  const reads = csiApiReads(api);
  const events = new RecordedEvents();
  const loops = recordedLoops();
  const start = (reconstruct: boolean) => {
    const manager = runningVolumeManager({
      deps: { podsDir: path.join(root, 'pods'), mounter },
      recorder: events,
      log: silentLogger,
      loops,
      reconstruct,
      claims: { claim: api.getPersistentVolumeClaim.bind(api), volume: api.getPersistentVolume.bind(api) },
      csiDrivers: reads.csiDriver,
      csi: { rootDir: root, nodeName: NODE, drivers: { endpoint: (name) => (name === DRIVER ? mock.csiSocket : null) }, api: reads },
    });
    cleanups.push(() => manager.stop());
    return manager;
  };
  let manager = start(false);
  const rpcs = async () => (await mock.calls()).filter((c: CsiMockCall) => c.method.startsWith('/csi.v1.Node/') && c.rpc !== 'NodeGetCapabilities');
  return {
    root,
    mock,
    api,
    events,
    loops,
    world: manager.world,
    rpcs,
    /** The agent gone and started again over the same root: a new volume manager that reconstructs, its world returned. */
    restart: () => {
      manager.stop();
      manager = start(true);
      return manager.world;
    },
  };
}

const eventually = <T>(check: () => T | Promise<T>) => vi.waitFor(check, { timeout: 15_000, interval: 20 });

/**
 * The volume mapped for pods a and b, then the agent gone and started again: the restarted volume
 * manager's world once it has reconstructed (a pod it never saw no longer counts as possibly
 * having volumes), and how many driver calls came before.
 */
async function mappedForTwoPodsThenRestarted(r: NonNullable<Awaited<ReturnType<typeof rig>>>): Promise<{ paths: ReturnType<typeof csiBlockPaths>; before: number; world: VolumeWorld }> {
  await r.world.waitForAttachAndMount(blockPod('a'));
  await r.world.waitForAttachAndMount(blockPod('b'));
  const before = (await r.rpcs()).length;
  const world = r.restart();
  await eventually(() => expect(world.possiblyMounted('never-seen')).toBe(false));
  return { paths: csiBlockPaths(r.root, 'pv-block'), before, world };
}

describe('raw block CSI volumes through the volume manager and the CSI mock driver', () => {
  it('stages and publishes with a block capability at the kubelet paths, links the pod to the published device, and unpublishes then unstages after the last pod', { timeout: 60_000 }, async ({ skip }) => {
    const r = await rig(diskOnly);
    if (!r) return skip();
    const paths = csiBlockPaths(r.root, 'pv-block');
    await r.world.waitForAttachAndMount(blockPod('a'));
    await r.world.waitForAttachAndMount(blockPod('b', true));
    // No warning; the kubelet's two Normal events of each map.
    expect(r.events.events.filter((e) => e.type !== 'Normal')).toEqual([]);
    expect(r.events.events.filter((e) => e.object.uid === 'a').map((e) => [e.reason, e.message])).toEqual([
      ['SuccessfulMountVolume', `MapVolume.MapPodDevice succeeded for volume "pv-block" globalMapPath "${paths.globalMapPath}"`],
      ['SuccessfulMountVolume', `MapVolume.MapPodDevice succeeded for volume "pv-block" volumeMapPath "${path.join(r.root, 'pods', 'a', 'volumeDevices', 'kubernetes.io~csi')}"`],
    ]);

    const calls = await r.rpcs();
    expect(calls.map((c) => c.rpc)).toEqual(['NodeStageVolume', 'NodePublishVolume', 'NodePublishVolume']);
    expect(calls[0]!.request).toEqual({ volume_id: '1', staging_target_path: paths.stagingPath, volume_capability: { block: {}, access_mode: { mode: 'SINGLE_NODE_WRITER' } }, volume_context: { tier: 'gold' } });
    expect(calls[1]!.request).toMatchObject({
      volume_id: '1',
      staging_target_path: paths.stagingPath,
      target_path: path.join(paths.publishDir, 'a'),
      volume_capability: { block: {}, access_mode: { mode: 'SINGLE_NODE_WRITER' } },
      volume_context: { tier: 'gold', 'csi.storage.k8s.io/pod.name': 'db-a', 'csi.storage.k8s.io/pod.uid': 'a', 'csi.storage.k8s.io/ephemeral': 'false' },
    });
    expect(calls[1]!.request['readonly']).toBeUndefined();
    expect(calls[2]!.request).toMatchObject({ target_path: path.join(paths.publishDir, 'b'), readonly: true });

    // vol_data.json of the block volume, for its unmapping (NewBlockVolumeMapper).
    expect(JSON.parse(await readFile(path.join(paths.dataDir, 'vol_data.json'), 'utf8'))).toMatchObject({ specVolID: 'pv-block', volumeHandle: '1', driverName: DRIVER, nodeName: NODE });
    // The pod's link to the published device; no global map on a node that cannot mount.
    const link = path.join(r.root, 'pods', 'a', 'volumeDevices', 'kubernetes.io~csi', 'pv-block');
    expect(await readlink(link)).toBe(path.join(paths.publishDir, 'a'));
    const mounted = r.world.mountedVolumes('a').get('data')!;
    expect(mounted).toMatchObject({ path: link, mapped: true, readOnly: false });
    expect(r.loops.attached).toEqual([]);
    // The container's CRI devices (makeBlockVolumes): mrw, and r for the read-only claim's pod.
    expect(blockVolumeDevices(container(), r.world.mountedVolumes('a'))).toEqual({ devices: [{ containerPath: '/dev/xvda', hostPath: link, permissions: 'mrw' }] });
    expect(blockVolumeDevices(container(), r.world.mountedVolumes('b'))).toMatchObject({ devices: [{ permissions: 'r' }] });

    await r.world.unmountPod('a');
    expect((await r.rpcs()).slice(3).map((c) => [c.rpc, c.request])).toEqual([['NodeUnpublishVolume', { volume_id: '1', target_path: path.join(paths.publishDir, 'a') }]]);
    expect(await lstat(link).catch(() => null)).toBeNull();
    await r.world.unmountPod('b');
    expect((await r.rpcs()).slice(4).map((c) => [c.rpc, c.request])).toEqual([
      ['NodeUnpublishVolume', { volume_id: '1', target_path: path.join(paths.publishDir, 'b') }],
      ['NodeUnstageVolume', { volume_id: '1', staging_target_path: paths.stagingPath }],
    ]);
    // cleanupOrphanDeviceFiles and RemoveMapPath: nothing of the volume is left under volumeDevices.
    for (const dir of [paths.volumeDir, paths.stagingPath, paths.publishDir]) expect(await lstat(dir).catch(() => null)).toBeNull();
  });

  it('after a restart, maps the volume again for the pod that still runs and unmaps, unpublishes, then unstages it for the pod gone meanwhile', { timeout: 60_000 }, async ({ skip }) => {
    const r = await rig(diskOnly);
    if (!r) return skip();
    // Pod b is deleted while the agent is away; pod a still runs.
    const { paths, before, world } = await mappedForTwoPodsThenRestarted(r);
    const linkOf = (uid: string) => path.join(r.root, 'pods', uid, 'volumeDevices', 'kubernetes.io~csi', 'pv-block');
    await world.waitForAttachAndMount(blockPod('a'));
    expect(world.mountedVolumes('a').get('data')).toMatchObject({ path: linkOf('a'), mapped: true });
    // Nothing of pod a torn down: staged and published again with the same requests (drivers are idempotent).
    const again = (await r.rpcs()).slice(before);
    expect(again.map((c) => c.rpc)).toEqual(['NodeStageVolume', 'NodePublishVolume']);
    expect(again[1]!.request).toMatchObject({ target_path: path.join(paths.publishDir, 'a') });

    // Pod b's teardown once housekeeping finds its directory orphaned: unmapped and unpublished; the stage stays for pod a.
    expect(world.releasePod('b')).toBe(true);
    await eventually(async () => expect((await r.rpcs()).slice(before + 2).map((c) => [c.rpc, c.request])).toEqual([['NodeUnpublishVolume', { volume_id: '1', target_path: path.join(paths.publishDir, 'b') }]]));
    await eventually(() => expect(world.possiblyMounted('b')).toBe(false));
    expect(await lstat(linkOf('b')).catch(() => null)).toBeNull();
    expect(await lstat(paths.stagingPath).catch(() => null)).not.toBeNull();

    // Pod a goes later: unpublished, then unstaged, nothing left under volumeDevices.
    await world.unmountPod('a');
    expect((await r.rpcs()).slice(before + 3).map((c) => c.rpc)).toEqual(['NodeUnpublishVolume', 'NodeUnstageVolume']);
    for (const dir of [paths.volumeDir, paths.stagingPath, paths.publishDir]) expect(await lstat(dir).catch(() => null)).toBeNull();
  });

  it('after a restart with every pod of the volume gone, unpublishes each and unstages once, after the last', { timeout: 60_000 }, async ({ skip }) => {
    const r = await rig(diskOnly);
    if (!r) return skip();
    const { paths, before, world } = await mappedForTwoPodsThenRestarted(r);
    expect(['a', 'b'].map((uid) => world.possiblyMounted(uid))).toEqual([true, true]);
    for (const uid of ['a', 'b']) world.releasePod(uid);
    await eventually(() => expect(['a', 'b'].some((uid) => world.possiblyMounted(uid))).toBe(false));
    const calls = (await r.rpcs()).slice(before);
    expect(calls.map((c) => c.rpc)).toEqual(['NodeUnpublishVolume', 'NodeUnpublishVolume', 'NodeUnstageVolume']);
    expect(calls.slice(0, 2).map((c) => c.request['target_path']).sort()).toEqual([path.join(paths.publishDir, 'a'), path.join(paths.publishDir, 'b')]);
    for (const dir of [paths.volumeDir, paths.stagingPath, paths.publishDir]) expect(await lstat(dir).catch(() => null)).toBeNull();
  });

  it('a driver error on publish is the pod\'s FailedMapVolume, retried; another pod is not held up', { timeout: 60_000 }, async ({ skip }) => {
    const r = await rig(diskOnly);
    if (!r) return skip();
    await r.mock.fail([{ method: 'NodePublishVolume', code: 9, message: 'no such device', times: 1 }]);
    const first = r.world.waitForAttachAndMount(blockPod('a'));
    await eventually(() => expect(r.events.events.filter((e) => e.type === 'Warning').map((e) => [e.reason, e.message])).toEqual([['FailedMapVolume', 'MapVolume.MapPodDevice failed for volume "pv-block" : rpc error: code = FailedPrecondition desc = no such device']]));
    // The retry (500 ms later) publishes it.
    await first;
    await r.world.waitForAttachAndMount(blockPod('b'));
    expect((await r.rpcs()).map((c) => c.rpc)).toEqual(['NodeStageVolume', 'NodePublishVolume', 'NodePublishVolume', 'NodePublishVolume']);
  });
});

describe('an attachable raw block CSI volume', () => {
  it('waits for its VolumeAttachment (MapVolume.WaitForAttach) and stages and publishes with the attachment metadata', { timeout: 60_000 }, async ({ skip }) => {
    const r = await rig(diskOnly, true);
    if (!r) return skip();
    const unique = `kubernetes.io/csi/${DRIVER}^1`;
    const vaName = attachmentName('1', DRIVER, NODE);
    // As the node status writer and the attach-detach controller: reported in use, listed attached; the attacher not done yet.
    r.world.markVolumesReportedInUse([unique]);
    r.api.nodes.set(NODE, { metadata: { name: NODE }, status: { volumesAttached: [{ name: unique, devicePath: '' }] } });
    r.api.volumeAttachments.set(vaName, { metadata: { name: vaName }, status: { attached: false } });
    const waited = r.world.waitForAttachAndMount(blockPod('a'));
    await eventually(() => expect(r.events.events.map((e) => [e.reason, e.message])).toContainEqual(['FailedMapVolume', `MapVolume.WaitForAttach failed for volume "pv-block" : volume 1 is not attached for volume attachment ${vaName}`]));
    expect(await r.rpcs()).toEqual([]);
    r.api.volumeAttachments.set(vaName, { metadata: { name: vaName }, status: { attached: true, attachmentMetadata: { device: '/dev/mock-1' } } });
    await waited;
    const calls = await r.rpcs();
    expect(calls.map((c) => [c.rpc, c.request['publish_context']])).toEqual([
      ['NodeStageVolume', { device: '/dev/mock-1' }],
      ['NodePublishVolume', { device: '/dev/mock-1' }],
    ]);
    // Unstaged after its last pod: no longer attached in the actual state, out of volumesInUse.
    await r.world.unmountPod('a');
    expect((await r.rpcs()).map((c) => c.rpc)).toEqual(['NodeStageVolume', 'NodePublishVolume', 'NodeUnpublishVolume', 'NodeUnstageVolume']);
    expect(r.world.volumesInUse()).toEqual([]);
  });
});

describe.skipIf(!rootOrSkip('a raw block CSI volume mapped with the system mounter'))('raw block CSI volumes on a node that mounts', () => {
  it('a published path that is not a device cannot be bind-mounted onto the global map: FailedMapVolume, as for the kubelet', { timeout: 60_000 }, async ({ skip }) => {
    const mounter = systemMounter(os.tmpdir(), () => {});
    const r = await rig(mounter);
    if (!r) return skip();
    const wait = r.world.waitForAttachAndMount(blockPod('a')).catch((err: unknown) => err);
    await eventually(() => expect(r.events.events.map((e) => e.reason)).toContain('FailedMapVolume'));
    const paths = csiBlockPaths(r.root, 'pv-block');
    expect(r.events.events[0]!.message).toContain(`MapVolume.MapBlockVolume failed for volume "pv-block" : blkUtil.MapDevice failed. devicePath: ${path.join(paths.publishDir, 'a')}, globalMapPath:${paths.globalMapPath}, podUID: a, bindMount: true: failed to bind mount devicePath`);
    await r.world.unmountPod('a');
    void wait;
    expect((await r.rpcs()).map((c) => c.rpc)).toEqual(expect.arrayContaining(['NodeUnpublishVolume', 'NodeUnstageVolume']));
  });
});
