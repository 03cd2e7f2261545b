/**
 * The Container Runtime Interface as the agent sees it: the CRI v1 calls statelet makes, in
 * TypeScript shapes. Field names follow the CRI proto (camelCase); timestamps are converted from
 * the proto's nanoseconds to milliseconds since the epoch so that the rest of the agent works in
 * one unit. Two implementations exist: the gRPC client (`cri/client.ts`, used for containerd and
 * for the embedded `sim://` runtime alike) and the simulated engine itself (`sim/engine.ts`, which
 * the test kit calls without gRPC).
 */

/** Options every runtime call accepts: a cancellation signal and a deadline. */
export interface CallOptions {
  signal?: AbortSignal;
  /** Deadline for this call in milliseconds; the implementation picks a default when absent. */
  timeoutMs?: number;
}

export type KeyValueMap = Record<string, string>;

export interface VersionInfo {
  version: string;
  runtimeName: string;
  runtimeVersion: string;
  runtimeApiVersion: string;
}

interface RuntimeCondition {
  type: string;
  status: boolean;
  reason: string;
  message: string;
}

/** CRI RuntimeFeatures: what the runtime implements, whatever its handler. */
export interface RuntimeFeatures {
  /** It applies supplementalGroupsPolicy (Strict too) and reports ContainerStatus.user. */
  supplementalGroupsPolicy: boolean;
}

/** CRI RuntimeHandlerFeatures: what one runtime handler supports. */
export interface RuntimeHandlerFeatures {
  recursiveReadOnlyMounts: boolean;
  userNamespaces: boolean;
}

/** CRI RuntimeHandler: a handler a RuntimeClass may name; '' is the runtime's default one. */
export interface RuntimeHandler {
  name: string;
  features: RuntimeHandlerFeatures;
}

export interface RuntimeStatusInfo {
  conditions: RuntimeCondition[];
  /** StatusResponse.features; absent: the runtime sends none (containerd 1.6 does not know the field). */
  features?: RuntimeFeatures;
  /** StatusResponse.runtime_handlers; empty or absent: the runtime reports none (containerd 1.6 and 1.7 do not know the field). */
  runtimeHandlers?: RuntimeHandler[];
  /**
   * With `verbose`: the image the runtime runs its sandboxes from (containerd's sandbox_image, in
   * its verbose status's config), which image garbage collection must keep: containerd 1.6 does
   * not pin it.
   */
  sandboxImage?: string;
  /** With `verbose`: the runtime makes cgroups through systemd (containerd's SystemdCgroup), where it says. */
  systemdCgroup?: boolean;
}

export interface PodSandboxMetadata {
  name: string;
  uid: string;
  namespace: string;
  attempt: number;
}

/** CRI NamespaceMode: POD = 0, CONTAINER = 1, NODE = 2, TARGET = 3. */
export type NamespaceMode = 0 | 1 | 2 | 3;
export const NamespaceMode = { POD: 0, CONTAINER: 1, NODE: 2, TARGET: 3 } as const;

/** CRI IDMapping: `length` IDs from `containerId` inside the namespace are `hostId`… on the host. */
export interface IdMapping {
  hostId: number;
  containerId: number;
  length: number;
}

/** CRI UserNamespace: the node's user namespace (NODE) or one of the pod's own with these mappings (POD). */
export interface UserNamespace {
  mode: NamespaceMode;
  uids: IdMapping[];
  gids: IdMapping[];
}

/** CRI NamespaceOption: which of the pod's or the node's namespaces a sandbox or container joins. */
export interface NamespaceOptions {
  network?: NamespaceMode;
  pid?: NamespaceMode;
  ipc?: NamespaceMode;
  /** With pid TARGET: the container whose namespace it joins. */
  targetId?: string;
  /** Absent: none sent (the runtime assumes the node's). */
  usernsOptions?: UserNamespace;
}

/** CRI SecurityProfile: a seccomp or AppArmor profile. */
export interface SecurityProfile {
  profileType: 'RuntimeDefault' | 'Unconfined' | 'Localhost';
  /** Localhost only: the profile's file (seccomp) or name (AppArmor). */
  localhostRef?: string;
}

