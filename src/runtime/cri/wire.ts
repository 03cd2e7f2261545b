/**
 * The CRI v1 wire, shared by the gRPC client (`client.ts`) and the simulated runtime
 * (`../sim/server.ts`): how `api.proto` is loaded and its calls encoded and decoded, the
 * TypeScript shapes of its messages, the RPC tables that pair each call's request with its
 * response, the enum name tables, and the nanosecond ↔ millisecond conversions.
 */
import { fileURLToPath } from 'node:url';
import type * as grpc from '@grpc/grpc-js';
import protobuf from 'protobufjs';
import {
  NamespaceMode,
  type ContainerEventType,
  type AttachRequest,
  type ContainerState,
  type ContainerStatus,
  type ContainerUser,
  type ExecRequest,
  type KeyValueMap,
  type PortForwardRequest,
  type PortMapping,
  type SandboxState,
} from '../types.ts';

// ------------------------------------------------------------------------------------------------
// Loading the proto

export type ServiceName = 'RuntimeService' | 'ImageService';

let apiRoot: protobuf.Root | undefined;

/** `api.proto` next to this file, parsed once per process, its field names in camelCase. */
function loadApi(): protobuf.Root {
  if (!apiRoot) {
    apiRoot = new protobuf.Root().loadSync(fileURLToPath(new URL('./api.proto', import.meta.url)), { keepCase: false });
    apiRoot.resolveAll();
  }
  return apiRoot;
}

function service(name: ServiceName): protobuf.Service {
  return loadApi().lookupService(`runtime.v1.${name}`);
}

/** How a received message is read by the server: every field present, enums by name, int64 as decimal strings, absent messages as null. */
const PLAIN_OBJECT: protobuf.IConversionOptions = { longs: String, enums: String, defaults: true };

function serializer(type: protobuf.Type): (value: object) => Buffer {
  return (value) => {
    const bytes = type.encode(type.fromObject(value)).finish();
    return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  };
}

function plainDeserializer(type: protobuf.Type): (bytes: Buffer) => object {
  return (bytes) => type.toObject(type.decode(bytes), PLAIN_OBJECT);
}

/**
 * The methods of `runtime.v1.<service>` as a grpc-js service definition, for a server: requests
 * are read as plain objects (`PLAIN_OBJECT`); requests and responses are written from plain
 * objects in the wire shapes below (enums by name or number, int64 as strings, numbers or halves),
 * except the answers given a writer of their own in `responseSerializers` (by method name).
 */
export function serviceDefinition(name: ServiceName, responseSerializers: Readonly<Record<string, (response: object) => Buffer>> = {}): grpc.ServiceDefinition {
  const definition: Record<string, grpc.MethodDefinition<object, object>> = {};
  for (const method of service(name).methodsArray) {
    const request = method.resolvedRequestType!;
    const response = method.resolvedResponseType!;
    definition[method.name] = {
      path: `/runtime.v1.${name}/${method.name}`,
      requestStream: method.requestStream === true,
      responseStream: method.responseStream === true,
      requestSerialize: serializer(request),
      requestDeserialize: plainDeserializer(request),
      responseSerialize: responseSerializers[method.name] ?? serializer(response),
      responseDeserialize: plainDeserializer(response),
    };
  }
  return definition;
}

/** Writes one message of api.proto from its plain object (or from what its parts were made of). */
export type MessageEncoder<T = never> = (value: T) => Buffer;

/**
 * Writes messages of `runtime.v1.<typeName>` from plain objects in the wire shapes below, with
 * protobuf.js, except the message fields named in `parts` (one value, or each of a repeated field):
 * those are written from what their own encoder makes of the value — one that keeps its
 * encodings (`keptEncodings`), or one with parts of its own. A server's answer is then written
 * around what it had encoded before: a sandbox's or container's listing or attributes, which do
 * not change while it lives, are not encoded again in every list and every stats pass.
 */
