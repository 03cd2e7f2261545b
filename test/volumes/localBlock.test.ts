/**
 * A local PersistentVolume on a block device, with the system's mounter on a real loop device
 * (root only; CI runs as root, elsewhere skipped loudly): the blank device formatted (ext4) and
 * mounted once at the plugin's global path, bind-mounted into each pod's directory, a file written
 * through one pod's path seen through the other's; the device's mount comes off with its last pod,
 * also after an agent restart (a new mounter and volume manager that reconstruct: the mounts are
 * learnt from the mount table, the pod still running keeps the device mounted).
 * In volumeMode Block (volumeDevices), the device is not formatted but mapped (local.go
 * localVolumeMapper, util.MapBlockVolume): bind-mounted at the global map path per pod, held by a
 * loop device, linked from the pod's directory; bytes written through one pod's link are read
 * through the other's; a path that is not a block device, or none, is the pod's FailedMapVolume.
 * After a restart, a mapped device is found by its pod's link and its global map's bind mount
 * learnt from the mount table: a gone pod's map is undone, a running pod's mapped again in place.
 */
import { execFileSync } from 'node:child_process';
import { lstat, mkdir, mkdtemp, readFile, readlink, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { Container, Pod } from '../../src/api/types.ts';
import { silentLogger } from '../../src/log.ts';
import { mountPointsUnder, systemMounter } from '../../src/volumes/mounter.ts';
import { localDeviceMountPath } from '../../src/volumes/persistent.ts';
import { localGlobalMapPath } from '../../src/volumes/localBlock.ts';
import { blockVolumeDevices } from '../../src/kuberuntime/blockVolumes.ts';
import { MemoryApi } from '../support/memoryApi.ts';
import { RecordedEvents } from '../support/recordedEvents.ts';
import { rootOrSkip } from '../support/smallFilesystem.ts';
import { runningVolumeManager } from '../support/volumes.ts';

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

const pod = (uid: string): Pod =>
  ({
    metadata: { name: `web-${uid}`, namespace: 'shop', uid },
    spec: { containers: [{ name: 'app', image: 'busybox', volumeMounts: [{ name: 'data', mountPath: '/data' }] }], volumes: [{ name: 'data', persistentVolumeClaim: { claimName: 'data' } }] },
  }) as unknown as Pod;

describe.skipIf(!rootOrSkip('a local PersistentVolume on a loop device'))('a local PersistentVolume on a block device', () => {
  it('formats the blank device once, mounts it for its pods, and unmounts it after the last', { timeout: 60_000 }, async () => {
    const root = await mkdtemp(path.join(os.tmpdir(), 'statelet-localblock-'));
    cleanups.push(() => rm(root, { recursive: true, force: true }));
    const image = path.join(root, 'disk.img');
    execFileSync('truncate', ['-s', '64M', image]);
    const device = execFileSync('losetup', ['-f', '--show', image], { encoding: 'utf8' }).trim();
    cleanups.push(() => void execFileSync('losetup', ['-d', device]));
    const podsDir = path.join(root, 'pods');
    const mounter = systemMounter(podsDir, () => {});
    cleanups.push(async () => {
      for (const point of mountPointsUnder(await readFile('/proc/self/mountinfo', 'utf8'), root)) execFileSync('umount', [point]);
    });
    const api = new MemoryApi();
    api.claims.set('shop/data', { metadata: { name: 'data', namespace: 'shop', uid: 'claim-1' }, spec: { volumeName: 'pv-block' }, status: { phase: 'Bound' } });
    api.volumes.set('pv-block', { metadata: { name: 'pv-block' }, spec: { claimRef: { uid: 'claim-1' }, local: { path: device } } });
    const events = new RecordedEvents();
    const manager = runningVolumeManager({ deps: { podsDir, mounter, log: silentLogger }, recorder: events, claims: { claim: api.getPersistentVolumeClaim.bind(api), volume: api.getPersistentVolume.bind(api) } });
    cleanups.push(() => manager.stop());
    const { world } = manager;

    await world.waitForAttachAndMount(pod('a'));
    await world.waitForAttachAndMount(pod('b'));
    expect(events.events.filter((e) => e.reason === 'FailedMount').map((e) => e.message)).toEqual([]);
    expect(execFileSync('blkid', ['-p', '-s', 'TYPE', '-o', 'value', device], { encoding: 'utf8' }).trim()).toBe('ext4');
    const global = localDeviceMountPath(podsDir, 'pv-block');
    const mounts = () => readFile('/proc/self/mountinfo', 'utf8').then((text) => mountPointsUnder(text, root));
    const [a, b] = ['a', 'b'].map((uid) => world.mountedVolumes(uid).get('data')!.path);
    expect((await mounts()).sort()).toEqual([global, a!, b!].sort());
    await writeFile(path.join(a!, 'hello'), 'from a');
    expect(await readFile(path.join(b!, 'hello'), 'utf8')).toBe('from a');

    await world.unmountPod('a');
    expect((await mounts()).sort()).toEqual([global, b!].sort());
    await world.unmountPod('b');
    expect(await mounts()).toEqual([]);
  });

  it('after a restart, unmounts a gone pod\'s bind mount, keeps the device mount for the pod still running, and unmounts it after that one', { timeout: 60_000 }, async () => {
    const root = await mkdtemp(path.join(os.tmpdir(), 'statelet-localblock-'));
    cleanups.push(() => rm(root, { recursive: true, force: true }));
    const image = path.join(root, 'disk.img');
    execFileSync('truncate', ['-s', '64M', image]);
    const device = execFileSync('losetup', ['-f', '--show', image], { encoding: 'utf8' }).trim();
    cleanups.push(() => void execFileSync('losetup', ['-d', device]));
    const podsDir = path.join(root, 'pods');
    cleanups.push(async () => {
      for (const point of mountPointsUnder(await readFile('/proc/self/mountinfo', 'utf8'), root)) execFileSync('umount', [point]);
    });
    const api = new MemoryApi();
    api.claims.set('shop/data', { metadata: { name: 'data', namespace: 'shop', uid: 'claim-1' }, spec: { volumeName: 'pv-block' }, status: { phase: 'Bound' } });
    api.volumes.set('pv-block', { metadata: { name: 'pv-block' }, spec: { claimRef: { uid: 'claim-1' }, local: { path: device } } });
    let reconstructed = false;
    const start = (reconstruct: boolean) => {
      const log = (_: string, message: string) => void (reconstructed ||= message === 'Volume reconstruction finished');
      const manager = runningVolumeManager({ deps: { podsDir, mounter: systemMounter(podsDir, () => {}), log: silentLogger }, recorder: new RecordedEvents(), reconstruct, log, claims: { claim: api.getPersistentVolumeClaim.bind(api), volume: api.getPersistentVolume.bind(api) } });
      cleanups.push(() => manager.stop());
      return manager;
    };
    const first = start(false);
    await first.world.waitForAttachAndMount(pod('a'));
    await first.world.waitForAttachAndMount(pod('b'));
    const [a, b] = ['a', 'b'].map((uid) => first.world.mountedVolumes(uid).get('data')!.path);
    first.stop();

    const { world } = start(true);
    await vi.waitFor(() => expect(reconstructed).toBe(true));
    await world.waitForAttachAndMount(pod('b'));
    const global = localDeviceMountPath(podsDir, 'pv-block');
    const mounts = () => readFile('/proc/self/mountinfo', 'utf8').then((text) => mountPointsUnder(text, root));
    // Pod a went while the agent was down.
    await world.unmountPod('a');
    expect((await mounts()).sort()).toEqual([global, b!].sort());
    expect(a).toBe(path.join(podsDir, 'a', 'volumes', 'kubernetes.io~local-volume', 'pv-block'));
    await world.unmountPod('b');
    expect(await mounts()).toEqual([]);
  });
});

const devicePod = (uid: string, claimName = 'data'): Pod =>
  ({
    metadata: { name: `db-${uid}`, namespace: 'shop', uid },
    spec: { containers: [{ name: 'app', image: 'busybox', volumeDevices: [{ name: 'data', devicePath: '/dev/xvda' }] }], volumes: [{ name: 'data', persistentVolumeClaim: { claimName } }] },
  }) as unknown as Pod;

describe.skipIf(!rootOrSkip('a local PersistentVolume of volumeMode Block on a loop device'))('a local PersistentVolume of volumeMode Block', () => {
  async function blockRig(paths: Record<string, string>) {
    const root = await mkdtemp(path.join(os.tmpdir(), 'statelet-localmap-'));
    cleanups.push(() => rm(root, { recursive: true, force: true }));
    const podsDir = path.join(root, 'pods');
    const mounter = systemMounter(podsDir, () => {});
    cleanups.push(async () => {
      // What a failed test left: the loop devices over its global map files first, which hold their bind mounts busy.
      for (const line of execFileSync('losetup', ['-a'], { encoding: 'utf8' }).split('\n').filter((l) => l.includes(`(${root}/`))) execFileSync('losetup', ['-d', line.split(':')[0]!]);
      for (const point of mountPointsUnder(await readFile('/proc/self/mountinfo', 'utf8'), root)) execFileSync('umount', [point]);
    });
    const api = new MemoryApi();
    let n = 0;
    for (const [claim, local] of Object.entries(paths)) {
      n++;
      api.claims.set(`shop/${claim}`, { metadata: { name: claim, namespace: 'shop', uid: `claim-${n}` }, spec: { volumeName: `pv-${claim}` }, status: { phase: 'Bound' } });
      api.volumes.set(`pv-${claim}`, { metadata: { name: `pv-${claim}` }, spec: { claimRef: { uid: `claim-${n}` }, volumeMode: 'Block', local: { path: local } } });
    }
    const events = new RecordedEvents();
    let reconstructed = false;
    const start = (reconstruct: boolean) => {
      const log = (_: string, message: string) => void (reconstructed ||= message === 'Volume reconstruction finished');
      // A restarted agent has a new mounter, which learns the mounts from the mount table.
      const manager = runningVolumeManager({ deps: { podsDir, mounter: reconstruct ? systemMounter(podsDir, () => {}) : mounter, log: silentLogger }, recorder: events, reconstruct, log, claims: { claim: api.getPersistentVolumeClaim.bind(api), volume: api.getPersistentVolume.bind(api) } });
      cleanups.push(() => manager.stop());
      return manager;
    };
    let manager = start(false);
    return {
      root,
      podsDir,
      events,
      world: manager.world,
      /** The agent gone and started again over the same root: its world once it has reconstructed. */
      restart: async () => {
        manager.stop();
        manager = start(true);
        await vi.waitFor(() => expect(reconstructed).toBe(true));
        return manager.world;
      },
    };
  }

  function loopDevice(root: string): string {
    const image = path.join(root, 'disk.img');
    execFileSync('truncate', ['-s', '16M', image]);
    const device = execFileSync('losetup', ['-f', '--show', image], { encoding: 'utf8' }).trim();
    cleanups.push(() => void execFileSync('losetup', ['-d', device]));
    return device;
  }

  it('maps the device unformatted into each pod, held by a loop device, and unmaps it with each pod', { timeout: 60_000 }, async () => {
    const scratch = await mkdtemp(path.join(os.tmpdir(), 'statelet-localmap-dev-'));
    cleanups.push(() => rm(scratch, { recursive: true, force: true }));
    const device = loopDevice(scratch);
    const { podsDir, events, world } = await blockRig({ data: device });
    await world.waitForAttachAndMount(devicePod('a'));
    await world.waitForAttachAndMount(devicePod('b'));
    expect(events.events.filter((e) => e.type !== 'Normal')).toEqual([]);
    expect(events.events.filter((e) => e.reason === 'SuccessfulMountVolume')).toHaveLength(4);
    // Not formatted: a raw block volume is the device as it is.
    expect(() => execFileSync('blkid', ['-p', device])).toThrow();

    const global = localGlobalMapPath(podsDir, 'pv-data');
    const [linkA, linkB] = ['a', 'b'].map((uid) => path.join(podsDir, uid, 'volumeDevices', 'kubernetes.io~local-volume', 'pv-data'));
    expect(await readlink(linkA!)).toBe(device);
    expect(world.mountedVolumes('a').get('data')).toMatchObject({ path: linkA, mapped: true });
    expect(blockVolumeDevices({ name: 'app', volumeDevices: [{ name: 'data', devicePath: '/dev/xvda' }] } as unknown as Container, world.mountedVolumes('b'))).toEqual({ devices: [{ containerPath: '/dev/xvda', hostPath: linkB, permissions: 'mrw' }] });
    // The global map: the device bind-mounted on a file per pod, each held open by a loop device over it.
    for (const uid of ['a', 'b']) expect((await lstat(path.join(global, uid))).isBlockDevice()).toBe(true);
    const loops = () => execFileSync('losetup', ['-a'], { encoding: 'utf8' });
    expect(loops()).toContain(path.join(global, 'a'));
    expect(loops()).toContain(path.join(global, 'b'));

    // Bytes written through one pod's link are read through the other's.
    execFileSync('dd', ['if=/dev/urandom', `of=${path.join(scratch, 'block')}`, 'bs=4096', 'count=1', 'status=none']);
    execFileSync('dd', [`if=${path.join(scratch, 'block')}`, `of=${linkA}`, 'bs=4096', 'count=1', 'conv=fsync', 'status=none']);
    execFileSync('dd', [`if=${linkB}`, `of=${path.join(scratch, 'back')}`, 'bs=4096', 'count=1', 'status=none']);
    expect(await readFile(path.join(scratch, 'back'))).toEqual(await readFile(path.join(scratch, 'block')));

    await world.unmountPod('a');
    expect(await lstat(linkA!).catch(() => null)).toBeNull();
    expect(await lstat(path.join(global, 'a')).catch(() => null)).toBeNull();
    expect(loops()).not.toContain(path.join(global, 'a'));
    expect(loops()).toContain(path.join(global, 'b'));
    await world.unmountPod('b');
    // The global map directory goes with the last pod.
    expect(await lstat(global).catch(() => null)).toBeNull();
    expect(loops()).not.toContain(global);
  });

  it("after a restart, unmaps the device of a pod gone meanwhile (loop device, global map, link), maps it again for the pod that still runs, and removes the global map after that one", { timeout: 60_000 }, async () => {
    const scratch = await mkdtemp(path.join(os.tmpdir(), 'statelet-localmap-dev-'));
    cleanups.push(() => rm(scratch, { recursive: true, force: true }));
    const device = loopDevice(scratch);
    const rig = await blockRig({ data: device });
    await rig.world.waitForAttachAndMount(devicePod('a'));
    await rig.world.waitForAttachAndMount(devicePod('b'));
    const global = localGlobalMapPath(rig.podsDir, 'pv-data');
    const [linkA, linkB] = ['a', 'b'].map((uid) => path.join(rig.podsDir, uid, 'volumeDevices', 'kubernetes.io~local-volume', 'pv-data'));
    const loops = () => execFileSync('losetup', ['-a'], { encoding: 'utf8' });
    const mounts = () => readFile('/proc/self/mountinfo', 'utf8').then((text) => mountPointsUnder(text, rig.root));

    // Pod a is deleted while the agent is away; pod b still runs.
    const world = await rig.restart();
    expect(world.possiblyMounted('a')).toBe(true);
    await world.waitForAttachAndMount(devicePod('b'));
    expect(world.mountedVolumes('b').get('data')).toMatchObject({ path: linkB, mapped: true });
    // Mapped again in place: the same bind mount and one loop device over it, not a second.
    expect((await mounts()).sort()).toEqual([path.join(global, 'a'), path.join(global, 'b')].sort());
    expect(loops().split('\n').filter((line) => line.includes(path.join(global, 'b')))).toHaveLength(1);

    // Housekeeping finds pod a's directory orphaned: its map is undone.
    expect(world.releasePod('a')).toBe(true);
    await vi.waitFor(() => expect(world.possiblyMounted('a')).toBe(false));
    expect(await lstat(linkA!).catch(() => null)).toBeNull();
    expect(await lstat(path.join(global, 'a')).catch(() => null)).toBeNull();
    expect(loops()).not.toContain(path.join(global, 'a'));
    expect(await mounts()).toEqual([path.join(global, 'b')]);
    expect(await readlink(linkB!)).toBe(device);

    await world.unmountPod('b');
    expect(await mounts()).toEqual([]);
    expect(loops()).not.toContain(global);
    expect(await lstat(global).catch(() => null)).toBeNull();
  });

  it('a path that is not a block device, or none, is the pod\'s FailedMapVolume; another pod maps its own', { timeout: 60_000 }, async () => {
    const scratch = await mkdtemp(path.join(os.tmpdir(), 'statelet-localmap-dev-'));
    cleanups.push(() => rm(scratch, { recursive: true, force: true }));
    const device = loopDevice(scratch);
    await mkdir(path.join(scratch, 'dir'));
    const { events, world } = await blockRig({ data: device, dir: path.join(scratch, 'dir'), missing: path.join(scratch, 'missing') });
    void world.waitForAttachAndMount(devicePod('x', 'dir')).catch(() => {});
    void world.waitForAttachAndMount(devicePod('y', 'missing')).catch(() => {});
    await world.waitForAttachAndMount(devicePod('a'));
    await vi.waitFor(() =>
      expect(new Set(events.events.filter((e) => e.type === 'Warning').map((e) => `${e.reason}: ${e.message}`))).toEqual(
        new Set([
          `FailedMapVolume: MapVolume.MapPodDevice failed for volume "pv-dir" : path "${path.join(scratch, 'dir')}" is not a block device (it is a directory): a volume of volumeMode Block needs one`,
          `FailedMapVolume: MapVolume.MapPodDevice failed for volume "pv-missing" : path "${path.join(scratch, 'missing')}" does not exist`,
        ]),
      ),
    );
    expect(world.mountedVolumes('a').get('data')).toMatchObject({ mapped: true });
    await world.unmountPod('x');
    await world.unmountPod('y');
    await world.unmountPod('a');
  });
});