/** CRI SELinuxOption. */
export interface SELinuxOption {
  user: string;
  role: string;
  type: string;
  level: string;
}

/** CRI SupplementalGroupsPolicy: Merge (the image's groups too) or Strict. */
export type SupplementalGroupsPolicy = 'Merge' | 'Strict';

/** CRI LinuxSandboxSecurityContext: what the sandbox itself runs with. */
export interface LinuxSandboxSecurityContext {
  namespaceOptions?: NamespaceOptions;
  selinuxOptions?: SELinuxOption;
  runAsUser?: number;
  runAsGroup?: number;
  supplementalGroups?: number[];
  supplementalGroupsPolicy?: SupplementalGroupsPolicy;
  privileged?: boolean;
  seccomp?: SecurityProfile;
}

/** CRI LinuxContainerResources: a container's CPU and memory settings (its cgroup's). */
export interface LinuxContainerResources {
  /** CFS period in µs. */
  cpuPeriod: number;
  /** CFS quota in µs per period; 0: none. */
  cpuQuota: number;
  cpuShares: number;
  /** 0: no limit. */
  memoryLimitInBytes: number;
  oomScoreAdj: number;
  /** The HugeTLB limit per page size the host has (`2MB`, `1GB`), in bytes; 0 denies that size. Absent: none sent. */
  hugepageLimits?: HugepageLimit[];
  /** cgroup v2 files and their values for the runtime to write (`memory.oom.group`, `memory.swap.max`). Absent: none. */
  unified?: KeyValueMap;
  /** cgroup v1 memory+swap limit (`memory.memsw.limit_in_bytes`); equal to the memory limit: no swap. Absent: not set. */
  memorySwapLimitInBytes?: number;
}

/** CRI HugepageLimit: a page size as runc names it (`2MB`) and the bytes of it allowed. */
export interface HugepageLimit {
  pageSize: string;
  limit: number;
}

/** CRI LinuxContainerSecurityContext: who a container's process is and what it may do. */
export interface LinuxContainerSecurityContext {
  /** Added and dropped as written (`ALL`, `NET_ADMIN`); absent: the runtime's default set. */
  capabilities?: { add: string[]; drop: string[] };
  privileged: boolean;
  namespaceOptions: NamespaceOptions;
  selinuxOptions?: SELinuxOption;
  runAsUser?: number;
  /** Only when no uid is known: a user name the runtime resolves in the image. */
  runAsUsername?: string;
  runAsGroup?: number;
  readonlyRootfs: boolean;
  supplementalGroups: number[];
  supplementalGroupsPolicy?: SupplementalGroupsPolicy;
  noNewPrivs: boolean;
  maskedPaths: string[];
  readonlyPaths: string[];
  seccomp?: SecurityProfile;
  apparmor?: SecurityProfile;
  /** The deprecated string form of `apparmor` (`runtime/default`, `unconfined`, `localhost/<name>`). */
  apparmorProfile?: string;
}

export interface PortMapping {
  protocol: 'TCP' | 'UDP' | 'SCTP';
  containerPort: number;
  hostPort: number;
  hostIp: string;
}

export interface DnsConfig {
  servers: string[];
  searches: string[];
  options: string[];
}

export interface PodSandboxConfig {
  metadata: PodSandboxMetadata;
  hostname: string;
  logDirectory: string;
  dnsConfig?: DnsConfig;
  portMappings: PortMapping[];
  labels: KeyValueMap;
  annotations: KeyValueMap;
  linux?: {
    cgroupParent?: string;
    securityContext?: LinuxSandboxSecurityContext;
    sysctls?: KeyValueMap;
  };
}

/** CRI PodSandboxState: SANDBOX_READY = 0, SANDBOX_NOTREADY = 1. */
export type SandboxState = 'SANDBOX_READY' | 'SANDBOX_NOTREADY';

export interface PodSandbox {
  id: string;
  metadata: PodSandboxMetadata;
  state: SandboxState;
  /** Milliseconds since the epoch. */
  createdAt: number;
  labels: KeyValueMap;
  annotations: KeyValueMap;
  runtimeHandler: string;
}

