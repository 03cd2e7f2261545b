/**
 * The CRI v1 client: `RuntimeService` and `ImageService` over gRPC on a unix socket, speaking the
 * messages declared in `api.proto` next to this file. Everything the rest of the agent sees is in
 * the TypeScript shapes of `../types.ts`; this module is the only place that knows the wire shapes.
 */
import { fileURLToPath } from 'node:url';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import {
  CriError,
  NamespaceMode,
  type CallOptions,
  type Container,
  type ContainerConfig,
  type ContainerEvent,
  type ContainerEventType,
  type ContainerFilter,
  type ContainerMetadata,
  type ContainerState,
  type ContainerStatus,
  type CriErrorCode,
  type DnsConfig,
  type ExecResult,
  type ImageInfo,
  type ImageService,
  type KeyValueMap,
  type Mount,
  type PodSandbox,
  type PodSandboxConfig,
  type PodSandboxFilter,
  type PodSandboxMetadata,
  type PodSandboxStatus,
  type PortMapping,
  type RuntimeService,
  type RuntimeStatusInfo,
  type SandboxState,
  type VersionInfo,
} from '../types.ts';

export interface CriClientOptions {
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

type ServiceName = 'RuntimeService' | 'ImageService';

// ------------------------------------------------------------------------------------------------
// Wire shapes: what proto-loader hands back for our proto with the load options below (camelCase
// names, int64 as decimal strings, enums as names, defaults filled in, absent messages as null).
// Enums may still arrive as numbers when a newer runtime sends a value our proto does not name.

type Int64 = string | number;
type WireEnum = string | number;

interface WirePodSandboxMetadata {
  name: string;
  uid: string;
  namespace: string;
  attempt: number;
}

interface WireContainerMetadata {
  name: string;
  attempt: number;
}

interface WireImageSpec {
  image: string;
}

interface WireVersionResponse {
  version: string;
  runtimeName: string;
  runtimeVersion: string;
  runtimeApiVersion: string;
}

interface WireStatusResponse {
  status: { conditions: { type: string; status: boolean; reason: string; message: string }[] } | null;
}

interface WirePodSandbox {
  id: string;
  metadata: WirePodSandboxMetadata | null;
  state: WireEnum;
  createdAt: Int64;
  labels: KeyValueMap;
  annotations: KeyValueMap;
  runtimeHandler: string;
}

interface WirePodSandboxStatus extends WirePodSandbox {
  network: { ip: string; additionalIps: { ip: string }[] } | null;
  linux: { namespaces: { options: { network: WireEnum } | null } | null } | null;
}

interface WireContainer {
  id: string;
  podSandboxId: string;
  metadata: WireContainerMetadata | null;
  image: WireImageSpec | null;
  imageRef: string;
  state: WireEnum;
  createdAt: Int64;
  labels: KeyValueMap;
  annotations: KeyValueMap;
}

interface WireContainerStatus {
  id: string;
  metadata: WireContainerMetadata | null;
  state: WireEnum;
  createdAt: Int64;
  startedAt: Int64;
  finishedAt: Int64;
  exitCode: number;
  image: WireImageSpec | null;
  imageRef: string;
  reason: string;
  message: string;
  labels: KeyValueMap;
  annotations: KeyValueMap;
  logPath: string;
}

interface WireImage {
  id: string;
  repoTags: string[];
  repoDigests: string[];
  size: Int64;
}

interface WireExecSyncResponse {
  stdout: Uint8Array;
  stderr: Uint8Array;
  exitCode: number;
}

interface WireContainerEvent {
  containerId: string;
  containerEventType: WireEnum;
  createdAt: Int64;
  podSandboxStatus: WirePodSandboxStatus | null;
}

// ------------------------------------------------------------------------------------------------
// Loading the proto

const LOADER_OPTIONS: protoLoader.Options = {
  keepCase: false,
  longs: String,
  enums: String,
  defaults: true,
  oneofs: true,
};

let packageDefinition: protoLoader.PackageDefinition | undefined;

function loadPackageDefinition(): protoLoader.PackageDefinition {
  packageDefinition ??= protoLoader.loadSync(
    fileURLToPath(new URL('./api.proto', import.meta.url)),
    LOADER_OPTIONS,
  );
  return packageDefinition;
}

function lookupMethod(service: ServiceName, rpc: string): protoLoader.MethodDefinition<object, object> {
  const definition = loadPackageDefinition()[`runtime.v1.${service}`];
  if (definition === undefined || 'format' in definition) {
    throw new Error(`api.proto declares no service runtime.v1.${service}`);
  }
  const method = definition[rpc];
  if (method === undefined) throw new Error(`api.proto declares no RPC ${service}.${rpc}`);
  return method;
}

/**
 * The one place wire data gets its static type: proto-loader decodes against our own schema with
 * `defaults: true`, so every declared field is present with the type the wire interfaces state.
 */
function typedDeserializer<T>(method: protoLoader.MethodDefinition<object, object>): (bytes: Buffer) => T {
  return (bytes) => method.responseDeserialize(bytes) as T;
}

// ------------------------------------------------------------------------------------------------
// Endpoint and errors

/** Turns `unix:///run/containerd/containerd.sock` or `/run/containerd/containerd.sock` into a grpc-js target. */
export function grpcTarget(endpoint: string): string {
  const path = endpoint.startsWith('unix://') ? endpoint.slice('unix://'.length) : endpoint;
  if (!path.startsWith('/')) {
    throw new Error(`unsupported CRI endpoint ${JSON.stringify(endpoint)}: want unix:///absolute/path`);
  }
  return `unix://${path}`;
}

const CRI_ERROR_CODES = {
  CANCELLED: true,
  UNKNOWN: true,
  INVALID_ARGUMENT: true,
  DEADLINE_EXCEEDED: true,
  NOT_FOUND: true,
  ALREADY_EXISTS: true,
  PERMISSION_DENIED: true,
  RESOURCE_EXHAUSTED: true,
  FAILED_PRECONDITION: true,
  ABORTED: true,
  OUT_OF_RANGE: true,
  UNIMPLEMENTED: true,
  INTERNAL: true,
  UNAVAILABLE: true,
  DATA_LOSS: true,
  UNAUTHENTICATED: true,
} satisfies Record<CriErrorCode, true>;

function isCriErrorCode(name: string | undefined): name is CriErrorCode {
  return name !== undefined && Object.hasOwn(CRI_ERROR_CODES, name);
}

function statusCodeName(code: number): CriErrorCode {
  const name: string | undefined = grpc.status[code];
  return isCriErrorCode(name) ? name : 'UNKNOWN';
}

function toCriError(call: string, err: unknown): CriError {
  if (err instanceof CriError) return err;
  if (typeof err === 'object' && err !== null && 'code' in err && typeof err.code === 'number') {
    const details = 'details' in err && typeof err.details === 'string' ? err.details : '';
    const message = err instanceof Error ? err.message : '';
    return new CriError(call, statusCodeName(err.code), details || message);
  }
  return new CriError(call, 'UNKNOWN', err instanceof Error ? err.message : String(err));
}

function cancelledBeforeStart(call: string): CriError {
  return new CriError(call, 'CANCELLED', 'aborted before the call was sent');
}

// ------------------------------------------------------------------------------------------------
// Scalar conversions

function nsToMs(ns: Int64): number {
  if (typeof ns === 'number') return Math.floor(ns / 1e6);
  try {
    return Number(BigInt(ns) / 1_000_000n);
  } catch {
    return 0;
  }
}

function toNumber(value: Int64): number {
  return typeof value === 'number' ? value : Number(value);
}

function toBuffer(bytes: Uint8Array): Buffer {
  return Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes);
}

