import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CriClient, grpcTarget } from '../../src/runtime/cri/client.ts';
import { serviceDefinition } from '../../src/runtime/cri/wire.ts';
import { NamespaceMode, type PodSandboxConfig } from '../../src/runtime/types.ts';
import { containerConfig, networkNamespace, podSandboxConfig, rejection, take } from './support.ts';

// A timestamp whose nanosecond part would be lost in a float: proves ns→ms goes through integers.
const CREATED_NS = '1700000000123456789';
const CREATED_MS = 1_700_000_000_123;

// ------------------------------------------------------------------------------------------------
// What the test server reads from requests (camelCase plain objects, as wire.ts decodes them for a server).

interface SandboxConfigRequest {
  metadata: { name: string; uid: string; namespace: string; attempt: number };
  labels: Record<string, string>;
  portMappings: { protocol: string; containerPort: number }[];
  linux: { securityContext: { namespaceOptions: { network: string } | null } | null } | null;
}

interface ContainerFilterRequest {
  filter: { state: { state: string } | null; labelSelector: Record<string, string> } | null;
}

interface CreateContainerRequest {
  podSandboxId: string;
  config: { metadata: { name: string }; envs: { key: string; value: string }[]; image: { image: string } };
  sandboxConfig: SandboxConfigRequest | null;
}

/** Resolves each time the server sees a call that it will never answer. */
class Signal<T> {
  private resolveFn: (value: T) => void = () => undefined;
  readonly promise = new Promise<T>((resolve) => {
    this.resolveFn = resolve;
  });
  fire(value: T): void {
    this.resolveFn(value);
  }
}

interface ServerState {
  sandboxes: Map<string, SandboxConfigRequest>;
  createRequests: CreateContainerRequest[];
  stopContainerSeen: Signal<void>;
  stopContainerCancelled: Signal<void>;
  eventsOpened: Signal<void>;
  eventsCancelled: Signal<void>;
  eventsMode: 'unimplemented' | 'stream';
  /** StatusResponse.features as the runtime sends it; null: none (containerd 1.6). */
  statusFeatures: { supplementalGroupsPolicy: boolean } | null;
}

const WIRE_CONTAINERS = [
  { id: 'c1', podSandboxId: 's1', metadata: { name: 'app', attempt: 1 }, image: { image: 'nginx:1' }, imageRef: 'sha256:aa', state: 'CONTAINER_RUNNING', createdAt: CREATED_NS, labels: { app: 'web', role: 'main' }, annotations: { note: 'x' } },
  { id: 'c2', podSandboxId: 's1', metadata: { name: 'proxy', attempt: 0 }, image: { image: 'envoy:1' }, imageRef: 'sha256:bb', state: 'CONTAINER_EXITED', createdAt: '0', labels: { app: 'web', role: 'proxy' }, annotations: {} },
  { id: 'c3', podSandboxId: 's2', metadata: { name: 'db', attempt: 0 }, image: { image: 'pg:16' }, imageRef: 'sha256:cc', state: 'CONTAINER_RUNNING', createdAt: '0', labels: { app: 'db' }, annotations: {} },
];

