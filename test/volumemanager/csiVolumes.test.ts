/**
 * CSI volumes through the volume manager against Kubernetes' own CSI mock driver run as a process
 * (test/csimock): the volume world the syncs ask, the volume manager's actors, the CSI operations
 * (src/volumes/csi/operations.ts) and the in-memory API. What the driver was asked is its call log;
 * the node's files are read from the temporary root. The clock is simulated: a retry after a
 * failure comes when the test moves it (500 ms, then doubling: exponential_backoff.go).
 */
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { SimulatedClock } from 'xstate';
import type { CSIDriver, PersistentVolume } from '../../src/api/storage.ts';
import type { Pod } from '../../src/api/types.ts';
import { apiObjectReader } from '../../src/client/objects.ts';
import { csiApiReads } from '../../src/volumes/csi/operations.ts';
import { attachmentName, inlineVolumeHandle, podVolumeDir, publishTargetPath, stagingTargetPath } from '../../src/volumes/csi/paths.ts';
import { TokenManager } from '../../src/volumes/tokens.ts';
import { type CsiMock, type CsiMockCall, type CsiMockOptions, startCsiMock } from '../support/csiMock.ts';
import { MemoryApi } from '../support/memoryApi.ts';
import { RecordedEvents } from '../support/recordedEvents.ts';
import { rootOrSkip } from '../support/smallFilesystem.ts';
import { runningVolumeManager } from '../support/volumes.ts';

const NODE = 'node-a';
const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

const pod = (uid: string, volumes: unknown[], securityContext: Record<string, unknown> = {}): Pod =>
  ({
    metadata: { name: `web-${uid}`, namespace: 'shop', uid },
    spec: {
      serviceAccountName: 'web',
      securityContext,
      containers: [{ name: 'app', image: 'busybox', volumeMounts: (volumes as { name: string }[]).map((v) => ({ name: v.name, mountPath: `/${v.name}` })) }],
      volumes,
    },
  }) as unknown as Pod;

const claimVolume = { name: 'data', persistentVolumeClaim: { claimName: 'data' } };

/** A PV bound to `shop/data`, served by the mock's volume `handle`. */
function csiPV(driver: string, handle = '1', csi: Record<string, unknown> = {}, spec: Record<string, unknown> = {}): PersistentVolume {
  return {
    metadata: { name: 'pv-1' },
    spec: {
      claimRef: { namespace: 'shop', name: 'data', uid: 'claim-1' },
      accessModes: ['ReadWriteOnce'],
      csi: { driver, volumeHandle: handle, fsType: 'ext4', volumeAttributes: { tier: 'gold' }, ...csi },
      ...spec,
    },
  };
}

const csiDriver = (name: string, spec: CSIDriver['spec']): CSIDriver => ({ metadata: { name }, spec: { attachRequired: false, fsGroupPolicy: 'ReadWriteOnceWithFSType', ...spec } });

interface Rig {
  mock: CsiMock;
  root: string;
  api: MemoryApi;
  clock: SimulatedClock;
  events: RecordedEvents;
  world: ReturnType<typeof runningVolumeManager>['world'];
  /** The driver's table: the test registers and deregisters the mock. */
  registered: Set<string>;
  failedMounts(): string[];
  /** The failed mount operations so far, events or not (the effects' log). */
  failures(): number;
  /** The RPCs after the registration handshake, NodeGetCapabilities left out unless asked. */
  rpcs(withCapabilities?: boolean): Promise<CsiMockCall[]>;
}

