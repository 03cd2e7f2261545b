/**
 * The `sim://` runtime: a real CRI v1 gRPC server on a unix socket, backed by `SimEngine`. The
 * agent talks to it with the same `CriClient` it uses for containerd, so the whole client path
 * (serialisation, status codes, streaming) is exercised. This module only translates between
 * the wire shapes of `cri/api.proto` and the engine; behaviour lives in `engine.ts`.
 */

import { containerSecurityFromWire, resourcesFromWire, resourcesToWire, sandboxSecurityFromWire } from '../cri/securityWire.ts';
import { mkdir, unlink } from 'node:fs/promises';
import { dirname } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import {
  CriError,
  definedOnly,
  type Container,
  type ContainerConfig,
  type ContainerFilter,
  type ContainerStatus,
  type ImageInfo,
  type PodSandbox,
  type PodSandboxConfig,
  type PodSandboxFilter,
  type PodSandboxMetadata,
  type PodSandboxStatus,
} from '../types.ts';
import {
  CONTAINER_STATES,
  PROTOCOLS,
  keptEncodings,
  messageEncoder,
  SANDBOX_STATES,
  containerUserToWire,
  enumValue,
  int64ToNumber,
  msToNs,
  namespaceModeToWire,
  serviceDefinition,
  type ImageServiceRpcs,
  type Rpc,
  type RuntimeServiceRpcs,
  type WireContainer,
  type WireContainerConfig,
  type WireContainerEvent,
  type WireContainerFilter,
  type WireContainerStatus,
  type WireImage,
  type WireImageSpec,
  type WirePodSandbox,
  type WirePodSandboxConfig,
  type WirePodSandboxFilter,
  type WirePodSandboxMetadata,
  type WirePodSandboxStatus,
} from '../cri/wire.ts';
import { containerStatsFilterFromWire, containerStatsToWire, imageFsInfoToWire, podSandboxStatsFilterFromWire, podSandboxStatsToWire } from '../cri/statsWire.ts';
import { SimEngine, type SimContainerEvent, type SimRuntimeOptions } from './engine.ts';
import { SimError } from './errors.ts';
import { SANDBOX_IMAGE } from './images.ts';
import { SimStreaming } from './streaming.ts';
import { StreamingRequestError } from '../streaming/server.ts';

/**
 * Stands between a call sim:// serves and its answer: runs `answer` for the call (named by its CRI method, `StopContainer`, with the
 * request as decoded from the wire), or fails, delays or holds it first. `signal` fires when the
 * client goes away (its deadline passed, or it cancelled).
 */
export type CallInterceptor = (call: string, request: unknown, signal: AbortSignal, answer: () => Promise<unknown>) => Promise<unknown>;

export interface SimRuntimeServerOptions extends SimRuntimeOptions {
  /** Filesystem path of the unix socket to listen on; a stale socket file there is removed. */
  socketPath: string;
  /** Serve an existing engine instead of creating one from the options. */
  engine?: SimEngine;
  /** Stands between every unary call and its answer (the reliability suite's faults, test/support/faults.ts). */
  intercept?: CallInterceptor;
}

export interface SimRuntime {
  /** `unix://<socketPath>`, ready for `CriClient`. */
  endpoint: string;
  engine: SimEngine;
  /** Stops every simulated container's timers, ends event streams and shuts the server down. */
  close(): Promise<void>;
  /**
   * The runtime's daemon dies and comes back `downMs` later: the gRPC server and its socket go
   * (calls fail, event streams break), the simulated containers keep running.
   */
  restart(downMs: number): Promise<void>;
  /** Container event streams open right now (each agent holds one). */
  eventStreams(): number;
}