export function messageEncoder<T extends object = object>(typeName: string, parts: Readonly<Record<string, MessageEncoder<never>>> = {}): MessageEncoder<T> {
  const type = loadApi().lookupType(`runtime.v1.${typeName}`);
  const own = Object.entries(parts).map(([name, encode]) => {
    const field = type.fields[name];
    if (!field || !(field.resolvedType instanceof protobuf.Type)) throw new Error(`runtime.v1.${typeName} has no message field ${name}`);
    // Each part takes values of its own type, which the message's plain object holds there.
    return { name, key: (field.id << 3) | 2, repeated: field.repeated, encode: encode as unknown as (value: unknown) => Uint8Array }; // length-delimited
  });
  if (own.length === 0) {
    return (value) => {
      const bytes = type.encode(type.fromObject(value)).finish();
      return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    };
  }
  const ownNames = new Set(own.map((part) => part.name));
  return (value) => {
    const rest: Record<string, unknown> = {};
    for (const [name, member] of Object.entries(value)) if (!ownNames.has(name)) rest[name] = member;
    const head = type.encode(type.fromObject(rest)).finish();
    const keys: number[] = [];
    const bodies: Uint8Array[] = [];
    let size = head.length;
    for (const part of own) {
      const member = (value as Record<string, unknown>)[part.name];
      if (member === null || member === undefined) continue;
      for (const item of part.repeated ? (member as unknown[]) : [member]) {
        const bytes = part.encode(item);
        keys.push(part.key);
        bodies.push(bytes);
        size += varintLength(part.key) + varintLength(bytes.length) + bytes.length;
      }
    }
    const out = Buffer.allocUnsafe(size);
    out.set(head, 0);
    let at = head.length;
    for (let i = 0; i < bodies.length; i++) {
      const bytes = bodies[i]!;
      at = writeVarint(out, at, keys[i]!);
      at = writeVarint(out, at, bytes.length);
      out.set(bytes, at);
      at += bytes.length;
    }
    return out;
  };
}

/** Writes the response of the call `rpc` of `runtime.v1.<service>` from its plain object. */
export function responseEncoder<T extends object = object>(name: ServiceName, rpc: string): MessageEncoder<T> {
  const method = service(name).methods[rpc];
  if (method === undefined) throw new Error(`api.proto declares no RPC ${name}.${rpc}`);
  return messageEncoder(method.resolvedResponseType!.name);
}

/**
 * `encode`, each value's encoding kept for as long as the value object lives: for values that
 * stay the same objects while they do not change (sim://'s listings and attributes).
 */
export function keptEncodings<T extends object>(encode: (value: T) => Uint8Array): MessageEncoder<T> {
  const kept = new WeakMap<T, Buffer>();
  return (value) => {
    let bytes = kept.get(value);
    if (bytes === undefined) {
      // A copy in memory of its own: protobuf.js may hand back a view into a shared pool slab,
      // and so would Buffer.from (a kept copy of a few bytes would hold a slab of 8 KB).
      const encoded = encode(value);
      bytes = Buffer.allocUnsafeSlow(encoded.length);
      bytes.set(encoded);
      kept.set(value, bytes);
    }
    return bytes;
  };
}

function varintLength(value: number): number {
  let length = 1;
  for (; value >= 0x80; value >>>= 7) length++;
  return length;
}

function writeVarint(out: Buffer, at: number, value: number): number {
  for (; value >= 0x80; value >>>= 7) out[at++] = (value & 0x7f) | 0x80;
  out[at++] = value;
  return at;
}



/** What the client needs of one call: its path, how its request is written and its response read. */
export interface ClientMethod {
  path: string;
  serialize: (request: object) => Buffer;
  /**
   * The response as protobuf.js decodes it, without a second copy as a plain object: a field the
   * runtime left out reads as its default from the message's prototype ('', 0, false, null for a
   * message, an empty list or map), an enum as its number, an int64 as a Long. The wire shapes
   * below allow for these forms; `enumValue`, `int64ToNumber` and `nsToMs` read them.
   */
  deserialize: (bytes: Buffer) => unknown;
}

