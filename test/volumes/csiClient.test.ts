/**
 * statelet's CSI Node client against Kubernetes' own CSI mock driver run as a process
 * (test/csimock): every RPC of the client, the arguments the driver received (its call log), the
 * NodeGetCapabilities the kubelet makes before a stage, publish or expand, and injected errors
 * classified final or uncertain as csi_client.go isFinalError does. Also the mock's own parts a
 * registration test relies on: its registration socket (GetInfo, NotifyRegistrationStatus), its
 * sockets removed on SIGTERM and left on SIGKILL, and its bind-mount mode.
 */
import { existsSync } from 'node:fs';
import net from 'node:net';
import { mkdir, mkdtemp, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import protobuf from 'protobufjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GrpcChannel, type GrpcMethod } from '../../src/runtime/cri/channel.ts';
import { CsiNodeClient } from '../../src/volumes/csi/client.ts';
import { CsiError } from '../../src/volumes/csi/errors.ts';
import { publishTargetPath, stagingTargetPath } from '../../src/volumes/csi/paths.ts';
import { type CsiMock, type CsiMockCall, type CsiMockFault, startCsiMock } from '../support/csiMock.ts';
import { rootOrSkip } from '../support/smallFilesystem.ts';

const GIB_100 = String(100 * 1024 ** 3);

/** What the driver was asked, RPC by RPC, from the `since`th call on. */
async function rpcsSince(mock: CsiMock, since: number): Promise<CsiMockCall[]> {
  return (await mock.calls()).slice(since);
}

async function rejection(promise: Promise<unknown>): Promise<CsiError> {
  const err = await promise.then(
    () => {
      throw new Error('the call succeeded');
    },
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(CsiError);
  return err as CsiError;
}

describe('CsiNodeClient against the CSI mock driver', () => {
  let mock: CsiMock | null;
  let client: CsiNodeClient;
  let root: string;

  beforeAll(async () => {
    root = await mkdtemp(path.join(os.tmpdir(), 'statelet-csiclient-'));
    mock = await startCsiMock({
      rootDir: root,
      nodeId: 'node-a',
      nodeCapabilities: ['STAGE_UNSTAGE_VOLUME', 'GET_VOLUME_STATS', 'EXPAND_VOLUME', 'VOLUME_MOUNT_GROUP', 'SINGLE_NODE_MULTI_WRITER'],
      maxVolumesPerNode: 7,
      topology: { 'topology.mock.csi/zone': 'zone-1' },
      volumes: 5,
    });
    if (mock) client = new CsiNodeClient(mock.csiSocket);
  });
  afterAll(async () => {
    await mock?.stop();
    await rm(root, { recursive: true, force: true });
  });

  it('reads the node info and capabilities', async ({ skip }) => {
    if (!mock) return skip();
    expect(await client.nodeGetInfo()).toEqual({ nodeId: 'node-a', maxVolumesPerNode: 7, accessibleTopology: { 'topology.mock.csi/zone': 'zone-1' } });
    // The mock's UNKNOWN entry is skipped.
    expect((await client.nodeGetCapabilities()).sort()).toEqual(['EXPAND_VOLUME', 'GET_VOLUME_STATS', 'SINGLE_NODE_MULTI_WRITER', 'STAGE_UNSTAGE_VOLUME', 'VOLUME_MOUNT_GROUP']);
    expect(await client.supports('VOLUME_CONDITION')).toBe(false);
  });

  it('stages, publishes, reads stats of, expands, unpublishes and unstages a volume with the arguments given', async ({ skip }) => {
    if (!mock) return skip();
    const staging = stagingTargetPath(root, mock.driverName, '4');
    const target = publishTargetPath(root, 'pod-uid-1', 'pv-4');
    // The kubelet makes the staging directory and the target's parent; the driver makes `mount`.
    await mkdir(staging, { recursive: true });
    await mkdir(path.dirname(target), { recursive: true });
    const since = (await mock.calls()).length;

    await client.nodeStageVolume({
      volumeId: '4',
      stagingTargetPath: staging,
      accessMode: 'ReadWriteOnce',
      fsType: 'ext4',
      mountOptions: ['noatime'],
      secrets: { password: 's3cret' },
      volumeContext: { tier: 'gold' },
      fsGroup: 2000,
    });
    await client.nodePublishVolume({
      volumeId: '4',
      stagingTargetPath: staging,
      targetPath: target,
      readOnly: false,
      accessMode: 'ReadWriteOncePod',
      fsType: 'ext4',
      volumeContext: { 'csi.storage.k8s.io/pod.name': 'web-0' },
    });
    expect(existsSync(target)).toBe(true);
    expect(await client.nodeGetVolumeStats('4', target)).toEqual({ availableBytes: 0, capacityBytes: Number(GIB_100), usedBytes: 0, inodesFree: 0, inodes: 0, inodesUsed: 0 });
    expect(await client.nodeExpandVolume({ volumeId: '4', volumePath: target, stagingTargetPath: staging, newSizeBytes: 2 * 1024 ** 3, accessMode: 'ReadWriteOnce', fsType: 'ext4' })).toBe(2 * 1024 ** 3);
    await client.nodeUnpublishVolume('4', target);
    expect(existsSync(target)).toBe(false);
    await client.nodeUnstageVolume('4', staging);

    const calls = await rpcsSince(mock, since);
    // csi_client.go: stage, publish and expand each ask for the capabilities first.
    expect(calls.map((call) => call.rpc)).toEqual([
      'NodeGetCapabilities',
      'NodeStageVolume',
      'NodeGetCapabilities',
      'NodePublishVolume',
      'NodeGetVolumeStats',
      'NodeGetCapabilities',
      'NodeExpandVolume',
      'NodeUnpublishVolume',
      'NodeUnstageVolume',
    ]);
    expect(calls.every((call) => call.error === undefined)).toBe(true);
    const byRpc = (rpc: string): CsiMockCall => calls.find((call) => call.rpc === rpc)!;
    expect(byRpc('NodeStageVolume').request).toEqual({
      volume_id: '4',
      staging_target_path: staging,
      volume_capability: { mount: { fs_type: 'ext4', mount_flags: ['noatime'], volume_mount_group: '2000' }, access_mode: { mode: 'SINGLE_NODE_MULTI_WRITER' } },
      secrets: { password: 's3cret' },
      volume_context: { tier: 'gold' },
    });
    expect(byRpc('NodePublishVolume').request).toEqual({
      volume_id: '4',
      staging_target_path: staging,
      target_path: target,
      volume_capability: { mount: { fs_type: 'ext4' }, access_mode: { mode: 'SINGLE_NODE_SINGLE_WRITER' } },
      volume_context: { 'csi.storage.k8s.io/pod.name': 'web-0' },
    });
    expect(byRpc('NodeGetVolumeStats').request).toEqual({ volume_id: '4', volume_path: target });
    expect(byRpc('NodeExpandVolume').request).toEqual({
      volume_id: '4',
      volume_path: target,
      staging_target_path: staging,
      capacity_range: { required_bytes: String(2 * 1024 ** 3) },
      volume_capability: { mount: { fs_type: 'ext4' }, access_mode: { mode: 'SINGLE_NODE_MULTI_WRITER' } },
    });
    expect(byRpc('NodeUnpublishVolume').request).toEqual({ volume_id: '4', target_path: target });
    expect(byRpc('NodeUnstageVolume').request).toEqual({ volume_id: '4', staging_target_path: staging });
  });

  it('publishes and unpublishes an inline volume the driver does not hold, without a stage', async ({ skip }) => {
    if (!mock) return skip();
    const target = publishTargetPath(root, 'pod-uid-4', 'scratch');
    await mkdir(path.dirname(target), { recursive: true });
    const since = (await mock.calls()).length;
    const inline = { volumeId: 'csi-inline-a', targetPath: target, readOnly: false, accessMode: 'ReadWriteOnce', fsType: '', volumeContext: { 'csi.storage.k8s.io/ephemeral': 'true', size: '1Gi' } };
    await client.nodePublishVolume(inline);
    await client.nodeUnpublishVolume('csi-inline-a', target);
    // A volume the driver holds cannot be published as inline.
    expect(await rejection(client.nodePublishVolume({ ...inline, volumeId: '3' }))).toMatchObject({ code: 'ALREADY_EXISTS', final: true });
    const calls = await rpcsSince(mock, since);
    expect(calls.map((call) => [call.rpc, call.error?.name ?? null])).toEqual([
      ['NodeGetCapabilities', null],
      ['NodePublishVolume', null],
      ['NodeUnpublishVolume', null],
      ['NodeGetCapabilities', null],
      ['NodePublishVolume', 'AlreadyExists'],
    ]);
    expect(calls[1]!.request).toMatchObject({ volume_id: 'csi-inline-a', target_path: target, volume_context: { 'csi.storage.k8s.io/ephemeral': 'true', size: '1Gi' } });
  });

  it('asks for a raw block volume with fsType "block"', async ({ skip }) => {
    if (!mock) return skip();
    const staging = stagingTargetPath(root, mock.driverName, '5');
    await mkdir(staging, { recursive: true });
    const since = (await mock.calls()).length;
    await client.nodeStageVolume({ volumeId: '5', stagingTargetPath: staging, accessMode: 'ReadOnlyMany', fsType: 'block' });
    await client.nodeUnstageVolume('5', staging);
    const stage = (await rpcsSince(mock, since)).find((call) => call.rpc === 'NodeStageVolume')!;
    expect(stage.request.volume_capability).toEqual({ block: {}, access_mode: { mode: 'MULTI_NODE_READER_ONLY' } });
  });

  it("rejects with the driver's status, final when the operation is over (FailedPrecondition, NotFound)", async ({ skip }) => {
    if (!mock) return skip();
    const target = publishTargetPath(root, 'pod-uid-2', 'pv-3');
    await mkdir(path.dirname(target), { recursive: true });
    // Not staged: the mock refuses a publish of a volume it has not staged there.
    const notStaged = await rejection(client.nodePublishVolume({ volumeId: '3', stagingTargetPath: '/nowhere', targetPath: target, readOnly: false, accessMode: 'ReadWriteOnce', fsType: '' }));
    expect(notStaged).toMatchObject({ rpc: 'NodePublishVolume', code: 'FAILED_PRECONDITION', final: true });
    expect(notStaged.message).toBe('rpc error: code = FailedPrecondition desc = volume "3" must be staged before publishing');
    const staging = stagingTargetPath(root, mock.driverName, '3');
    await mkdir(staging, { recursive: true });
    await client.nodeStageVolume({ volumeId: '3', stagingTargetPath: staging, accessMode: 'ReadWriteOnce', fsType: '' });
    const elsewhere = await rejection(client.nodePublishVolume({ volumeId: '3', stagingTargetPath: '/nowhere', targetPath: target, readOnly: false, accessMode: 'ReadWriteOnce', fsType: '' }));
    expect(elsewhere).toMatchObject({ code: 'INVALID_ARGUMENT', final: true, detail: `volume "3" was staged at [${staging}], not "/nowhere"` });
    await client.nodeUnstageVolume('3', staging);
    const unknown = await rejection(client.nodeUnstageVolume('no-such-volume', '/nowhere'));
    expect(unknown).toMatchObject({ code: 'NOT_FOUND', final: true, message: 'rpc error: code = NotFound desc = no-such-volume' });
  });

  it('classifies injected errors: DeadlineExceeded uncertain, Internal final, each for as many calls as asked', async ({ skip }) => {
    if (!mock) return skip();
    const staging = stagingTargetPath(root, mock.driverName, '2');
    await mkdir(staging, { recursive: true });
    const stage = (): Promise<void> => client.nodeStageVolume({ volumeId: '2', stagingTargetPath: staging, accessMode: 'ReadWriteOnce', fsType: 'xfs' });
    await mock.fail([
      { method: 'NodeStageVolume', code: 4, message: 'slow disk', times: 1 },
      { method: '/csi.v1.Node/NodeStageVolume', code: 13, times: 1 },
    ]);
    const since = (await mock.calls()).length;

    const timedOut = await rejection(stage());
    expect(timedOut).toMatchObject({ rpc: 'NodeStageVolume', code: 'DEADLINE_EXCEEDED', final: false, message: 'rpc error: code = DeadlineExceeded desc = slow disk' });
    const internal = await rejection(stage());
    expect(internal).toMatchObject({ code: 'INTERNAL', final: true, message: 'rpc error: code = Internal desc = injected by the csimock fail file' });
    await stage();

    expect((await mock.faults()).map((rule) => rule.times)).toEqual([0, 0]);
    const stages = (await rpcsSince(mock, since)).filter((call) => call.rpc === 'NodeStageVolume');
    expect(stages.map((call) => call.error ?? null)).toEqual([
      { code: 4, name: 'DeadlineExceeded', message: 'slow disk', injected: true },
      { code: 13, name: 'Internal', message: 'injected by the csimock fail file', injected: true },
      null,
    ]);
    await client.nodeUnstageVolume('2', staging);
  });

  it('an error injected after the call leaves its effect: the stage the caller heard fail was done', async ({ skip }) => {
    if (!mock) return skip();
    const staging = stagingTargetPath(root, mock.driverName, '1');
    const target = publishTargetPath(root, 'pod-uid-3', 'pv-1');
    await mkdir(staging, { recursive: true });
    await mkdir(path.dirname(target), { recursive: true });
    await mock.fail([{ method: 'NodeStageVolume', code: 14, times: 1, after: true }]);
    const unavailable = await rejection(client.nodeStageVolume({ volumeId: '1', stagingTargetPath: staging, accessMode: 'ReadWriteOnce', fsType: '' }));
    expect(unavailable).toMatchObject({ code: 'UNAVAILABLE', final: false });
    // The driver staged it: a publish, which wants it staged, goes through.
    await client.nodePublishVolume({ volumeId: '1', stagingTargetPath: staging, targetPath: target, readOnly: false, accessMode: 'ReadWriteOnce', fsType: '' });
    await client.nodeUnpublishVolume('1', target);
    await client.nodeUnstageVolume('1', staging);
  });

  it('fails every call, saying why, while its fail file holds a rule it does not understand', async ({ skip }) => {
    if (!mock) return skip();
    await mock.fail([{ method: 'NodeGetInfo', code: 14, delayMs: 5 } as CsiMockFault]);
    const broken = await rejection(client.nodeGetCapabilities());
    expect(broken).toMatchObject({ code: 'INTERNAL', final: true });
    expect(broken.detail).toMatch(/csimock fail file .*fail\.json: json: unknown field "delayMs"/);
    await mock.fail([]);
    expect((await client.nodeGetInfo()).nodeId).toBe('node-a');
  });

  it('refuses arguments the kubelet refuses before any call, as final', async ({ skip }) => {
    if (!mock) return skip();
    const since = (await mock.calls()).length;
    const missing = await rejection(client.nodePublishVolume({ volumeId: '', targetPath: '/t', readOnly: false, accessMode: 'ReadWriteOnce', fsType: '' }));
    expect(missing).toMatchObject({ rpc: 'NodePublishVolume', code: null, final: true, message: 'missing volume id' });
    expect(await rejection(client.nodeExpandVolume({ volumeId: '1', volumePath: '/t', newSizeBytes: -1, accessMode: 'ReadWriteOnce', fsType: '' }))).toMatchObject({ message: 'size can not be less than 0' });
    expect(await rpcsSince(mock, since)).toEqual([]);
  });

  it('cancels a call whose signal is aborted: uncertain', async ({ skip }) => {
    if (!mock) return skip();
    const aborted = await rejection(client.nodeGetInfo({ signal: AbortSignal.abort() }));
    expect(aborted).toMatchObject({ code: 'CANCELLED', final: false });
  });
});

describe('CsiNodeClient and a driver that goes away', () => {
  it('dials per call: a stopped driver is UNAVAILABLE (uncertain), a restarted one answers the same client', async ({ skip }) => {
    const root = await mkdtemp(path.join(os.tmpdir(), 'statelet-csiclient-'));
    const first = await startCsiMock({ rootDir: root, nodeId: 'node-b' });
    if (!first) return skip();
    let second: CsiMock | null = null;
    try {
      const client = new CsiNodeClient(`unix://${first.csiSocket}`);
      expect((await client.nodeGetInfo()).nodeId).toBe('node-b');
      await first.stop();
      const gone = await rejection(client.nodeGetInfo());
      expect(gone).toMatchObject({ rpc: 'NodeGetInfo', code: 'UNAVAILABLE', final: false });
      second = await startCsiMock({ rootDir: root, nodeId: 'node-b2' });
      expect((await client.nodeGetInfo()).nodeId).toBe('node-b2');
    } finally {
      await first.stop();
      await second?.stop();
      await rm(root, { recursive: true, force: true });
    }
  });

  it("answers UNIMPLEMENTED (final) for an RPC of a capability it does not have, and maps access modes without SINGLE_NODE_MULTI_WRITER", async ({ skip }) => {
    const mock = await startCsiMock({ nodeCapabilities: ['STAGE_UNSTAGE_VOLUME'] });
    if (!mock) return skip();
    try {
      const client = new CsiNodeClient(mock.csiSocket);
      expect(await client.nodeGetCapabilities()).toEqual(['STAGE_UNSTAGE_VOLUME']);
      expect(await rejection(client.nodeGetVolumeStats('1', '/t'))).toMatchObject({ code: 'UNIMPLEMENTED', final: true });
      expect(await rejection(client.nodeExpandVolume({ volumeId: '1', volumePath: '/t', newSizeBytes: 1, accessMode: 'ReadWriteOnce', fsType: '' }))).toMatchObject({ code: 'UNIMPLEMENTED' });
      const staging = stagingTargetPath(mock.rootDir, mock.driverName, '1');
      await mkdir(staging, { recursive: true });
      await client.nodeStageVolume({ volumeId: '1', stagingTargetPath: staging, accessMode: 'ReadWriteOnce', fsType: '' });
      const stage = (await mock.calls()).find((call) => call.rpc === 'NodeStageVolume')!;
      expect(stage.request.volume_capability).toEqual({ mount: {}, access_mode: { mode: 'SINGLE_NODE_WRITER' } });
    } finally {
      await mock.stop();
    }
  });
});

describe('CsiNodeClient and a misbehaving socket', () => {
  /** A unix socket whose every connection gets `answer` (nothing: left hanging). */
  async function serveSocket(answer: (socket: net.Socket) => void): Promise<{ path: string; close(): Promise<void> }> {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'statelet-csisock-'));
    const socketPath = path.join(dir, 'csi.sock');
    const sockets = new Set<net.Socket>();
    const server = net.createServer((socket) => {
      sockets.add(socket);
      socket.on('error', () => {});
      answer(socket);
    });
    await new Promise<void>((resolve) => server.listen(socketPath, resolve));
    return {
      path: socketPath,
      close: async () => {
        for (const socket of sockets) socket.destroy();
        await new Promise((resolve) => server.close(resolve));
        await rm(dir, { recursive: true, force: true });
      },
    };
  }

  it('gives up on a driver that never answers at the deadline: DEADLINE_EXCEEDED, uncertain', async () => {
    const socket = await serveSocket(() => {});
    try {
      const client = new CsiNodeClient(socket.path, { timeoutMs: 50 });
      expect(await rejection(client.nodeGetInfo())).toMatchObject({ rpc: 'NodeGetInfo', code: 'DEADLINE_EXCEEDED', final: false });
      expect(await rejection(client.nodeUnpublishVolume('1', '/t', { timeoutMs: 30 }))).toMatchObject({ code: 'DEADLINE_EXCEEDED' });
    } finally {
      await socket.close();
    }
  });

  it('reports a socket that answers garbage as UNAVAILABLE, uncertain, without throwing elsewhere', async () => {
    const socket = await serveSocket((conn) => conn.end('HTTP/1.1 400 Bad Request\r\n\r\nnot gRPC'));
    try {
      const client = new CsiNodeClient(socket.path);
      expect(await rejection(client.nodeGetInfo())).toMatchObject({ rpc: 'NodeGetInfo', code: 'UNAVAILABLE', final: false });
    } finally {
      await socket.close();
    }
  });

  it('refuses an endpoint that is not a unix socket path', () => {
    expect(() => new CsiNodeClient('tcp://127.0.0.1:9000')).toThrow('unsupported CSI endpoint "tcp://127.0.0.1:9000": want an absolute unix socket path');
  });
});