async function rig(options: CsiMockOptions = {}): Promise<Rig | null> {
  const root = await mkdtemp(path.join(os.tmpdir(), 'statelet-csivolumes-'));
  cleanups.push(() => rm(root, { recursive: true, force: true }));
  const mock = await startCsiMock({ rootDir: root, nodeId: NODE, ...options });
  if (!mock) return null;
  cleanups.push(() => mock.stop());
  const api = new MemoryApi();
  const clock = new SimulatedClock();
  clock.set(Date.parse('2026-12-07T00:00:00Z'));
  api.tokenClock = () => clock.now();
  api.nodes.set(NODE, { metadata: { name: NODE }, status: {} });
  api.claims.set('shop/data', { metadata: { name: 'data', namespace: 'shop', uid: 'claim-1' }, spec: { volumeName: 'pv-1' }, status: { phase: 'Bound' } });
  const events = new RecordedEvents();
  let failures = 0;
  const registered = new Set([mock.driverName]);
  const reads = csiApiReads(api);
  const manager = runningVolumeManager({
    deps: { podsDir: path.join(root, 'pods'), objects: apiObjectReader(api, { ttlMs: 0, now: () => clock.now() }) },
    recorder: events,
    log: (_level, message) => {
      if (message === 'Volume set-up failed') failures++;
    },
    clock,
    claims: { claim: api.getPersistentVolumeClaim.bind(api), volume: api.getPersistentVolume.bind(api) },
    csiDrivers: reads.csiDriver,
    csi: {
      rootDir: root,
      nodeName: NODE,
      drivers: { endpoint: (name) => (registered.has(name) && name === mock.driverName ? mock.csiSocket : null) },
      api: reads,
      tokens: new TokenManager(api, () => clock.now(), () => {}, () => 0),
    },
  });
  cleanups.push(() => manager.stop());
  const failedMounts = () => events.events.filter((e) => e.reason === 'FailedMount').map((e) => e.message);
  const rpcs = async (withCapabilities = false) => (await mock.calls()).filter((c) => c.method.startsWith('/csi.v1.Node/') && (withCapabilities || c.rpc !== 'NodeGetCapabilities'));
  return { mock, root, api, clock, events, world: manager.world, registered, failedMounts, failures: () => failures, rpcs };
}

/** Waits for an assertion to hold: the mock is a process, and a loaded machine may take more than vitest's default second. */
const eventually = <T>(check: () => T | Promise<T>) => vi.waitFor(check, { timeout: 15_000, interval: 20 });

const byRpc = (calls: CsiMockCall[], rpc: string) => calls.filter((c) => c.rpc === rpc);