/** The call `rpc` of `runtime.v1.<service>`, for a client. */
export function clientMethod(name: ServiceName, rpc: string): ClientMethod {
  const method = service(name).methods[rpc];
  if (method === undefined) throw new Error(`api.proto declares no RPC ${name}.${rpc}`);
  const response = method.resolvedResponseType!;
  return {
    path: `/runtime.v1.${name}/${method.name}`,
    serialize: serializer(method.resolvedRequestType!),
    deserialize: (bytes) => response.decode(bytes),
  };
}

// ------------------------------------------------------------------------------------------------
// Wire shapes: what either side sends, and what it reads (see PLAIN_OBJECT and ClientMethod for
// the two ways a message is read). Enums come as names or numbers (a server also reads a number
// when a newer peer sends a value our proto does not name); int64 as strings, numbers or Longs.

/** An int64 as its two 32-bit halves: protobuf.js's Long (as a response's int64 decodes), or what `msToNs` writes. */
interface WireLong {
  low: number;
  high: number;
  unsigned: boolean;
}
export type WireInt64 = string | number | WireLong;
export type WireEnum = string | number;
/** A message without fields (`StopPodSandboxResponse`, `GetEventsRequest`, …). */
type WireEmpty = Record<string, never>;

export interface WirePodSandboxMetadata {
  name: string;
  uid: string;
  namespace: string;
  attempt: number;
}

export interface WireContainerMetadata {
  name: string;
  attempt: number;
}

export interface WireImageSpec {
  image: string;
}

export interface WireIdMapping {
  hostId: number;
  containerId: number;
  length: number;
}

export interface WireUserNamespace {
  mode: WireEnum;
  uids: WireIdMapping[];
  gids: WireIdMapping[];
}

/** AuthConfig (api.proto fields 1–6); a field the caller leaves unset is sent empty. */
export interface WireAuthConfig {
  username: string;
  password: string;
  auth: string;
  serverAddress: string;
  identityToken: string;
  registryToken: string;
}

interface WireNamespaceOption {
  network: WireEnum;
  pid: WireEnum;
  ipc: WireEnum;
  targetId: string;
  /** Null: not sent (a kubelet before user namespaces). */
  usernsOptions: WireUserNamespace | null;
}

export interface WireSecurityProfile {
  profileType: WireEnum;
  localhostRef: string;
}

export interface WireSELinuxOption {
  user: string;
  role: string;
  type: string;
  level: string;
}

export interface WireLinuxSandboxSecurityContext {
  namespaceOptions: WireNamespaceOption | null;
  selinuxOptions: WireSELinuxOption | null;
  runAsUser: { value: WireInt64 } | null;
  runAsGroup: { value: WireInt64 } | null;
  readonlyRootfs: boolean;
  supplementalGroups: WireInt64[];
  supplementalGroupsPolicy: WireEnum;
  privileged: boolean;
  seccomp: WireSecurityProfile | null;
  apparmor: WireSecurityProfile | null;
}

export interface WireLinuxContainerSecurityContext {
  capabilities: { addCapabilities: string[]; dropCapabilities: string[]; addAmbientCapabilities: string[] } | null;
  privileged: boolean;
  namespaceOptions: WireNamespaceOption | null;
  selinuxOptions: WireSELinuxOption | null;
  runAsUser: { value: WireInt64 } | null;
  runAsUsername: string;
  runAsGroup: { value: WireInt64 } | null;
  readonlyRootfs: boolean;
  supplementalGroups: WireInt64[];
  supplementalGroupsPolicy: WireEnum;
  noNewPrivs: boolean;
  maskedPaths: string[];
  readonlyPaths: string[];
  seccomp: WireSecurityProfile | null;
  apparmor: WireSecurityProfile | null;
  apparmorProfile: string;
}