export async function startSimRuntime(options: SimRuntimeServerOptions): Promise<SimRuntime> {
  const { socketPath, engine: given, intercept, ...engineOptions } = options;
  const engine = given ?? new SimEngine(engineOptions);
  const eventStreams = new Set<grpc.ServerWritableStream<unknown, WireContainerEvent>>();
  const endpoint = `unix://${socketPath}`;
  await mkdir(dirname(socketPath), { recursive: true });
  if (engine.stateDir !== undefined) await mkdir(engine.stateDir, { recursive: true });
  const serve = async (): Promise<grpc.Server> => {
    // Channelz stays on, though nothing reads it: grpc-js's forceShutdown (a restart's) destroys
    // only the connections its channelz bookkeeping holds.
    const server = new grpc.Server();
    server.addService(serviceDefinition('RuntimeService', RESPONSE_ENCODERS), runtimeHandlers(engine, eventStreams, intercept));
    server.addService(serviceDefinition('ImageService'), imageHandlers(engine, intercept));
    await removeStaleSocket(socketPath);
    await new Promise<void>((resolve, reject) => {
      server.bindAsync(endpoint, grpc.ServerCredentials.createInsecure(), (error) => (error ? reject(error) : resolve()));
    });
    return server;
  };
  let server = await serve();

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
  const restart = async (downMs: number): Promise<void> => {
    // As a runtime daemon that dies: calls under way and event streams break, the socket goes;
    // the containers (the engine) live on, as containerd's do in their shims.
    server.forceShutdown();
    eventStreams.clear();
    await removeStaleSocket(socketPath);
    await new Promise((resolve) => setTimeout(resolve, downMs));
    if (!closing) server = await serve();
  };
  return { endpoint, engine, close, restart, eventStreams: () => eventStreams.size };
}

async function removeStaleSocket(path: string): Promise<void> {
  try {
    await unlink(path);
  } catch (error) {
    if (!(error instanceof Error && 'code' in error && error.code === 'ENOENT')) throw error;
  }
}

// ------------------------------------------------------------------------------------------------
// Errors and handler plumbing

function toServiceError(error: unknown): Partial<grpc.StatusObject> {
  if (error instanceof SimError || error instanceof StreamingRequestError) return { code: grpc.status[error.code], details: error.message };
  if (error instanceof CriError) return { code: grpc.status[error.code], details: error.detail };
  return { code: grpc.status.INTERNAL, details: error instanceof Error ? error.message : String(error) };
}

/** What the simulated server answers each unary call of `Rpcs` with. */
type UnaryHandlers<Rpcs extends { [M in keyof Rpcs]: Rpc<unknown, unknown> }> = {
  [M in keyof Rpcs]: (request: Rpcs[M]['request']) => Rpcs[M]['response'] | Promise<Rpcs[M]['response']>;
};

/**
 * Wraps engine calls as unary handlers. The requests' static types are asserted here, once:
 * requests are read as plain objects with every declared field (wire.ts, PLAIN_OBJECT).
 */
function unaryHandlers<Rpcs extends { [M in keyof Rpcs]: Rpc<unknown, unknown> }>(
  handlers: UnaryHandlers<Rpcs>,
  intercept?: CallInterceptor,
): Record<string, grpc.handleUnaryCall<unknown, unknown>> {
  const result: Record<string, grpc.handleUnaryCall<unknown, unknown>> = {};
  for (const [name, handler] of Object.entries<(request: unknown) => unknown>(handlers)) {
    const answer = (request: unknown): Promise<unknown> => {
      try {
        return Promise.resolve(handler(request));
      } catch (error) {
        return Promise.reject(error);
      }
    };
    if (intercept === undefined) {
      // Nothing stands between the call and its answer, so nothing needs to know the call went:
      // no signal per call (with its listener, much of what a call cost at rest).
      result[name] = (call, callback) => respond(answer(call.request), callback);
      continue;
    }
    result[name] = (call, callback) => {
      const gone = new AbortController();
      // Only a call still being answered is cancelled: the stream's close after an answer is
      // reported as a cancellation too, and an abort makes an AbortError with its stack trace.
      const cancel = () => gone.abort();
      call.once('cancelled', cancel);
      const answered = intercept(name, call.request, gone.signal, () => answer(call.request)).finally(() => call.removeListener('cancelled', cancel));
      respond(answered, callback);
    };
  }
  return result;
}

function respond(answer: Promise<unknown>, callback: grpc.sendUnaryData<unknown>): void {
  answer.then(
    (response) => callback(null, response),
    (error: unknown) => callback(toServiceError(error)),
  );
}

