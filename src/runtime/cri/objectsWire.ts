/**
 * The CRI's sandbox, container, image and runtime messages (api.proto, in the wire shapes of
 * `wire.ts`) converted both ways, as `securityWire.ts` and `statsWire.ts` do for theirs: the gRPC
 * client writes its requests (`toWire`) and reads the runtime's responses (`fromWire`), sim://'s
 * server reads requests (`fromRequest`, which refuses one that lacks what the call needs) and
 * writes its responses (`toWire`). The table of calls (`wireCalls.ts`) puts them together per RPC.
 */
import { containerSecurityFromWire, containerSecurityToWire, resourcesFromWire, resourcesToWire, sandboxSecurityFromWire, sandboxSecurityToWire } from './securityWire.ts';
import {
  type AuthConfig,
  CriError,
  definedOnly,
  type Container,
  type ContainerConfig,
  type ContainerFilter,
  type ContainerMetadata,
  type ContainerState,
  type ContainerStatus,
  type ExecResult,
  type ImageInfo,
  type PodSandbox,
  type PodSandboxConfig,
  type PodSandboxFilter,
  type PodSandboxMetadata,
  type PodSandboxStatus,
  type RuntimeStatusInfo,
  type SandboxState,
  type VersionInfo,
} from '../types.ts';
import {
  CONTAINER_STATES,
  PROTOCOLS,
  SANDBOX_STATES,
  containerUserFromWire,
  containerUserToWire,
  enumValue,
  int64ToNumber,
  msToNs,
  namespaceModeFromWire,
  namespaceModeToWire,
  nsToMs,
  type WireAuthConfig,
  type WireContainer,
  type WireContainerConfig,
  type WireContainerFilter,
  type WireContainerMetadata,
  type WireContainerStatus,
  type WireEnum,
  type WireExecSyncResponse,
  type WireImage,
  type WireImageSpec,
  type WirePodSandbox,
  type WirePodSandboxConfig,
  type WirePodSandboxFilter,
  type WirePodSandboxMetadata,
  type WirePodSandboxStatus,
  type WireStatusResponse,
  type WireVersionResponse,
} from './wire.ts';

/** A request that lacks what its call needs: a server answers INVALID_ARGUMENT, as containerd does. */
export class InvalidRequest extends Error {
  override readonly name = 'InvalidRequest';
  readonly code = 'INVALID_ARGUMENT';
}

// ------------------------------------------------------------------------------------------------
// Scalars

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
// The client's requests