export interface WirePodSandboxConfig {
  metadata: WirePodSandboxMetadata | null;
  hostname: string;
  logDirectory: string;
  dnsConfig: { servers: string[]; searches: string[]; options: string[] } | null;
  portMappings: { protocol: WireEnum; containerPort: number; hostPort: number; hostIp: string }[];
  labels: KeyValueMap;
  annotations: KeyValueMap;
  linux: { cgroupParent: string; securityContext: WireLinuxSandboxSecurityContext | null; sysctls: KeyValueMap } | null;
}

export interface WireContainerConfig {
  metadata: WireContainerMetadata | null;
  image: WireImageSpec | null;
  command: string[];
  args: string[];
  workingDir: string;
  envs: { key: string; value: string }[];
  mounts: WireMount[];
  devices: WireDevice[];
  labels: KeyValueMap;
  annotations: KeyValueMap;
  logPath: string;
  stdin: boolean;
  stdinOnce: boolean;
  tty: boolean;
  linux: { resources: WireLinuxContainerResources | null; securityContext: WireLinuxContainerSecurityContext | null } | null;
}

export interface WireLinuxContainerResources {
  cpuPeriod: WireInt64;
  cpuQuota: WireInt64;
  cpuShares: WireInt64;
  memoryLimitInBytes: WireInt64;
  oomScoreAdj: WireInt64;
  cpusetCpus: string;
  cpusetMems: string;
  hugepageLimits: { pageSize: string; limit: WireInt64 }[];
  unified: KeyValueMap;
  memorySwapLimitInBytes: WireInt64;
}

export interface WirePodSandboxFilter {
  id: string;
  state: { state: WireEnum } | null;
  labelSelector: KeyValueMap;
}

export interface WireContainerFilter extends WirePodSandboxFilter {
  podSandboxId: string;
}

export interface WireVersionResponse {
  version: string;
  runtimeName: string;
  runtimeVersion: string;
  runtimeApiVersion: string;
}

export interface WireStatusResponse {
  status: { conditions: { type: string; status: boolean; reason: string; message: string }[] } | null;
  info: KeyValueMap;
  /** Null from a runtime that does not send it (containerd 1.6). */
  features: { supplementalGroupsPolicy: boolean } | null;
  /** Empty from a runtime that does not send them (containerd 1.6, 1.7). */
  runtimeHandlers: { name: string; features: { recursiveReadOnlyMounts: boolean; userNamespaces: boolean } | null }[];
}

export interface WirePodSandbox {
  id: string;
  metadata: WirePodSandboxMetadata | null;
  state: WireEnum;
  createdAt: WireInt64;
  labels: KeyValueMap;
  annotations: KeyValueMap;
  runtimeHandler: string;
}

export interface WirePodSandboxStatus extends WirePodSandbox {
  network: { ip: string; additionalIps: { ip: string }[] } | null;
  linux: { namespaces: { options: { network: WireEnum } | null } | null } | null;
}

export interface WireDevice {
  containerPath: string;
  hostPath: string;
  permissions: string;
}

export interface WireMount {
  containerPath: string;
  hostPath: string;
  readonly: boolean;
  propagation: WireEnum;
}

export interface WireContainer {
  id: string;
  podSandboxId: string;
  metadata: WireContainerMetadata | null;
  image: WireImageSpec | null;
  imageRef: string;
  state: WireEnum;
  createdAt: WireInt64;
  labels: KeyValueMap;
  annotations: KeyValueMap;
}

export interface WireContainerUser {
  linux: { uid: WireInt64; gid: WireInt64; supplementalGroups: WireInt64[] } | null;
}

/** As ContainerStatus, with the proto's own forms for the metadata, state, times, image and user. */
export interface WireContainerStatus extends Pick<ContainerStatus, 'id' | 'exitCode' | 'imageRef' | 'reason' | 'message' | 'labels' | 'annotations' | 'logPath'> {
  metadata: WireContainerMetadata | null;
  state: WireEnum;
  createdAt: WireInt64;
  startedAt: WireInt64;
  finishedAt: WireInt64;
  image: WireImageSpec | null;
  /** Null from a runtime that does not report it (containerd 1.6). */
  user: WireContainerUser | null;
  mounts: WireMount[];
  /** Null from a runtime that does not report it. */
  resources: { linux: WireLinuxContainerResources | null } | null;
}