function runtimeHandlers(state: ServerState): grpc.UntypedServiceImplementation {
  return {
    Version: (_call: grpc.ServerUnaryCall<unknown, unknown>, callback: grpc.sendUnaryData<object>) => {
      callback(null, { version: '0.1.0', runtimeName: 'test-runtime', runtimeVersion: '9.9', runtimeApiVersion: 'v1' });
    },
    RunPodSandbox: (call: grpc.ServerUnaryCall<{ config: SandboxConfigRequest }, unknown>, callback: grpc.sendUnaryData<object>) => {
      const id = `sb-${state.sandboxes.size + 1}`;
      state.sandboxes.set(id, call.request.config);
      callback(null, { podSandboxId: id });
    },
    PodSandboxStatus: (call: grpc.ServerUnaryCall<{ podSandboxId: string }, unknown>, callback: grpc.sendUnaryData<object>) => {
      const config = state.sandboxes.get(call.request.podSandboxId);
      if (config === undefined) {
        callback({ code: grpc.status.NOT_FOUND, details: `sandbox ${call.request.podSandboxId} not found` });
        return;
      }
      const networkMode = config.linux?.securityContext?.namespaceOptions?.network ?? 'POD';
      callback(null, {
        status: {
          id: call.request.podSandboxId,
          metadata: config.metadata,
          state: 'SANDBOX_NOTREADY',
          createdAt: CREATED_NS,
          network: { ip: '10.1.2.3', additionalIps: [{ ip: 'fd00::3' }] },
          linux: { namespaces: { options: { network: networkMode } } },
          labels: config.labels,
          annotations: { seen: 'yes' },
          runtimeHandler: 'runc',
        },
      });
    },
    CreateContainer: (call: grpc.ServerUnaryCall<CreateContainerRequest, unknown>, callback: grpc.sendUnaryData<object>) => {
      state.createRequests.push(call.request);
      callback(null, { containerId: 'new-container' });
    },
    StartContainer: () => {
      // Never answers: the client's deadline has to end the call.
    },
    StopContainer: (call: grpc.ServerUnaryCall<unknown, unknown>) => {
      call.on('cancelled', () => state.stopContainerCancelled.fire());
      state.stopContainerSeen.fire();
    },
    ListContainers: (call: grpc.ServerUnaryCall<ContainerFilterRequest, unknown>, callback: grpc.sendUnaryData<object>) => {
      const filter = call.request.filter;
      const containers = WIRE_CONTAINERS.filter(
        (c) =>
          (filter?.state == null || filter.state.state === c.state) &&
          Object.entries(filter?.labelSelector ?? {}).every(([k, v]) => c.labels[k as keyof typeof c.labels] === v),
      );
      callback(null, { containers });
    },
    Status: (_call: grpc.ServerUnaryCall<unknown, unknown>, callback: grpc.sendUnaryData<object>) => {
      callback(null, { status: { conditions: [{ type: 'RuntimeReady', status: true }] }, ...(state.statusFeatures ? { features: state.statusFeatures } : {}) });
    },
    ContainerStatus: (call: grpc.ServerUnaryCall<{ containerId: string }, unknown>, callback: grpc.sendUnaryData<object>) => {
      if (call.request.containerId === 'c2') {
        // As containerd 2.0 reports it: the process's uid, gid and supplemental groups.
        callback(null, { status: { id: 'c2', metadata: { name: 'proxy' }, state: 'CONTAINER_RUNNING', user: { linux: { uid: '1000', gid: '3000', supplementalGroups: ['3000', '2000', '50000'] } } } });
        return;
      }
      if (call.request.containerId !== 'c1') {
        callback({ code: grpc.status.NOT_FOUND, details: `container "${call.request.containerId}" not found` });
        return;
      }
      callback(null, {
        status: {
          id: 'c1',
          metadata: { name: 'app', attempt: 1 },
          state: 'CONTAINER_EXITED',
          createdAt: CREATED_NS,
          startedAt: '1700000001000000000',
          finishedAt: '1700000002999999999',
          exitCode: 137,
          image: { image: 'nginx:1' },
          imageRef: 'sha256:aa',
          reason: 'OOMKilled',
          message: 'out of memory',
          labels: { app: 'web' },
          annotations: { a: 'b' },
          logPath: '/var/log/pods/x/app/1.log',
        },
      });
    },
    ExecSync: (call: grpc.ServerUnaryCall<{ cmd: string[] }, unknown>, callback: grpc.sendUnaryData<object>) => {
      callback(null, { stdout: Buffer.from(call.request.cmd.join(' ')), stderr: Buffer.from([0xff, 0x00]), exitCode: 2 });
    },
    GetContainerEvents: (call: grpc.ServerWritableStream<unknown, unknown>) => {
      if (state.eventsMode === 'unimplemented') {
        call.emit('error', { code: grpc.status.UNIMPLEMENTED, details: 'unknown method GetContainerEvents' });
        return;
      }
      call.on('cancelled', () => state.eventsCancelled.fire());
      state.eventsOpened.fire();
      call.write({
        containerId: 'c1',
        containerEventType: 'CONTAINER_STARTED_EVENT',
        createdAt: CREATED_NS,
        podSandboxStatus: { id: 's1', metadata: { name: 'web', uid: 'u1', namespace: 'ns', attempt: 2 } },
      });
      call.write({ containerId: 'c2', containerEventType: 'CONTAINER_DELETED_EVENT', createdAt: '2000000' });
      // The stream stays open, as a runtime's would, until the client cancels it.
    },
  };
}