export interface PodSandboxStatus extends PodSandbox {
  network?: { ip: string; additionalIps: string[] };
  /** Network namespace mode the sandbox was created with (NODE for hostNetwork). */
  networkMode?: NamespaceMode;
}

export interface PodSandboxFilter {
  id?: string;
  state?: SandboxState;
  labelSelector?: KeyValueMap;
}

export interface ContainerMetadata {
  name: string;
  attempt: number;
}

export type MountPropagation = 'PROPAGATION_PRIVATE' | 'PROPAGATION_HOST_TO_CONTAINER' | 'PROPAGATION_BIDIRECTIONAL';

export interface Mount {
  containerPath: string;
  hostPath: string;
  readonly: boolean;
  /** Absent: private. */
  propagation?: MountPropagation;
}

/** A host device given to a container (CRI Device): a raw block volume's link, resolved by the runtime. */
export interface Device {
  containerPath: string;
  hostPath: string;
  /** cgroups device permissions: `mrw`, or `r` for a read-only volume. */
  permissions: string;
}

export interface ContainerConfig {
  metadata: ContainerMetadata;
  image: { image: string };
  command: string[];
  args: string[];
  workingDir: string;
  envs: { key: string; value: string }[];
  mounts: Mount[];
  /** Absent: none. */
  devices?: Device[];
  labels: KeyValueMap;
  annotations: KeyValueMap;
  /** Relative to the sandbox's logDirectory. */
  logPath: string;
  stdin: boolean;
  /** Close stdin after the first attach ends (CRI `stdin_once`); absent: false. */
  stdinOnce?: boolean;
  tty: boolean;
  linux?: { resources?: LinuxContainerResources; securityContext?: LinuxContainerSecurityContext };
}

/** CRI ContainerState: CREATED = 0, RUNNING = 1, EXITED = 2, UNKNOWN = 3. */
export type ContainerState =
  | 'CONTAINER_CREATED'
  | 'CONTAINER_RUNNING'
  | 'CONTAINER_EXITED'
  | 'CONTAINER_UNKNOWN';

export interface Container {
  id: string;
  podSandboxId: string;
  metadata: ContainerMetadata;
  image: string;
  imageRef: string;
  state: ContainerState;
  /** Milliseconds since the epoch. */
  createdAt: number;
  labels: KeyValueMap;
  annotations: KeyValueMap;
}

export interface ContainerFilter {
  id?: string;
  state?: ContainerState;
  podSandboxId?: string;
  labelSelector?: KeyValueMap;
}

/** CRI LinuxContainerUser: the identity the container's first process started with. */
export interface LinuxContainerUser {
  uid: number;
  gid: number;
  supplementalGroups: number[];
}

/** CRI ContainerUser. */
export interface ContainerUser {
  linux?: LinuxContainerUser;
}

export interface ContainerStatus {
  id: string;
  metadata: ContainerMetadata;
  state: ContainerState;
  /** Milliseconds since the epoch; 0 when not applicable. */
  createdAt: number;
  startedAt: number;
  finishedAt: number;
  exitCode: number;
  image: string;
  imageRef: string;
  /** Runtime-provided reason for the state (`Completed`, `Error`, `OOMKilled`, …). */
  reason: string;
  message: string;
  labels: KeyValueMap;
  annotations: KeyValueMap;
  /** The mounts it was created with (the kubelet finds the termination message file among them). */
  mounts: Mount[];
  logPath: string;
  /** The process's identity, when the runtime reports it (containerd 2.0 does; containerd 1.6 does not). */
  user?: ContainerUser;
  /**
   * The CPU and memory settings the container runs with (CRI ContainerStatus.resources.linux),
   * when the runtime reports them: the kubelet reads a resized container's actual resources here.
   */
  resources?: LinuxContainerResources;
}

export interface ExecResult {
  stdout: Buffer;
  stderr: Buffer;
  exitCode: number;
}