export interface WireImage {
  id: string;
  repoTags: string[];
  repoDigests: string[];
  size: WireInt64;
  uid: { value: WireInt64 } | null;
  username: string;
  pinned: boolean;
}

export interface WireExecSyncResponse {
  stdout: Uint8Array;
  stderr: Uint8Array;
  exitCode: number;
}

export interface WireContainerEvent {
  containerId: string;
  containerEventType: WireEnum;
  createdAt: WireInt64;
  podSandboxStatus: WirePodSandboxStatus | null;
  containersStatuses: WireContainerStatus[];
}

// Stats (converted in statsWire.ts)

/** A UInt64Value: a message, so that absent (null) stays apart from 0. */
export type WireUInt64 = { value: WireInt64 } | null;

export interface WireCpuUsage {
  timestamp: WireInt64;
  usageCoreNanoSeconds: WireUInt64;
  usageNanoCores: WireUInt64;
}

export interface WireMemoryUsage {
  timestamp: WireInt64;
  workingSetBytes: WireUInt64;
  availableBytes: WireUInt64;
  usageBytes: WireUInt64;
  rssBytes: WireUInt64;
  pageFaults: WireUInt64;
  majorPageFaults: WireUInt64;
}

export interface WireFilesystemUsage {
  timestamp: WireInt64;
  fsId: { mountpoint: string } | null;
  usedBytes: WireUInt64;
  inodesUsed: WireUInt64;
}

export interface WireImageFsInfoResponse {
  imageFilesystems: WireFilesystemUsage[];
  containerFilesystems: WireFilesystemUsage[];
}

export interface WireSwapUsage {
  timestamp: WireInt64;
  swapAvailableBytes: WireUInt64;
  swapUsageBytes: WireUInt64;
}

export interface WireContainerStats {
  attributes: { id: string; metadata: WireContainerMetadata | null; labels: KeyValueMap; annotations: KeyValueMap } | null;
  cpu: WireCpuUsage | null;
  memory: WireMemoryUsage | null;
  writableLayer: WireFilesystemUsage | null;
  swap: WireSwapUsage | null;
}

export interface WirePodSandboxStats {
  attributes: { id: string; metadata: WirePodSandboxMetadata | null; labels: KeyValueMap; annotations: KeyValueMap } | null;
  linux: {
    cpu: WireCpuUsage | null;
    memory: WireMemoryUsage | null;
    process: { timestamp: WireInt64; processCount: WireUInt64 } | null;
    containers: WireContainerStats[];
  } | null;
}

export interface WireContainerStatsFilter {
  id: string;
  podSandboxId: string;
  labelSelector: KeyValueMap;
}

export interface WirePodSandboxStatsFilter {
  id: string;
  labelSelector: KeyValueMap;
}

// ------------------------------------------------------------------------------------------------
// The RPCs: one request and one response shape per call, used by the client to build requests and
// read responses, and by the simulated server to read requests and build responses.

export interface Rpc<Request, Response> {
  request: Request;
  response: Response;
}