function toSandboxState(state: WireEnum): SandboxState {
  return state === 'SANDBOX_READY' || state === 0 ? 'SANDBOX_READY' : 'SANDBOX_NOTREADY';
}

const CONTAINER_STATES: readonly ContainerState[] = [
  'CONTAINER_CREATED',
  'CONTAINER_RUNNING',
  'CONTAINER_EXITED',
  'CONTAINER_UNKNOWN',
];

function toContainerState(state: WireEnum): ContainerState {
  const byName = CONTAINER_STATES.find((s) => s === state);
  if (byName !== undefined) return byName;
  return (typeof state === 'number' ? CONTAINER_STATES[state] : undefined) ?? 'CONTAINER_UNKNOWN';
}

const CONTAINER_EVENT_TYPES: readonly ContainerEventType[] = [
  'CONTAINER_CREATED_EVENT',
  'CONTAINER_STARTED_EVENT',
  'CONTAINER_STOPPED_EVENT',
  'CONTAINER_DELETED_EVENT',
];

function toContainerEventType(type: WireEnum): ContainerEventType | undefined {
  const byName = CONTAINER_EVENT_TYPES.find((t) => t === type);
  if (byName !== undefined) return byName;
  return typeof type === 'number' ? CONTAINER_EVENT_TYPES[type] : undefined;
}

