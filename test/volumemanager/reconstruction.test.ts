/**
 * An agent restart under CSI volumes, through the volume manager and Kubernetes' CSI mock driver run
 * as a process (test/csimock): a first volume manager mounts pods' volumes and is stopped without
 * tearing anything down (as a killed agent leaves them); a second one, over the same root directory
 * and the same driver, reconstructs them (reconstruct.go) and then either mounts them again for a
 * pod that still wants them (the driver's calls repeated, nothing unpublished) or tears them down for
 * a pod gone meanwhile (NodeUnpublishVolume, then NodeUnstageVolume once no pod holds the stage), as
 * the node's orphan cleanup asks through `unmountPod`. The clock is simulated.
 */
import { existsSync } from 'node:fs';
import { mkdtemp, rm, unlink } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { SimulatedClock } from 'xstate';
import type { CSIDriver, PersistentVolume } from '../../src/api/storage.ts';
import type { Pod } from '../../src/api/types.ts';
import { apiObjectReader } from '../../src/client/objects.ts';
import type { Logger } from '../../src/log.ts';
import { csiApiReads } from '../../src/volumes/csi/operations.ts';
import { inlineVolumeHandle, podVolumeDir, publishTargetPath, stagingTargetPath } from '../../src/volumes/csi/paths.ts';
import { type CsiMock, type CsiMockCall, type CsiMockOptions, startCsiMock } from '../support/csiMock.ts';
import { MemoryApi } from '../support/memoryApi.ts';
import { RecordedEvents } from '../support/recordedEvents.ts';
import { runningVolumeManager } from '../support/volumes.ts';

const NODE = 'node-a';
const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

const pod = (uid: string, volumes: unknown[]): Pod =>
  ({
    metadata: { name: `web-${uid}`, namespace: 'shop', uid },
    spec: { containers: [{ name: 'app', image: 'busybox', volumeMounts: (volumes as { name: string }[]).map((v) => ({ name: v.name, mountPath: `/${v.name}` })) }], volumes },
  }) as unknown as Pod;

const claimVolume = { name: 'data', persistentVolumeClaim: { claimName: 'data' } };
const csiDriver = (name: string, spec: CSIDriver['spec'] = {}): CSIDriver => ({ metadata: { name }, spec: { attachRequired: false, fsGroupPolicy: 'ReadWriteOnceWithFSType', ...spec } });
const csiPV = (driver: string): PersistentVolume => ({
  metadata: { name: 'pv-1' },
  spec: { claimRef: { namespace: 'shop', name: 'data', uid: 'claim-1' }, accessModes: ['ReadWriteOnce'], csi: { driver, volumeHandle: '1', fsType: 'ext4', volumeAttributes: { tier: 'gold' } } },
});

/** Waits for an assertion to hold: the mock is a process. */
const eventually = <T>(check: () => T | Promise<T>) => vi.waitFor(check, { timeout: 15_000, interval: 20 });

interface Rig {
  mock: CsiMock;
  root: string;
  api: MemoryApi;
  logs: { message: string; fields: Record<string, unknown> }[];
  /** A volume manager over the root (its first run, or one started after `restart`). */
  manager: ReturnType<typeof runningVolumeManager>;
  /** Stops the volume manager without tearing anything down, and starts another that reconstructs. */
  restart(): ReturnType<typeof runningVolumeManager>;
  /** The Node RPCs after the registration handshake, NodeGetCapabilities left out; `from`: after that many. */
  rpcs(from?: number): Promise<CsiMockCall[]>;
}