export function sandboxConfigToWire(config: PodSandboxConfig): WirePodSandboxConfig {
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

export function containerConfigToWire(config: ContainerConfig): WireContainerConfig {
  return {
    metadata: { name: config.metadata.name, attempt: config.metadata.attempt },
    image: { image: config.image.image },
    command: config.command,
    args: config.args,
    workingDir: config.workingDir,
    envs: config.envs.map(({ key, value }) => ({ key, value })),
    mounts: config.mounts.map(({ containerPath, hostPath, readonly, propagation }) => ({ containerPath, hostPath, readonly, propagation: propagation ?? 'PROPAGATION_PRIVATE' })),
    devices: (config.devices ?? []).map(({ containerPath, hostPath, permissions }) => ({ containerPath, hostPath, permissions })),
    labels: config.labels,
    annotations: config.annotations,
    logPath: config.logPath,
    stdin: config.stdin,
    stdinOnce: config.stdinOnce ?? false,
    tty: config.tty,
    linux: config.linux ? { resources: resourcesToWire(config.linux.resources), securityContext: containerSecurityToWire(config.linux.securityContext) } : null,
  };
}

/** The fields PodSandboxFilter and ContainerFilter share; a PodSandboxFilter is this alone. */
export function sandboxFilterToWire(filter: PodSandboxFilter | ContainerFilter): WirePodSandboxFilter {
  return {
    id: filter.id ?? '',
    state: filter.state !== undefined ? { state: filter.state } : null,
    labelSelector: filter.labelSelector ?? {},
  };
}

export function containerFilterToWire(filter: ContainerFilter): WireContainerFilter {
  return { ...sandboxFilterToWire(filter), podSandboxId: filter.podSandboxId ?? '' };
}

// ------------------------------------------------------------------------------------------------
// The runtime's responses, as the client reads them

export function versionFromWire(res: WireVersionResponse): VersionInfo {
  const { version, runtimeName, runtimeVersion, runtimeApiVersion } = res;
  return { version, runtimeName, runtimeVersion, runtimeApiVersion };
}

export function runtimeStatusFromWire(res: WireStatusResponse): RuntimeStatusInfo {
  const conditions = res.status?.conditions ?? [];
  const info: RuntimeStatusInfo = { conditions: conditions.map(({ type, status, reason, message }) => ({ type, status, reason, message })) };
  const config = verboseConfig(res.info?.['config']);
  if (typeof config?.sandboxImage === 'string' && config.sandboxImage) info.sandboxImage = config.sandboxImage;
  if (typeof config?.systemdCgroup === 'boolean') info.systemdCgroup = config.systemdCgroup;
  if (res.features) info.features = { supplementalGroupsPolicy: res.features.supplementalGroupsPolicy };
  // A handler without features supports none of them (kuberuntime_manager.go toKubeRuntimeStatus).
  const handlers = (res.runtimeHandlers ?? []).map(({ name, features }) => ({
    name,
    features: { recursiveReadOnlyMounts: features?.recursiveReadOnlyMounts ?? false, userNamespaces: features?.userNamespaces ?? false },
  }));
  if (handlers.length > 0) info.runtimeHandlers = handlers;
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

export function sandboxMetadataFromWire(metadata: WirePodSandboxMetadata | null): PodSandboxMetadata {
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

export function sandboxFromWire(sandbox: WirePodSandbox): PodSandbox {
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

export function sandboxStatusFromWire(status: WirePodSandboxStatus): PodSandboxStatus {
  const result: PodSandboxStatus = sandboxFromWire(status);
  if (status.network) {
    result.network = { ip: status.network.ip, additionalIps: status.network.additionalIps.map((p) => p.ip) };
  }
  const networkOption = status.linux?.namespaces?.options;
  const networkMode = networkOption ? namespaceModeFromWire(networkOption.network) : undefined;
  if (networkMode !== undefined) result.networkMode = networkMode;
  return result;
}

export function containerFromWire(container: WireContainer): Container {
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

export function containerStatusFromWire(status: WireContainerStatus): ContainerStatus {
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

export function imageFromWire(image: WireImage): ImageInfo {
  return {
    id: image.id,
    repoTags: [...image.repoTags],
    repoDigests: [...image.repoDigests],
    size: int64ToNumber(image.size),
    ...(image.uid ? { uid: int64ToNumber(image.uid.value) } : image.username ? { username: image.username } : {}),
    ...(image.pinned ? { pinned: true } : {}),
  };
}

export function execResultFromWire(res: WireExecSyncResponse): ExecResult {
  return { stdout: toBuffer(res.stdout), stderr: toBuffer(res.stderr), exitCode: res.exitCode };
}

/** A status (or stats) response's message, which a conforming runtime never leaves out. */
export function requireStatus<T>(rpc: string, status: T | null, what = 'status'): T {
  if (status === null) throw new CriError(rpc, 'INTERNAL', `runtime returned no ${what}`);
  return status;
}

// ------------------------------------------------------------------------------------------------
// Requests, as a server reads them

function sandboxMetadataFromRequest(wire: WirePodSandboxMetadata | null): PodSandboxMetadata {
  if (!wire || !wire.name) throw new InvalidRequest('sandbox config metadata (name, uid, namespace) is required');
  return { name: wire.name, uid: wire.uid, namespace: wire.namespace, attempt: wire.attempt };
}

export function sandboxConfigFromRequest(wire: WirePodSandboxConfig | null): PodSandboxConfig {
  if (!wire) throw new InvalidRequest('sandbox config is required');
  const config: PodSandboxConfig = {
    metadata: sandboxMetadataFromRequest(wire.metadata),
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

export function containerConfigFromRequest(wire: WireContainerConfig | null): ContainerConfig {
  if (!wire || !wire.metadata || !wire.metadata.name) throw new InvalidRequest('container config metadata (name) is required');
  if (!wire.image || !wire.image.image) throw new InvalidRequest(`container "${wire.metadata.name}": image is required`);
  return {
    metadata: { name: wire.metadata.name, attempt: wire.metadata.attempt },
    image: { image: wire.image.image },
    command: [...wire.command],
    args: [...wire.args],
    workingDir: wire.workingDir,
    envs: wire.envs.map(({ key, value }) => ({ key, value })),
    mounts: wire.mounts.map(({ containerPath, hostPath, readonly }) => ({ containerPath, hostPath, readonly })),
    ...(wire.devices.length > 0 ? { devices: wire.devices.map(({ containerPath, hostPath, permissions }) => ({ containerPath, hostPath, permissions })) } : {}),
    labels: { ...wire.labels },
    annotations: { ...wire.annotations },
    logPath: wire.logPath,
    stdin: wire.stdin,
    ...(wire.stdinOnce ? { stdinOnce: true } : {}),
    tty: wire.tty,
    ...(wire.linux ? { linux: definedOnly({ resources: resourcesFromWire(wire.linux.resources), securityContext: containerSecurityFromWire(wire.linux.securityContext) }) } : {}),
  };
}

/** What PodSandboxFilter and ContainerFilter share: an id, a state and a label selector, each optional. */
function filterFromRequest<S extends string>(
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

export function sandboxFilterFromRequest(wire: WirePodSandboxFilter | null): PodSandboxFilter {
  return wire ? filterFromRequest(wire, SANDBOX_STATES) : {};
}

export function containerFilterFromRequest(wire: WireContainerFilter | null): ContainerFilter {
  if (!wire) return {};
  const result: ContainerFilter = filterFromRequest(wire, CONTAINER_STATES);
  if (wire.podSandboxId) result.podSandboxId = wire.podSandboxId;
  return result;
}

export function imageFromRequest(wire: WireImageSpec | null): string {
  if (!wire || !wire.image) throw new InvalidRequest('image spec is required');
  return wire.image;
}

/** A PullImage's credentials on the wire: every field, unset ones empty. */
export function authConfigToWire(auth: AuthConfig): WireAuthConfig {
  return {
    username: auth.username ?? '',
    password: auth.password ?? '',
    auth: auth.auth ?? '',
    serverAddress: auth.serverAddress ?? '',
    identityToken: auth.identityToken ?? '',
    registryToken: auth.registryToken ?? '',
  };
}

/** A received PullImage's credentials: the fields that were set. */
export function authConfigFromWire(wire: WireAuthConfig): AuthConfig {
  return definedOnly({
    username: wire.username || undefined,
    password: wire.password || undefined,
    auth: wire.auth || undefined,
    serverAddress: wire.serverAddress || undefined,
    identityToken: wire.identityToken || undefined,
    registryToken: wire.registryToken || undefined,
  });
}

// ------------------------------------------------------------------------------------------------
// Responses, as a server writes them

/** Status as containerd answers it: verbose, its config (JSON) names its sandbox image and cgroup driver. */
export function runtimeStatusToWire(status: RuntimeStatusInfo): WireStatusResponse {
  const config = definedOnly<{ sandboxImage?: string; systemdCgroup?: boolean }>({ sandboxImage: status.sandboxImage, systemdCgroup: status.systemdCgroup });
  return {
    status: { conditions: status.conditions },
    info: Object.keys(config).length > 0 ? { config: JSON.stringify(config) } : {},
    features: status.features ?? null,
    runtimeHandlers: status.runtimeHandlers ?? [],
  };
}

export function sandboxToWire(sandbox: PodSandbox): WirePodSandbox {
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

export function sandboxStatusToWire(status: PodSandboxStatus): WirePodSandboxStatus {
  return {
    ...sandboxToWire(status),
    network: { ip: status.network?.ip ?? '', additionalIps: (status.network?.additionalIps ?? []).map((ip) => ({ ip })) },
    linux: { namespaces: { options: { network: namespaceModeToWire(status.networkMode) } } },
  };
}

/** What a container's listing and its status both carry, in the wire's forms. */
function containerCommonToWire(c: Container | ContainerStatus) {
  const { id, metadata, state, imageRef, labels, annotations } = c;
  return { id, metadata, state, imageRef, labels, annotations, image: { image: c.image }, createdAt: msToNs(c.createdAt) };
}

export function containerToWire(container: Container): WireContainer {
  return { ...containerCommonToWire(container), podSandboxId: container.podSandboxId };
}

export function containerStatusToWire(status: ContainerStatus): WireContainerStatus {
  const { exitCode, reason, message, logPath } = status;
  return {
    ...containerCommonToWire(status),
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
export function imageToWire(image: ImageInfo): WireImage {
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