function toNamespaceMode(mode: WireEnum): NamespaceMode | undefined {
  switch (mode) {
    case 'POD':
    case 0:
      return NamespaceMode.POD;
    case 'CONTAINER':
    case 1:
      return NamespaceMode.CONTAINER;
    case 'NODE':
    case 2:
      return NamespaceMode.NODE;
    case 'TARGET':
    case 3:
      return NamespaceMode.TARGET;
    default:
      return undefined;
  }
}

// ------------------------------------------------------------------------------------------------
// TypeScript shapes → wire

function portMappingToWire(port: PortMapping): object {
  return {
    protocol: port.protocol,
    containerPort: port.containerPort,
    hostPort: port.hostPort,
    hostIp: port.hostIp,
  };
}

function dnsConfigToWire(dns: DnsConfig): object {
  return { servers: dns.servers, searches: dns.searches, options: dns.options };
}

function linuxSandboxConfigToWire(linux: NonNullable<PodSandboxConfig['linux']>): object {
  const namespaces = linux.securityContext?.namespaceOptions;
  return {
    cgroupParent: linux.cgroupParent ?? '',
    securityContext: namespaces
      ? { namespaceOptions: { network: namespaces.network, pid: namespaces.pid, ipc: namespaces.ipc } }
      : null,
  };
}

function sandboxConfigToWire(config: PodSandboxConfig): object {
  return {
    metadata: sandboxMetadataToWire(config.metadata),
    hostname: config.hostname,
    logDirectory: config.logDirectory,
    dnsConfig: config.dnsConfig ? dnsConfigToWire(config.dnsConfig) : null,
    portMappings: config.portMappings.map(portMappingToWire),
    labels: config.labels,
    annotations: config.annotations,
    linux: config.linux ? linuxSandboxConfigToWire(config.linux) : null,
  };
}

function sandboxMetadataToWire(metadata: PodSandboxMetadata): object {
  return { name: metadata.name, uid: metadata.uid, namespace: metadata.namespace, attempt: metadata.attempt };
}

function mountToWire(mount: Mount): object {
  return { containerPath: mount.containerPath, hostPath: mount.hostPath, readonly: mount.readonly };
}

function containerConfigToWire(config: ContainerConfig): object {
  return {
    metadata: { name: config.metadata.name, attempt: config.metadata.attempt },
    image: imageSpec(config.image.image),
    command: config.command,
    args: config.args,
    workingDir: config.workingDir,
    envs: config.envs.map((env) => ({ key: env.key, value: env.value })),
    mounts: config.mounts.map(mountToWire),
    labels: config.labels,
    annotations: config.annotations,
    logPath: config.logPath,
    stdin: config.stdin,
    tty: config.tty,
  };
}

function imageSpec(image: string): object {
  return { image };
}

function sandboxFilterToWire(filter: PodSandboxFilter): object {
  return {
    id: filter.id ?? '',
    state: filter.state !== undefined ? { state: filter.state } : null,
    labelSelector: filter.labelSelector ?? {},
  };
}

function containerFilterToWire(filter: ContainerFilter): object {
  return {
    id: filter.id ?? '',
    state: filter.state !== undefined ? { state: filter.state } : null,
    podSandboxId: filter.podSandboxId ?? '',
    labelSelector: filter.labelSelector ?? {},
  };
}