/** CRI ContainerEventType: CREATED = 0, STARTED = 1, STOPPED = 2, DELETED = 3. */
export type ContainerEventType =
  | 'CONTAINER_CREATED_EVENT'
  | 'CONTAINER_STARTED_EVENT'
  | 'CONTAINER_STOPPED_EVENT'
  | 'CONTAINER_DELETED_EVENT';

export interface ContainerEvent {
  containerId: string;
  type: ContainerEventType;
  /** Milliseconds since the epoch. */
  createdAt: number;
  podSandboxMetadata?: PodSandboxMetadata;
}

/** CRI ExecRequest: a command run in a container with the client's streams. */
export interface ExecRequest {
  containerId: string;
  cmd: string[];
  tty: boolean;
  stdin: boolean;
  stdout: boolean;
  stderr: boolean;
}

/** CRI AttachRequest: the streams of the container's main process. */
export type AttachRequest = Omit<ExecRequest, 'cmd'>;

/** CRI PortForwardRequest. */
export interface PortForwardRequest {
  podSandboxId: string;
  port: number[];
}

/**
 * CRI resource usage (CpuUsage, MemoryUsage, FilesystemUsage, SwapUsage, ProcessUsage). Each
 * value is the proto's UInt64Value: absent when the runtime did not report it, which the kubelet
 * tells apart from 0. `timestamp` is milliseconds since the epoch, as everywhere here.
 */
export interface CpuUsage {
  timestamp: number;
  /** Cumulative CPU time over all cores since the container (or sandbox) was created. */
  usageCoreNanoSeconds?: number;
  /** CPU cores in use, averaged over the runtime's own sample window (core-nanoseconds per second). */
  usageNanoCores?: number;
}

export interface MemoryUsage {
  timestamp: number;
  workingSetBytes?: number;
  availableBytes?: number;
  usageBytes?: number;
  rssBytes?: number;
  pageFaults?: number;
  majorPageFaults?: number;
}

export interface FilesystemUsage {
  timestamp: number;
  /** The mount point of the filesystem the usage is on. */
  mountpoint?: string;
  usedBytes?: number;
  inodesUsed?: number;
}

/**
 * The runtime's filesystems (ImageFsInfo): where it keeps images, and, where the runtime keeps the
 * containers' writable layers on another filesystem (a split disk), that one too; usually one
 * image filesystem and no container filesystem (containerd and CRI-O answer so).
 */
export interface ImageFsInfo {
  imageFilesystems: FilesystemUsage[];
  containerFilesystems: FilesystemUsage[];
}

export interface SwapUsage {
  timestamp: number;
  swapAvailableBytes?: number;
  swapUsageBytes?: number;
}

export interface ContainerStats {
  attributes: { id: string; metadata: ContainerMetadata; labels: KeyValueMap; annotations: KeyValueMap };
  cpu?: CpuUsage;
  memory?: MemoryUsage;
  writableLayer?: FilesystemUsage;
  swap?: SwapUsage;
}

export interface ContainerStatsFilter {
  id?: string;
  podSandboxId?: string;
  labelSelector?: KeyValueMap;
}

export interface PodSandboxStats {
  attributes: { id: string; metadata: PodSandboxMetadata; labels: KeyValueMap; annotations: KeyValueMap };
  /** LinuxPodSandboxStats: the pod's cgroup and the stats of its containers. */
  linux?: {
    cpu?: CpuUsage;
    memory?: MemoryUsage;
    process?: { timestamp: number; processCount?: number };
    containers: ContainerStats[];
  };
}

export interface PodSandboxStatsFilter {
  id?: string;
  labelSelector?: KeyValueMap;
}

/** `value` without its undefined members: the stats leave an unreported value out, never `undefined`. */
export function definedOnly<T extends object>(value: { [K in keyof T]: T[K] | undefined }): T {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as T;
}