function imageHandlers(): grpc.UntypedServiceImplementation {
  return {
    ImageStatus: (call: grpc.ServerUnaryCall<{ image: { image: string } }, unknown>, callback: grpc.sendUnaryData<object>) => {
      if (call.request.image.image !== 'nginx:1') {
        callback(null, {});
        return;
      }
      callback(null, { image: { id: 'sha256:aa', repoTags: ['nginx:1'], repoDigests: ['nginx@sha256:dd'], size: '187654321' } });
    },
    PullImage: (call: grpc.ServerUnaryCall<{ image: { image: string } }, unknown>, callback: grpc.sendUnaryData<object>) => {
      callback(null, { imageRef: `sha256:ref-of-${call.request.image.image}` });
    },
    // As containerd 1.6 answers: its snapshotter's directory, no inode count, no container filesystem.
    ImageFsInfo: (_call: grpc.ServerUnaryCall<object, unknown>, callback: grpc.sendUnaryData<object>) => {
      callback(null, {
        imageFilesystems: [
          { timestamp: CREATED_NS, fsId: { mountpoint: '/var/lib/containerd/io.containerd.snapshotter.v1.overlayfs' }, usedBytes: { value: '987654321' } },
          { timestamp: CREATED_NS, usedBytes: { value: '0' }, inodesUsed: { value: '7' } },
        ],
      });
    },
  };
}

// ------------------------------------------------------------------------------------------------

let directory: string;
let socketPath: string;
let server: grpc.Server;
let client: CriClient;
let state: ServerState;

beforeAll(async () => {
  directory = mkdtempSync(join(tmpdir(), 'cri-client-'));
  socketPath = join(directory, 'cri.sock');
  state = {
    sandboxes: new Map(),
    createRequests: [],
    stopContainerSeen: new Signal(),
    stopContainerCancelled: new Signal(),
    eventsOpened: new Signal(),
    eventsCancelled: new Signal(),
    eventsMode: 'unimplemented',
    statusFeatures: null,
  };
  server = new grpc.Server();
  server.addService(serviceDefinition('RuntimeService'), runtimeHandlers(state));
  server.addService(serviceDefinition('ImageService'), imageHandlers());
  await new Promise<void>((resolve, reject) => {
    server.bindAsync(`unix://${socketPath}`, grpc.ServerCredentials.createInsecure(), (err) => (err ? reject(err) : resolve()));
  });
  client = new CriClient(`unix://${socketPath}`);
});

afterAll(() => {
  client.close();
  server.forceShutdown();
  rmSync(directory, { recursive: true, force: true });
});

function sandboxConfig(): PodSandboxConfig {
  return podSandboxConfig('web-0', {
    metadata: { name: 'web-0', uid: 'uid-1', namespace: 'shop', attempt: 3 },
    logDirectory: '/var/log/pods/shop_web-0_uid-1',
    portMappings: [{ protocol: 'UDP', containerPort: 53, hostPort: 0, hostIp: '' }],
    labels: { app: 'web' },
    linux: networkNamespace(NamespaceMode.NODE),
  });
}