describe('the mock with attach (PUBLISH_UNPUBLISH_VOLUME)', () => {
  it("wants the VolumeAttachment's device in the publish context of a stage", async ({ skip }) => {
    const mock = await startCsiMock({ attach: true });
    if (!mock) return skip();
    try {
      const client = new CsiNodeClient(mock.csiSocket);
      const staging = stagingTargetPath(mock.rootDir, mock.driverName, '1');
      await mkdir(staging, { recursive: true });
      const stage = { volumeId: '1', stagingTargetPath: staging, accessMode: 'ReadWriteOnce', fsType: 'ext4' };
      expect(await rejection(client.nodeStageVolume(stage))).toMatchObject({ code: 'INVALID_ARGUMENT', final: true, detail: "stage volume info 'device' key required" });
      await client.nodeStageVolume({ ...stage, publishContext: { device: '/dev/mock-1' } });
      const stages = (await mock.calls()).filter((call) => call.rpc === 'NodeStageVolume');
      expect(stages[1]!.request.publish_context).toEqual({ device: '/dev/mock-1' });
    } finally {
      await mock.stop();
    }
  });
});

// The registration protocol (k8s.io/kubelet/pkg/apis/pluginregistration/v1 api.proto), for the
// mock's registration socket; the kubelet side is the plugin manager's.
const REGISTRATION = protobuf.parse(`
  syntax = "proto3";
  package pluginregistration;
  message PluginInfo { string type = 1; string name = 2; string endpoint = 3; repeated string supported_versions = 4; }
  message RegistrationStatus { bool plugin_registered = 1; string error = 2; }
  message RegistrationStatusResponse {}
  message InfoRequest {}
`).root;