/** The RuntimeService calls the agent uses. */
export interface RuntimeService {
  version(opts?: CallOptions): Promise<VersionInfo>;
  status(opts?: CallOptions & { verbose?: boolean }): Promise<RuntimeStatusInfo>;
  /** Tells the runtime the node's pod CIDR(s), comma-separated (UpdateRuntimeConfig's network_config.pod_cidr). */
  updateRuntimeConfig(podCidr: string, opts?: CallOptions): Promise<void>;
  /** `runtimeHandler`: the RuntimeClass's handler ('' or absent: the runtime's default). */
  runPodSandbox(config: PodSandboxConfig, runtimeHandler?: string, opts?: CallOptions): Promise<string>;
  stopPodSandbox(podSandboxId: string, opts?: CallOptions): Promise<void>;
  removePodSandbox(podSandboxId: string, opts?: CallOptions): Promise<void>;
  podSandboxStatus(podSandboxId: string, opts?: CallOptions): Promise<PodSandboxStatus>;
  listPodSandbox(filter?: PodSandboxFilter, opts?: CallOptions): Promise<PodSandbox[]>;
  createContainer(
    podSandboxId: string,
    config: ContainerConfig,
    sandboxConfig: PodSandboxConfig,
    opts?: CallOptions,
  ): Promise<string>;
  startContainer(containerId: string, opts?: CallOptions): Promise<void>;
  /** Stops the container, waiting up to `timeoutSeconds` after SIGTERM before SIGKILL. */
  stopContainer(containerId: string, timeoutSeconds: number, opts?: CallOptions): Promise<void>;
  removeContainer(containerId: string, opts?: CallOptions): Promise<void>;
  listContainers(filter?: ContainerFilter, opts?: CallOptions): Promise<Container[]>;
  containerStatus(containerId: string, opts?: CallOptions): Promise<ContainerStatus>;
  /**
   * Sets a container's CPU and memory settings in place, without restarting it (CRI
   * UpdateContainerResources): an in-place pod resize. Synchronous and idempotent.
   */
  updateContainerResources(containerId: string, resources: LinuxContainerResources, opts?: CallOptions): Promise<void>;
  execSync(containerId: string, cmd: string[], timeoutSeconds: number, opts?: CallOptions): Promise<ExecResult>;
  /**
   * Exec, Attach, PortForward: the URL of a single-use streaming request on the runtime's
   * streaming server, to which the agent proxies the client's upgraded connection.
   */
  exec(request: ExecRequest, opts?: CallOptions): Promise<string>;
  attach(request: AttachRequest, opts?: CallOptions): Promise<string>;
  portForward(request: PortForwardRequest, opts?: CallOptions): Promise<string>;
  /** Asks the runtime to write the container's log to a new file at its path (after a rotation moved the old one). */
  reopenContainerLog(containerId: string, opts?: CallOptions): Promise<void>;
  /** Resource usage of one container (ContainerStats); NOT_FOUND for an unknown id. */
  containerStats(containerId: string, opts?: CallOptions): Promise<ContainerStats>;
  /** Resource usage of the running containers the filter selects (ListContainerStats). */
  listContainerStats(filter?: ContainerStatsFilter, opts?: CallOptions): Promise<ContainerStats[]>;
  /** Resource usage of one pod sandbox and its containers (PodSandboxStats). */
  podSandboxStats(podSandboxId: string, opts?: CallOptions): Promise<PodSandboxStats>;
  /**
   * Resource usage of the pod sandboxes the filter selects (ListPodSandboxStats). A runtime may
   * answer `UNIMPLEMENTED`, and containerd 1.6 fails it for sandboxes without a cgroup parent
   * (statelet's); callers fall back to ListContainerStats.
   */
  listPodSandboxStats(filter?: PodSandboxStatsFilter, opts?: CallOptions): Promise<PodSandboxStats[]>;
  /**
   * The CRI event stream (GetContainerEvents). Rejects / throws a `CriError` with code
   * `UNIMPLEMENTED` on runtimes that do not offer it (containerd 1.6).
   */
  containerEvents(opts?: CallOptions): AsyncIterable<ContainerEvent>;
}

export interface ImageInfo {
  id: string;
  repoTags: string[];
  repoDigests: string[];
  size: number;
  /** The image's user, when numeric (`USER 1000`, `1000:1000`). */
  uid?: number;
  /** The image's user, when a name. */
  username?: string;
  /** The runtime keeps it whatever is unused (containerd pins its sandbox image): garbage collection leaves it. */
  pinned?: boolean;
}

