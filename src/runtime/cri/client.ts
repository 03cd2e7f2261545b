/**
 * The CRI v1 client: `RuntimeService` and `ImageService` over gRPC on a unix socket, speaking the
 * messages declared in `api.proto` next to this file. Everything the rest of the agent sees is in
 * the TypeScript shapes of `../types.ts`; this module converts them to and from the wire shapes of
 * `wire.ts`, which the simulated runtime's server shares.
 */
import { containerSecurityToWire, resourcesFromWire, resourcesToWire, sandboxSecurityToWire } from './securityWire.ts';
import { GrpcChannel, GrpcStatusError, type GrpcCallOptions, type GrpcMethod } from './channel.ts';
import {
  CriError,
  type CallOptions,
  type Container,
  type ContainerConfig,
  type ContainerEvent,
  type ContainerFilter,
  type ContainerMetadata,
  type ContainerState,
  type ContainerStats,
  type ContainerStatsFilter,
  type ContainerStatus,
  type AttachRequest,
  type ExecRequest,
  type ExecResult,
  type PortForwardRequest,
  type ImageFsInfo,
  type ImageInfo,
  type ImageService,
  type LinuxContainerResources,
  type PodSandbox,
  type PodSandboxConfig,
  type PodSandboxFilter,
  type PodSandboxMetadata,
  type PodSandboxStats,
  type PodSandboxStatsFilter,
  type PodSandboxStatus,
  type RuntimeService,
  type RuntimeStatusInfo,
  type SandboxState,
  type VersionInfo,
} from '../types.ts';
import { containerStatsFilterToWire, containerStatsFromWire, imageFsInfoFromWire, podSandboxStatsFilterToWire, podSandboxStatsFromWire } from './statsWire.ts';
import {
  CONTAINER_EVENT_TYPES,
  CONTAINER_STATES,
  SANDBOX_STATES,
  containerUserFromWire,
  enumValue,
  int64ToNumber,
  namespaceModeFromWire,
  nsToMs,
  clientMethod,
  type ClientMethod,
  type CriRpcs,
  type Rpc,
  type ServiceName,
  type WireContainer,
  type WireContainerConfig,
  type WireContainerEvent,
  type WireContainerFilter,
  type WireContainerMetadata,
  type WireContainerStatus,
  type WireEnum,
  type WireExecSyncResponse,
  type WireImage,
  type WirePodSandbox,
  type WirePodSandboxConfig,
  type WirePodSandboxFilter,
  type WirePodSandboxMetadata,
  type WirePodSandboxStatus,
  type WireStatusResponse,
  type WireVersionResponse,
} from './wire.ts';

interface CriClientOptions {
  /** Deadline for calls that do not pass `timeoutMs`. Kubelet's runtime-request-timeout is 2 minutes. */
  requestTimeoutMs?: number;
  /** Deadline for PullImage, which routinely outlives ordinary calls on large images. */
  pullTimeoutMs?: number;
  /** Largest response accepted; ListContainers on a busy node exceeds grpc's 4 MiB default. */
  maxReceiveMessageBytes?: number;
}

const DEFAULT_REQUEST_TIMEOUT_MS = 2 * 60_000;
const DEFAULT_PULL_TIMEOUT_MS = 4 * 60_000;
const DEFAULT_MAX_RECEIVE_MESSAGE_BYTES = 16 * 1024 * 1024;
/** The CRI version string kubelet announces in VersionRequest. */
const CLIENT_API_VERSION = '0.1.0';

type RpcName<S extends ServiceName> = keyof CriRpcs[S] & string;
type RequestOf<S extends ServiceName, M extends RpcName<S>> = CriRpcs[S][M] extends Rpc<infer Q extends object, unknown> ? Q : never;
type ResponseOf<S extends ServiceName, M extends RpcName<S>> = CriRpcs[S][M] extends Rpc<unknown, infer R> ? R : never;

/** Each call's method, made once: a pod start makes a dozen calls. */
const clientMethods = new Map<string, ClientMethod>();

function lookupMethod(service: ServiceName, rpc: string): ClientMethod {
  const key = `${service}/${rpc}`;
  let method = clientMethods.get(key);
  if (method === undefined) clientMethods.set(key, (method = clientMethod(service, rpc)));
  return method;
}

