/**
 * sim://'s CSI driver (src/simcsi) through the agent's own CSI client (src/volumes/csi/client.ts)
 * and the plugin registration client (src/pluginregistration/registration.ts), over its real
 * sockets: what it registers as, its node info and capabilities, the stage → publish → unpublish →
 * unstage flow with data that outlives a pod, inline volumes, stats, expansion, block volumes, and
 * the requests it refuses. Run with a mounter that refuses (the driver links the volumes, as where
 * it is not root) and, where this process may mount, with the system's (bind mounts).
 */
import { execFileSync } from 'node:child_process';
import { existsSync, lstatSync, mkdirSync, mkdtempSync, readFileSync, readlinkSync, rmSync, statSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { silentLogger } from '../../src/log.ts';
import { dialRegistration } from '../../src/pluginregistration/registration.ts';
import { startSimCsiDriver, type SimCsi } from '../../src/simcsi/server.ts';
import { CsiNodeClient } from '../../src/volumes/csi/client.ts';
import { csiServiceDefinition } from '../../src/volumes/csi/wire.ts';
import { diskOnly, mountPointsUnder } from '../../src/volumes/mounter.ts';

const DRIVER = 'hostpath.csi.sim';
const NODE = 'node-a';
const root = process.getuid?.() === 0;

const fsVolume = { accessMode: 'ReadWriteOnce', fsType: 'ext4' };

/** The mount points under `dir` now. */
const mountsUnder = (dir: string) => mountPointsUnder(readFileSync('/proc/self/mountinfo', 'utf8'), dir);

for (const mode of ['link', 'bind'] as const) {
  describe(`sim://'s CSI driver (${mode === 'link' ? 'a node that may not mount: target paths link to the volumes' : 'bind mounts'})`, () => {
    let rootDir: string;
    let csi: SimCsi;
    let client: CsiNodeClient;

    beforeEach(async ({ skip }) => {
      if (mode === 'bind' && !root) {
        console.warn('SKIPPED: the bind-mount driver tests need root (they run on CI)');
        return skip();
      }
      rootDir = mkdtempSync(path.join(os.tmpdir(), 'simcsi-'));
      csi = await startSimCsiDriver({ driverName: DRIVER, nodeName: NODE, rootDir, log: silentLogger, ...(mode === 'link' ? { mounter: diskOnly } : {}) });
      client = new CsiNodeClient(csi.socketPath, { timeoutMs: 10_000 });
    });
    afterEach(async () => {
      if (!csi) return;
      await csi.close();
      for (const point of mountsUnder(rootDir)) execFileSync('umount', [point]);
      rmSync(rootDir, { recursive: true, force: true });
    });

    /** The kubelet's paths for a volume of `pod`: the staging path and the target path (their parents made, as the kubelet makes them). */
    const paths = (pod: string, volume = 'pv') => {
      const staging = path.join(rootDir, 'plugins/kubernetes.io/csi', DRIVER, 'h', 'globalmount');
      const target = path.join(rootDir, 'pods', pod, 'volumes/kubernetes.io~csi', volume, 'mount');
      mkdirSync(staging, { recursive: true });
      mkdirSync(path.dirname(target), { recursive: true });
      return { staging, target };
    };

    it('answers GetInfo on its registration socket in the plugin registry as node-driver-registrar does, and hears the outcome', async () => {
      expect(csi.registrationSocketPath).toBe(path.join(rootDir, 'plugins_registry', `${DRIVER}-reg.sock`));
      const registration = await dialRegistration(csi.registrationSocketPath);
      try {
        expect(await registration.getInfo()).toEqual({ type: 'CSIPlugin', name: DRIVER, endpoint: csi.socketPath, supportedVersions: ['1.0.0'] });
        await registration.notifyRegistrationStatus({ pluginRegistered: false, error: 'refused for the test' });
      } finally {
        registration.close();
      }
    });

    it('reports the node as its node ID with a topology segment, and the hostpath driver capabilities', async () => {
      expect(await client.nodeGetInfo()).toEqual({ nodeId: NODE, maxVolumesPerNode: 0, accessibleTopology: { [`topology.${DRIVER}/node`]: NODE } });
      expect(await client.nodeGetCapabilities()).toEqual(['STAGE_UNSTAGE_VOLUME', 'GET_VOLUME_STATS', 'EXPAND_VOLUME', 'SINGLE_NODE_MULTI_WRITER']);
    });

    it("publishes a staged volume at the target path; what one pod writes, the next pod's target shows; unpublish and unstage undo", async () => {
      const first = paths('pod-1');
      await client.nodeStageVolume({ ...fsVolume, volumeId: 'vol/1', stagingTargetPath: first.staging });
      await client.nodePublishVolume({ ...fsVolume, volumeId: 'vol/1', readOnly: false, stagingTargetPath: first.staging, targetPath: first.target });
      writeFileSync(path.join(first.target, 'greeting'), 'hello\n');
      const data = path.join(csi.dataDir, 'volumes', 'vol%2F1');
      expect(readFileSync(path.join(data, 'greeting'), 'utf8')).toBe('hello\n');
      if (mode === 'bind') expect(mountsUnder(first.target)).toEqual([first.target]);
      else expect(readlinkSync(first.target)).toBe(data);
      // Asked again (a kubelet retrying, or reconstructing after a restart): nothing changes.
      await client.nodePublishVolume({ ...fsVolume, volumeId: 'vol/1', readOnly: false, stagingTargetPath: first.staging, targetPath: first.target });

      await client.nodeUnpublishVolume('vol/1', first.target);
      expect(existsSync(first.target)).toBe(false);
      expect(mountsUnder(path.join(rootDir, 'pods'))).toEqual([]);
      await client.nodeUnstageVolume('vol/1', first.staging);

      const second = paths('pod-2');
      await client.nodeStageVolume({ ...fsVolume, volumeId: 'vol/1', stagingTargetPath: second.staging });
      await client.nodePublishVolume({ ...fsVolume, volumeId: 'vol/1', readOnly: false, stagingTargetPath: second.staging, targetPath: second.target });
      expect(readFileSync(path.join(second.target, 'greeting'), 'utf8')).toBe('hello\n');
      await client.nodeUnpublishVolume('vol/1', second.target);
      // Unpublishing what is gone already succeeds, as the spec asks.
      await client.nodeUnpublishVolume('vol/1', second.target);
    });

    it('keeps what it knows of its volumes across a restart over the same root directory', async () => {
      const { staging, target } = paths('pod-1');
      await client.nodeStageVolume({ ...fsVolume, volumeId: 'kept', stagingTargetPath: staging, volumeContext: { size: '1Gi' } });
      await client.nodePublishVolume({ ...fsVolume, volumeId: 'kept', readOnly: false, stagingTargetPath: staging, targetPath: target });
      await csi.close();
      // Both sockets go with it, as the registrar's on SIGTERM; the volume stays published.
      expect([existsSync(csi.socketPath), existsSync(csi.registrationSocketPath), existsSync(target)]).toEqual([false, false, true]);
      csi = await startSimCsiDriver({ driverName: DRIVER, nodeName: NODE, rootDir, log: silentLogger, ...(mode === 'link' ? { mounter: diskOnly } : {}) });
      client = new CsiNodeClient(csi.socketPath, { timeoutMs: 10_000 });
      expect((await client.nodeGetVolumeStats('kept', target)).capacityBytes).toBe(1024 ** 3);
      await client.nodeUnpublishVolume('kept', target);
      expect(existsSync(target)).toBe(false);
      expect(mountsUnder(path.join(rootDir, 'pods'))).toEqual([]);
    });

    it('starts over a record it cannot read, saying so, and knows that volume again once staged', async () => {
      const { staging, target } = paths('pod-1');
      await client.nodeStageVolume({ ...fsVolume, volumeId: 'torn', stagingTargetPath: staging });
      await csi.close();
      writeFileSync(path.join(csi.dataDir, 'volumes', 'torn.json'), '{"volumeId": "torn", "publ');
      const said: unknown[] = [];
      csi = await startSimCsiDriver({ driverName: DRIVER, nodeName: NODE, rootDir, log: (_level, message, fields) => said.push({ message, ...fields }), ...(mode === 'link' ? { mounter: diskOnly } : {}) });
      client = new CsiNodeClient(csi.socketPath, { timeoutMs: 10_000 });
      expect(said).toContainEqual(expect.objectContaining({ message: expect.stringContaining('cannot read what it recorded of a volume'), record: expect.stringContaining('torn.json') }));
      await expect(client.nodePublishVolume({ ...fsVolume, volumeId: 'torn', readOnly: false, stagingTargetPath: staging, targetPath: target })).rejects.toMatchObject({ code: 'FAILED_PRECONDITION' });
      await client.nodeStageVolume({ ...fsVolume, volumeId: 'torn', stagingTargetPath: staging });
      await client.nodePublishVolume({ ...fsVolume, volumeId: 'torn', readOnly: false, stagingTargetPath: staging, targetPath: target });
      await client.nodeUnpublishVolume('torn', target);
    });

    it('refuses to publish a persistent volume that is not staged at the path given', async () => {
      const { staging, target } = paths('pod-1');
      await expect(client.nodePublishVolume({ ...fsVolume, volumeId: 'v', readOnly: false, stagingTargetPath: staging, targetPath: target })).rejects.toMatchObject({
        code: 'FAILED_PRECONDITION',
        detail: 'volume "v" must be staged before publishing',
        final: true,
      });
      await expect(client.nodePublishVolume({ ...fsVolume, volumeId: 'v', readOnly: false, targetPath: target })).rejects.toMatchObject({
        code: 'FAILED_PRECONDITION',
        detail: expect.stringContaining('its CSIDriver needs podInfoOnMount: true'),
      });
      expect(existsSync(target)).toBe(false);
    });

    it('makes an inline volume at its publish and deletes it at its unpublish', async () => {
      const { target } = paths('pod-1', 'scratch');
      const volumeContext = { 'csi.storage.k8s.io/ephemeral': 'true', size: '10Mi' };
      await client.nodePublishVolume({ ...fsVolume, volumeId: 'csi-abc', readOnly: false, targetPath: target, volumeContext });
      writeFileSync(path.join(target, 'scratch'), 'x');
      const stats = await client.nodeGetVolumeStats('csi-abc', target);
      expect(stats.capacityBytes).toBe(10 * 1024 ** 2);
      await client.nodeUnpublishVolume('csi-abc', target);
      expect(existsSync(path.join(csi.dataDir, 'volumes', 'csi-abc'))).toBe(false);
      await expect(client.nodeGetVolumeStats('csi-abc', target)).rejects.toMatchObject({ code: 'NOT_FOUND', detail: 'volume "csi-abc" not found' });
    });

    it("answers NodeGetVolumeStats with the volume's own use out of its size, and NodeExpandVolume records a new size", async () => {
      const { staging, target } = paths('pod-1');
      await client.nodeStageVolume({ ...fsVolume, volumeId: 'sized', stagingTargetPath: staging, volumeContext: { size: '64Mi' } });
      await client.nodePublishVolume({ ...fsVolume, volumeId: 'sized', readOnly: false, stagingTargetPath: staging, targetPath: target });
      const before = await client.nodeGetVolumeStats('sized', target);
      writeFileSync(path.join(target, 'one-mebibyte'), Buffer.alloc(1024 ** 2, 1));
      mkdirSync(path.join(target, 'dir'));
      const after = await client.nodeGetVolumeStats('sized', target);
      expect(after.capacityBytes).toBe(64 * 1024 ** 2);
      expect(after.usedBytes - before.usedBytes).toBeGreaterThanOrEqual(1024 ** 2);
      expect(after.availableBytes).toBe(Math.min(after.capacityBytes - after.usedBytes, statfsAvailable(target)));
      expect(after.inodesUsed - before.inodesUsed).toBe(2);
      expect(after.inodes).toBeGreaterThan(0);

      expect(await client.nodeExpandVolume({ ...fsVolume, volumeId: 'sized', volumePath: target, stagingTargetPath: staging, newSizeBytes: 128 * 1024 ** 2 })).toBe(128 * 1024 ** 2);
      expect((await client.nodeGetVolumeStats('sized', target)).capacityBytes).toBe(128 * 1024 ** 2);
      await expect(client.nodeGetVolumeStats('sized', path.join(rootDir, 'elsewhere'))).rejects.toMatchObject({ code: 'NOT_FOUND' });
      await expect(client.nodeExpandVolume({ ...fsVolume, volumeId: 'unknown', volumePath: target, newSizeBytes: 1 })).rejects.toMatchObject({ code: 'NOT_FOUND' });
      await client.nodeUnpublishVolume('sized', target);
    });

    it('publishes a block volume as a file of its size standing for the device', async () => {
      const staging = path.join(rootDir, 'plugins/kubernetes.io/csi/volumeDevices/staging/pv-b');
      const target = path.join(rootDir, 'plugins/kubernetes.io/csi/volumeDevices/publish/pv-b/pod-1');
      mkdirSync(staging, { recursive: true });
      mkdirSync(path.dirname(target), { recursive: true });
      const block = { accessMode: 'ReadWriteOnce', fsType: 'block' };
      await client.nodeStageVolume({ ...block, volumeId: 'b', stagingTargetPath: staging, volumeContext: { size: '8Mi' } });
      await client.nodePublishVolume({ ...block, volumeId: 'b', readOnly: false, stagingTargetPath: staging, targetPath: target });
      expect(statSync(target).size).toBe(8 * 1024 ** 2);
      expect((await client.nodeGetVolumeStats('b', target)).capacityBytes).toBe(8 * 1024 ** 2);
      await expect(client.nodePublishVolume({ ...fsVolume, volumeId: 'b', readOnly: false, stagingTargetPath: staging, targetPath: `${target}-fs` })).rejects.toMatchObject({
        code: 'FAILED_PRECONDITION',
        detail: 'volume "b" is a block volume, asked for as a filesystem',
      });
      await client.nodeExpandVolume({ ...block, volumeId: 'b', volumePath: target, newSizeBytes: 16 * 1024 ** 2 });
      expect(statSync(target).size).toBe(16 * 1024 ** 2);
      await client.nodeUnpublishVolume('b', target);
      expect(existsSync(target)).toBe(false);
      expect(lstatSync(path.join(csi.dataDir, 'volumes', 'b')).size).toBe(16 * 1024 ** 2);
    });

    it('refuses requests missing what the CSI spec requires, with the mock service words (the raw service: the agent\'s client checks these itself)', async () => {
      const call = rawNodeCall(csi.socketPath);
      const capability = { mount: { fsType: 'ext4' }, accessMode: { mode: 'SINGLE_NODE_WRITER' } };
      await expect(call('NodeStageVolume', { stagingTargetPath: '/x', volumeCapability: capability })).rejects.toMatchObject({ code: grpc.status.INVALID_ARGUMENT, details: 'Volume ID cannot be empty' });
      await expect(call('NodeStageVolume', { volumeId: 'v', volumeCapability: capability })).rejects.toMatchObject({ details: 'Staging Target Path cannot be empty' });
      await expect(call('NodeStageVolume', { volumeId: 'v', stagingTargetPath: '/x' })).rejects.toMatchObject({ details: 'Volume Capability cannot be empty' });
      await expect(call('NodeStageVolume', { volumeId: 'v', stagingTargetPath: '/x', volumeCapability: { accessMode: { mode: 'SINGLE_NODE_WRITER' } } })).rejects.toMatchObject({
        details: 'Volume Capability must have an access type: block or mount',
      });
      await expect(call('NodePublishVolume', { volumeId: 'v', volumeCapability: capability })).rejects.toMatchObject({ details: 'Target Path cannot be empty' });
      await expect(call('NodeGetVolumeStats', { volumeId: 'v' })).rejects.toMatchObject({ details: 'Volume Path cannot be empty' });
      await expect(call('NodeStageVolume', { volumeId: 'v', stagingTargetPath: '/x', volumeCapability: capability, volumeContext: { size: 'big' } })).rejects.toMatchObject({
        code: grpc.status.INVALID_ARGUMENT,
        details: 'volume_context size "big" is not a positive quantity such as 1Gi',
      });
      expect(await call('NodeUnstageVolume', { volumeId: 'never-staged', stagingTargetPath: '/x' })).toEqual({});
    });
  });
}

/** One call of the driver's Node service as any gRPC client would make it, none of the agent's checks in between. */
function rawNodeCall(socketPath: string): (rpc: string, request: object) => Promise<object> {
  const Client = grpc.makeGenericClientConstructor(csiServiceDefinition('Node'), 'Node');
  return (rpc, request) =>
    new Promise((resolve, reject) => {
      const client = new Client(`unix:${socketPath}`, grpc.credentials.createInsecure());
      const method = (client as unknown as Record<string, (r: object, done: (e: grpc.ServiceError | null, v?: object) => void) => void>)[rpc]!;
      method.call(client, request, (error, response) => {
        client.close();
        if (error) reject(error);
        else resolve(response!);
      });
    });
}

/** What the filesystem under `dir` has available, as statfs tells an unprivileged user. */
function statfsAvailable(dir: string): number {
  const [bavail, bsize] = execFileSync('stat', ['-f', '-c', '%a %S', dir], { encoding: 'utf8' }).trim().split(' ').map(Number);
  return bavail! * bsize!;
}