// ------------------------------------------------------------------------------------------------
// Wire → TypeScript shapes

function versionFromWire(res: WireVersionResponse): VersionInfo {
  return {
    version: res.version,
    runtimeName: res.runtimeName,
    runtimeVersion: res.runtimeVersion,
    runtimeApiVersion: res.runtimeApiVersion,
  };
}

function runtimeStatusFromWire(res: WireStatusResponse): RuntimeStatusInfo {
  const conditions = res.status?.conditions ?? [];
  return {
    conditions: conditions.map((c) => ({ type: c.type, status: c.status, reason: c.reason, message: c.message })),
  };
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
  const networkMode = networkOption ? toNamespaceMode(networkOption.network) : undefined;
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
    logPath: status.logPath,
  };
}

function imageFromWire(image: WireImage): ImageInfo {
  return {
    id: image.id,
    repoTags: [...image.repoTags],
    repoDigests: [...image.repoDigests],
    size: toNumber(image.size),
  };
}

function execResultFromWire(res: WireExecSyncResponse): ExecResult {
  return { stdout: toBuffer(res.stdout), stderr: toBuffer(res.stderr), exitCode: res.exitCode };
}

function containerEventFromWire(event: WireContainerEvent): ContainerEvent | undefined {
  const type = toContainerEventType(event.containerEventType);
  if (type === undefined) return undefined;
  const result: ContainerEvent = { containerId: event.containerId, type, createdAt: nsToMs(event.createdAt) };
  if (event.podSandboxStatus?.metadata) {
    result.podSandboxMetadata = sandboxMetadataFromWire(event.podSandboxStatus.metadata);
  }
  return result;
}

// ------------------------------------------------------------------------------------------------
// The client

export class CriClient implements RuntimeService, ImageService {
  private readonly runtimeClient: grpc.Client;
  private readonly imageClient: grpc.Client;
  private readonly requestTimeoutMs: number;
  private readonly pullTimeoutMs: number;

  constructor(endpoint: string, options: CriClientOptions = {}) {
    this.requestTimeoutMs = options.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS;
    this.pullTimeoutMs = options.pullTimeoutMs ?? DEFAULT_PULL_TIMEOUT_MS;
    const target = grpcTarget(endpoint);
    const channelOptions: grpc.ChannelOptions = {
      'grpc.max_receive_message_length': options.maxReceiveMessageBytes ?? DEFAULT_MAX_RECEIVE_MESSAGE_BYTES,
    };
    const credentials = grpc.credentials.createInsecure();
    this.runtimeClient = new grpc.Client(target, credentials, channelOptions);
    // Sharing the runtime client's channel keeps one connection to the socket for both services.
    this.imageClient = new grpc.Client(target, credentials, {
      ...channelOptions,
      channelOverride: this.runtimeClient.getChannel(),
    });
  }

  close(): void {
    this.imageClient.close();
    this.runtimeClient.close();
  }

  // ---------------------------------------------------------------- RuntimeService

  async version(opts?: CallOptions): Promise<VersionInfo> {
    const res = await this.unary<WireVersionResponse>('RuntimeService', 'Version', { version: CLIENT_API_VERSION }, opts);
    return versionFromWire(res);
  }

  async status(opts?: CallOptions): Promise<RuntimeStatusInfo> {
    const res = await this.unary<WireStatusResponse>('RuntimeService', 'Status', { verbose: false }, opts);
    return runtimeStatusFromWire(res);
  }

  async runPodSandbox(config: PodSandboxConfig, opts?: CallOptions): Promise<string> {
    const request = { config: sandboxConfigToWire(config), runtimeHandler: '' };
    const res = await this.unary<{ podSandboxId: string }>('RuntimeService', 'RunPodSandbox', request, opts);
    return res.podSandboxId;
  }

  async stopPodSandbox(podSandboxId: string, opts?: CallOptions): Promise<void> {
    await this.unary('RuntimeService', 'StopPodSandbox', { podSandboxId }, opts);
  }