/**
 * The one place wire data gets its static type: responses decode against our own schema, whose
 * messages read every declared field (ClientMethod.deserialize), in the forms the wire interfaces allow.
 */
function typedDeserializer<T>(method: ClientMethod): (bytes: Buffer) => T {
  return method.deserialize as (bytes: Buffer) => T;
}

// ------------------------------------------------------------------------------------------------
// Endpoint and errors

/** Turns `unix:///run/containerd/containerd.sock` or `/run/containerd/containerd.sock` into a gRPC target (`unix:///…`). */
export function grpcTarget(endpoint: string): string {
  const path = endpoint.startsWith('unix://') ? endpoint.slice('unix://'.length) : endpoint;
  if (!path.startsWith('/')) {
    throw new Error(`unsupported CRI endpoint ${JSON.stringify(endpoint)}: want unix:///absolute/path`);
  }
  return `unix://${path}`;
}

function toCriError(call: string, err: unknown): CriError {
  if (err instanceof CriError) return err;
  if (err instanceof GrpcStatusError) return new CriError(call, err.code, err.details);
  return new CriError(call, 'UNKNOWN', err instanceof Error ? err.message : String(err));
}

// ------------------------------------------------------------------------------------------------
// Scalar conversions

function toBuffer(bytes: Uint8Array): Buffer {
  return Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes);
}

function toSandboxState(state: WireEnum): SandboxState {
  return enumValue(SANDBOX_STATES, state) === 'SANDBOX_READY' ? 'SANDBOX_READY' : 'SANDBOX_NOTREADY';
}

function toContainerState(state: WireEnum): ContainerState {
  return enumValue(CONTAINER_STATES, state) ?? 'CONTAINER_UNKNOWN';
}

// ------------------------------------------------------------------------------------------------
// TypeScript shapes → wire

function sandboxConfigToWire(config: PodSandboxConfig): WirePodSandboxConfig {
  const { metadata, dnsConfig, linux } = config;
  return {
    metadata: { name: metadata.name, uid: metadata.uid, namespace: metadata.namespace, attempt: metadata.attempt },
    hostname: config.hostname,
    logDirectory: config.logDirectory,
    dnsConfig: dnsConfig ? { servers: dnsConfig.servers, searches: dnsConfig.searches, options: dnsConfig.options } : null,
    portMappings: config.portMappings.map(({ protocol, containerPort, hostPort, hostIp }) => ({
      protocol,
      containerPort,
      hostPort,
      hostIp,
    })),
    labels: config.labels,
    annotations: config.annotations,
    linux: linux ? { cgroupParent: linux.cgroupParent ?? '', securityContext: sandboxSecurityToWire(linux.securityContext), sysctls: linux.sysctls ?? {} } : null,
  };
}

function containerConfigToWire(config: ContainerConfig): WireContainerConfig {
  return {
    metadata: { name: config.metadata.name, attempt: config.metadata.attempt },
    image: { image: config.image.image },
    command: config.command,
    args: config.args,
    workingDir: config.workingDir,
    envs: config.envs.map(({ key, value }) => ({ key, value })),
    mounts: config.mounts.map(({ containerPath, hostPath, readonly, propagation }) => ({ containerPath, hostPath, readonly, propagation: propagation ?? 'PROPAGATION_PRIVATE' })),
    labels: config.labels,
    annotations: config.annotations,
    logPath: config.logPath,
    stdin: config.stdin,
    tty: config.tty,
    linux: config.linux ? { resources: resourcesToWire(config.linux.resources), securityContext: containerSecurityToWire(config.linux.securityContext) } : null,
  };
}

/** The fields PodSandboxFilter and ContainerFilter share; `sandboxFilterToWire` is this alone. */
function sandboxFilterToWire(filter: PodSandboxFilter | ContainerFilter): WirePodSandboxFilter {
  return {
    id: filter.id ?? '',
    state: filter.state !== undefined ? { state: filter.state } : null,
    labelSelector: filter.labelSelector ?? {},
  };
}

function containerFilterToWire(filter: ContainerFilter): WireContainerFilter {
  return { ...sandboxFilterToWire(filter), podSandboxId: filter.podSandboxId ?? '' };
}

// ------------------------------------------------------------------------------------------------
// Wire → TypeScript shapes