export interface RuntimeServiceRpcs {
  Version: Rpc<{ version: string }, WireVersionResponse>;
  Status: Rpc<{ verbose: boolean }, WireStatusResponse>;
  RunPodSandbox: Rpc<{ config: WirePodSandboxConfig | null; runtimeHandler: string }, { podSandboxId: string }>;
  StopPodSandbox: Rpc<{ podSandboxId: string }, WireEmpty>;
  RemovePodSandbox: Rpc<{ podSandboxId: string }, WireEmpty>;
  PodSandboxStatus: Rpc<
    { podSandboxId: string; verbose: boolean },
    { status: WirePodSandboxStatus | null; info: KeyValueMap; containersStatuses: WireContainerStatus[]; timestamp: WireInt64 }
  >;
  ListPodSandbox: Rpc<{ filter: WirePodSandboxFilter | null }, { items: WirePodSandbox[] }>;
  CreateContainer: Rpc<
    { podSandboxId: string; config: WireContainerConfig | null; sandboxConfig: WirePodSandboxConfig | null },
    { containerId: string }
  >;
  StartContainer: Rpc<{ containerId: string }, WireEmpty>;
  StopContainer: Rpc<{ containerId: string; timeout: WireInt64 }, WireEmpty>;
  RemoveContainer: Rpc<{ containerId: string }, WireEmpty>;
  ListContainers: Rpc<{ filter: WireContainerFilter | null }, { containers: WireContainer[] }>;
  ContainerStatus: Rpc<{ containerId: string; verbose: boolean }, { status: WireContainerStatus | null; info: KeyValueMap }>;
  UpdateContainerResources: Rpc<{ containerId: string; linux: WireLinuxContainerResources | null; annotations: KeyValueMap }, WireEmpty>;
  ReopenContainerLog: Rpc<{ containerId: string }, Record<string, never>>;
  UpdateRuntimeConfig: Rpc<{ runtimeConfig: { networkConfig: { podCidr: string } | null } | null }, WireEmpty>;
  ExecSync: Rpc<{ containerId: string; cmd: string[]; timeout: WireInt64 }, WireExecSyncResponse>;
  Exec: Rpc<ExecRequest, { url: string }>;
  Attach: Rpc<AttachRequest, { url: string }>;
  PortForward: Rpc<PortForwardRequest, { url: string }>;
  ContainerStats: Rpc<{ containerId: string }, { stats: WireContainerStats | null }>;
  ListContainerStats: Rpc<{ filter: WireContainerStatsFilter | null }, { stats: WireContainerStats[] }>;
  PodSandboxStats: Rpc<{ podSandboxId: string }, { stats: WirePodSandboxStats | null }>;
  ListPodSandboxStats: Rpc<{ filter: WirePodSandboxStatsFilter | null }, { stats: WirePodSandboxStats[] }>;
  /** Server streaming: the response is one message of the stream. */
  GetContainerEvents: Rpc<WireEmpty, WireContainerEvent>;
}

export interface ImageServiceRpcs {
  ListImages: Rpc<{ filter: { image: WireImageSpec | null } | null }, { images: WireImage[] }>;
  ImageStatus: Rpc<{ image: WireImageSpec | null; verbose: boolean }, { image: WireImage | null; info: KeyValueMap }>;
  PullImage: Rpc<{ image: WireImageSpec | null; auth: WireAuthConfig | null; sandboxConfig: WirePodSandboxConfig | null }, { imageRef: string }>;
  RemoveImage: Rpc<{ image: WireImageSpec | null }, WireEmpty>;
  ImageFsInfo: Rpc<WireEmpty, WireImageFsInfoResponse>;
}

export interface CriRpcs {
  RuntimeService: RuntimeServiceRpcs;
  ImageService: ImageServiceRpcs;
}

// ------------------------------------------------------------------------------------------------
// Enums: names in proto order, so that a name's index is its number.

export const SANDBOX_STATES: readonly SandboxState[] = ['SANDBOX_READY', 'SANDBOX_NOTREADY'];
export const CONTAINER_STATES: readonly ContainerState[] = [
  'CONTAINER_CREATED',
  'CONTAINER_RUNNING',
  'CONTAINER_EXITED',
  'CONTAINER_UNKNOWN',
];
export const CONTAINER_EVENT_TYPES: readonly ContainerEventType[] = [
  'CONTAINER_CREATED_EVENT',
  'CONTAINER_STARTED_EVENT',
  'CONTAINER_STOPPED_EVENT',
  'CONTAINER_DELETED_EVENT',
];
export const PROTOCOLS: readonly PortMapping['protocol'][] = ['TCP', 'UDP', 'SCTP'];
const NAMESPACE_MODE_NAMES = ['POD', 'CONTAINER', 'NODE', 'TARGET'] as const;