  async removePodSandbox(podSandboxId: string, opts?: CallOptions): Promise<void> {
    await this.unary('RuntimeService', 'RemovePodSandbox', { podSandboxId }, opts);
  }

  async podSandboxStatus(podSandboxId: string, opts?: CallOptions): Promise<PodSandboxStatus> {
    const res = await this.unary<{ status: WirePodSandboxStatus | null }>(
      'RuntimeService',
      'PodSandboxStatus',
      { podSandboxId, verbose: false },
      opts,
    );
    if (res.status === null) throw new CriError('PodSandboxStatus', 'INTERNAL', 'runtime returned no status');
    return sandboxStatusFromWire(res.status);
  }

  async listPodSandbox(filter?: PodSandboxFilter, opts?: CallOptions): Promise<PodSandbox[]> {
    const request = { filter: filter ? sandboxFilterToWire(filter) : null };
    const res = await this.unary<{ items: WirePodSandbox[] }>('RuntimeService', 'ListPodSandbox', request, opts);
    return res.items.map(sandboxFromWire);
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
    const res = await this.unary<{ containerId: string }>('RuntimeService', 'CreateContainer', request, opts);
    return res.containerId;
  }

  async startContainer(containerId: string, opts?: CallOptions): Promise<void> {
    await this.unary('RuntimeService', 'StartContainer', { containerId }, opts);
  }

  async stopContainer(containerId: string, timeoutSeconds: number, opts?: CallOptions): Promise<void> {
    // The runtime may legitimately spend the whole grace period before answering.
    const defaultTimeoutMs = this.requestTimeoutMs + Math.max(0, timeoutSeconds) * 1000;
    await this.unary('RuntimeService', 'StopContainer', { containerId, timeout: timeoutSeconds }, opts, defaultTimeoutMs);
  }

  async removeContainer(containerId: string, opts?: CallOptions): Promise<void> {
    await this.unary('RuntimeService', 'RemoveContainer', { containerId }, opts);
  }

  async listContainers(filter?: ContainerFilter, opts?: CallOptions): Promise<Container[]> {
    const request = { filter: filter ? containerFilterToWire(filter) : null };
    const res = await this.unary<{ containers: WireContainer[] }>('RuntimeService', 'ListContainers', request, opts);
    return res.containers.map(containerFromWire);
  }

  async containerStatus(containerId: string, opts?: CallOptions): Promise<ContainerStatus> {
    const res = await this.unary<{ status: WireContainerStatus | null }>(
      'RuntimeService',
      'ContainerStatus',
      { containerId, verbose: false },
      opts,
    );
    if (res.status === null) throw new CriError('ContainerStatus', 'INTERNAL', 'runtime returned no status');
    return containerStatusFromWire(res.status);
  }

  async execSync(containerId: string, cmd: string[], timeoutSeconds: number, opts?: CallOptions): Promise<ExecResult> {
    // Same reasoning as stopContainer: the command itself may run for its full timeout.
    const defaultTimeoutMs = this.requestTimeoutMs + Math.max(0, timeoutSeconds) * 1000;
    const request = { containerId, cmd, timeout: timeoutSeconds };
    const res = await this.unary<WireExecSyncResponse>('RuntimeService', 'ExecSync', request, opts, defaultTimeoutMs);
    return execResultFromWire(res);
  }

  containerEvents(opts?: CallOptions): AsyncIterable<ContainerEvent> {
    const stream = this.serverStream<WireContainerEvent>('RuntimeService', 'GetContainerEvents', {}, opts);
    return mapDefined(stream, containerEventFromWire);
  }

  // ---------------------------------------------------------------- ImageService

  async pullImage(image: string, sandboxConfig?: PodSandboxConfig, opts?: CallOptions): Promise<string> {
    const request = {
      image: imageSpec(image),
      sandboxConfig: sandboxConfig ? sandboxConfigToWire(sandboxConfig) : null,
    };
    const res = await this.unary<{ imageRef: string }>('ImageService', 'PullImage', request, opts, this.pullTimeoutMs);
    return res.imageRef;
  }