function versionFromWire(res: WireVersionResponse): VersionInfo {
  const { version, runtimeName, runtimeVersion, runtimeApiVersion } = res;
  return { version, runtimeName, runtimeVersion, runtimeApiVersion };
}

function runtimeStatusFromWire(res: WireStatusResponse): RuntimeStatusInfo {
  const conditions = res.status?.conditions ?? [];
  const info: RuntimeStatusInfo = { conditions: conditions.map(({ type, status, reason, message }) => ({ type, status, reason, message })) };
  const config = verboseConfig(res.info?.['config']);
  if (typeof config?.sandboxImage === 'string' && config.sandboxImage) info.sandboxImage = config.sandboxImage;
  if (typeof config?.systemdCgroup === 'boolean') info.systemdCgroup = config.systemdCgroup;
  if (res.features) info.features = { supplementalGroupsPolicy: res.features.supplementalGroupsPolicy };
  return info;
}

/** The runtime's config in its verbose status (containerd's CRI plugin config, JSON); undefined when absent or not JSON. */
function verboseConfig(text: string | undefined): Record<string, unknown> | undefined {
  if (!text) return undefined;
  try {
    const parsed: unknown = JSON.parse(text);
    return typeof parsed === 'object' && parsed !== null ? (parsed as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

function sandboxMetadataFromWire(metadata: WirePodSandboxMetadata | null): PodSandboxMetadata {
  return {
    name: metadata?.name ?? '',
    uid: metadata?.uid ?? '',
    namespace: metadata?.namespace ?? '',
    attempt: metadata?.attempt ?? 0,
  };
}

function containerMetadataFromWire(metadata: WireContainerMetadata | null): ContainerMetadata {
  return { name: metadata?.name ?? '', attempt: metadata?.attempt ?? 0 };
}

function sandboxFromWire(sandbox: WirePodSandbox): PodSandbox {
  return {
    id: sandbox.id,
    metadata: sandboxMetadataFromWire(sandbox.metadata),
    state: toSandboxState(sandbox.state),
    createdAt: nsToMs(sandbox.createdAt),
    labels: { ...sandbox.labels },
    annotations: { ...sandbox.annotations },
    runtimeHandler: sandbox.runtimeHandler,
  };
}

function sandboxStatusFromWire(status: WirePodSandboxStatus): PodSandboxStatus {
  const result: PodSandboxStatus = sandboxFromWire(status);
  if (status.network) {
    result.network = { ip: status.network.ip, additionalIps: status.network.additionalIps.map((p) => p.ip) };
  }
  const networkOption = status.linux?.namespaces?.options;
  const networkMode = networkOption ? namespaceModeFromWire(networkOption.network) : undefined;
  if (networkMode !== undefined) result.networkMode = networkMode;
  return result;
}

function containerFromWire(container: WireContainer): Container {
  return {
    id: container.id,
    podSandboxId: container.podSandboxId,
    metadata: containerMetadataFromWire(container.metadata),
    image: container.image?.image ?? '',
    imageRef: container.imageRef,
    state: toContainerState(container.state),
    createdAt: nsToMs(container.createdAt),
    labels: { ...container.labels },
    annotations: { ...container.annotations },
  };
}

function containerStatusFromWire(status: WireContainerStatus): ContainerStatus {
  return {
    id: status.id,
    metadata: containerMetadataFromWire(status.metadata),
    state: toContainerState(status.state),
    createdAt: nsToMs(status.createdAt),
    startedAt: nsToMs(status.startedAt),
    finishedAt: nsToMs(status.finishedAt),
    exitCode: status.exitCode,
    image: status.image?.image ?? '',
    imageRef: status.imageRef,
    reason: status.reason,
    message: status.message,
    labels: { ...status.labels },
    annotations: { ...status.annotations },
    mounts: (status.mounts ?? []).map(({ containerPath, hostPath, readonly }) => ({ containerPath, hostPath, readonly })),
    logPath: status.logPath,
    ...((user) => (user ? { user } : {}))(containerUserFromWire(status.user)),
    ...((resources) => (resources ? { resources } : {}))(resourcesFromWire(status.resources?.linux ?? null)),
  };
}

function imageFromWire(image: WireImage): ImageInfo {
  return {
    id: image.id,
    repoTags: [...image.repoTags],
    repoDigests: [...image.repoDigests],
    size: int64ToNumber(image.size),
    ...(image.uid ? { uid: int64ToNumber(image.uid.value) } : image.username ? { username: image.username } : {}),
    ...(image.pinned ? { pinned: true } : {}),
  };
}

function execResultFromWire(res: WireExecSyncResponse): ExecResult {
  return { stdout: toBuffer(res.stdout), stderr: toBuffer(res.stderr), exitCode: res.exitCode };
}

function containerEventFromWire(event: WireContainerEvent): ContainerEvent | undefined {
  const type = enumValue(CONTAINER_EVENT_TYPES, event.containerEventType);
  if (type === undefined) return undefined;
  const result: ContainerEvent = { containerId: event.containerId, type, createdAt: nsToMs(event.createdAt) };
  if (event.podSandboxStatus?.metadata) {
    result.podSandboxMetadata = sandboxMetadataFromWire(event.podSandboxStatus.metadata);
  }
  return result;
}

/** A status (or stats) response's message, which a conforming runtime never leaves out. */
function requireStatus<T>(rpc: string, status: T | null, what = 'status'): T {
  if (status === null) throw new CriError(rpc, 'INTERNAL', `runtime returned no ${what}`);
  return status;
}

// ------------------------------------------------------------------------------------------------
// The client

export class CriClient implements RuntimeService, ImageService {
  /** One connection to the runtime's socket for both services. */
  private readonly channel: GrpcChannel;
  private readonly requestTimeoutMs: number;
  private readonly pullTimeoutMs: number;

  constructor(endpoint: string, options: CriClientOptions = {}) {
    this.requestTimeoutMs = options.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS;
    this.pullTimeoutMs = options.pullTimeoutMs ?? DEFAULT_PULL_TIMEOUT_MS;
    this.channel = new GrpcChannel({ path: grpcTarget(endpoint).slice('unix://'.length) }, {
      maxReceiveMessageBytes: options.maxReceiveMessageBytes ?? DEFAULT_MAX_RECEIVE_MESSAGE_BYTES,
    });
  }

  close(): void {
    this.channel.close();
  }

  // ---------------------------------------------------------------- RuntimeService

  async version(opts?: CallOptions): Promise<VersionInfo> {
    return versionFromWire(await this.unary('RuntimeService', 'Version', { version: CLIENT_API_VERSION }, opts));
  }

  async status(opts?: CallOptions & { verbose?: boolean }): Promise<RuntimeStatusInfo> {
    return runtimeStatusFromWire(await this.unary('RuntimeService', 'Status', { verbose: opts?.verbose ?? false }, opts));
  }

  async updateRuntimeConfig(podCidr: string, opts?: CallOptions): Promise<void> {
    await this.unary('RuntimeService', 'UpdateRuntimeConfig', { runtimeConfig: { networkConfig: { podCidr } } }, opts);
  }

  async runPodSandbox(config: PodSandboxConfig, opts?: CallOptions): Promise<string> {
    const request = { config: sandboxConfigToWire(config), runtimeHandler: '' };
    return (await this.unary('RuntimeService', 'RunPodSandbox', request, opts)).podSandboxId;
  }

  async stopPodSandbox(podSandboxId: string, opts?: CallOptions): Promise<void> {
    await this.unary('RuntimeService', 'StopPodSandbox', { podSandboxId }, opts);
  }

  async removePodSandbox(podSandboxId: string, opts?: CallOptions): Promise<void> {
    await this.unary('RuntimeService', 'RemovePodSandbox', { podSandboxId }, opts);
  }

  async podSandboxStatus(podSandboxId: string, opts?: CallOptions): Promise<PodSandboxStatus> {
    const res = await this.unary('RuntimeService', 'PodSandboxStatus', { podSandboxId, verbose: false }, opts);
    return sandboxStatusFromWire(requireStatus('PodSandboxStatus', res.status));
  }

  async listPodSandbox(filter?: PodSandboxFilter, opts?: CallOptions): Promise<PodSandbox[]> {
    const request = { filter: filter ? sandboxFilterToWire(filter) : null };
    return (await this.unary('RuntimeService', 'ListPodSandbox', request, opts)).items.map(sandboxFromWire);
  }

  async createContainer(
    podSandboxId: string,
    config: ContainerConfig,
    sandboxConfig: PodSandboxConfig,
    opts?: CallOptions,
  ): Promise<string> {
    const request = {
      podSandboxId,
      config: containerConfigToWire(config),
      sandboxConfig: sandboxConfigToWire(sandboxConfig),
    };
    return (await this.unary('RuntimeService', 'CreateContainer', request, opts)).containerId;
  }

  async startContainer(containerId: string, opts?: CallOptions): Promise<void> {
    await this.unary('RuntimeService', 'StartContainer', { containerId }, opts);
  }

  async stopContainer(containerId: string, timeoutSeconds: number, opts?: CallOptions): Promise<void> {
    // The runtime may legitimately spend the whole grace period before answering.
    const request = { containerId, timeout: timeoutSeconds };
    await this.unary('RuntimeService', 'StopContainer', request, opts, this.timeoutAfter(timeoutSeconds));
  }

  async removeContainer(containerId: string, opts?: CallOptions): Promise<void> {
    await this.unary('RuntimeService', 'RemoveContainer', { containerId }, opts);
  }

  async listContainers(filter?: ContainerFilter, opts?: CallOptions): Promise<Container[]> {
    const request = { filter: filter ? containerFilterToWire(filter) : null };
    return (await this.unary('RuntimeService', 'ListContainers', request, opts)).containers.map(containerFromWire);
  }

  async containerStatus(containerId: string, opts?: CallOptions): Promise<ContainerStatus> {
    const res = await this.unary('RuntimeService', 'ContainerStatus', { containerId, verbose: false }, opts);
    return containerStatusFromWire(requireStatus('ContainerStatus', res.status));
  }

  async updateContainerResources(containerId: string, resources: LinuxContainerResources, opts?: CallOptions): Promise<void> {
    await this.unary('RuntimeService', 'UpdateContainerResources', { containerId, linux: resourcesToWire(resources), annotations: {} }, opts);
  }

  async reopenContainerLog(containerId: string, opts?: CallOptions): Promise<void> {
    await this.unary('RuntimeService', 'ReopenContainerLog', { containerId }, opts);
  }

  async containerStats(containerId: string, opts?: CallOptions): Promise<ContainerStats> {
    const res = await this.unary('RuntimeService', 'ContainerStats', { containerId }, opts);
    return containerStatsFromWire(requireStatus('ContainerStats', res.stats, 'stats'));
  }

  async listContainerStats(filter?: ContainerStatsFilter, opts?: CallOptions): Promise<ContainerStats[]> {
    const res = await this.unary('RuntimeService', 'ListContainerStats', { filter: containerStatsFilterToWire(filter) }, opts);
    return res.stats.map(containerStatsFromWire);
  }

  async podSandboxStats(podSandboxId: string, opts?: CallOptions): Promise<PodSandboxStats> {
    const res = await this.unary('RuntimeService', 'PodSandboxStats', { podSandboxId }, opts);
    return podSandboxStatsFromWire(requireStatus('PodSandboxStats', res.stats, 'stats'));
  }

  async listPodSandboxStats(filter?: PodSandboxStatsFilter, opts?: CallOptions): Promise<PodSandboxStats[]> {
    const res = await this.unary('RuntimeService', 'ListPodSandboxStats', { filter: podSandboxStatsFilterToWire(filter) }, opts);
    return res.stats.map(podSandboxStatsFromWire);
  }

  async execSync(containerId: string, cmd: string[], timeoutSeconds: number, opts?: CallOptions): Promise<ExecResult> {
    // Same reasoning as stopContainer: the command itself may run for its full timeout.
    const request = { containerId, cmd, timeout: timeoutSeconds };
    const res = await this.unary('RuntimeService', 'ExecSync', request, opts, this.timeoutAfter(timeoutSeconds));
    return execResultFromWire(res);
  }

  async exec(request: ExecRequest, opts?: CallOptions): Promise<string> {
    return (await this.unary('RuntimeService', 'Exec', request, opts)).url;
  }

  async attach(request: AttachRequest, opts?: CallOptions): Promise<string> {
    return (await this.unary('RuntimeService', 'Attach', request, opts)).url;
  }

  async portForward(request: PortForwardRequest, opts?: CallOptions): Promise<string> {
    return (await this.unary('RuntimeService', 'PortForward', request, opts)).url;
  }

  containerEvents(opts?: CallOptions): AsyncIterable<ContainerEvent> {
    const stream = this.serverStream('RuntimeService', 'GetContainerEvents', {}, opts);
    return mapDefined(stream, containerEventFromWire);
  }

  // ---------------------------------------------------------------- ImageService

  async pullImage(image: string, sandboxConfig?: PodSandboxConfig, opts?: CallOptions): Promise<string> {
    const request = { image: { image }, sandboxConfig: sandboxConfig ? sandboxConfigToWire(sandboxConfig) : null };
    return (await this.unary('ImageService', 'PullImage', request, opts, this.pullTimeoutMs)).imageRef;
  }

  async imageStatus(image: string, opts?: CallOptions): Promise<ImageInfo | null> {
    const res = await this.unary('ImageService', 'ImageStatus', { image: { image }, verbose: false }, opts);
    // Runtimes answer an absent image with an empty response, not NOT_FOUND; containerd leaves the id empty.
    return res.image === null || res.image.id === '' ? null : imageFromWire(res.image);
  }

  async listImages(opts?: CallOptions): Promise<ImageInfo[]> {
    return (await this.unary('ImageService', 'ListImages', { filter: null }, opts)).images.map(imageFromWire);
  }

  async removeImage(image: string, opts?: CallOptions): Promise<void> {
    await this.unary('ImageService', 'RemoveImage', { image: { image } }, opts);
  }

  async imageFsInfo(opts?: CallOptions): Promise<ImageFsInfo> {
    return imageFsInfoFromWire(await this.unary('ImageService', 'ImageFsInfo', {}, opts));
  }

  // ---------------------------------------------------------------- transport

  /** The default deadline of a call that may legitimately take `timeoutSeconds` on the runtime's side. */
  private timeoutAfter(timeoutSeconds: number): number {
    return this.requestTimeoutMs + Math.max(0, timeoutSeconds) * 1000;
  }

  private unary<S extends ServiceName, M extends RpcName<S>>(
    service: S,
    rpc: M,
    request: RequestOf<S, M>,
    opts: CallOptions | undefined,
    defaultTimeoutMs = this.requestTimeoutMs,
  ): Promise<ResponseOf<S, M>> {
    const method = lookupMethod(service, rpc);
    return this.call(service, rpc, request, opts, { ...method, deserialize: typedDeserializer<ResponseOf<S, M>>(method) }, defaultTimeoutMs);
  }

  private async call<S extends ServiceName, M extends RpcName<S>, Res>(
    _service: S,
    rpc: M,
    request: RequestOf<S, M>,
    opts: CallOptions | undefined,
    method: GrpcMethod<Res>,
    defaultTimeoutMs = this.requestTimeoutMs,
  ): Promise<Res> {
    try {
      return await this.channel.unary(method, request, { timeoutMs: opts?.timeoutMs ?? defaultTimeoutMs, ...(opts?.signal ? { signal: opts.signal } : {}) });
    } catch (err) {
      throw toCriError(rpc, err);
    }
  }

  /**
   * Opens the stream at once, so that messages sent before the first `next()` are buffered rather
   * than missed (subscribe, then list, without a gap). A server stream has no deadline unless the
   * caller sets one: event streams live as long as the agent.
   */
  private serverStream<S extends ServiceName, M extends RpcName<S>>(
    service: S,
    rpc: M,
    request: RequestOf<S, M>,
    opts: CallOptions | undefined,
  ): AsyncGenerator<ResponseOf<S, M>> {
    const method = lookupMethod(service, rpc);
    const options: GrpcCallOptions = {};
    if (opts?.timeoutMs !== undefined) options.timeoutMs = opts.timeoutMs;
    if (opts?.signal) options.signal = opts.signal;
    return readStream(rpc, this.channel.serverStream({ ...method, deserialize: typedDeserializer<ResponseOf<S, M>>(method) }, request, options));
  }
}

async function* readStream<Res>(rpc: string, messages: AsyncGenerator<Res>): AsyncGenerator<Res> {
  try {
    yield* messages;
  } catch (err) {
    throw toCriError(rpc, err);
  }
}

async function* mapDefined<T, U>(source: AsyncIterable<T>, map: (item: T) => U | undefined): AsyncGenerator<U> {
  for await (const item of source) {
    const mapped = map(item);
    if (mapped !== undefined) yield mapped;
  }
}