/** The name a wire enum stands for, whether it came as a name or a number; undefined if unknown. */
export function enumValue<T extends string>(values: readonly T[], wire: WireEnum): T | undefined {
  return typeof wire === 'number' ? values[wire] : values.find((value) => value === wire);
}

export function namespaceModeFromWire(wire: WireEnum): NamespaceMode | undefined {
  const name = enumValue(NAMESPACE_MODE_NAMES, wire);
  return name === undefined ? undefined : NamespaceMode[name];
}

/** A namespace mode by its proto name; unset is POD, the proto's zero value, as an absent field decodes. */
export function namespaceModeToWire(mode: NamespaceMode | undefined): (typeof NAMESPACE_MODE_NAMES)[number] {
  return NAMESPACE_MODE_NAMES[mode ?? NamespaceMode.POD];
}

/** ContainerStatus.user as the wire carries it; none: null, as an absent message decodes. */
export function containerUserToWire(user: ContainerUser | undefined): WireContainerUser | null {
  if (!user) return null;
  const linux = user.linux;
  return { linux: linux ? { uid: String(linux.uid), gid: String(linux.gid), supplementalGroups: linux.supplementalGroups.map(String) } : null };
}

/** ContainerStatus.user from the wire: absent when the runtime sent none; a user without its Linux part stays so. */
export function containerUserFromWire(wire: WireContainerUser | null | undefined): ContainerUser | undefined {
  if (!wire) return undefined;
  const linux = wire.linux;
  return linux ? { linux: { uid: int64ToNumber(linux.uid), gid: int64ToNumber(linux.gid), supplementalGroups: linux.supplementalGroups.map(int64ToNumber) } } : {};
}

// ------------------------------------------------------------------------------------------------
// Scalars

export function int64ToNumber(wire: WireInt64): number {
  if (typeof wire === 'number') return wire;
  if (typeof wire === 'string') return Number(wire);
  return (wire.unsigned ? wire.high >>> 0 : wire.high) * TWO_TO_32 + (wire.low >>> 0);
}

const TWO_TO_32 = 2 ** 32;

const TWO_TO_32_MS = 4294; // 2^32 ns = 4294 ms + 967296 ns
const TWO_TO_32_REMAINDER_NS = 967_296;

/** The proto's int64 nanoseconds to milliseconds, in integers so no nanosecond digits round up. */
export function nsToMs(ns: WireInt64): number {
  if (typeof ns === 'number') return Math.floor(ns / 1e6);
  if (typeof ns === 'object') {
    // high·2^32 + low, split so that every product and sum stays an exact double (below 2^53)
    // for any value below 2^63; the rest (negative, or an unsigned one above) goes through BigInt.
    const low = ns.low >>> 0;
    if (ns.high >= 0) return ns.high * TWO_TO_32_MS + Math.floor((ns.high * TWO_TO_32_REMAINDER_NS + low) / 1e6);
    const bits = (BigInt(ns.high >>> 0) << 32n) | BigInt(low);
    ns = (ns.unsigned ? bits : BigInt.asIntN(64, bits)).toString();
  }
  try {
    return Number(BigInt(ns) / 1_000_000n);
  } catch {
    return 0;
  }
}

/**
 * Milliseconds to the proto's int64 nanoseconds, exact to the microsecond, as the two halves
 * protobuf.js writes as they are (a decimal string it would parse through Long arithmetic: the
 * simulated runtime writes four per container in every list).
 */
export function msToNs(ms: number): WireLong {
  if (ms <= 0) return { low: 0, high: 0, unsigned: false };
  // µs < 2^53, so its halves are exact; ×1000 each, with the low half's carry, stays exact too.
  const us = Math.round(ms * 1000);
  const usHigh = Math.floor(us / TWO_TO_32);
  const lowNs = (us - usHigh * TWO_TO_32) * 1000;
  const carry = Math.floor(lowNs / TWO_TO_32);
  return { low: (lowNs - carry * TWO_TO_32) | 0, high: (usHigh * 1000 + carry) | 0, unsigned: false };
}