function registrationMethod<Response>(rpc: string, requestType: string, responseType: string): GrpcMethod<Response> {
  const request = REGISTRATION.lookupType(`pluginregistration.${requestType}`);
  const response = REGISTRATION.lookupType(`pluginregistration.${responseType}`);
  return {
    path: `/pluginregistration.Registration/${rpc}`,
    serialize: (value) => Buffer.from(request.encode(request.fromObject(value)).finish()),
    deserialize: (bytes) => response.toObject(response.decode(bytes), { defaults: true }) as Response,
  };
}

describe("the mock's registration socket", () => {
  it('answers GetInfo as node-driver-registrar does, and is removed on SIGTERM', async ({ skip }) => {
    const mock = await startCsiMock({ driverName: 'csi.example.com' });
    if (!mock) return skip();
    try {
      expect(path.basename(mock.registrationSocket)).toBe('csi.example.com-reg.sock');
      expect(await readdir(path.join(mock.rootDir, 'plugins_registry'))).toEqual(['csi.example.com-reg.sock']);
      const channel = new GrpcChannel({ path: mock.registrationSocket }, { maxReceiveMessageBytes: 1 << 20 });
      try {
        const info = await channel.unary(registrationMethod<object>('GetInfo', 'InfoRequest', 'PluginInfo'), {}, { timeoutMs: 5000 });
        expect(info).toEqual({ type: 'CSIPlugin', name: 'csi.example.com', endpoint: mock.csiSocket, supportedVersions: ['1.0.0'] });
        await channel.unary(registrationMethod<object>('NotifyRegistrationStatus', 'RegistrationStatus', 'RegistrationStatusResponse'), { pluginRegistered: true }, { timeoutMs: 5000 });
      } finally {
        channel.close();
      }
      expect((await mock.calls()).map((call) => call.method)).toEqual(['/pluginregistration.Registration/GetInfo', '/pluginregistration.Registration/NotifyRegistrationStatus']);
      await mock.stop();
      expect(await mock.exited).toEqual({ code: 0, signal: null });
      expect(existsSync(mock.registrationSocket)).toBe(false);
      expect(existsSync(mock.csiSocket)).toBe(false);
    } finally {
      await mock.stop();
    }
  });

  it('exits 1 when told the registration failed, and leaves its sockets behind when killed', async ({ skip }) => {
    const mock = await startCsiMock();
    if (!mock) return skip();
    try {
      const channel = new GrpcChannel({ path: mock.registrationSocket }, { maxReceiveMessageBytes: 1 << 20 });
      const notified = channel
        .unary(registrationMethod<object>('NotifyRegistrationStatus', 'RegistrationStatus', 'RegistrationStatusResponse'), { pluginRegistered: false, error: 'RegisterPlugin error -- plugin validation failed' }, { timeoutMs: 5000 })
        .catch((err: unknown) => err);
      expect(await mock.exited).toEqual({ code: 1, signal: null });
      channel.close();
      // It exits without answering, as the registrar does.
      expect(await notified).toMatchObject({ code: 'UNAVAILABLE' });
      expect(mock.output()).toContain('Registration process failed with error: RegisterPlugin error -- plugin validation failed, restarting registration container.');
      const [call] = await mock.calls();
      // protojson leaves out fields at their default: plugin_registered=false is not written.
      expect(call).toMatchObject({ rpc: 'NotifyRegistrationStatus', request: { error: 'RegisterPlugin error -- plugin validation failed' } });
      expect(call!.request).not.toHaveProperty('plugin_registered');
      expect(call!.exit).toMatch(/exiting with status 1/);
      // os.Exit: nothing removed the sockets.
      expect(existsSync(mock.registrationSocket)).toBe(true);
    } finally {
      await mock.stop();
    }
    const killed = await startCsiMock();
    if (!killed) return;
    await killed.kill();
    expect(existsSync(killed.registrationSocket)).toBe(true);
    await killed.stop();
  });
});