function invalid(message: string): SimError {
  return new SimError('INVALID_ARGUMENT', message);
}

// ------------------------------------------------------------------------------------------------
// Conversions

function sandboxMetadata(wire: WirePodSandboxMetadata | null): PodSandboxMetadata {
  if (!wire || !wire.name) throw invalid('sandbox config metadata (name, uid, namespace) is required');
  return { name: wire.name, uid: wire.uid, namespace: wire.namespace, attempt: wire.attempt };
}

function sandboxConfig(wire: WirePodSandboxConfig | null): PodSandboxConfig {
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
    const securityContext = sandboxSecurityFromWire(wire.linux.securityContext);
    config.linux = { cgroupParent: wire.linux.cgroupParent, sysctls: { ...wire.linux.sysctls }, ...(securityContext ? { securityContext } : {}) };
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
    ...(wire.linux ? { linux: definedOnly({ resources: resourcesFromWire(wire.linux.resources), securityContext: containerSecurityFromWire(wire.linux.securityContext) }) } : {}),
  };
}

/** What PodSandboxFilter and ContainerFilter share: an id, a state and a label selector, each optional. */
function filter<S extends string>(
  wire: WirePodSandboxFilter,
  states: readonly S[],
): { id?: string; state?: S; labelSelector?: PodSandboxFilter['labelSelector'] } {
  const result: { id?: string; state?: S; labelSelector?: PodSandboxFilter['labelSelector'] } = {};
  if (wire.id) result.id = wire.id;
  const state = wire.state ? enumValue(states, wire.state.state) : undefined;
  if (state) result.state = state;
  if (Object.keys(wire.labelSelector).length > 0) result.labelSelector = wire.labelSelector;
  return result;
}

function sandboxFilter(wire: WirePodSandboxFilter | null): PodSandboxFilter {
  return wire ? filter(wire, SANDBOX_STATES) : {};
}

function containerFilter(wire: WireContainerFilter | null): ContainerFilter {
  if (!wire) return {};
  const result: ContainerFilter = filter(wire, CONTAINER_STATES);
  if (wire.podSandboxId) result.podSandboxId = wire.podSandboxId;
  return result;
}

function imageName(wire: WireImageSpec | null): string {
  if (!wire || !wire.image) throw invalid('image spec is required');
  return wire.image;
}

function wireSandbox(sandbox: PodSandbox): WirePodSandbox {
  return {
    id: sandbox.id,
    metadata: sandbox.metadata,
    state: sandbox.state,
    createdAt: msToNs(sandbox.createdAt),
    labels: sandbox.labels,
    annotations: sandbox.annotations,
    runtimeHandler: sandbox.runtimeHandler,
  };
}

function wireSandboxStatus(status: PodSandboxStatus): WirePodSandboxStatus {
  return {
    ...wireSandbox(status),
    network: { ip: status.network?.ip ?? '', additionalIps: (status.network?.additionalIps ?? []).map((ip) => ({ ip })) },
    linux: { namespaces: { options: { network: namespaceModeToWire(status.networkMode) } } },
  };
}

/** What a container's listing and its status both carry, in the wire's forms. */
function wireContainerCommon(c: Container | ContainerStatus) {
  const { id, metadata, state, imageRef, labels, annotations } = c;
  return { id, metadata, state, imageRef, labels, annotations, image: { image: c.image }, createdAt: msToNs(c.createdAt) };
}

function wireContainer(container: Container): WireContainer {
  return { ...wireContainerCommon(container), podSandboxId: container.podSandboxId };
}

function wireContainerStatus(status: ContainerStatus): WireContainerStatus {
  const { exitCode, reason, message, logPath } = status;
  return {
    ...wireContainerCommon(status),
    startedAt: msToNs(status.startedAt),
    finishedAt: msToNs(status.finishedAt),
    exitCode,
    reason,
    message,
    logPath,
    mounts: status.mounts.map(({ containerPath, hostPath, readonly, propagation }) => ({ containerPath, hostPath, readonly, propagation: propagation ?? 'PROPAGATION_PRIVATE' })),
    user: containerUserToWire(status.user),
    resources: status.resources ? { linux: resourcesToWire(status.resources) } : null,
  };
}