  async imageStatus(image: string, opts?: CallOptions): Promise<ImageInfo | null> {
    const request = { image: imageSpec(image), verbose: false };
    const res = await this.unary<{ image: WireImage | null }>('ImageService', 'ImageStatus', request, opts);
    // Runtimes answer an absent image with an empty response, not NOT_FOUND; containerd leaves the id empty.
    return res.image === null || res.image.id === '' ? null : imageFromWire(res.image);
  }

  async listImages(opts?: CallOptions): Promise<ImageInfo[]> {
    const res = await this.unary<{ images: WireImage[] }>('ImageService', 'ListImages', { filter: null }, opts);
    return res.images.map(imageFromWire);
  }

  async removeImage(image: string, opts?: CallOptions): Promise<void> {
    await this.unary('ImageService', 'RemoveImage', { image: imageSpec(image) }, opts);
  }

  // ---------------------------------------------------------------- transport

  private clientFor(service: ServiceName): grpc.Client {
    return service === 'RuntimeService' ? this.runtimeClient : this.imageClient;
  }

  private unary<Res = unknown>(
    service: ServiceName,
    rpc: string,
    request: object,
    opts: CallOptions | undefined,
    defaultTimeoutMs = this.requestTimeoutMs,
  ): Promise<Res> {
    const method = lookupMethod(service, rpc);
    const signal = opts?.signal;
    return new Promise<Res>((resolve, reject) => {
      if (signal?.aborted) {
        reject(cancelledBeforeStart(rpc));
        return;
      }
      const onAbort = (): void => call.cancel();
      const call = this.clientFor(service).makeUnaryRequest(
        method.path,
        method.requestSerialize,
        typedDeserializer<Res>(method),
        request,
        new grpc.Metadata(),
        { deadline: Date.now() + (opts?.timeoutMs ?? defaultTimeoutMs) },
        (err, res) => {
          signal?.removeEventListener('abort', onAbort);
          if (err) reject(toCriError(rpc, err));
          else if (res === undefined) reject(new CriError(rpc, 'INTERNAL', 'empty response'));
          else resolve(res);
        },
      );
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  }

  /**
   * Opens the stream at once, so that messages sent before the first `next()` are buffered rather
   * than missed (subscribe, then list, without a gap). A server stream has no deadline unless the
   * caller sets one: event streams live as long as the agent.
   */
  private serverStream<Res>(
    service: ServiceName,
    rpc: string,
    request: object,
    opts: CallOptions | undefined,
  ): AsyncGenerator<Res> {
    const method = lookupMethod(service, rpc);
    const signal = opts?.signal;
    if (signal?.aborted) return failedStream(cancelledBeforeStart(rpc));
    const callOptions: grpc.CallOptions = opts?.timeoutMs !== undefined ? { deadline: Date.now() + opts.timeoutMs } : {};
    const call = this.clientFor(service).makeServerStreamRequest(
      method.path,
      method.requestSerialize,
      typedDeserializer<Res>(method),
      request,
      new grpc.Metadata(),
      callOptions,
    );
    const onAbort = (): void => call.cancel();
    signal?.addEventListener('abort', onAbort, { once: true });
    return readStream(rpc, call, () => signal?.removeEventListener('abort', onAbort));
  }
}

async function* readStream<Res>(
  rpc: string,
  call: grpc.ClientReadableStream<Res>,
  cleanup: () => void,
): AsyncGenerator<Res> {
  try {
    for await (const message of call) {
      const typed: Res = message;
      yield typed;
    }
  } catch (err) {
    throw toCriError(rpc, err);
  } finally {
    cleanup();
    call.cancel();
  }
}

/** A stream that fails on its first `next()`, where an opened stream would report its error. */
async function* failedStream<Res>(err: CriError): AsyncGenerator<Res> {
  throw err;
}

async function* mapDefined<T, U>(source: AsyncIterable<T>, map: (item: T) => U | undefined): AsyncGenerator<U> {
  for await (const item of source) {
    const mapped = map(item);
    if (mapped !== undefined) yield mapped;
  }
}

export function createCriClient(endpoint: string, options?: CriClientOptions): CriClient {
  return new CriClient(endpoint, options);
}