describe('the mock in bind-mount mode', () => {
  it('publishes a directory a pod writes through, kept after unpublish, and answers stats from its filesystem', async ({ skip }) => {
    if (!rootOrSkip('the CSI mock bind-mount test')) return skip();
    const mock = await startCsiMock({ bindMounts: true, nodeCapabilities: ['STAGE_UNSTAGE_VOLUME', 'GET_VOLUME_STATS'] });
    if (!mock) return skip();
    try {
      const client = new CsiNodeClient(mock.csiSocket);
      const staging = stagingTargetPath(mock.rootDir, mock.driverName, '1');
      const target = publishTargetPath(mock.rootDir, 'pod-uid-9', 'pv-1');
      await mkdir(staging, { recursive: true });
      await mkdir(path.dirname(target), { recursive: true });
      await client.nodeStageVolume({ volumeId: '1', stagingTargetPath: staging, accessMode: 'ReadWriteOnce', fsType: '' });
      await client.nodePublishVolume({ volumeId: '1', stagingTargetPath: staging, targetPath: target, readOnly: false, accessMode: 'ReadWriteOnce', fsType: '' });
      expect(await readFile('/proc/self/mountinfo', 'utf8')).toContain(` ${target} `);
      await writeFile(path.join(target, 'data.txt'), 'written by the pod');
      const stats = await client.nodeGetVolumeStats('1', target);
      expect(stats.capacityBytes).toBeGreaterThan(0);
      expect(stats.usedBytes + stats.availableBytes).toBeLessThanOrEqual(stats.capacityBytes);
      expect(stats.inodes).toBeGreaterThan(0);
      expect(stats.inodesUsed + stats.inodesFree).toBe(stats.inodes);

      // A second pod's read-only publish of the same volume sees the file and cannot write.
      const readOnlyTarget = publishTargetPath(mock.rootDir, 'pod-uid-10', 'pv-1');
      await mkdir(path.dirname(readOnlyTarget), { recursive: true });
      await client.nodePublishVolume({ volumeId: '1', stagingTargetPath: staging, targetPath: readOnlyTarget, readOnly: true, accessMode: 'ReadOnlyMany', fsType: '' });
      expect(await readFile(path.join(readOnlyTarget, 'data.txt'), 'utf8')).toBe('written by the pod');
      await expect(writeFile(path.join(readOnlyTarget, 'other.txt'), 'x')).rejects.toMatchObject({ code: 'EROFS' });
      await client.nodeUnpublishVolume('1', readOnlyTarget);

      await client.nodeUnpublishVolume('1', target);
      expect(await readFile('/proc/self/mountinfo', 'utf8')).not.toContain(` ${target} `);
      expect(existsSync(target)).toBe(false);
      expect(await readFile(path.join(mock.stateDir!, '1', 'data.txt'), 'utf8')).toBe('written by the pod');
      const publish = (await mock.calls()).find((call) => call.rpc === 'NodePublishVolume')!;
      expect(publish.bindMount).toEqual({ source: path.join(mock.stateDir!, '1'), target, mounted: true });
      await client.nodeUnstageVolume('1', staging);

      // An inline volume: not staged, its target made by the driver.
      const inlineTarget = publishTargetPath(mock.rootDir, 'pod-uid-11', 'scratch');
      await mkdir(path.dirname(inlineTarget), { recursive: true });
      const inline = { volumeId: 'csi-inline-1', targetPath: inlineTarget, readOnly: false, accessMode: 'ReadWriteOnce', fsType: '', volumeContext: { 'csi.storage.k8s.io/ephemeral': 'true' } };
      await client.nodePublishVolume(inline);
      await writeFile(path.join(inlineTarget, 'scratch.txt'), 'inline');
      expect(await readFile(path.join(mock.stateDir!, 'csi-inline-1', 'scratch.txt'), 'utf8')).toBe('inline');
      await client.nodeUnpublishVolume('csi-inline-1', inlineTarget);
      expect(await readFile('/proc/self/mountinfo', 'utf8')).not.toContain(` ${inlineTarget} `);
    } finally {
      await mock.stop();
    }
  });
});