describe('CSI volumes through the volume manager and the CSI mock driver', () => {
  it('stages once and publishes a PersistentVolume for a pod with the kubelet paths, arguments and vol_data.json files, then unpublishes and unstages it', async ({ skip }) => {
    const r = await rig();
    if (!r) return skip();
    const driver = r.mock.driverName;
    r.api.secrets.set('shop/stage-creds', { data: { password: Buffer.from('s3cret').toString('base64') } });
    r.api.secrets.set('shop/publish-creds', { data: { token: Buffer.from('t0ken').toString('base64') } });
    r.api.volumes.set(
      'pv-1',
      csiPV(driver, '1', { nodeStageSecretRef: { name: 'stage-creds', namespace: 'shop' }, nodePublishSecretRef: { name: 'publish-creds', namespace: 'shop' } }, { mountOptions: ['noatime'] }),
    );
    r.api.csiDrivers.set(driver, csiDriver(driver, { podInfoOnMount: true }));
    const p = pod('u1', [claimVolume]);

    await r.world.waitForAttachAndMount(p);

    const staging = stagingTargetPath(r.root, driver, '1');
    const target = publishTargetPath(r.root, 'u1', 'pv-1');
    expect(r.world.mountedVolumes('u1').get('data')).toMatchObject({ path: target, uniqueName: `kubernetes.io/csi/${driver}^1`, readOnly: false });
    const calls = await r.rpcs(true);
    // MountDevice asks for STAGE_UNSTAGE_VOLUME and VOLUME_MOUNT_GROUP, the client for the access-mode table; SetUp likewise.
    expect(calls.map((c) => c.rpc)).toEqual(['NodeGetCapabilities', 'NodeGetCapabilities', 'NodeGetCapabilities', 'NodeStageVolume', 'NodeGetCapabilities', 'NodeGetCapabilities', 'NodeGetCapabilities', 'NodePublishVolume']);
    expect(byRpc(calls, 'NodeStageVolume')[0]!.request).toEqual({
      volume_id: '1',
      staging_target_path: staging,
      volume_capability: { mount: { fs_type: 'ext4', mount_flags: ['noatime'] }, access_mode: { mode: 'SINGLE_NODE_WRITER' } },
      secrets: { password: 's3cret' },
      volume_context: { tier: 'gold' },
    });
    expect(byRpc(calls, 'NodePublishVolume')[0]!.request).toEqual({
      volume_id: '1',
      staging_target_path: staging,
      target_path: target,
      volume_capability: { mount: { fs_type: 'ext4', mount_flags: ['noatime'] }, access_mode: { mode: 'SINGLE_NODE_WRITER' } },
      secrets: { token: 't0ken' },
      volume_context: {
        tier: 'gold',
        'csi.storage.k8s.io/pod.name': 'web-u1',
        'csi.storage.k8s.io/pod.namespace': 'shop',
        'csi.storage.k8s.io/pod.uid': 'u1',
        'csi.storage.k8s.io/serviceAccount.name': 'web',
        'csi.storage.k8s.io/ephemeral': 'false',
      },
    });
    expect(await readFile(path.join(path.dirname(staging), 'vol_data.json'), 'utf8')).toBe(`{"driverName":"${driver}","volumeHandle":"1"}\n`);
    expect(JSON.parse(await readFile(path.join(podVolumeDir(r.root, 'u1', 'pv-1'), 'vol_data.json'), 'utf8'))).toEqual({
      attachmentID: attachmentName('1', driver, NODE),
      driverName: driver,
      nodeName: NODE,
      specVolID: 'pv-1',
      volumeHandle: '1',
      volumeLifecycleMode: 'Persistent',
    });
    // attachRequired: false: no VolumeAttachment read, nothing in use for the controller.
    expect(r.api.calls).not.toContain('getVolumeAttachment');
    expect(r.world.volumesInUse()).toEqual([]);

    await r.world.unmountPod('u1');
    await eventually(async () => expect(byRpc(await r.rpcs(), 'NodeUnstageVolume')).toHaveLength(1));
    const after = (await r.rpcs()).slice(2);
    expect(after.map((c) => [c.rpc, c.request])).toEqual([
      ['NodeUnpublishVolume', { volume_id: '1', target_path: target }],
      ['NodeUnstageVolume', { volume_id: '1', staging_target_path: staging }],
    ]);
    await eventually(() => expect(existsSync(path.dirname(staging))).toBe(false));
    expect(existsSync(podVolumeDir(r.root, 'u1', 'pv-1'))).toBe(false);
    expect(r.failedMounts()).toEqual([]);
  });

  it('stages a volume once for two pods, publishes it for each, and unstages it only after the last unpublish', async ({ skip }) => {
    const r = await rig();
    if (!r) return skip();
    const driver = r.mock.driverName;
    r.api.volumes.set('pv-1', csiPV(driver));
    r.api.csiDrivers.set(driver, csiDriver(driver, {}));
    await Promise.all([r.world.waitForAttachAndMount(pod('u1', [claimVolume])), r.world.waitForAttachAndMount(pod('u2', [claimVolume]))]);
    let calls = await r.rpcs();
    expect(calls.map((c) => c.rpc)).toEqual(['NodeStageVolume', 'NodePublishVolume', 'NodePublishVolume']);
    expect(byRpc(calls, 'NodePublishVolume').map((c) => c.request['target_path']).sort()).toEqual([publishTargetPath(r.root, 'u1', 'pv-1'), publishTargetPath(r.root, 'u2', 'pv-1')]);

    await r.world.unmountPod('u1');
    calls = await r.rpcs();
    expect(calls.slice(3).map((c) => c.rpc)).toEqual(['NodeUnpublishVolume']);
    expect(existsSync(stagingTargetPath(r.root, driver, '1'))).toBe(true);

    await r.world.unmountPod('u2');
    await eventually(async () => expect((await r.rpcs()).slice(3).map((c) => c.rpc)).toEqual(['NodeUnpublishVolume', 'NodeUnpublishVolume', 'NodeUnstageVolume']));
  });

  it('without STAGE_UNSTAGE_VOLUME publishes without a staging path and writes no node vol_data.json (v1.37 MountDevice returns before it)', async ({ skip }) => {
    const r = await rig({ nodeCapabilities: ['GET_VOLUME_STATS'] });
    if (!r) return skip();
    const driver = r.mock.driverName;
    r.api.volumes.set('pv-1', csiPV(driver));
    r.api.csiDrivers.set(driver, csiDriver(driver, {}));
    await r.world.waitForAttachAndMount(pod('u1', [claimVolume]));
    const calls = await r.rpcs();
    expect(calls.map((c) => c.rpc)).toEqual(['NodePublishVolume']);
    expect(calls[0]!.request).not.toHaveProperty('staging_target_path');
    const staging = stagingTargetPath(r.root, driver, '1');
    expect(existsSync(staging)).toBe(true);
    expect(existsSync(path.join(path.dirname(staging), 'vol_data.json'))).toBe(false);
    await r.world.unmountPod('u1');
    await eventually(async () => expect((await r.rpcs()).map((c) => c.rpc)).toEqual(['NodePublishVolume', 'NodeUnpublishVolume']));
  });

  it('waits for an attachable volume (no CSIDriver): reported in volumesInUse, listed in volumesAttached, its VolumeAttachment attached; the attachment metadata is the publish context', async ({ skip }) => {
    const r = await rig({ attach: true });
    if (!r) return skip();
    const driver = r.mock.driverName;
    const unique = `kubernetes.io/csi/${driver}^1`;
    const vaName = attachmentName('1', driver, NODE);
    r.api.volumes.set('pv-1', csiPV(driver));
    const p = pod('u1', [claimVolume]);
    const waited = r.world.waitForAttachAndMount(p);
    await eventually(() => expect(r.failures()).toBe(1));
    expect(r.world.volumesInUse()).toEqual([unique]);
    // Not yet reported in the Node's status: nothing is read, no event.
    expect(r.api.calls).not.toContain('getNode');

    // The node status writer wrote volumesInUse; the controller has not attached it yet.
    r.world.markVolumesReportedInUse(r.world.volumesInUse());
    r.clock.increment(500);
    await eventually(() => expect(r.failures()).toBe(2));
    expect(r.api.calls).toContain('getNode');
    expect(r.failedMounts()).toEqual([]);

    // The attach-detach controller lists it; its VolumeAttachment is not attached yet.
    r.api.nodes.set(NODE, { metadata: { name: NODE }, status: { volumesAttached: [{ name: unique, devicePath: '' }] } });
    r.api.volumeAttachments.set(vaName, { metadata: { name: vaName }, spec: { attacher: driver, nodeName: NODE, source: { persistentVolumeName: 'pv-1' } }, status: { attached: false } });
    r.clock.increment(1_000);
    await eventually(() => expect(r.failedMounts()).toEqual([`MountVolume.WaitForAttach failed for volume "pv-1" : volume 1 is not attached for volume attachment ${vaName}`]));

    // The external attacher reports an error, then attaches it.
    r.api.volumeAttachments.set(vaName, { metadata: { name: vaName }, status: { attached: false, attachError: { message: 'rpc error: code = Internal desc = no path to the array' } } });
    r.clock.increment(2_000);
    await eventually(() => expect(r.failedMounts()).toContain('MountVolume.WaitForAttach failed for volume "pv-1" : rpc error: code = Internal desc = no path to the array'));
    r.api.volumeAttachments.set(vaName, { metadata: { name: vaName }, status: { attached: true, attachmentMetadata: { device: '/dev/mock-1' } } });
    r.clock.increment(4_000);
    await waited;

    const calls = await r.rpcs();
    expect(byRpc(calls, 'NodeStageVolume')[0]!.request['publish_context']).toEqual({ device: '/dev/mock-1' });
    expect(byRpc(calls, 'NodePublishVolume')[0]!.request['publish_context']).toEqual({ device: '/dev/mock-1' });

    // Unstaged: the volume leaves the actual state, and volumesInUse with it.
    await r.world.unmountPod('u1');
    await eventually(async () => expect(byRpc(await r.rpcs(), 'NodeUnstageVolume')).toHaveLength(1));
    await eventually(() => expect(r.world.volumesInUse()).toEqual([]));
  });

  it("names the attachable volumes not yet attached in the wait's error when it ends", async ({ skip }) => {
    const r = await rig();
    if (!r) return skip();
    r.api.volumes.set('pv-1', csiPV(r.mock.driverName));
    const waited = r.world.waitForAttachAndMount(pod('u1', [claimVolume])).catch((err: unknown) => err);
    await eventually(() => expect(r.world.volumesInUse()).toHaveLength(1));
    r.clock.increment(123_000);
    expect(((await waited) as Error).message).toBe('unmounted volumes=[data], unattached volumes=[data], failed to process volumes=[]: context deadline exceeded');
  });

  it('publishes an inline volume only for a driver whose CSIDriver has the Ephemeral lifecycle mode, with the kubelet messages otherwise', async ({ skip }) => {
    const r = await rig();
    if (!r) return skip();
    const driver = r.mock.driverName;
    r.api.secrets.set('shop/inline-creds', { data: { key: Buffer.from('v').toString('base64') } });
    const inline = { name: 'scratch', csi: { driver, readOnly: true, fsType: 'xfs', volumeAttributes: { size: '1Gi' }, nodePublishSecretRef: { name: 'inline-creds' } } };
    const p = pod('u1', [inline]);
    const waited = r.world.waitForAttachAndMount(p);
    const prefix = 'MountVolume.SetUp failed for volume "scratch" : kubernetes.io/csi: mounter.SetupAt failed to check volume lifecycle mode: ';
    await eventually(() => expect(r.failedMounts()).toEqual([`${prefix}volume mode "Ephemeral" not supported by driver ${driver} (no CSIDriver object)`]));
    r.api.csiDrivers.set(driver, csiDriver(driver, { volumeLifecycleModes: ['Persistent'] }));
    r.clock.increment(500);
    await eventually(() => expect(r.failedMounts()).toContain(`${prefix}volume mode "Ephemeral" not supported by driver ${driver} (only supports ["Persistent"])`));
    r.api.csiDrivers.set(driver, csiDriver(driver, { volumeLifecycleModes: ['Persistent', 'Ephemeral'], podInfoOnMount: true }));
    r.clock.increment(1_000);
    await waited;

    const target = publishTargetPath(r.root, 'u1', 'scratch');
    const calls = await r.rpcs();
    expect(calls.map((c) => c.rpc)).toEqual(['NodePublishVolume']);
    expect(calls[0]!.request).toEqual({
      volume_id: inlineVolumeHandle('u1', 'scratch'),
      target_path: target,
      volume_capability: { mount: { fs_type: 'xfs' }, access_mode: { mode: 'SINGLE_NODE_WRITER' } },
      readonly: true,
      secrets: { key: 'v' },
      volume_context: {
        size: '1Gi',
        'csi.storage.k8s.io/pod.name': 'web-u1',
        'csi.storage.k8s.io/pod.namespace': 'shop',
        'csi.storage.k8s.io/pod.uid': 'u1',
        'csi.storage.k8s.io/serviceAccount.name': 'web',
        'csi.storage.k8s.io/ephemeral': 'true',
      },
    });
    expect(r.world.mountedVolumes('u1').get('scratch')).toMatchObject({ uniqueName: 'kubernetes.io/csi/u1-scratch', path: target, readOnly: true });
    expect(JSON.parse(await readFile(path.join(podVolumeDir(r.root, 'u1', 'scratch'), 'vol_data.json'), 'utf8'))).toMatchObject({ specVolID: 'scratch', volumeLifecycleMode: 'Ephemeral' });
    await r.world.unmountPod('u1');
    await eventually(async () => expect((await r.rpcs()).map((c) => c.rpc)).toEqual(['NodePublishVolume', 'NodeUnpublishVolume']));
  });

  it("gives the pod's service-account tokens to a driver whose CSIDriver asks for them, in volume_context", async ({ skip }) => {
    const r = await rig();
    if (!r) return skip();
    const driver = r.mock.driverName;
    r.api.volumes.set('pv-1', csiPV(driver));
    r.api.csiDrivers.set(driver, csiDriver(driver, { tokenRequests: [{ audience: 'vault', expirationSeconds: 600 }, { audience: '' }] }));
    await r.world.waitForAttachAndMount(pod('u1', [claimVolume]));
    const publish = byRpc(await r.rpcs(), 'NodePublishVolume')[0]!;
    const tokens = JSON.parse((publish.request['volume_context'] as Record<string, string>)['csi.storage.k8s.io/serviceAccount.tokens']!) as Record<string, { token: string; expirationTimestamp: string }>;
    expect(Object.keys(tokens)).toEqual(['', 'vault']);
    expect(tokens['vault']!.token).toMatch(/^token-\d+$/);
    expect(r.api.tokenRequests.map((t) => [t.serviceAccount, t.spec.audiences ?? [], t.spec.boundObjectRef?.uid])).toEqual([
      ['web', ['vault'], 'u1'],
      ['web', [], 'u1'],
    ]);
  });

  it.for([true, false])('publishes a mounted volume again at the next processing of its pod when its CSIDriver says requiresRepublish: %s', async (republish, { skip }) => {
    const r = await rig();
    if (!r) return skip();
    const driver = r.mock.driverName;
    r.api.volumes.set('pv-1', csiPV(driver));
    r.api.csiDrivers.set(driver, csiDriver(driver, { requiresRepublish: republish }));
    const p = pod('u1', [claimVolume]);
    await r.world.waitForAttachAndMount(p);
    // A republish that fails finally leaves the published volume as it is.
    await r.mock.fail([{ method: 'NodePublishVolume', code: 3, message: 'refresh refused', times: 1 }]);
    await r.world.waitForAttachAndMount(p);
    await eventually(async () => expect(byRpc(await r.rpcs(), 'NodePublishVolume')).toHaveLength(republish ? 2 : 1));
    if (republish) await eventually(() => expect(r.failedMounts()).toEqual(['MountVolume.SetUp failed for volume "pv-1" : rpc error: code = InvalidArgument desc = refresh refused']));
    expect(existsSync(path.join(podVolumeDir(r.root, 'u1', 'pv-1'), 'vol_data.json'))).toBe(true);
    expect(r.world.mountedVolumes('u1').has('data')).toBe(true);
    expect(byRpc(await r.rpcs(), 'NodeStageVolume')).toHaveLength(1);
  });

  it('passes the fsGroup to a driver with VOLUME_MOUNT_GROUP and leaves ownership to it', async ({ skip }) => {
    const r = await rig({ nodeCapabilities: ['STAGE_UNSTAGE_VOLUME', 'VOLUME_MOUNT_GROUP'] });
    if (!r) return skip();
    const driver = r.mock.driverName;
    r.api.volumes.set('pv-1', csiPV(driver));
    r.api.csiDrivers.set(driver, csiDriver(driver, { fsGroupPolicy: 'File' }));
    await r.world.waitForAttachAndMount(pod('u1', [claimVolume], { fsGroup: 4321 }));
    const calls = await r.rpcs();
    for (const rpc of ['NodeStageVolume', 'NodePublishVolume']) expect((byRpc(calls, rpc)[0]!.request['volume_capability'] as { mount: unknown }).mount).toEqual({ fs_type: 'ext4', volume_mount_group: '4321' });
    expect((await stat(publishTargetPath(r.root, 'u1', 'pv-1'))).gid).not.toBe(4321);
  });

  it.for([
    ['File', 'ext4', true],
    ['None', 'ext4', false],
    ['ReadWriteOnceWithFSType', 'ext4', true],
    ['ReadWriteOnceWithFSType', '', false],
  ] as const)("applies the pod's fsGroup itself under fsGroupPolicy %s with fsType %j: %s", async ([policy, fsType, applied], { skip }) => {
    if (!rootOrSkip('changing a group to the fsGroup')) return skip();
    const r = await rig();
    if (!r) return skip();
    const driver = r.mock.driverName;
    r.api.volumes.set('pv-1', csiPV(driver, '1', { fsType }));
    r.api.csiDrivers.set(driver, csiDriver(driver, { fsGroupPolicy: policy }));
    await r.world.waitForAttachAndMount(pod('u1', [claimVolume], { fsGroup: 4321 }));
    expect((byRpc(await r.rpcs(), 'NodePublishVolume')[0]!.request['volume_capability'] as { mount: Record<string, unknown> }).mount).not.toHaveProperty('volume_mount_group');
    expect((await stat(publishTargetPath(r.root, 'u1', 'pv-1'))).gid === 4321).toBe(applied);
  });

  it('refuses a CSIDriver with an empty fsGroupPolicy in the kubelet words', async ({ skip }) => {
    const r = await rig();
    if (!r) return skip();
    const driver = r.mock.driverName;
    r.api.volumes.set('pv-1', csiPV(driver));
    r.api.csiDrivers.set(driver, { metadata: { name: driver }, spec: { attachRequired: false } });
    void r.world.waitForAttachAndMount(pod('u1', [claimVolume])).catch(() => {});
    await eventually(() =>
      expect(r.failedMounts()).toEqual(['MountVolume.SetUp failed for volume "pv-1" : kubernetes.io/csi: mounter.SetupAt failed to check fsGroup policy: kubernetes.io/csi: expected valid fsGroupPolicy, received nil value or empty string']),
    );
  });

  it('removes what a publish made after a final error and retries after 500 ms; keeps it after an uncertain one and still unpublishes when the pod goes', async ({ skip }) => {
    const r = await rig();
    if (!r) return skip();
    const driver = r.mock.driverName;
    r.api.volumes.set('pv-1', csiPV(driver));
    r.api.csiDrivers.set(driver, csiDriver(driver, {}));
    const podDir = podVolumeDir(r.root, 'u1', 'pv-1');
    await r.mock.fail([{ method: 'NodePublishVolume', code: 3, message: 'bad capability', times: 1 }]);
    const waited = r.world.waitForAttachAndMount(pod('u1', [claimVolume]));
    await eventually(() => expect(r.failedMounts()).toEqual(['MountVolume.SetUp failed for volume "pv-1" : rpc error: code = InvalidArgument desc = bad capability']));
    // Final: the pod's directory and its vol_data.json are gone; the stage stays.
    expect(existsSync(podDir)).toBe(false);
    expect(existsSync(stagingTargetPath(r.root, driver, '1'))).toBe(true);
    r.clock.increment(499);
    expect(byRpc(await r.rpcs(), 'NodePublishVolume')).toHaveLength(1);
    r.clock.increment(1);
    await waited;
    expect((await r.rpcs()).map((c) => c.rpc)).toEqual(['NodeStageVolume', 'NodePublishVolume', 'NodePublishVolume']);
    await r.world.unmountPod('u1');
    await eventually(async () => expect(byRpc(await r.rpcs(), 'NodeUnstageVolume')).toHaveLength(1));

    // Uncertain (DeadlineExceeded): vol_data.json stays; the pod goes while backing off and is unpublished all the same.
    const since = (await r.rpcs()).length;
    await r.mock.fail([{ method: 'NodePublishVolume', code: 4, message: 'timed out', times: 5 }]);
    const waiting = r.world.waitForAttachAndMount(pod('u2', [claimVolume])).catch(() => {});
    await eventually(() => expect(r.failedMounts()).toContain('MountVolume.SetUp failed for volume "pv-1" : rpc error: code = DeadlineExceeded desc = timed out'));
    expect(existsSync(path.join(podVolumeDir(r.root, 'u2', 'pv-1'), 'vol_data.json'))).toBe(true);
    await r.world.unmountPod('u2');
    // The pod's wait for its volumes' teardown covers the uncertain publish: unpublished before it ends.
    expect(byRpc((await r.rpcs()).slice(since), 'NodeUnpublishVolume')).toHaveLength(1);
    await waiting;
    await eventually(async () => expect((await r.rpcs()).slice(since).map((c) => c.rpc)).toEqual(['NodeStageVolume', 'NodePublishVolume', 'NodeUnpublishVolume', 'NodeUnstageVolume']));
  });

  it('removes the staging directory after a final NodeStageVolume error, keeps it after an uncertain one, and stages again at the retry', async ({ skip }) => {
    const r = await rig();
    if (!r) return skip();
    const driver = r.mock.driverName;
    r.api.volumes.set('pv-1', csiPV(driver));
    r.api.csiDrivers.set(driver, csiDriver(driver, {}));
    const staging = stagingTargetPath(r.root, driver, '1');
    await r.mock.fail([{ method: 'NodeStageVolume', code: 9, message: 'not ready', times: 1 }]);
    const waited = r.world.waitForAttachAndMount(pod('u1', [claimVolume]));
    await eventually(() => expect(r.failedMounts()).toEqual(['MountVolume.MountDevice failed for volume "pv-1" : rpc error: code = FailedPrecondition desc = not ready']));
    expect(existsSync(path.dirname(staging))).toBe(false);
    await r.mock.fail([{ method: 'NodeStageVolume', code: 14, message: 'driver restarting', times: 1 }]);
    r.clock.increment(500);
    await eventually(() => expect(r.failedMounts()).toHaveLength(2));
    expect(r.failedMounts()[1]).toBe('MountVolume.MountDevice failed for volume "pv-1" : rpc error: code = Unavailable desc = driver restarting');
    expect(existsSync(path.join(path.dirname(staging), 'vol_data.json'))).toBe(true);
    // The second failure in a row: 1 s.
    r.clock.increment(999);
    expect(byRpc(await r.rpcs(), 'NodeStageVolume')).toHaveLength(2);
    r.clock.increment(1);
    await waited;
    expect((await r.rpcs()).map((c) => c.rpc)).toEqual(['NodeStageVolume', 'NodeStageVolume', 'NodeStageVolume', 'NodePublishVolume']);
  });

  it('waits for a driver that is not registered with the kubelet error, and mounts once it registers', async ({ skip }) => {
    const r = await rig();
    if (!r) return skip();
    const driver = r.mock.driverName;
    r.registered.clear();
    r.api.volumes.set('pv-1', csiPV(driver));
    r.api.csiDrivers.set(driver, csiDriver(driver, {}));
    const waited = r.world.waitForAttachAndMount(pod('u1', [claimVolume]));
    await eventually(() =>
      expect(r.failedMounts()).toEqual([
        `MountVolume.MountDevice failed for volume "pv-1" : kubernetes.io/csi: attacher.MountDevice failed to create newCsiDriverClient: driver name ${driver} not found in the list of registered CSI drivers`,
      ]),
    );
    expect(await r.rpcs()).toEqual([]);
    r.registered.add(driver);
    r.clock.increment(500);
    await waited;
    expect((await r.rpcs()).map((c) => c.rpc)).toEqual(['NodeStageVolume', 'NodePublishVolume']);
  });
});