/**
 * Answers written around what was encoded before (`messageEncoder`): the lists from the engine's
 * listings, which stay the same objects while their state does, each encoded once per state; the
 * stats with each sandbox's and container's attributes (ids, names, labels, annotations) encoded
 * once in its life, its figures afresh.
 */
const encodeSandbox = messageEncoder('PodSandbox');
const encodeContainer = messageEncoder('Container');
const sandboxListing = keptEncodings((sandbox: PodSandbox) => encodeSandbox(wireSandbox(sandbox)));
const containerListing = keptEncodings((container: Container) => encodeContainer(wireContainer(container)));
const containerStats = messageEncoder('ContainerStats', { attributes: keptEncodings(messageEncoder('ContainerAttributes')) });
const podSandboxStats = messageEncoder('PodSandboxStats', {
  attributes: keptEncodings(messageEncoder('PodSandboxAttributes')),
  linux: messageEncoder('LinuxPodSandboxStats', { containers: containerStats }),
});
const RESPONSE_ENCODERS = {
  ListPodSandbox: messageEncoder('ListPodSandboxResponse', { items: sandboxListing }),
  ListContainers: messageEncoder('ListContainersResponse', { containers: containerListing }),
  ListContainerStats: messageEncoder('ListContainerStatsResponse', { stats: containerStats }),
  ListPodSandboxStats: messageEncoder('ListPodSandboxStatsResponse', { stats: podSandboxStats }),
};

function wireImage(image: ImageInfo): WireImage {
  return {
    id: image.id,
    repoTags: image.repoTags,
    repoDigests: image.repoDigests,
    size: String(image.size),
    uid: image.uid === undefined ? null : { value: String(image.uid) },
    username: image.username ?? '',
    pinned: image.pinned ?? false,
  };
}

function wireEvent(event: SimContainerEvent): WireContainerEvent {
  return {
    containerId: event.containerId,
    containerEventType: event.type,
    createdAt: msToNs(event.createdAt),
    podSandboxStatus: wireSandboxStatus(event.podSandboxStatus),
    containersStatuses: event.containersStatuses.map(wireContainerStatus),
  };
}

// ------------------------------------------------------------------------------------------------
// Services

/** The unary calls of the runtime service as the handlers answer them: the lists with the engine's listings (`RESPONSE_ENCODERS`). */
type ServedRuntimeRpcs = Omit<RuntimeServiceRpcs, 'GetContainerEvents' | 'ListPodSandbox' | 'ListContainers'> & {
  ListPodSandbox: Rpc<RuntimeServiceRpcs['ListPodSandbox']['request'], { items: PodSandbox[] }>;
  ListContainers: Rpc<RuntimeServiceRpcs['ListContainers']['request'], { containers: Container[] }>;
};

