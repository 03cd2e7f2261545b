/**
 * The `sim://` runtime: a real CRI v1 gRPC server on a unix socket, backed by `SimEngine`. The
 * agent talks to it with the same `CriClient` it uses for containerd, so the whole client path
 * (serialisation, status codes, streaming) is exercised. This module only translates between
 * the wire shapes of `cri/api.proto` and the engine; behaviour lives in `engine.ts`.
 */

import { mkdir, unlink } from 'node:fs/promises';
import { dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import {
  NamespaceMode,
  type Container,
  type ContainerConfig,
  type ContainerFilter,
  type ContainerState,
  type ContainerStatus,
  type ImageInfo,
  type KeyValueMap,
  type PodSandbox,
  type PodSandboxConfig,
  type PodSandboxFilter,
  type PodSandboxMetadata,
  type PodSandboxStatus,
  type PortMapping,
  type SandboxState,
} from '../types.ts';
import { SimEngine, type SimContainerEvent, type SimRuntimeOptions } from './engine.ts';
import { SimError } from './errors.ts';

export interface SimRuntimeServerOptions extends SimRuntimeOptions {
  /** Filesystem path of the unix socket to listen on; a stale socket file there is removed. */
  socketPath: string;
  /** Serve an existing engine instead of creating one from the options. */
  engine?: SimEngine;
}

export interface SimRuntime {
  /** `unix://<socketPath>`, ready for `CriClient`. */
  endpoint: string;
  engine: SimEngine;
  /** Stops every simulated container's timers, ends event streams and shuts the server down. */
  close(): Promise<void>;
}

/** Must decode the way `cri/client.ts` encodes: camelCase fields, int64 as strings, enum names. */
const LOADER_OPTIONS: protoLoader.Options = {
  keepCase: false,
  longs: String,
  enums: String,
  defaults: true,
  oneofs: true,
};

const PROTO_PATH = fileURLToPath(new URL('../cri/api.proto', import.meta.url));

export async function startSimRuntime(options: SimRuntimeServerOptions): Promise<SimRuntime> {
  const { socketPath, engine: given, ...engineOptions } = options;
  const engine = given ?? new SimEngine(engineOptions);
  const definition = await protoLoader.load(PROTO_PATH, LOADER_OPTIONS);
  const server = new grpc.Server();
  const eventStreams = new Set<grpc.ServerWritableStream<unknown, object>>();
  server.addService(serviceDefinition(definition, 'RuntimeService'), runtimeHandlers(engine, eventStreams));
  server.addService(serviceDefinition(definition, 'ImageService'), imageHandlers(engine));

  await mkdir(dirname(socketPath), { recursive: true });
  await removeStaleSocket(socketPath);
  const endpoint = `unix://${socketPath}`;
  await new Promise<void>((resolve, reject) => {
    server.bindAsync(endpoint, grpc.ServerCredentials.createInsecure(), (error) => (error ? reject(error) : resolve()));
  });

  let closing: Promise<void> | null = null;
  const close = (): Promise<void> => {
    closing ??= (async () => {
      await engine.close();
      for (const stream of eventStreams) stream.end();
      eventStreams.clear();
      await new Promise<void>((resolve) => {
        // Unary calls still waiting (a StopContainer in its grace period) must not hold shutdown.
        const force = setTimeout(() => server.forceShutdown(), 1000);
        server.tryShutdown(() => {
          clearTimeout(force);
          resolve();
        });
      });
      await removeStaleSocket(socketPath);
    })();
    return closing;
  };
  return { endpoint, engine, close };
}

async function removeStaleSocket(path: string): Promise<void> {
  try {
    await unlink(path);
  } catch (error) {
    if (!(error instanceof Error && 'code' in error && error.code === 'ENOENT')) throw error;
  }
}

function serviceDefinition(definition: protoLoader.PackageDefinition, name: string): grpc.ServiceDefinition {
  const service = definition[`runtime.v1.${name}`];
  if (service === undefined || 'format' in service) throw new Error(`api.proto declares no service runtime.v1.${name}`);
  return service;
}

// ------------------------------------------------------------------------------------------------
// Errors and handler plumbing

function toServiceError(error: unknown): Partial<grpc.StatusObject> {
  if (error instanceof SimError) return { code: grpc.status[error.code], details: error.message };
  return { code: grpc.status.INTERNAL, details: error instanceof Error ? error.message : String(error) };
}

/**
 * Wraps an engine call as a unary handler. The request's static type is asserted here, once:
 * proto-loader decodes against our schema with `defaults: true`, so every declared field exists.
 */
function unary<Req>(handler: (request: Req) => object | Promise<object>): grpc.handleUnaryCall<unknown, object> {
  return (call, callback) => {
    Promise.resolve()
      .then(() => handler(call.request as Req))
      .then(
        (response) => callback(null, response),
        (error: unknown) => callback(toServiceError(error)),
      );
  };
}

function invalid(message: string): SimError {
  return new SimError('INVALID_ARGUMENT', message);
}

// ------------------------------------------------------------------------------------------------
// Wire shapes of requests (as decoded with LOADER_OPTIONS)

type WireEnum = string | number;
type WireInt64 = string | number;

interface WireSandboxMetadata {
  name: string;
  uid: string;
  namespace: string;
  attempt: number;
}

interface WireNamespaceOption {
  network: WireEnum;
  pid: WireEnum;
  ipc: WireEnum;
}

interface WireSandboxConfig {
  metadata: WireSandboxMetadata | null;
  hostname: string;
  logDirectory: string;
  dnsConfig: { servers: string[]; searches: string[]; options: string[] } | null;
  portMappings: { protocol: WireEnum; containerPort: number; hostPort: number; hostIp: string }[];
  labels: KeyValueMap;
  annotations: KeyValueMap;
  linux: { cgroupParent: string; securityContext: { namespaceOptions: WireNamespaceOption | null } | null } | null;
}

interface WireContainerConfig {
  metadata: { name: string; attempt: number } | null;
  image: { image: string } | null;
  command: string[];
  args: string[];
  workingDir: string;
  envs: { key: string; value: string }[];
  mounts: { containerPath: string; hostPath: string; readonly: boolean }[];
  labels: KeyValueMap;
  annotations: KeyValueMap;
  logPath: string;
  stdin: boolean;
  tty: boolean;
}

interface WireSandboxFilter {
  id: string;
  state: { state: WireEnum } | null;
  labelSelector: KeyValueMap;
}

interface WireContainerFilter {
  id: string;
  state: { state: WireEnum } | null;
  podSandboxId: string;
  labelSelector: KeyValueMap;
}

interface WireImageSpec {
  image: string;
}

// ------------------------------------------------------------------------------------------------
// Conversions

const NAMESPACE_MODE_NAMES = ['POD', 'CONTAINER', 'NODE', 'TARGET'] as const;
const CONTAINER_STATES: readonly ContainerState[] = ['CONTAINER_CREATED', 'CONTAINER_RUNNING', 'CONTAINER_EXITED', 'CONTAINER_UNKNOWN'];
const SANDBOX_STATES: readonly SandboxState[] = ['SANDBOX_READY', 'SANDBOX_NOTREADY'];
const PROTOCOLS: readonly PortMapping['protocol'][] = ['TCP', 'UDP', 'SCTP'];

function enumValue<T extends string>(values: readonly T[], wire: WireEnum): T | undefined {
  return typeof wire === 'number' ? values[wire] : values.find((value) => value === wire);
}

function namespaceMode(wire: WireEnum): NamespaceMode {
  const name = enumValue(NAMESPACE_MODE_NAMES, wire) ?? 'POD';
  return NamespaceMode[name];
}

function int64(wire: WireInt64): number {
  return typeof wire === 'number' ? wire : Number(wire);
}

/** Milliseconds (engine) to the proto's int64 nanoseconds, as a decimal string to keep precision. */
function nanos(ms: number): string {
  return ms <= 0 ? '0' : (BigInt(Math.round(ms * 1000)) * 1000n).toString();
}

function sandboxMetadata(wire: WireSandboxMetadata | null): PodSandboxMetadata {
  if (!wire || !wire.name) throw invalid('sandbox config metadata (name, uid, namespace) is required');
  return { name: wire.name, uid: wire.uid, namespace: wire.namespace, attempt: wire.attempt };
}

function sandboxConfig(wire: WireSandboxConfig | null): PodSandboxConfig {
  if (!wire) throw invalid('sandbox config is required');
  const config: PodSandboxConfig = {
    metadata: sandboxMetadata(wire.metadata),
    hostname: wire.hostname,
    logDirectory: wire.logDirectory,
    portMappings: wire.portMappings.map((port) => ({
      protocol: enumValue(PROTOCOLS, port.protocol) ?? 'TCP',
      containerPort: port.containerPort,
      hostPort: port.hostPort,
      hostIp: port.hostIp,
    })),
    labels: { ...wire.labels },
    annotations: { ...wire.annotations },
  };
  if (wire.dnsConfig) config.dnsConfig = { ...wire.dnsConfig };
  if (wire.linux) {
    const namespaces = wire.linux.securityContext?.namespaceOptions;
    config.linux = { cgroupParent: wire.linux.cgroupParent };
    if (namespaces) {
      config.linux.securityContext = {
        namespaceOptions: {
          network: namespaceMode(namespaces.network),
          pid: namespaceMode(namespaces.pid),
          ipc: namespaceMode(namespaces.ipc),
        },
      };
    }
  }
  return config;
}

function containerConfig(wire: WireContainerConfig | null): ContainerConfig {
  if (!wire || !wire.metadata || !wire.metadata.name) throw invalid('container config metadata (name) is required');
  if (!wire.image || !wire.image.image) throw invalid(`container "${wire.metadata.name}": image is required`);
  return {
    metadata: { name: wire.metadata.name, attempt: wire.metadata.attempt },
    image: { image: wire.image.image },
    command: [...wire.command],
    args: [...wire.args],
    workingDir: wire.workingDir,
    envs: wire.envs.map(({ key, value }) => ({ key, value })),
    mounts: wire.mounts.map(({ containerPath, hostPath, readonly }) => ({ containerPath, hostPath, readonly })),
    labels: { ...wire.labels },
    annotations: { ...wire.annotations },
    logPath: wire.logPath,
    stdin: wire.stdin,
    tty: wire.tty,
  };
}

function sandboxFilter(wire: WireSandboxFilter | null): PodSandboxFilter {
  const filter: PodSandboxFilter = {};
  if (!wire) return filter;
  if (wire.id) filter.id = wire.id;
  const state = wire.state ? enumValue(SANDBOX_STATES, wire.state.state) : undefined;
  if (state) filter.state = state;
  if (Object.keys(wire.labelSelector).length > 0) filter.labelSelector = wire.labelSelector;
  return filter;
}

function containerFilter(wire: WireContainerFilter | null): ContainerFilter {
  const filter: ContainerFilter = {};
  if (!wire) return filter;
  if (wire.id) filter.id = wire.id;
  if (wire.podSandboxId) filter.podSandboxId = wire.podSandboxId;
  const state = wire.state ? enumValue(CONTAINER_STATES, wire.state.state) : undefined;
  if (state) filter.state = state;
  if (Object.keys(wire.labelSelector).length > 0) filter.labelSelector = wire.labelSelector;
  return filter;
}

function imageName(wire: WireImageSpec | null): string {
  if (!wire || !wire.image) throw invalid('image spec is required');
  return wire.image;
}

function wireSandbox(sandbox: PodSandbox): object {
  return {
    id: sandbox.id,
    metadata: sandbox.metadata,
    state: sandbox.state,
    createdAt: nanos(sandbox.createdAt),
    labels: sandbox.labels,
    annotations: sandbox.annotations,
    runtimeHandler: sandbox.runtimeHandler,
  };
}

function wireSandboxStatus(status: PodSandboxStatus): object {
  return {
    ...wireSandbox(status),
    network: { ip: status.network?.ip ?? '', additionalIps: (status.network?.additionalIps ?? []).map((ip) => ({ ip })) },
    linux: { namespaces: { options: { network: NAMESPACE_MODE_NAMES[status.networkMode ?? NamespaceMode.POD] } } },
  };
}

function wireContainer(container: Container): object {
  return {
    id: container.id,
    podSandboxId: container.podSandboxId,
    metadata: container.metadata,
    image: { image: container.image },
    imageRef: container.imageRef,
    state: container.state,
    createdAt: nanos(container.createdAt),
    labels: container.labels,
    annotations: container.annotations,
  };
}

function wireContainerStatus(status: ContainerStatus): object {
  return {
    id: status.id,
    metadata: status.metadata,
    state: status.state,
    createdAt: nanos(status.createdAt),
    startedAt: nanos(status.startedAt),
    finishedAt: nanos(status.finishedAt),
    exitCode: status.exitCode,
    image: { image: status.image },
    imageRef: status.imageRef,
    reason: status.reason,
    message: status.message,
    labels: status.labels,
    annotations: status.annotations,
    logPath: status.logPath,
  };
}

function wireImage(image: ImageInfo): object {
  return { id: image.id, repoTags: image.repoTags, repoDigests: image.repoDigests, size: String(image.size) };
}

function wireEvent(event: SimContainerEvent): object {
  return {
    containerId: event.containerId,
    containerEventType: event.type,
    createdAt: nanos(event.createdAt),
    podSandboxStatus: wireSandboxStatus(event.podSandboxStatus),
    containersStatuses: event.containersStatuses.map(wireContainerStatus),
  };
}

// ------------------------------------------------------------------------------------------------
// Services

function runtimeHandlers(
  engine: SimEngine,
  eventStreams: Set<grpc.ServerWritableStream<unknown, object>>,
): grpc.UntypedServiceImplementation {
  const getContainerEvents: grpc.handleServerStreamingCall<unknown, object> = (call) => {
    eventStreams.add(call);
    const unsubscribe = engine.subscribe((event) => call.write(wireEvent(event)));
    const end = (): void => {
      unsubscribe();
      eventStreams.delete(call);
    };
    call.on('cancelled', end);
    call.on('close', end);
    call.on('error', end);
  };

  return {
    Version: unary(() => engine.version()),
    Status: unary(() => ({ status: engine.status(), info: {} })),
    RunPodSandbox: unary((req: { config: WireSandboxConfig | null; runtimeHandler: string }) => ({
      podSandboxId: engine.runPodSandbox(sandboxConfig(req.config), req.runtimeHandler),
    })),
    StopPodSandbox: unary((req: { podSandboxId: string }) => {
      engine.stopPodSandbox(req.podSandboxId);
      return {};
    }),
    RemovePodSandbox: unary((req: { podSandboxId: string }) => {
      engine.removePodSandbox(req.podSandboxId);
      return {};
    }),
    PodSandboxStatus: unary((req: { podSandboxId: string }) => ({
      status: wireSandboxStatus(engine.podSandboxStatus(req.podSandboxId)),
      info: {},
      containersStatuses: [],
      timestamp: nanos(engine.clock.now()),
    })),
    ListPodSandbox: unary((req: { filter: WireSandboxFilter | null }) => ({
      items: engine.listPodSandbox(sandboxFilter(req.filter)).map(wireSandbox),
    })),
    CreateContainer: unary((req: { podSandboxId: string; config: WireContainerConfig | null }) => ({
      containerId: engine.createContainer(req.podSandboxId, containerConfig(req.config)),
    })),
    StartContainer: unary((req: { containerId: string }) => {
      engine.startContainer(req.containerId);
      return {};
    }),
    StopContainer: unary(async (req: { containerId: string; timeout: WireInt64 }) => {
      await engine.stopContainer(req.containerId, int64(req.timeout));
      return {};
    }),
    RemoveContainer: unary((req: { containerId: string }) => {
      engine.removeContainer(req.containerId);
      return {};
    }),
    ListContainers: unary((req: { filter: WireContainerFilter | null }) => ({
      containers: engine.listContainers(containerFilter(req.filter)).map(wireContainer),
    })),
    ContainerStatus: unary((req: { containerId: string }) => ({
      status: wireContainerStatus(engine.containerStatus(req.containerId)),
      info: {},
    })),
    ExecSync: unary(async (req: { containerId: string; cmd: string[]; timeout: WireInt64 }) => {
      const result = await engine.execSync(req.containerId, [...req.cmd], int64(req.timeout));
      return { stdout: result.stdout, stderr: result.stderr, exitCode: result.exitCode };
    }),
    GetContainerEvents: getContainerEvents,
  };
}

function imageHandlers(engine: SimEngine): grpc.UntypedServiceImplementation {
  return {
    ListImages: unary((req: { filter: { image: WireImageSpec | null } | null }) => {
      const wanted = req.filter?.image?.image;
      const images = wanted ? [engine.imageStatus(wanted)].filter((i): i is ImageInfo => i !== null) : engine.listImages();
      return { images: images.map(wireImage) };
    }),
    ImageStatus: unary((req: { image: WireImageSpec | null }) => {
      const image = engine.imageStatus(imageName(req.image));
      // An absent image is an empty response, not an error, as containerd answers.
      return { image: image ? wireImage(image) : null, info: {} };
    }),
    PullImage: unary(async (req: { image: WireImageSpec | null }) => {
      const image = await engine.pullImage(imageName(req.image));
      return { imageRef: image.id };
    }),
    RemoveImage: unary((req: { image: WireImageSpec | null }) => {
      engine.removeImage(imageName(req.image));
      return {};
    }),
  };
}
