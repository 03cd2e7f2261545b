/**
 * The volume manager end to end below the pod: the volume world the syncs ask
 * (WaitForAttachAndMount, WaitForUnmount) and the volume manager's loop with one actor per pod
 * volume, over a temporary pods directory and the in-memory API. The clock is simulated: back-off
 * and the wait's end come only when the test moves it.
 */
import { lstat, mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { SimulatedClock } from 'xstate';
import type { PersistentVolume, PersistentVolumeClaim } from '../../src/api/storage.ts';
import type { Pod } from '../../src/api/types.ts';
import { apiObjectReader } from '../../src/client/objects.ts';
import { ATTACH_AND_MOUNT_TIMEOUT_MS, VolumeWaitError } from '../../src/volumes/world.ts';
import { MemoryApi } from '../support/memoryApi.ts';
import { RecordedEvents } from '../support/recordedEvents.ts';
import { runningVolumeManager } from '../support/volumes.ts';

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

const pod = (volumes: unknown[], uid = 'u1'): Pod =>
  ({
    metadata: { name: 'web-0', namespace: 'shop', uid },
    spec: { containers: [{ name: 'app', image: 'busybox', volumeMounts: (volumes as { name: string }[]).map((v) => ({ name: v.name, mountPath: `/${v.name}` })) }], volumes },
  }) as unknown as Pod;

const claimVolume = { name: 'data', persistentVolumeClaim: { claimName: 'data' } };
const claim = (phase: string): PersistentVolumeClaim => ({ metadata: { name: 'data', namespace: 'shop', uid: 'claim-1' }, spec: { volumeName: 'pv-1' }, status: { phase } });

async function rig() {
  const root = await mkdtemp(path.join(os.tmpdir(), 'statelet-world-'));
  cleanups.push(() => rm(root, { recursive: true, force: true }));
  const podsDir = path.join(root, 'pods');
  const api = new MemoryApi();
  const clock = new SimulatedClock();
  clock.set(Date.parse('2026-12-07T00:00:00Z'));
  const events = new RecordedEvents();
  const claims = { claim: api.getPersistentVolumeClaim.bind(api), volume: api.getPersistentVolume.bind(api) };
  const manager = runningVolumeManager({ deps: { podsDir, objects: apiObjectReader(api, { ttlMs: 0, now: () => clock.now() }) }, recorder: events, clock, claims });
  cleanups.push(() => manager.stop());
  const failedMounts = () => events.events.filter((e) => e.reason === 'FailedMount').map((e) => e.message);
  return { root, podsDir, api, clock, events, world: manager.world, failedMounts };
}

describe('the volume world and the volume manager', () => {
  it("sets a pod's volumes up before its wait ends, and tears them down when the pod goes", async () => {
    const r = await rig();
    r.api.configMaps.set('shop/settings', { data: { MODE: 'fast' } });
    const p = pod([
      { name: 'scratch', emptyDir: {} },
      { name: 'settings', configMap: { name: 'settings' } },
    ]);
    await r.world.waitForAttachAndMount(p);
    const mounted = r.world.mountedVolumes('u1');
    expect([...mounted.keys()].sort()).toEqual(['scratch', 'settings']);
    expect(await readFile(path.join(mounted.get('settings')!.path, 'MODE'), 'utf8')).toBe('fast');
    const scratch = mounted.get('scratch')!.path;

    await r.world.unmountPod('u1');
    expect(r.world.mountedVolumes('u1').size).toBe(0);
    await expect(lstat(scratch)).rejects.toThrow('ENOENT');
  });

  it('refuses the wait at once, in the kubelet words, while a claim is not bound; a later processing finds it bound', async () => {
    const r = await rig();
    r.api.claims.set('shop/data', claim('Pending'));
    const p = pod([claimVolume]);
    const refused = await r.world.waitForAttachAndMount(p).catch((err: unknown) => err);
    expect(refused).toBeInstanceOf(VolumeWaitError);
    expect((refused as VolumeWaitError).timedOut).toBe(false);
    expect((refused as Error).message).toBe('unmounted volumes=[data], unattached volumes=[], failed to process volumes=[data]: error processing PVC shop/data: PVC is not bound');

    const hostDir = path.join(r.root, 'pv-1');
    const pv: PersistentVolume = { metadata: { name: 'pv-1' }, spec: { claimRef: { namespace: 'shop', name: 'data', uid: 'claim-1' }, hostPath: { path: hostDir, type: 'DirectoryOrCreate' } } };
    r.api.volumes.set('pv-1', pv);
    r.api.claims.set('shop/data', claim('Bound'));
    await r.world.waitForAttachAndMount(p);
    expect(r.world.mountedVolumes('u1').get('data')).toMatchObject({ path: hostDir, readOnly: false, claim: { namespace: 'shop', name: 'data' } });
    expect(r.world.extraSupplementalGroups('u1')).toEqual([]);
    expect((await lstat(hostDir)).isDirectory()).toBe(true);
  });

  it('gives a local volume its own path where the node cannot bind-mount, and refuses one whose path is missing', async () => {
    const r = await rig();
    const localDir = path.join(r.root, 'disk-a');
    r.api.claims.set('shop/data', claim('Bound'));
    r.api.volumes.set('pv-1', { metadata: { name: 'pv-1' }, spec: { claimRef: { uid: 'claim-1' }, local: { path: localDir } } });
    const p = pod([claimVolume]);
    const waiting = r.world.waitForAttachAndMount(p);
    await vi.waitFor(() => expect(r.failedMounts()).toEqual([`MountVolume.SetUp failed for volume "pv-1" : path "${localDir}" does not exist`]));
    await import('node:fs/promises').then((fs) => fs.mkdir(localDir));
    r.clock.increment(500);
    await waiting;
    expect(r.world.mountedVolumes('u1').get('data')?.path).toBe(localDir);
  });

  it('follows a local volume whose path is a symlink to a directory (LocalVolumeType dir-link)', async () => {
    const r = await rig();
    const real = path.join(r.root, 'disk-real');
    const link = path.join(r.root, 'disk-link');
    await import('node:fs/promises').then(async (fs) => {
      await fs.mkdir(real);
      await fs.symlink(real, link);
    });
    r.api.claims.set('shop/data', claim('Bound'));
    r.api.volumes.set('pv-1', { metadata: { name: 'pv-1' }, spec: { claimRef: { uid: 'claim-1' }, local: { path: link } } });
    await r.world.waitForAttachAndMount(pod([claimVolume]));
    expect(r.world.mountedVolumes('u1').get('data')?.path).toBe(link);
  });

  it("gives the pod's processes the group a PersistentVolume's pv.beta.kubernetes.io/gid names", async () => {
    const r = await rig();
    r.api.claims.set('shop/data', claim('Bound'));
    r.api.volumes.set('pv-1', { metadata: { name: 'pv-1', annotations: { 'pv.beta.kubernetes.io/gid': '2345' } }, spec: { claimRef: { uid: 'claim-1' }, hostPath: { path: path.join(r.root, 'shared'), type: 'DirectoryOrCreate' } } });
    await r.world.waitForAttachAndMount(pod([claimVolume]));
    expect(r.world.extraSupplementalGroups('u1')).toEqual([2345]);
  });

  it('retries a failing set-up with back-off (500 ms, then 1 s), each failure a FailedMount event, and the wait ends with the volume', async () => {
    const r = await rig();
    const p = pod([{ name: 'settings', configMap: { name: 'settings' } }]);
    const waiting = r.world.waitForAttachAndMount(p);
    const failure = 'MountVolume.SetUp failed for volume "settings" : configmap "settings" not found';
    await vi.waitFor(() => expect(r.failedMounts()).toHaveLength(1));
    r.clock.increment(499);
    expect(r.failedMounts()).toHaveLength(1);
    r.clock.increment(1);
    await vi.waitFor(() => expect(r.failedMounts()).toEqual([failure, failure]));
    r.api.configMaps.set('shop/settings', { data: { MODE: 'slow' } });
    r.clock.increment(999);
    expect(r.world.mountedVolumes('u1').size).toBe(0);
    r.clock.increment(1);
    await waiting;
    expect(r.world.mountedVolumes('u1').has('settings')).toBe(true);
  });

  it('ends the wait after 2 m 3 s with the volumes still not mounted, as the end of a wait (no event of its own)', async () => {
    const r = await rig();
    const p = pod([{ name: 'settings', configMap: { name: 'settings' } }]);
    const waiting = r.world.waitForAttachAndMount(p).catch((err: unknown) => err);
    await vi.waitFor(() => expect(r.failedMounts()).toHaveLength(1));
    r.clock.increment(ATTACH_AND_MOUNT_TIMEOUT_MS);
    const ended = await waiting;
    expect(ended).toBeInstanceOf(VolumeWaitError);
    expect((ended as VolumeWaitError).timedOut).toBe(true);
    expect((ended as Error).message).toBe('unmounted volumes=[settings], unattached volumes=[], failed to process volumes=[]: context deadline exceeded');
  });

  it('refreshes the files of a payload volume each time its pod is processed again', async () => {
    const r = await rig();
    r.api.configMaps.set('shop/settings', { data: { MODE: 'fast' } });
    const p = pod([{ name: 'settings', configMap: { name: 'settings' } }]);
    await r.world.waitForAttachAndMount(p);
    const dir = r.world.mountedVolumes('u1').get('settings')!.path;
    r.api.configMaps.set('shop/settings', { data: { MODE: 'slow' } });
    await r.world.waitForAttachAndMount(p);
    await vi.waitFor(async () => expect(await readFile(path.join(dir, 'MODE'), 'utf8')).toBe('slow'));
  });

  it('refuses a volume of a plugin this node lacks, naming it', async () => {
    const r = await rig();
    const p = pod([{ name: 'share', nfs: { server: 'nfs.example', path: '/exports' } }]);
    await expect(r.world.waitForAttachAndMount(p)).rejects.toThrow('unmounted volumes=[share], unattached volumes=[], failed to process volumes=[share]: no volume plugin matched: this node does not mount nfs volumes');
  });
});