function runtimeHandlers(
  engine: SimEngine,
  eventStreams: Set<grpc.ServerWritableStream<unknown, WireContainerEvent>>,
  intercept: CallInterceptor | undefined,
): grpc.UntypedServiceImplementation {
  const getContainerEvents: grpc.handleServerStreamingCall<unknown, WireContainerEvent> = (call) => {
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

  const unary = unaryHandlers<ServedRuntimeRpcs>({
    Version: () => engine.version(),
    // Verbose, its config names its sandbox image, as containerd's does.
    Status: (req) => {
      const { conditions, features } = engine.status();
      return {
        status: { conditions },
        info: (req.verbose ? { config: JSON.stringify({ sandboxImage: SANDBOX_IMAGE }) } : {}) as Record<string, string>,
        features: features ?? null,
      };
    },
    UpdateRuntimeConfig: async (req) => {
      await engine.updateRuntimeConfig(req.runtimeConfig?.networkConfig?.podCidr ?? '');
      return {};
    },
    RunPodSandbox: (req) => ({
      podSandboxId: engine.runPodSandbox(sandboxConfig(req.config), req.runtimeHandler),
    }),
    StopPodSandbox: (req) => {
      engine.stopPodSandbox(req.podSandboxId);
      return {};
    },
    RemovePodSandbox: (req) => {
      engine.removePodSandbox(req.podSandboxId);
      return {};
    },
    PodSandboxStatus: (req) => ({
      status: wireSandboxStatus(engine.podSandboxStatus(req.podSandboxId)),
      info: {},
      containersStatuses: [],
      timestamp: msToNs(engine.clock.now()),
    }),
    ListPodSandbox: (req) => ({
      items: engine.listPodSandbox(sandboxFilter(req.filter)),
    }),
    CreateContainer: (req) => ({
      containerId: engine.createContainer(req.podSandboxId, containerConfig(req.config)),
    }),
    StartContainer: (req) => {
      engine.startContainer(req.containerId);
      return {};
    },
    StopContainer: async (req) => {
      await engine.stopContainer(req.containerId, int64ToNumber(req.timeout));
      return {};
    },
    RemoveContainer: (req) => {
      engine.removeContainer(req.containerId);
      return {};
    },
    ListContainers: (req) => ({
      containers: engine.listContainers(containerFilter(req.filter)),
    }),
    ContainerStatus: async (req) => ({
      status: wireContainerStatus(await engine.containerStatusWithLog(req.containerId)),
      info: {},
    }),
    UpdateContainerResources: (req) => {
      engine.updateContainerResources(req.containerId, resourcesFromWire(req.linux) ?? { cpuPeriod: 0, cpuQuota: 0, cpuShares: 0, memoryLimitInBytes: 0, oomScoreAdj: 0 });
      return {};
    },
    ReopenContainerLog: (req) => {
      engine.reopenContainerLog(req.containerId);
      return {};
    },
    ContainerStats: (req) => ({ stats: containerStatsToWire(engine.containerStats(req.containerId)) }),
    ListContainerStats: (req) => ({ stats: engine.listContainerStats(containerStatsFilterFromWire(req.filter)).map(containerStatsToWire) }),
    PodSandboxStats: (req) => ({ stats: podSandboxStatsToWire(engine.podSandboxStats(req.podSandboxId)) }),
    ListPodSandboxStats: (req) => ({ stats: engine.listPodSandboxStats(podSandboxStatsFilterFromWire(req.filter)).map(podSandboxStatsToWire) }),
    ExecSync: async (req) => {
      const result = await engine.execSync(req.containerId, [...req.cmd], int64ToNumber(req.timeout));
      return { stdout: result.stdout, stderr: result.stderr, exitCode: result.exitCode };
    },
    Exec: async (req) => ({ url: await SimStreaming.of(engine).getExec({ ...req, cmd: [...req.cmd] }) }),
    Attach: async (req) => ({ url: await SimStreaming.of(engine).getAttach(req) }),
    PortForward: async (req) => ({ url: await SimStreaming.of(engine).getPortForward({ podSandboxId: req.podSandboxId, port: [...req.port] }) }),
  }, intercept);
  return { ...unary, GetContainerEvents: getContainerEvents };
}

function imageHandlers(engine: SimEngine, intercept: CallInterceptor | undefined): grpc.UntypedServiceImplementation {
  return unaryHandlers<ImageServiceRpcs>({
    ListImages: (req) => {
      const wanted = req.filter?.image?.image;
      const images = wanted ? [engine.imageStatus(wanted)].filter((i): i is ImageInfo => i !== null) : engine.listImages();
      return { images: images.map(wireImage) };
    },
    ImageStatus: (req) => {
      const image = engine.imageStatus(imageName(req.image));
      // An absent image is an empty response, not an error, as containerd answers.
      return { image: image ? wireImage(image) : null, info: {} };
    },
    PullImage: async (req) => {
      const image = await engine.pullImage(imageName(req.image));
      return { imageRef: image.id };
    },
    RemoveImage: (req) => {
      engine.removeImage(imageName(req.image));
      return {};
    },
    ImageFsInfo: () => imageFsInfoToWire(engine.imageFsInfo()),
  }, intercept);
}