async function rig(options: CsiMockOptions = {}): Promise<Rig | null> {
  const root = await mkdtemp(path.join(os.tmpdir(), 'statelet-reconstruct-'));
  cleanups.push(() => rm(root, { recursive: true, force: true }));
  const mock = await startCsiMock({ rootDir: root, nodeId: NODE, ...options });
  if (!mock) return null;
  cleanups.push(() => mock.stop());
  const api = new MemoryApi();
  const clock = new SimulatedClock();
  api.nodes.set(NODE, { metadata: { name: NODE }, status: {} });
  api.claims.set('shop/data', { metadata: { name: 'data', namespace: 'shop', uid: 'claim-1' }, spec: { volumeName: 'pv-1' }, status: { phase: 'Bound' } });
  api.volumes.set('pv-1', csiPV(mock.driverName));
  api.csiDrivers.set(mock.driverName, csiDriver(mock.driverName, { volumeLifecycleModes: ['Persistent', 'Ephemeral'], podInfoOnMount: true }));
  const reads = csiApiReads(api);
  const logs: Rig['logs'] = [];
  const log: Logger = (_level, message, fields = {}) => logs.push({ message, fields });
  const start = (reconstruct: boolean) => {
    const manager = runningVolumeManager({
      deps: { podsDir: path.join(root, 'pods'), objects: apiObjectReader(api, { ttlMs: 0, now: () => clock.now() }) },
      recorder: new RecordedEvents(),
      log,
      clock,
      reconstruct,
      claims: { claim: api.getPersistentVolumeClaim.bind(api), volume: api.getPersistentVolume.bind(api) },
      csiDrivers: reads.csiDriver,
      csi: { rootDir: root, nodeName: NODE, drivers: { endpoint: (name) => (name === mock.driverName ? mock.csiSocket : null) }, api: reads },
    });
    cleanups.push(() => manager.stop());
    return manager;
  };
  const r: Rig = {
    mock,
    root,
    api,
    logs,
    manager: start(false),
    restart: () => {
      r.manager.stop();
      return (r.manager = start(true));
    },
    rpcs: async (from = 0) => (await mock.calls()).filter((c) => c.method.startsWith('/csi.v1.Node/') && c.rpc !== 'NodeGetCapabilities' && c.rpc !== 'NodeGetInfo').slice(from),
  };
  return r;
}

/** Resolves once the restarted manager has logged the end of its reconstruction. */
const reconstructed = (r: Rig) => eventually(() => expect(r.logs.some((l) => l.message === 'Volume reconstruction finished')).toBe(true));