/** The ImageService calls the agent uses. */
/**
 * The credentials of one PullImage (CRI AuthConfig). The kubelet fills `username` and `password`
 * from its keyring (kuberuntime_image.go PullImage); the runtime uses the others as it finds them.
 * Never logged: decorators name the image, not its credentials.
 */
export interface AuthConfig {
  username?: string;
  password?: string;
  /** base64 of `username:password`. */
  auth?: string;
  /** The registry the credentials are for; containerd drops credentials naming another host. */
  serverAddress?: string;
  identityToken?: string;
  registryToken?: string;
}

export interface ImageService {
  /** Returns the image reference (digest or id) of the pulled image; `auth` absent: pulled without credentials. */
  pullImage(image: string, auth?: AuthConfig, sandboxConfig?: PodSandboxConfig, opts?: CallOptions): Promise<string>;
  /** Returns null when the image is not present. */
  imageStatus(image: string, opts?: CallOptions): Promise<ImageInfo | null>;
  listImages(opts?: CallOptions): Promise<ImageInfo[]>;
  removeImage(image: string, opts?: CallOptions): Promise<void>;
  /** The filesystems the runtime keeps images (and writable layers) on, with what it uses of them (ImageFsInfo). */
  imageFsInfo(opts?: CallOptions): Promise<ImageFsInfo>;
}

/** A gRPC status code name, as the CRI client reports it. */
export type CriErrorCode =
  | 'CANCELLED'
  | 'UNKNOWN'
  | 'INVALID_ARGUMENT'
  | 'DEADLINE_EXCEEDED'
  | 'NOT_FOUND'
  | 'ALREADY_EXISTS'
  | 'PERMISSION_DENIED'
  | 'RESOURCE_EXHAUSTED'
  | 'FAILED_PRECONDITION'
  | 'ABORTED'
  | 'OUT_OF_RANGE'
  | 'UNIMPLEMENTED'
  | 'INTERNAL'
  | 'UNAVAILABLE'
  | 'DATA_LOSS'
  | 'UNAUTHENTICATED';

/**
 * The gRPC status codes by the names Go gives them (google.golang.org/grpc/codes, Code.String):
 * a runtime's or a CSI driver's error reads in the kubelet as `rpc error: code = NotFound desc = …`.
 */
const GO_CODE_NAMES = {
  CANCELLED: 'Canceled',
  UNKNOWN: 'Unknown',
  INVALID_ARGUMENT: 'InvalidArgument',
  DEADLINE_EXCEEDED: 'DeadlineExceeded',
  NOT_FOUND: 'NotFound',
  ALREADY_EXISTS: 'AlreadyExists',
  PERMISSION_DENIED: 'PermissionDenied',
  RESOURCE_EXHAUSTED: 'ResourceExhausted',
  FAILED_PRECONDITION: 'FailedPrecondition',
  ABORTED: 'Aborted',
  OUT_OF_RANGE: 'OutOfRange',
  UNIMPLEMENTED: 'Unimplemented',
  INTERNAL: 'Internal',
  UNAVAILABLE: 'Unavailable',
  DATA_LOSS: 'DataLoss',
  UNAUTHENTICATED: 'Unauthenticated',
} satisfies Record<CriErrorCode, string>;

/** grpc-go's text of a status error, which the kubelet's messages and events carry: `rpc error: code = NotFound desc = <detail>`. */
export function goStatusText(code: CriErrorCode, detail: string): string {
  return `rpc error: code = ${GO_CODE_NAMES[code]} desc = ${detail}`;
}

/** A failed runtime call: names the CRI call and carries the gRPC status code. */
export class CriError extends Error {
  override readonly name = 'CriError';
  constructor(
    /** The CRI method, e.g. `RunPodSandbox`. */
    readonly call: string,
    readonly code: CriErrorCode,
    readonly detail: string,
  ) {
    super(`CRI ${call} failed (${code}): ${detail}`);
  }
}

export function isNotFound(err: unknown): boolean {
  return err instanceof CriError && err.code === 'NOT_FOUND';
}