describe('CriClient', () => {
  it('maps Version', async () => {
    expect(await client.version()).toEqual({
      version: '0.1.0',
      runtimeName: 'test-runtime',
      runtimeVersion: '9.9',
      runtimeApiVersion: 'v1',
    });
  });

  it('sends the sandbox config and maps PodSandboxStatus (ns→ms, enums, network, namespace mode)', async () => {
    const id = await client.runPodSandbox(sandboxConfig());
    const received = state.sandboxes.get(id);
    expect(received?.metadata).toEqual({ name: 'web-0', uid: 'uid-1', namespace: 'shop', attempt: 3 });
    expect(received?.portMappings).toEqual([expect.objectContaining({ protocol: 'UDP', containerPort: 53 })]);
    expect(received?.linux?.securityContext?.namespaceOptions?.network).toBe('NODE');

    const status = await client.podSandboxStatus(id);
    expect(status).toEqual({
      id,
      metadata: { name: 'web-0', uid: 'uid-1', namespace: 'shop', attempt: 3 },
      state: 'SANDBOX_NOTREADY',
      createdAt: CREATED_MS,
      labels: { app: 'web' },
      annotations: { seen: 'yes' },
      runtimeHandler: 'runc',
      network: { ip: '10.1.2.3', additionalIps: ['fd00::3'] },
      networkMode: NamespaceMode.NODE,
    });
  });

  it('passes the sandbox config along with CreateContainer', async () => {
    const config = containerConfig('app', {
      image: { image: 'nginx:1' },
      command: ['nginx'],
      envs: [{ key: 'MODE', value: 'prod' }],
    });
    expect(await client.createContainer('sb-1', config, sandboxConfig())).toBe('new-container');
    const request = state.createRequests.at(-1);
    expect(request?.podSandboxId).toBe('sb-1');
    expect(request?.config.envs).toEqual([{ key: 'MODE', value: 'prod' }]);
    expect(request?.config.image.image).toBe('nginx:1');
    expect(request?.sandboxConfig?.metadata.name).toBe('web-0');
  });

  it('sends ListContainers filters and maps the containers', async () => {
    const containers = await client.listContainers({ labelSelector: { app: 'web' }, state: 'CONTAINER_RUNNING' });
    expect(containers).toEqual([
      {
        id: 'c1',
        podSandboxId: 's1',
        metadata: { name: 'app', attempt: 1 },
        image: 'nginx:1',
        imageRef: 'sha256:aa',
        state: 'CONTAINER_RUNNING',
        createdAt: CREATED_MS,
        labels: { app: 'web', role: 'main' },
        annotations: { note: 'x' },
      },
    ]);
    const all = await client.listContainers();
    expect(all.map((c) => c.id)).toEqual(['c1', 'c2', 'c3']);
    const proxies = await client.listContainers({ labelSelector: { role: 'proxy' } });
    expect(proxies.map((c) => [c.id, c.state])).toEqual([['c2', 'CONTAINER_EXITED']]);
  });

  it('maps ContainerStatus timestamps to milliseconds and keeps reason and exit code', async () => {
    const status = await client.containerStatus('c1');
    expect(status).toMatchObject({
      state: 'CONTAINER_EXITED',
      createdAt: CREATED_MS,
      startedAt: 1_700_000_001_000,
      finishedAt: 1_700_000_002_999,
      exitCode: 137,
      reason: 'OOMKilled',
      message: 'out of memory',
      image: 'nginx:1',
      imageRef: 'sha256:aa',
      labels: { app: 'web' },
      logPath: '/var/log/pods/x/app/1.log',
    });
  });

  it("reads ContainerStatus.user when the runtime reports it, and leaves it out when it does not (containerd 1.6)", async () => {
    expect((await client.containerStatus('c2')).user).toEqual({ linux: { uid: 1000, gid: 3000, supplementalGroups: [3000, 2000, 50000] } });
    expect(await client.containerStatus('c1')).not.toHaveProperty('user');
  });

  it("reads the runtime's features from its Status, none when it sends none (containerd 1.6)", async () => {
    expect(await client.status()).toEqual({ conditions: [{ type: 'RuntimeReady', status: true, reason: '', message: '' }] });
    state.statusFeatures = { supplementalGroupsPolicy: true };
    expect((await client.status()).features).toEqual({ supplementalGroupsPolicy: true });
    state.statusFeatures = { supplementalGroupsPolicy: false };
    expect((await client.status()).features).toEqual({ supplementalGroupsPolicy: false });
    state.statusFeatures = null;
  });

  it('turns an error status into a CriError naming the call', async () => {
    const err = await rejection(client.containerStatus('missing'));
    expect(err).toMatchObject({ call: 'ContainerStatus', code: 'NOT_FOUND', detail: 'container "missing" not found' });
  });

  it('ends a call that is never answered at its deadline', async () => {
    const err = await rejection(client.startContainer('c1', { timeoutMs: 50 }));
    expect(err).toMatchObject({ call: 'StartContainer', code: 'DEADLINE_EXCEEDED' });
  });

  it('cancels the gRPC call when the signal aborts', async () => {
    const controller = new AbortController();
    const call = client.stopContainer('c1', 30, { signal: controller.signal });
    await state.stopContainerSeen.promise;
    controller.abort();
    expect(await rejection(call)).toMatchObject({ call: 'StopContainer', code: 'CANCELLED' });
    await state.stopContainerCancelled.promise;
  });

  it('does not send a call whose signal has already aborted', async () => {
    const err = await rejection(client.version({ signal: AbortSignal.abort() }));
    expect(err).toMatchObject({ call: 'Version', code: 'CANCELLED' });
  });

  it('maps ExecSync output bytes', async () => {
    const result = await client.execSync('c1', ['echo', 'hi'], 5);
    expect(result.stdout.toString()).toBe('echo hi');
    expect([...result.stderr]).toEqual([0xff, 0x00]);
    expect(result.exitCode).toBe(2);
  });

  it('returns null from ImageStatus when the runtime has no such image', async () => {
    expect(await client.imageStatus('absent:1')).toBeNull();
    expect(await client.imageStatus('nginx:1')).toEqual({
      id: 'sha256:aa',
      repoTags: ['nginx:1'],
      repoDigests: ['nginx@sha256:dd'],
      size: 187_654_321,
    });
    expect(await client.pullImage('nginx:1')).toBe('sha256:ref-of-nginx:1');
  });

  it('maps ImageFsInfo: each filesystem in ms, a value left out stays absent, 0 stays 0, no mountpoint none', async () => {
    expect(await client.imageFsInfo()).toEqual({
      imageFilesystems: [
        { timestamp: CREATED_MS, mountpoint: '/var/lib/containerd/io.containerd.snapshotter.v1.overlayfs', usedBytes: 987_654_321 },
        { timestamp: CREATED_MS, usedBytes: 0, inodesUsed: 7 },
      ],
      containerFilesystems: [],
    });
  });

  it('reports UNIMPLEMENTED from GetContainerEvents as a CriError', async () => {
    state.eventsMode = 'unimplemented';
    const iterator = client.containerEvents()[Symbol.asyncIterator]();
    const err = await rejection(iterator.next());
    expect(err).toMatchObject({ call: 'GetContainerEvents', code: 'UNIMPLEMENTED' });
  });

  it('opens the event stream at once, streams events and cancels the stream on abort', async () => {
    state.eventsMode = 'stream';
    const controller = new AbortController();
    const iterator = client.containerEvents({ signal: controller.signal })[Symbol.asyncIterator]();
    // Reaches the server before anything is read, so nothing sent meanwhile is missed.
    await state.eventsOpened.promise;
    const events = await take(iterator, 2);
    expect(events).toEqual([
      {
        containerId: 'c1',
        type: 'CONTAINER_STARTED_EVENT',
        createdAt: CREATED_MS,
        podSandboxMetadata: { name: 'web', uid: 'u1', namespace: 'ns', attempt: 2 },
      },
      { containerId: 'c2', type: 'CONTAINER_DELETED_EVENT', createdAt: 2 },
    ]);
    const waiting = iterator.next();
    controller.abort();
    expect(await rejection(waiting)).toMatchObject({ call: 'GetContainerEvents', code: 'CANCELLED' });
    await state.eventsCancelled.promise;
  });

  it('accepts a bare socket path and reports an unreachable runtime as UNAVAILABLE', async () => {
    const bare = new CriClient(socketPath);
    try {
      expect((await bare.version()).runtimeName).toBe('test-runtime');
    } finally {
      bare.close();
    }
    const absent = new CriClient(`unix://${join(directory, 'absent.sock')}`);
    try {
      expect(await rejection(absent.status({ timeoutMs: 5_000 }))).toMatchObject({ call: 'Status', code: 'UNAVAILABLE' });
    } finally {
      absent.close();
    }
  });
});

describe('grpcTarget', () => {
  it('normalises unix endpoints and rejects others', () => {
    expect(grpcTarget('unix:///run/containerd/containerd.sock')).toBe('unix:///run/containerd/containerd.sock');
    expect(grpcTarget('/run/containerd/containerd.sock')).toBe('unix:///run/containerd/containerd.sock');
    expect(() => grpcTarget('tcp://127.0.0.1:1234')).toThrow(/unsupported CRI endpoint/);
    expect(() => grpcTarget('unix://relative.sock')).toThrow(/unsupported CRI endpoint/);
  });
});
