/**
 * A local PersistentVolume on a block device, with the system's mounter on a real loop device
 * (root only; CI runs as root, elsewhere skipped loudly): the blank device formatted (ext4) and
 * mounted once at the plugin's global path, bind-mounted into each pod's directory, a file written
 * through one pod's path seen through the other's; the device's mount comes off with its last pod,
 * also after an agent restart (a new mounter and volume manager that reconstruct: the mounts are
 * learnt from the mount table, the pod still running keeps the device mounted).
 */
import { execFileSync } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { Pod } from '../../src/api/types.ts';
import { silentLogger } from '../../src/log.ts';
import { mountPointsUnder, systemMounter } from '../../src/volumes/mounter.ts';
import { localDeviceMountPath } from '../../src/volumes/persistent.ts';
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