describe('CSI volumes across an agent restart (reconstruction)', () => {
  it('mounts the volume of a pod that still runs again (the driver asked to stage and publish again, nothing unpublished), and tears it down normally later', async ({ skip }) => {
    const r = await rig();
    if (!r) return skip();
    const driver = r.mock.driverName;
    const p = pod('u1', [claimVolume]);
    await r.manager.world.waitForAttachAndMount(p);
    const before = await r.rpcs();
    expect(before.map((c) => c.rpc)).toEqual(['NodeStageVolume', 'NodePublishVolume']);

    const world = r.restart().world;
    await reconstructed(r);
    expect(r.logs.find((l) => l.message === 'Volume is marked as uncertain and added into the actual state')?.fields).toEqual({ podUID: 'u1', volumeName: `kubernetes.io/csi/${driver}^1` });
    // Uncertain is not mounted: the pod's sync waits for the reconciler's mount.
    expect(world.mountedVolumes('u1').size).toBe(0);
    expect(world.possiblyMounted('u1')).toBe(true);
    await world.waitForAttachAndMount(p);
    expect(world.mountedVolumes('u1').get('data')?.path).toBe(publishTargetPath(r.root, 'u1', 'pv-1'));
    const after = await r.rpcs(2);
    expect(after.map((c) => c.rpc)).toEqual(['NodeStageVolume', 'NodePublishVolume']);
    // The same requests as the first run's: the driver's idempotence makes them no-ops.
    expect(after.map((c) => c.request)).toEqual(before.map((c) => c.request));

    await world.unmountPod('u1');
    await eventually(async () => expect((await r.rpcs(4)).map((c) => c.rpc)).toEqual(['NodeUnpublishVolume', 'NodeUnstageVolume']));
    expect(world.possiblyMounted('u1')).toBe(false);
  });

  it('unpublishes and unstages the volume of a pod deleted while the agent was down, and removes its directories', async ({ skip }) => {
    const r = await rig();
    if (!r) return skip();
    const driver = r.mock.driverName;
    await r.manager.world.waitForAttachAndMount(pod('u1', [claimVolume]));

    const world = r.restart().world;
    await reconstructed(r);
    // Nothing is torn down until the pod is known gone (the orphan cleanup runs once every source has been seen).
    expect(await r.rpcs(2)).toEqual([]);
    await world.unmountPod('u1');
    const staging = stagingTargetPath(r.root, driver, '1');
    expect((await r.rpcs(2)).map((c) => [c.rpc, c.request])).toEqual([
      ['NodeUnpublishVolume', { volume_id: '1', target_path: publishTargetPath(r.root, 'u1', 'pv-1') }],
      ['NodeUnstageVolume', { volume_id: '1', staging_target_path: staging }],
    ]);
    expect(existsSync(podVolumeDir(r.root, 'u1', 'pv-1'))).toBe(false);
    expect(existsSync(path.dirname(staging))).toBe(false);
    expect(world.possiblyMounted('u1')).toBe(false);
  });

  it('unpublishes the gone pod of a shared stage without unstaging it while the pod that still runs holds it', async ({ skip }) => {
    const r = await rig();
    if (!r) return skip();
    const running = pod('u2', [claimVolume]);
    await Promise.all([r.manager.world.waitForAttachAndMount(pod('u1', [claimVolume])), r.manager.world.waitForAttachAndMount(running)]);
    expect((await r.rpcs()).map((c) => c.rpc)).toEqual(['NodeStageVolume', 'NodePublishVolume', 'NodePublishVolume']);

    const world = r.restart().world;
    await reconstructed(r);
    await world.waitForAttachAndMount(running);
    await world.unmountPod('u1');
    const after = await r.rpcs(3);
    expect(after.map((c) => c.rpc)).toEqual(['NodeStageVolume', 'NodePublishVolume', 'NodeUnpublishVolume']);
    expect(after[1]!.request['target_path']).toBe(publishTargetPath(r.root, 'u2', 'pv-1'));
    expect(after[2]!.request['target_path']).toBe(publishTargetPath(r.root, 'u1', 'pv-1'));

    await world.unmountPod('u2');
    await eventually(async () => expect((await r.rpcs(6)).map((c) => c.rpc)).toEqual(['NodeUnpublishVolume', 'NodeUnstageVolume']));
  });

  it('unstages a stage whose pods are all gone only after the last one is unpublished', async ({ skip }) => {
    const r = await rig();
    if (!r) return skip();
    await Promise.all([r.manager.world.waitForAttachAndMount(pod('u1', [claimVolume])), r.manager.world.waitForAttachAndMount(pod('u2', [claimVolume]))]);
    const world = r.restart().world;
    await reconstructed(r);
    await world.unmountPod('u1');
    expect((await r.rpcs(3)).map((c) => c.rpc)).toEqual(['NodeUnpublishVolume']);
    await world.unmountPod('u2');
    expect((await r.rpcs(3)).map((c) => c.rpc)).toEqual(['NodeUnpublishVolume', 'NodeUnpublishVolume', 'NodeUnstageVolume']);
  });

  it('unpublishes an inline (ephemeral) volume of a gone pod from its vol_data.json', async ({ skip }) => {
    const r = await rig();
    if (!r) return skip();
    const driver = r.mock.driverName;
    await r.manager.world.waitForAttachAndMount(pod('u1', [{ name: 'scratch', csi: { driver, volumeAttributes: { size: '1Gi' } } }]));
    expect((await r.rpcs()).map((c) => c.rpc)).toEqual(['NodePublishVolume']);

    const world = r.restart().world;
    await reconstructed(r);
    expect(r.logs.find((l) => l.message === 'Volume is marked as uncertain and added into the actual state')?.fields).toEqual({ podUID: 'u1', volumeName: 'kubernetes.io/csi/u1-scratch' });
    await world.unmountPod('u1');
    expect((await r.rpcs(1)).map((c) => [c.rpc, c.request])).toEqual([['NodeUnpublishVolume', { volume_id: inlineVolumeHandle('u1', 'scratch'), target_path: publishTargetPath(r.root, 'u1', 'scratch') }]]);
  });

  it('completes a publish the agent was killed in the middle of (the driver did it, the agent never heard): published again for the running pod', async ({ skip }) => {
    const r = await rig();
    if (!r) return skip();
    // The driver publishes, then its answer is lost (DEADLINE_EXCEEDED: uncertain, the directories kept).
    await r.mock.fail([{ method: 'NodePublishVolume', code: 4, message: 'the agent went away', after: true, times: 1 }]);
    const p = pod('u1', [claimVolume]);
    void r.manager.world.waitForAttachAndMount(p).catch(() => {});
    await eventually(async () => expect((await r.rpcs()).map((c) => c.rpc)).toEqual(['NodeStageVolume', 'NodePublishVolume']));
    expect((await r.rpcs())[1]!.error?.name).toBe('DeadlineExceeded');

    // Killed before its retry; the restarted agent finds the pod's vol_data.json and mounts it for the pod.
    const world = r.restart().world;
    await reconstructed(r);
    await world.waitForAttachAndMount(p);
    const after = await r.rpcs(2);
    expect(after.map((c) => [c.rpc, c.error])).toEqual([
      ['NodeStageVolume', undefined],
      ['NodePublishVolume', undefined],
    ]);
    expect(world.mountedVolumes('u1').get('data')?.path).toBe(publishTargetPath(r.root, 'u1', 'pv-1'));
  });

  it('stages and publishes again for the running pod when the agent was killed while the driver staged (nothing of the pod on disk yet)', async ({ skip }) => {
    const r = await rig();
    if (!r) return skip();
    await r.mock.fail([{ method: 'NodeStageVolume', code: 4, message: 'the agent went away', after: true, times: 1 }]);
    const p = pod('u1', [claimVolume]);
    void r.manager.world.waitForAttachAndMount(p).catch(() => {});
    await eventually(async () => expect((await r.rpcs()).map((c) => [c.rpc, c.error?.name])).toEqual([['NodeStageVolume', 'DeadlineExceeded']]));

    const world = r.restart().world;
    await reconstructed(r);
    expect(r.logs.filter((l) => l.message === 'Volume is marked as uncertain and added into the actual state')).toEqual([]);
    await world.waitForAttachAndMount(p);
    expect((await r.rpcs(1)).map((c) => [c.rpc, c.error])).toEqual([
      ['NodeStageVolume', undefined],
      ['NodePublishVolume', undefined],
    ]);
  });

  it('leaves a CSI volume directory without vol_data.json to the orphan cleanup, saying why it could not be reconstructed', async ({ skip }) => {
    const r = await rig();
    if (!r) return skip();
    await r.manager.world.waitForAttachAndMount(pod('u1', [claimVolume]));
    const dir = podVolumeDir(r.root, 'u1', 'pv-1');
    await unlink(path.join(dir, 'vol_data.json'));

    const world = r.restart().world;
    await reconstructed(r);
    const failure = r.logs.find((l) => l.message === 'Could not construct volume information');
    expect(failure?.fields).toMatchObject({ podUID: 'u1', volumeSpecName: 'pv-1' });
    expect(String(failure?.fields['err'])).toMatch(new RegExp(`^kubernetes.io/csi: plugin.ConstructVolumeSpec failed loading volume data using \\[${dir}\\]: kubernetes.io/csi: failed to open volume data file`));
    expect(world.possiblyMounted('u1')).toBe(false);
    await world.unmountPod('u1');
    expect(await r.rpcs(2)).toEqual([]);
  });
});
