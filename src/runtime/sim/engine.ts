/**
 * The simulated container runtime's state and behaviour, independent of gRPC: pod sandboxes
 * with addresses the host can bind (podAddresses.ts), containers whose "process" is a
 * `ShellProcess`, images, logs and the container event stream. `server.ts` exposes it as a CRI v1
 * gRPC service.
 *
 * Scale: everything is looked up through Maps keyed by id, containers are also indexed by
 * sandbox and by the `io.kubernetes.pod.uid` label (the agent lists a pod's containers by that
 * label), and an idle container owns no timer unless its script is in a finite `sleep`.
 */

import { randomBytes } from 'node:crypto';
import os from 'node:os';
import { join } from 'node:path';
import { type Stats, realpathSync, statSync } from 'node:fs';
import {
  CriError,
  type AuthConfig,
  NamespaceMode,
  type AttachRequest,
  type CallOptions,
  type Container,
  type ContainerConfig,
  type ContainerEvent,
  type ContainerEventType,
  type ContainerFilter,
  type ContainerStats,
  type ContainerStatsFilter,
  type ContainerStatus,
  type ContainerUser,
  type ExecRequest,
  type ExecResult,
  type ImageFsInfo,
  type ImageInfo,
  type KeyValueMap,
  type LinuxContainerResources,
  type PodSandbox,
  type PodSandboxConfig,
  type PodSandboxFilter,
  type PodSandboxStats,
  type PodSandboxStatsFilter,
  type PodSandboxStatus,
  type PortForwardRequest,
  type RuntimeService,
  type RuntimeStatusInfo,
  type SandboxState,
  type VersionInfo,
} from '../types.ts';
import { type Clock, type TimerHandle, realClock } from '../../clock.ts';
import { deepFreeze, sharedWith } from '../../immutable.ts';
import { SimError, messageOf } from './errors.ts';
import { SimFs } from './fs.ts';
import { DEFAULT_IMAGES, ImageStore, type RegistryCredential, SANDBOX_IMAGE } from './images.ts';
import { DEFAULT_RUNTIME_HANDLERS, idMapFiles, reportedHandlers, sandboxRuntime } from './handlers.ts';
import { ContainerLog, CriLogWriter } from './logs.ts';
import { HOST_NETWORK_ADDRESS, SimNetwork } from './net.ts';
import { ShellProcess, type ShellOutput } from './shell.ts';
import { CpuMeter, IMAGE_BYTES_PER_INODE, PROCESS_BASE_BYTES } from './usage.ts';
import { cgroupFiles } from './cgroup.ts';
import { PodAddresses, cidrRange, ipv4Cidr } from './podAddresses.ts';
import { makeRangeLocal, removeLocalRange } from './localRange.ts';
import { identityOf, procStatus } from './identity.ts';
import { SimStreaming } from './streaming.ts';
import type { CriAnswers } from '../decorate.ts';

export const POD_UID_LABEL = 'io.kubernetes.pod.uid';
const SIM_RUNTIME_NAME = 'statelet-sim';
const SIM_RUNTIME_VERSION = '0.1.0';

export interface SimRuntimeOptions {
  /** Time source for sleeps, stop timeouts, pulls and exec deadlines. Real time by default. */
  clock?: Clock;
  /** Simulated duration of a successful or failed pull. Default 50 ms; 0 pulls without a timer. */
  pullDelayMs?: number;
  /** Images present at start. Default: busybox:latest and registry.k8s.io/pause:3.9. */
  images?: readonly string[];
  /** Images the simulated registry does not have, in addition to the naming convention. */
  missingImages?: readonly string[];
  /**
   * Private registries by host, each with the username and password it takes (images.ts): a pull
   * from one without them is refused as containerd refuses it. Default: every registry is public.
   */
  registryAuth?: Readonly<Record<string, RegistryCredential>>;
  /** How often buffered container log lines are appended to their files. Default 200 ms. */
  logFlushIntervalMs?: number;
  /** The simulated machine's memory, in bytes (`sim://?memory=2Gi`). Default: the host's. */
  memoryBytes?: number;
  /**
   * The directory the runtime calls its own, as containerd has /var/lib/containerd: ImageFsInfo
   * names it as its image filesystem (the agent gives `<root-dir>/sim`). Default: none, and
   * ImageFsInfo names no filesystem.
   */
  stateDir?: string;
  /** Where the runtime says what its operator should know (a pod CIDR it cannot use). Default: nowhere. */
  log?: SimLog;
  /** The runtime handlers it has, its default first (handlers.ts). Default: runc and test-handler. */
  runtimeHandlers?: readonly string[];
}

/** A line of the runtime's own log, as containerd writes one to its journal. */
export type SimLog = (level: 'info' | 'warn', message: string, fields: Record<string, unknown>) => void;

/** The simulated machine's memory as the node reads it (/proc/meminfo's figures). */
export interface SimMemory {
  totalBytes: number;
  /** Not held by any running container or pause process. */
  freeBytes: number;
}

/** A container event with the snapshots the CRI event message carries. */
export interface SimContainerEvent {
  /** A container id, or a sandbox id for the sandbox's own lifecycle (as containerd reports it). */
  containerId: string;
  type: ContainerEventType;
  /** Milliseconds since the epoch. */
  createdAt: number;
  podSandboxStatus: PodSandboxStatus;
  containersStatuses: ContainerStatus[];
}

type SimEventListener = (event: SimContainerEvent) => void;

interface SimSandbox {
  id: string;
  config: PodSandboxConfig;
  state: SandboxState;
  createdAt: number;
  /** '' for host-network sandboxes. */
  ip: string;
  networkMode: NamespaceMode;
  /** The handler RunPodSandbox named ('' for the default), as PodSandboxStatus gives it back. */
  runtimeHandler: string;
  nameKey: string;
  containers: Set<SimContainer>;
  /** The pod's CPU: charged with all its containers' time, including those that have exited. */
  cpu: CpuMeter;
  /** What ListPodSandbox shows of it, made again only when its state changes (`sandboxOf`). */
  listing: PodSandbox | null;
  /** Who it is in its stats, the same object all its life (the server keeps its encoding). */
  attributes: PodSandboxStats['attributes'];
}

/** An exec under way: its exit status, and how to end it early. */
interface RunningExec {
  exited: Promise<number>;
  kill(): void;
}

interface Attachment {
  output: ShellOutput;
  exited(): void;
}

/** A container and what its ContainerStatus reports (imageRef: the repo digest, as containerd reports it). */
interface SimContainer extends Pick<ContainerStatus, 'id' | 'image' | 'imageRef' | 'state' | 'createdAt' | 'startedAt' | 'finishedAt' | 'exitCode' | 'reason'> {
  sandbox: SimSandbox;
  config: ContainerConfig;
  nameKey: string;
  /** The image id (`sha256:…`), which ListContainers reports as imageRef, as containerd does. */
  imageId: string;
  /** Absolute log file path, or '' when the sandbox has no log directory. */
  logPath: string;
  log: ContainerLog | null;
  /** Its log written out after its exit: ContainerStatus answers after it, as containerd's exit waits for the output to drain. */
  logDrained: Promise<void>;
  fs: SimFs;
  /** The identity its first process started with (ContainerStatus.user). */
  user: ContainerUser;
  /** What runs at pid 1 in its pid namespace (`/proc/1/cmdline`): what a container targeting it sees. */
  pid1: string[];
  /** Its main process is pid 1 of its pid namespace (not so when it joined another container's): TERM does not end it by default. */
  isPid1: boolean;
  process: ShellProcess | null;
  execs: Set<ShellProcess>;
  /** Where the container's servers listen (the pod IP); created at start, closed at exit. */
  network: SimNetwork | null;
  /** The pending SIGKILL of a StopContainer grace period. */
  kill: { deadline: number; timer: TimerHandle } | null;
  /** Resolvers waiting for the process to exit. */
  exitWaiters: (() => void)[];
  /** Clients attached to the main process's output. */
  attached: Set<Attachment>;
  /** Charged with the time its processes and servers run (usage.ts). */
  cpu: CpuMeter;
  /** Its memory limit was hit: it exits with reason OOMKilled. */
  oomKilled: boolean;
  /** Its main process's pid while it runs (as the kernel log names it). */
  pid: number;
  /** What ListContainers shows of it, made again only when its state changes (`containerOf`). */
  listing: Container | null;
  /** Who it is in its stats, the same object all its life (the server keeps its encoding). */
  attributes: ContainerStats['attributes'];
}

function newId(): string {
  return randomBytes(32).toString('hex');
}

function matchesLabels(labels: KeyValueMap, selector: KeyValueMap | undefined): boolean {
  if (!selector) return true;
  for (const key in selector) if (labels[key] !== selector[key]) return false;
  return true;
}

/** Exact id lookup, falling back to a unique prefix as containerd accepts truncated ids. */
function lookup<T>(map: Map<string, T>, id: string): T | undefined {
  const exact = map.get(id);
  if (exact !== undefined || id.length === 0 || id.length >= 64) return exact;
  let found: T | undefined;
  for (const [key, value] of map) {
    if (!key.startsWith(id)) continue;
    if (found !== undefined) return undefined;
    found = value;
  }
  return found;
}

/**
 * The simulated runtime: every CRI call of both services (answered at once where a runtime would
 * not wait), the event stream, and the handles its tests and servers reach for.
 */
export class SimEngine implements CriAnswers, Pick<RuntimeService, 'containerEvents'> {
  readonly clock: Clock;
  readonly images: ImageStore;
  private readonly logs: CriLogWriter;
  private readonly sandboxes = new Map<string, SimSandbox>();
  private readonly containers = new Map<string, SimContainer>();
  private readonly sandboxesByPodUid = new Map<string, Set<SimSandbox>>();
  private readonly containersByPodUid = new Map<string, Set<SimContainer>>();
  /** The configs of the sandbox and the container created last, which the next ones share parts with. */
  private lastSandboxConfig: PodSandboxConfig | undefined;
  private lastContainerConfig: ContainerConfig | undefined;
  /** Reserved names, as containerd refuses a second sandbox/container with the same identity. */
  private readonly reservedNames = new Set<string>();
  private readonly addresses = new PodAddresses();
  /** Routes this runtime made to make its pod CIDRs local (localRange.ts), removed at close. */
  private readonly addedRoutes: string[] = [];
  /** Pod CIDRs already said to be unusable, so that each is said once. */
  private readonly refusedRanges = new Set<string>();
  private readonly log: SimLog;
  private readonly runtimeHandlers: readonly string[];
  private readonly listeners = new Set<SimEventListener>();
  private readonly kernelLogListeners = new Set<(line: string) => void>();
  /** The pid the next container's main process gets (as the kernel log names it). */
  private nextPid = 1000;
  private closed = false;
  /** The simulated machine's memory. */
  readonly memoryBytes: number;
  /** The directory the runtime calls its own (SimRuntimeOptions.stateDir). */
  readonly stateDir: string | undefined;
  /** The NetworkReady condition Status reports (setNetworkReady); ready by default. */
  private network = { status: true, reason: '', message: '' };

  private readonly closeHooks: (() => Promise<void>)[] = [];

  constructor(options: SimRuntimeOptions = {}) {
    this.clock = options.clock ?? realClock;
    this.images = new ImageStore({
      clock: this.clock,
      pullDelayMs: options.pullDelayMs ?? 50,
      initialImages: options.images ?? DEFAULT_IMAGES,
      missingImages: options.missingImages ?? [],
      registryAuth: options.registryAuth ?? {},
    });
    this.logs = new CriLogWriter(options.logFlushIntervalMs ?? 200);
    this.memoryBytes = options.memoryBytes ?? os.totalmem();
    this.stateDir = options.stateDir;
    this.log = options.log ?? (() => {});
    this.runtimeHandlers = options.runtimeHandlers ?? DEFAULT_RUNTIME_HANDLERS;
  }

  /**
   * The machine's memory: what every ready sandbox's containers and pause process hold (their
   * working sets, files of their layers included) is in use, the rest free. A test fills it by
   * having a container write (`dd if=/dev/zero of=/tmp/fill bs=1M count=600`).
   */
  memory(): SimMemory {
    const now = this.clock.now();
    let used = 0;
    for (const sandbox of this.sandboxes.values()) {
      if (sandbox.state === 'SANDBOX_READY') used += this.sandboxStatsOf(sandbox, now).linux?.memory?.workingSetBytes ?? 0;
    }
    return { totalBytes: this.memoryBytes, freeBytes: Math.max(0, this.memoryBytes - used) };
  }

  /**
   * A process of the container asks for `bytes` of its own memory. Over the container's memory
   * limit the kernel's OOM killer ends it; over what the machine has free, the machine's OOM
   * killer does. Either way the whole container goes, as cgroup v2 with memory.oom.group does
   * (the kubelet sets it): exit 137, reason OOMKilled; and the kernel log says so as Linux does.
   */
  private allocate(container: SimContainer, bytes: number): boolean {
    const limit = container.config.linux?.resources?.memoryLimitInBytes ?? 0;
    const overLimit = limit > 0 && this.processCount(container) * PROCESS_BASE_BYTES + bytes > limit;
    if (!overLimit && bytes <= this.memory().freeBytes) return true;
    const task = container.config.command[0] ?? container.config.args[0] ?? 'sh';
    const cgroup = `${container.sandbox.config.linux?.cgroupParent || '/'}/${container.id}`.replace(/^\/\//, '/');
    const pid = container.pid;
    this.writeKernelLog([
      `${task} invoked oom-killer: gfp_mask=0xcc0(GFP_KERNEL), order=0, oom_score_adj=${container.config.linux?.resources?.oomScoreAdj ?? 0}`,
      overLimit
        ? `oom-kill:constraint=CONSTRAINT_MEMCG,nodemask=(null),cpuset=/,mems_allowed=0,oom_memcg=${cgroup},task_memcg=${cgroup},task=${task},pid=${pid},uid=0`
        : `oom-kill:constraint=CONSTRAINT_NONE,nodemask=(null),cpuset=/,mems_allowed=0,global_oom,task_memcg=${cgroup},task=${task},pid=${pid},uid=0`,
      `${overLimit ? 'Memory cgroup out of memory' : 'Out of memory'}: Killed process ${pid} (${task})`,
    ]);
    container.oomKilled = true;
    container.process?.signal('KILL');
    return false;
  }

  /** Follows the simulated machine's kernel log from now on (its OOM kills); the result stops following. */
  followKernelLog(onLine: (line: string) => void): () => void {
    this.kernelLogListeners.add(onLine);
    return () => this.kernelLogListeners.delete(onLine);
  }

  private writeKernelLog(lines: readonly string[]): void {
    const stamp = `[${(this.clock.now() / 1000).toFixed(6)}]`;
    for (const line of lines) for (const listener of this.kernelLogListeners) listener(`${stamp} ${line}`);
  }

  // ------------------------------------------------------------------ runtime

  version(): VersionInfo {
    return { version: '0.1.0', runtimeName: SIM_RUNTIME_NAME, runtimeVersion: SIM_RUNTIME_VERSION, runtimeApiVersion: 'v1' };
  }

  /**
   * Makes Status report NetworkReady false (by default with containerd's reason and message while
   * its CNI plugin is not initialized), or true again. While it is false a sandbox on the pod
   * network fails to start, as containerd's does; one on the host's network starts.
   */
  setNetworkReady(ready: boolean, reason = 'NetworkPluginNotReady', message = 'Network plugin returns error: cni plugin not initialized'): void {
    this.network = ready ? { status: true, reason: '', message: '' } : { status: false, reason, message };
  }

  /** Verbose, it names its sandbox image, as containerd's config does. */
  status(opts?: { verbose?: boolean }): RuntimeStatusInfo {
    return {
      conditions: [
        { type: 'RuntimeReady', status: true, reason: '', message: '' },
        { type: 'NetworkReady', ...this.network },
      ],
      // Strict is applied (identity.ts: a process has only the groups it is given) and each
      // container's ContainerStatus.user is reported.
      features: { supplementalGroupsPolicy: true },
      runtimeHandlers: reportedHandlers(this.runtimeHandlers),
      ...(opts?.verbose ? { sandboxImage: SANDBOX_IMAGE } : {}),
    };
  }

  /** Receives every container event from now on; returns the unsubscribe function. */
  subscribe(listener: SimEventListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /**
   * The CRI event stream (GetContainerEvents) in the agent's shapes, subscribed at once, as
   * opening the gRPC stream does: events before the first `next()` are kept. It ends with
   * CANCELLED when the caller's signal fires. (sim://'s server writes `subscribe`'s events, which
   * carry the statuses the wire message has room for.)
   */
  containerEvents(opts?: CallOptions): AsyncIterable<ContainerEvent> {
    const signal = opts?.signal;
    const queue: ContainerEvent[] = [];
    let wake: (() => void) | null = null;
    const unsubscribe = this.subscribe((event) => {
      queue.push({ containerId: event.containerId, type: event.type, createdAt: event.createdAt, podSandboxMetadata: { ...event.podSandboxStatus.metadata } });
      wake?.();
    });
    const onAbort = () => wake?.();
    signal?.addEventListener('abort', onAbort);
    async function* events(): AsyncGenerator<ContainerEvent> {
      try {
        for (;;) {
          if (signal?.aborted) throw new CriError('GetContainerEvents', 'CANCELLED', 'call cancelled');
          const next = queue.shift();
          if (next) {
            yield next;
            continue;
          }
          await new Promise<void>((resolve) => (wake = resolve));
          wake = null;
        }
      } finally {
        unsubscribe();
        signal?.removeEventListener('abort', onAbort);
      }
    }
    return events();
  }

  /** How many event subscribers there are (lets tests wait for a stream to be open). */
  get subscriberCount(): number {
    return this.listeners.size;
  }

  // ------------------------------------------------------------------ sandboxes

  runPodSandbox(given: PodSandboxConfig, runtimeHandler = ''): string {
    this.assertOpen();
    sandboxRuntime(this.runtimeHandlers, runtimeHandler);
    const config = deepFreeze(sharedWith(this.lastSandboxConfig, given));
    this.lastSandboxConfig = config;
    const { name, namespace, uid, attempt } = config.metadata;
    const nameKey = `sandbox/${name}_${namespace}_${uid}_${attempt}`;
    if (this.reservedNames.has(nameKey)) {
      throw new SimError('ALREADY_EXISTS', `failed to reserve sandbox name "${name}_${namespace}_${uid}_${attempt}": name is reserved`);
    }
    const networkMode = config.linux?.securityContext?.namespaceOptions?.network ?? NamespaceMode.POD;
    // As containerd with runc answers: the node's UTS namespace keeps the node's hostname.
    if (networkMode === NamespaceMode.NODE && config.hostname) {
      throw new SimError('UNKNOWN', 'failed to create containerd task: failed to create shim task: OCI runtime create failed: runc create failed: unable to set hostname without a private UTS namespace: unknown');
    }
    const id = newId();
    // As containerd answers while its CNI plugin is not initialized: no pod network to join.
    if (networkMode !== NamespaceMode.NODE && !this.network.status) {
      throw new SimError('UNKNOWN', `failed to setup network for sandbox "${id}": cni plugin not initialized`);
    }
    const sandbox: SimSandbox = {
      id,
      config,
      state: 'SANDBOX_READY',
      createdAt: this.clock.now(),
      ip: networkMode === NamespaceMode.NODE ? '' : this.allocateAddress(),
      networkMode,
      runtimeHandler,
      nameKey,
      containers: new Set(),
      cpu: new CpuMeter(),
      listing: null,
      attributes: Object.freeze({ id, metadata: config.metadata, labels: config.labels, annotations: config.annotations }),
    };
    this.reservedNames.add(nameKey);
    this.sandboxes.set(sandbox.id, sandbox);
    addToIndex(this.sandboxesByPodUid, config.labels[POD_UID_LABEL], sandbox);
    this.emit(sandbox.id, 'CONTAINER_CREATED_EVENT', sandbox);
    this.emit(sandbox.id, 'CONTAINER_STARTED_EVENT', sandbox);
    return sandbox.id;
  }

  /** Kills every container of the sandbox at once and marks it NOTREADY. Idempotent. */
  stopPodSandbox(id: string): void {
    const sandbox = this.sandbox(id);
    for (const container of sandbox.containers) {
      if (container.state === 'CONTAINER_RUNNING') container.process?.signal('KILL');
    }
    if (sandbox.state === 'SANDBOX_READY') {
      sandbox.state = 'SANDBOX_NOTREADY';
      this.emit(sandbox.id, 'CONTAINER_STOPPED_EVENT', sandbox);
    }
  }

  /**
   * The sandbox's own process dies (the fault a test or a chaos run injects), as when containerd
   * loses a pod's pause container: the sandbox turns NOTREADY while its containers run on. The
   * agent must notice, stop them and start the pod again in a new sandbox.
   */
  loseSandbox(id: string): void {
    const sandbox = this.sandbox(id);
    if (sandbox.state !== 'SANDBOX_READY') throw new SimError('FAILED_PRECONDITION', `sandbox "${id}" is not ready`);
    sandbox.state = 'SANDBOX_NOTREADY';
    this.emit(sandbox.id, 'CONTAINER_STOPPED_EVENT', sandbox);
  }

  /** Stops the sandbox if needed, removes its containers and releases its IP. Missing = ok. */
  removePodSandbox(id: string): void {
    const sandbox = lookup(this.sandboxes, id);
    if (!sandbox) return;
    this.stopPodSandbox(sandbox.id);
    for (const container of [...sandbox.containers]) this.deleteContainer(container);
    if (sandbox.ip) this.addresses.release(sandbox.ip);
    this.reservedNames.delete(sandbox.nameKey);
    removeFromIndex(this.sandboxesByPodUid, sandbox.config.labels[POD_UID_LABEL], sandbox);
    this.emit(sandbox.id, 'CONTAINER_DELETED_EVENT', sandbox);
    this.sandboxes.delete(sandbox.id);
  }

  podSandboxStatus(id: string): PodSandboxStatus {
    return this.sandboxStatusOf(this.sandbox(id));
  }

  listPodSandbox(filter: PodSandboxFilter = {}): PodSandbox[] {
    return Array.from(this.matchingSandboxes(filter), (sandbox) => this.sandboxOf(sandbox));
  }

  private *matchingSandboxes(filter: PodSandboxFilter): Generator<SimSandbox> {
    let candidates: Iterable<SimSandbox>;
    const uid = filter.labelSelector?.[POD_UID_LABEL];
    if (filter.id) {
      const one = lookup(this.sandboxes, filter.id);
      candidates = one ? [one] : [];
    } else if (uid !== undefined) {
      candidates = this.sandboxesByPodUid.get(uid) ?? [];
    } else {
      candidates = this.sandboxes.values();
    }
    for (const sandbox of candidates) {
      if (filter.state && sandbox.state !== filter.state) continue;
      if (!matchesLabels(sandbox.config.labels, filter.labelSelector)) continue;
      yield sandbox;
    }
  }

  // ------------------------------------------------------------------ containers

  createContainer(sandboxId: string, given: ContainerConfig): string {
    this.assertOpen();
    // The containers of one pod template differ in little (names, labels): each holds what it has
    // in common with the container created before it once, frozen.
    const config = deepFreeze(sharedWith(this.lastContainerConfig, given));
    this.lastContainerConfig = config;
    const sandbox = this.sandbox(sandboxId);
    if (sandbox.state !== 'SANDBOX_READY') {
      throw new SimError('FAILED_PRECONDITION', `sandbox "${sandbox.id}" is not ready: cannot create container "${config.metadata.name}"`);
    }
    const image = this.images.status(config.image.image);
    if (!image) {
      throw new SimError('NOT_FOUND', `image "${config.image.image}" not found: pull it before creating container "${config.metadata.name}"`);
    }
    const pod = sandbox.config.metadata;
    const nameKey = `container/${config.metadata.name}_${pod.name}_${pod.namespace}_${pod.uid}_${config.metadata.attempt}`;
    if (this.reservedNames.has(nameKey)) {
      throw new SimError('ALREADY_EXISTS', `failed to reserve container name "${nameKey.slice(10)}": name is reserved`);
    }
    const logPath = sandbox.config.logDirectory && config.logPath ? join(sandbox.config.logDirectory, config.logPath) : '';
    // Its process's user, capabilities and pid namespace; a user name it cannot resolve, or a
    // target it cannot join, fails here, as in containerd.
    const target = this.pidTarget(sandbox, config);
    const identity = identityOf(config.linux?.securityContext, [...config.command, ...config.args], target?.pid1);
    const devices = deviceMounts(config);
    const containerId = newId();
    const container: SimContainer = {
      id: containerId,
      sandbox,
      config,
      nameKey,
      image: config.image.image,
      imageId: image.id,
      imageRef: image.repoDigests[0] ?? image.id,
      state: 'CONTAINER_CREATED',
      createdAt: this.clock.now(),
      startedAt: 0,
      finishedAt: 0,
      exitCode: 0,
      reason: '',
      logPath,
      log: null,
      logDrained: Promise.resolve(),
      fs: new SimFs([...config.mounts, ...devices], config.linux?.securityContext?.readonlyRootfs ?? false, identity),
      user: { linux: { uid: identity.uid, gid: identity.gid, supplementalGroups: [...identity.groups] } },
      pid1: identity.pid1,
      isPid1: target === undefined,
      process: null,
      execs: new Set(),
      network: null,
      kill: null,
      exitWaiters: [],
      attached: new Set(),
      cpu: new CpuMeter(sandbox.cpu),
      oomKilled: false,
      pid: 0,
      listing: null,
      attributes: Object.freeze({ id: containerId, metadata: config.metadata, labels: config.labels, annotations: config.annotations }),
    };
    const resolv = resolvConf(sandbox.config.dnsConfig);
    if (resolv) container.fs.write('/etc/resolv.conf', resolv);
    container.fs.write('/proc/self/status', procStatus(identity));
    container.fs.write('/proc/1/cmdline', identity.pid1.map((arg) => `${arg}\0`).join(''));
    for (const [path, content] of Object.entries(idMapFiles(sandbox.config.linux?.securityContext?.namespaceOptions?.usernsOptions))) container.fs.write(path, content);
    for (const [path, content] of Object.entries(cgroupFiles(config.linux?.resources))) container.fs.write(path, content);
    // The sandbox's sysctls, where a script reads them on Linux (`net.ipv4.tcp_syncookies` → /proc/sys/net/ipv4/tcp_syncookies).
    for (const [name, value] of Object.entries(sandbox.config.linux?.sysctls ?? {})) container.fs.write(`/proc/sys/${name.replaceAll('.', '/')}`, `${value}\n`);
    this.reservedNames.add(nameKey);
    this.containers.set(container.id, container);
    sandbox.containers.add(container);
    addToIndex(this.containersByPodUid, config.labels[POD_UID_LABEL], container);
    this.emit(container.id, 'CONTAINER_CREATED_EVENT', sandbox);
    return container.id;
  }

  /**
   * A new log file at the container's log path (containerd's ReopenContainerLog): the old one was
   * rotated away. A file that cannot be made (a full or read-only disk) is an error, as with
   * containerd, and the container keeps logging where it did.
   */
  reopenContainerLog(id: string): void {
    this.assertOpen();
    const container = this.container(id);
    if (container.state !== 'CONTAINER_RUNNING') throw new SimError('FAILED_PRECONDITION', `container "${container.id}" is not running`);
    try {
      container.log?.reopen();
    } catch (error) {
      throw new SimError('UNKNOWN', `failed to create and open log file: ${messageOf(error)}`);
    }
  }

  startContainer(id: string): void {
    this.assertOpen();
    const container = this.container(id);
    if (container.state !== 'CONTAINER_CREATED') {
      throw new SimError('FAILED_PRECONDITION', `container "${container.id}" is in ${container.state} state, not CONTAINER_CREATED`);
    }
    if (container.sandbox.state !== 'SANDBOX_READY') {
      throw new SimError('FAILED_PRECONDITION', `sandbox "${container.sandbox.id}" of container "${container.id}" is not ready`);
    }
    // containerd opens the log before it starts the task: a log file it cannot make fails the start.
    try {
      container.log = container.logPath ? new ContainerLog(this.logs, container.logPath, () => this.clock.now()) : null;
    } catch (error) {
      throw new SimError('UNKNOWN', `failed to create containerd task: failed to create container loggers: failed to create and open log file: ${messageOf(error)}`);
    }
    container.state = 'CONTAINER_RUNNING';
    container.startedAt = this.clock.now();
    container.pid = this.nextPid++;
    const log = container.log;
    // Containers of a pod share its address; host-network ones bind the host's loopback.
    const network = new SimNetwork(container.sandbox.ip || HOST_NETWORK_ADDRESS, container.cpu);
    container.network = network;
    const process = new ShellProcess({
      argv: [...container.config.command, ...container.config.args],
      clock: this.clock,
      fs: container.fs,
      env: envOf(container),
      cwd: container.config.workingDir,
      network,
      cpu: container.cpu,
      pid1: container.isPid1,
      allocate: (bytes) => this.allocate(container, bytes),
      output: {
        stdout: (text) => {
          log?.write('stdout', text);
          for (const { output } of container.attached) output.stdout(text);
        },
        stderr: (text) => {
          log?.write('stderr', text);
          for (const { output } of container.attached) output.stderr(text);
        },
      },
      onExit: (code) => this.containerExited(container, code),
    });
    container.process = process;
    this.emit(container.id, 'CONTAINER_STARTED_EVENT', container.sandbox);
    // Started after the event so that a script that exits at once reports STARTED, then STOPPED.
    process.start();
  }

  /**
   * Sends TERM and resolves once the container has exited, killing it (137) if it is still
   * running `timeoutSeconds` later. A stop with a shorter timeout while one is pending brings
   * the kill forward. Timeout 0 kills at once. Stopping a created, exited or missing container
   * is a no-op.
   */
  stopContainer(id: string, timeoutSeconds: number): Promise<void> {
    const container = lookup(this.containers, id);
    if (!container || container.state !== 'CONTAINER_RUNNING' || !container.process) return Promise.resolve();
    const process = container.process;
    const exited = new Promise<void>((resolve) => container.exitWaiters.push(resolve));
    if (timeoutSeconds <= 0) {
      process.signal('KILL');
      return exited;
    }
    process.signal('TERM');
    if (container.state !== 'CONTAINER_RUNNING') return exited;
    const deadline = this.clock.now() + timeoutSeconds * 1000;
    if (!container.kill || deadline < container.kill.deadline) {
      if (container.kill) this.clock.clearTimeout(container.kill.timer);
      const timer = this.clock.setTimeout(() => {
        container.kill = null;
        process.signal('KILL');
      }, deadline - this.clock.now());
      container.kill = { deadline, timer };
    }
    return exited;
  }

  /**
   * Makes a running container's process end with `exitCode` now, as a crash would (the fault a test
   * or a chaos run injects): its execs and servers go with it and the runtime reports it exited.
   */
  crashContainer(id: string, exitCode: number): void {
    const container = this.container(id);
    if (container.state !== 'CONTAINER_RUNNING') throw new SimError('FAILED_PRECONDITION', `container "${id}" is not running`);
    container.process?.dispose();
    this.containerExited(container, exitCode);
  }

  /** Removes a stopped or never-started container. Missing = ok; running = FAILED_PRECONDITION. */
  removeContainer(id: string): void {
    const container = lookup(this.containers, id);
    if (!container) return;
    if (container.state === 'CONTAINER_RUNNING') {
      throw new SimError('FAILED_PRECONDITION', `container "${container.id}" is running, stop it before removing it`);
    }
    this.deleteContainer(container);
  }

  listContainers(filter: ContainerFilter = {}): Container[] {
    return Array.from(this.matchingContainers(filter), (container) => this.containerOf(container));
  }

  private *matchingContainers(filter: ContainerFilter): Generator<SimContainer> {
    let candidates: Iterable<SimContainer>;
    const uid = filter.labelSelector?.[POD_UID_LABEL];
    if (filter.id) {
      const one = lookup(this.containers, filter.id);
      candidates = one ? [one] : [];
    } else if (filter.podSandboxId) {
      candidates = lookup(this.sandboxes, filter.podSandboxId)?.containers ?? [];
    } else if (uid !== undefined) {
      candidates = this.containersByPodUid.get(uid) ?? [];
    } else {
      candidates = this.containers.values();
    }
    for (const container of candidates) {
      if (filter.state && container.state !== filter.state) continue;
      if (filter.podSandboxId && !container.sandbox.id.startsWith(filter.podSandboxId)) continue;
      if (!matchesLabels(container.config.labels, filter.labelSelector)) continue;
      yield container;
    }
  }

  /**
   * Sets a container's CPU and memory settings in place (containerd's UpdateContainerResources,
   * updateOCILinuxResource): each field given non-zero replaces the container's, zero leaves it as it
   * is; the OOM score is the process's and stays. The container's cgroup files show the new values
   * at once and its memory limit holds from now on (a running container is not restarted); an
   * exited or created one keeps them for a later start, as containerd updates its spec.
   */
  updateContainerResources(id: string, update: LinuxContainerResources): void {
    this.assertOpen();
    const container = this.container(id);
    const current = container.config.linux?.resources;
    const pick = (next: number | undefined, previous: number | undefined) => (next ? next : (previous ?? 0));
    const resources: LinuxContainerResources = {
      cpuPeriod: pick(update.cpuPeriod, current?.cpuPeriod),
      cpuQuota: pick(update.cpuQuota, current?.cpuQuota),
      cpuShares: pick(update.cpuShares, current?.cpuShares),
      memoryLimitInBytes: pick(update.memoryLimitInBytes, current?.memoryLimitInBytes),
      oomScoreAdj: current?.oomScoreAdj ?? 0,
    };
    const hugepageLimits = update.hugepageLimits?.length ? update.hugepageLimits : current?.hugepageLimits;
    if (hugepageLimits) resources.hugepageLimits = hugepageLimits;
    const unified = { ...current?.unified, ...update.unified };
    if (Object.keys(unified).length) resources.unified = unified;
    const swap = pick(update.memorySwapLimitInBytes, current?.memorySwapLimitInBytes);
    if (swap) resources.memorySwapLimitInBytes = swap;
    container.config = { ...container.config, linux: { ...container.config.linux, resources } };
    for (const [path, content] of Object.entries(cgroupFiles(resources))) container.fs.write(path, content);
  }

  /** The container's status as it is this moment, without waiting for its output to reach its log. */
  containerStatusNow(id: string): ContainerStatus {
    return this.containerStatusOf(this.container(id));
  }

  /** ContainerStatus once the container's output is in its log file: an exited container's log is complete, as containerd's exit waits for it. */
  async containerStatus(id: string): Promise<ContainerStatus> {
    await this.container(id).logDrained;
    return this.containerStatusNow(id);
  }

  /**
   * Runs `cmd` through the shell interpreter against the container's filesystem, as a
   * non-PID-1 process. Rejects with DEADLINE_EXCEEDED when `timeoutSeconds` (> 0) elapses first.
   */
  execSync(id: string, cmd: string[], timeoutSeconds: number): Promise<ExecResult> {
    const stdout: string[] = [];
    const stderr: string[] = [];
    let run: RunningExec;
    try {
      run = this.startExec(id, cmd, { stdout: (text) => stdout.push(text), stderr: (text) => stderr.push(text) });
    } catch (error) {
      return Promise.reject(error);
    }
    return new Promise<ExecResult>((resolve, reject) => {
      let deadline: TimerHandle | null = null;
      if (timeoutSeconds > 0) {
        deadline = this.clock.setTimeout(() => {
          deadline = null;
          run.kill();
          reject(new SimError('DEADLINE_EXCEEDED', `timeout ${timeoutSeconds}s exceeded running ${JSON.stringify(cmd)} in container "${id}"`));
        }, timeoutSeconds * 1000);
      }
      void run.exited.then((exitCode) => {
        if (deadline) this.clock.clearTimeout(deadline);
        resolve({ stdout: Buffer.from(stdout.join('')), stderr: Buffer.from(stderr.join('')), exitCode });
      });
    });
  }

  /**
   * Starts `cmd` in a running container as a non-PID-1 process sharing its filesystem, env and
   * network (ExecSync, and exec through the streaming server): output reaches `output` as it is
   * written, `exited` resolves with the exit status, `kill()` ends it (137) — a caller that gave up.
   */
  startExec(id: string, cmd: readonly string[], output: ShellOutput): RunningExec {
    const container = this.container(id);
    if (cmd.length === 0) throw new SimError('INVALID_ARGUMENT', `exec in container "${container.id}": empty command`);
    if (container.state !== 'CONTAINER_RUNNING') throw new SimError('FAILED_PRECONDITION', `container "${container.id}" is not running (${container.state})`);
    let exit!: (code: number) => void;
    const exited = new Promise<number>((resolve) => (exit = resolve));
    const process = new ShellProcess({
      argv: [...cmd],
      clock: this.clock,
      fs: container.fs,
      env: envOf(container),
      cwd: container.config.workingDir,
      network: container.network ?? undefined,
      cpu: container.cpu,
      pid1: false,
      allocate: (bytes) => this.allocate(container, bytes),
      output,
      onExit: (exitCode) => {
        container.execs.delete(process);
        exit(exitCode);
      },
    });
    container.execs.add(process);
    process.start();
    return { exited, kill: () => process.signal('KILL') };
  }

  /**
   * The container's output from now on, as `attach` streams it, until it exits (`exited`) or the
   * caller detaches. The simulated processes read no input, so there is nothing to attach stdin to.
   */
  attachOutput(id: string, output: ShellOutput): { exited: Promise<void>; detach(): void } {
    const container = this.container(id);
    if (container.state !== 'CONTAINER_RUNNING') throw new SimError('FAILED_PRECONDITION', `container "${container.id}" is not running (${container.state})`);
    let attachment!: Attachment;
    const exited = new Promise<void>((resolve) => (attachment = { output, exited: resolve }));
    container.attached.add(attachment);
    return { exited, detach: () => container.attached.delete(attachment) };
  }

  /** Exec, Attach and PortForward answer with a URL on the runtime's streaming server (streaming.ts), as containerd's do. */
  exec(request: ExecRequest): Promise<string> {
    return SimStreaming.of(this).getExec(request);
  }

  attach(request: AttachRequest): Promise<string> {
    return SimStreaming.of(this).getAttach(request);
  }

  portForward(request: PortForwardRequest): Promise<string> {
    return SimStreaming.of(this).getPortForward(request);
  }

  /** Exec'd processes still running in a container (the fault suite and leak tests count them). */
  runningExecs(id: string): number {
    return this.container(id).execs.size;
  }

  /** Where a sandbox's servers listen: its pod address, or the host's loopback with host networking. */
  sandboxAddress(id: string): string {
    return this.sandbox(id).ip || HOST_NETWORK_ADDRESS;
  }

  /**
   * Resolves once the container has a server (`httpd`, `nc -l`) listening on `port` at its pod
   * address. Rejects with FAILED_PRECONDITION if the container is not running or exits first
   * (e.g. because the port was taken), NOT_FOUND for an unknown container. For tests and tools
   * that must not race a server's bind; probes themselves just connect.
   */
  whenListening(id: string, port: number): Promise<void> {
    let container: SimContainer;
    try {
      container = this.container(id);
    } catch (error) {
      return Promise.reject(error);
    }
    const network = container.network;
    if (network?.isListening(port)) return Promise.resolve();
    const notListening = (): SimError =>
      new SimError(
        'FAILED_PRECONDITION',
        container.state === 'CONTAINER_EXITED'
          ? `container "${container.id}" exited with code ${container.exitCode}: nothing listens on port ${port}`
          : `container "${container.id}" is not running (${container.state}): nothing listens on port ${port}`,
      );
    if (container.state !== 'CONTAINER_RUNNING' || !network) return Promise.reject(notListening());
    return network.whenListening(port).catch(() => {
      throw notListening();
    });
  }

  // ------------------------------------------------------------------ stats (usage.ts, README "Stats")

  containerStats(id: string): ContainerStats {
    return this.containerStatsOf(this.container(id), this.clock.now());
  }

  /** The running containers' stats, as containerd reports only running tasks'. */
  listContainerStats(filter: ContainerStatsFilter = {}): ContainerStats[] {
    const now = this.clock.now();
    return Array.from(this.matchingContainers({ ...filter, state: 'CONTAINER_RUNNING' }), (container) => this.containerStatsOf(container, now));
  }

  podSandboxStats(id: string): PodSandboxStats {
    return this.sandboxStatsOf(this.sandbox(id), this.clock.now());
  }

  /** The ready sandboxes' stats: a stopped sandbox has no cgroup left to read. */
  listPodSandboxStats(filter: PodSandboxStatsFilter = {}): PodSandboxStats[] {
    const now = this.clock.now();
    return Array.from(this.matchingSandboxes({ ...filter, state: 'SANDBOX_READY' }), (sandbox) => this.sandboxStatsOf(sandbox, now));
  }

  // ------------------------------------------------------------------ images

  /** Answers the pulled image's ID, as a runtime's image reference. */
  async pullImage(image: string, auth?: AuthConfig): Promise<string> {
    this.assertOpen();
    return (await this.images.pull(image, auth)).id;
  }

  /** Makes a registry private, taking only this username and password (null: public again). */
  requireRegistryCredentials(host: string, credential: RegistryCredential | null): void {
    this.images.requireCredentials(host, credential);
  }

  imageStatus(image: string): ImageInfo | null {
    return this.images.status(image);
  }

  listImages(): ImageInfo[] {
    return this.images.list();
  }

  removeImage(image: string): void {
    this.images.remove(image);
  }

  /**
   * The image filesystem (ImageFsInfo): the runtime's own directory, holding what containerd counts
   * under its snapshotter's: the images (their sizes, IMAGE_BYTES_PER_INODE for their files) and
   * every container's writable layer. The files are simulated, so these figures are the store's,
   * while the filesystem's size and free space (the agent's statfs of the mountpoint) are the real
   * disk's. Without a directory of its own the runtime names no filesystem rather than one whose
   * statfs would measure a disk it does not use.
   */
  imageFsInfo(): ImageFsInfo {
    if (this.stateDir === undefined) return { imageFilesystems: [], containerFilesystems: [] };
    let usedBytes = 0;
    let inodesUsed = 0;
    for (const image of this.images.list()) {
      usedBytes += image.size;
      inodesUsed += Math.ceil(image.size / IMAGE_BYTES_PER_INODE);
    }
    for (const container of this.containers.values()) {
      const layer = container.fs.usage();
      usedBytes += layer.bytes;
      inodesUsed += layer.inodes;
    }
    return { imageFilesystems: [{ timestamp: this.clock.now(), mountpoint: this.stateDir, usedBytes, inodesUsed }], containerFilesystems: [] };
  }

  // ------------------------------------------------------------------ lifecycle

  /** Writes buffered container log lines to their files. */
  flushLogs(): Promise<void> {
    return this.logs.flush();
  }

  /** Counts, for tests and diagnostics. */
  get size(): { sandboxes: number; containers: number } {
    return { sandboxes: this.sandboxes.size, containers: this.containers.size };
  }

  /**
   * CRI UpdateRuntimeConfig: the node's pod CIDR(s), as the kubelet forwards `--pod-cidr` or the
   * Node's `spec.podCIDRs` (comma-separated). New sandboxes take their addresses from its IPv4
   * range once the range is local to the host (localRange.ts); sandboxes keep the addresses they
   * have. Where the range cannot be made local (not root, no `ip` command), or has no IPv4 entry,
   * pods keep the addresses they would have had, and the runtime says so once per range: the
   * call itself succeeds, as containerd's does when it has nothing to write the range into.
   */
  async updateRuntimeConfig(podCidrs: string): Promise<void> {
    if (podCidrs.trim() === '') return;
    const cidr = ipv4Cidr(podCidrs);
    if (cidr === null) {
      this.refuseRange(podCidrs, 'sim:// gives pods IPv4 addresses only, and this pod CIDR has no IPv4 range');
      return;
    }
    await this.usePodCidr(cidr, { removeAtClose: true });
  }

  /**
   * Makes `cidr` the range new sandboxes' addresses come from, if it can be made local.
   * `removeAtClose`: the route this makes is removed when the runtime closes (a node's own CIDR);
   * sim's default range is shared by every sim:// runtime of the host, so its route stays.
   */
  async usePodCidr(cidr: string, options: { removeAtClose: boolean }): Promise<void> {
    const range = cidrRange(cidr);
    if (range instanceof Error) throw new SimError('INVALID_ARGUMENT', `pod CIDR: ${range.message}`);
    if (range.name === this.addresses.range.name) return;
    const result = await makeRangeLocal(range.name, range.address(0));
    if (!result.local) {
      this.refuseRange(range.name, `${result.reason}; making a pod CIDR local to the host needs root (CAP_NET_ADMIN)`);
      return;
    }
    if (result.added && options.removeAtClose) this.addedRoutes.push(range.name);
    this.addresses.use(range);
    this.log('info', 'Pod sandboxes take their addresses from the pod CIDR', { podCIDR: range.name, routeAdded: result.added });
  }

  private refuseRange(cidr: string, reason: string): void {
    if (this.refusedRanges.has(cidr)) return;
    this.refusedRanges.add(cidr);
    this.log('warn', 'Pod sandboxes keep their addresses: the pod CIDR cannot be used, and an API server refuses loopback addresses as Service endpoints', {
      podCIDR: cidr,
      addresses: this.addresses.range.name,
      reason,
    });
  }

  /** The range new sandboxes' addresses come from: a CIDR, or loopback. */
  podAddressRange(): string {
    return this.addresses.range.name;
  }

  private allocateAddress(): string {
    const ip = this.addresses.allocate();
    if (ip === null) throw new SimError('RESOURCE_EXHAUSTED', `no address left for a pod sandbox in ${this.addresses.range.name}`);
    return ip;
  }

  /** Something that lives as long as the engine (its streaming server) and is closed with it. */
  onClose(hook: () => Promise<void>): void {
    this.closeHooks.push(hook);
  }

  /** Cancels every simulated process and timer (no exit is recorded) and flushes logs. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await Promise.all(this.closeHooks.splice(0).map((hook) => hook()));
    this.images.close();
    for (const container of this.containers.values()) {
      container.process?.dispose();
      for (const exec of container.execs) exec.dispose();
      container.execs.clear();
      container.network?.closeAll('the simulated runtime is shut down');
      if (container.kill) this.clock.clearTimeout(container.kill.timer);
      container.kill = null;
      container.log?.close();
      for (const resolve of container.exitWaiters.splice(0)) resolve();
      for (const attachment of container.attached) attachment.exited();
      container.attached.clear();
    }
    this.listeners.clear();
    await this.logs.flush();
    for (const cidr of this.addedRoutes.splice(0)) {
      await removeLocalRange(cidr).catch((err: unknown) => this.log('warn', 'Could not remove the route of a pod CIDR', { podCIDR: cidr, err: messageOf(err) }));
    }
  }

  // ------------------------------------------------------------------ internals

  private assertOpen(): void {
    if (this.closed) throw new SimError('UNAVAILABLE', 'the simulated runtime is shut down');
  }

  private sandbox(id: string): SimSandbox {
    const sandbox = lookup(this.sandboxes, id);
    if (!sandbox) throw new SimError('NOT_FOUND', `pod sandbox "${id}" not found`);
    return sandbox;
  }

  /**
   * The running container of the same sandbox whose pid namespace a new container joins (pid
   * TARGET, an ephemeral container's target), refused as containerd refuses it
   * (pkg/cri/server/container_create_linux.go containerSpec, validateTargetContainer). None for
   * any other pid mode.
   */
  private pidTarget(sandbox: SimSandbox, config: ContainerConfig): SimContainer | undefined {
    const options = config.linux?.securityContext?.namespaceOptions;
    if (options?.pid !== NamespaceMode.TARGET) return undefined;
    const id = options.targetId ?? '';
    const invalid = (why: string) => new SimError('UNKNOWN', `failed to generate container spec: invalid target container: ${why}`);
    const target = lookup(this.containers, id);
    if (!target) throw invalid(`container "${id}" does not exist: not found`);
    if (target.sandbox !== sandbox) throw invalid(`container "${id}" (sandbox ${target.sandbox.id}) does not belong to sandbox ${sandbox.id}`);
    if (target.state !== 'CONTAINER_RUNNING') throw invalid(`container "${id}" is not running - in state ${target.state}`);
    return target;
  }

  private container(id: string): SimContainer {
    const container = lookup(this.containers, id);
    if (!container) throw new SimError('NOT_FOUND', `container "${id}" not found`);
    return container;
  }

  private containerExited(container: SimContainer, exitCode: number): void {
    container.state = 'CONTAINER_EXITED';
    container.finishedAt = this.clock.now();
    container.exitCode = exitCode;
    container.reason = container.oomKilled ? 'OOMKilled' : exitCode === 0 ? 'Completed' : 'Error';
    container.process = null;
    if (container.log) {
      container.log.close();
      container.logDrained = this.logs.flush();
    }
    if (container.kill) this.clock.clearTimeout(container.kill.timer);
    container.kill = null;
    // The container's processes die with it, and so do its servers (daemonised ones included).
    for (const exec of [...container.execs]) exec.signal('KILL');
    container.network?.closeAll(`container "${container.id}" exited with code ${exitCode}`);
    for (const resolve of container.exitWaiters.splice(0)) resolve();
    for (const attachment of container.attached) attachment.exited();
    container.attached.clear();
    this.emit(container.id, 'CONTAINER_STOPPED_EVENT', container.sandbox);
  }

  private deleteContainer(container: SimContainer): void {
    this.emit(container.id, 'CONTAINER_DELETED_EVENT', container.sandbox);
    this.containers.delete(container.id);
    container.sandbox.containers.delete(container);
    this.reservedNames.delete(container.nameKey);
    removeFromIndex(this.containersByPodUid, container.config.labels[POD_UID_LABEL], container);
  }

  private emit(containerId: string, type: ContainerEventType, sandbox: SimSandbox): void {
    // Snapshots are built only when someone listens: at scale most calls have no subscriber.
    if (this.listeners.size === 0) return;
    const event: SimContainerEvent = {
      containerId,
      type,
      createdAt: this.clock.now(),
      podSandboxStatus: this.sandboxStatusOf(sandbox),
      containersStatuses: [...sandbox.containers].map((c) => this.containerStatusOf(c)),
    };
    for (const listener of this.listeners) listener(event);
  }

  /**
   * Its listing: the same frozen object until its state changes (nothing else in it can), so that a
   * list of a node at rest is the same objects each time and the server can keep their encodings.
   */
  private sandboxOf(sandbox: SimSandbox): PodSandbox {
    if (sandbox.listing?.state !== sandbox.state) {
      sandbox.listing = Object.freeze({
        id: sandbox.id,
        metadata: sandbox.config.metadata,
        state: sandbox.state,
        createdAt: sandbox.createdAt,
        labels: sandbox.config.labels,
        annotations: sandbox.config.annotations,
        runtimeHandler: sandbox.runtimeHandler,
      });
    }
    return sandbox.listing;
  }

  private sandboxStatusOf(sandbox: SimSandbox): PodSandboxStatus {
    return {
      ...this.sandboxOf(sandbox),
      network: { ip: sandbox.ip, additionalIps: [] },
      networkMode: sandbox.networkMode,
    };
  }

  /** Its listing, kept as a sandbox's is (`sandboxOf`). */
  private containerOf(container: SimContainer): Container {
    if (container.listing?.state !== container.state) {
      container.listing = Object.freeze({
        id: container.id,
        podSandboxId: container.sandbox.id,
        metadata: container.config.metadata,
        image: container.image,
        imageRef: container.imageId,
        state: container.state,
        createdAt: container.createdAt,
        labels: container.config.labels,
        annotations: container.config.annotations,
      });
    }
    return container.listing;
  }

  /** Live processes: the main one while running, and its execs in flight. */
  private processCount(container: SimContainer): number {
    return container.state === 'CONTAINER_RUNNING' ? 1 + container.execs.size : 0;
  }

  private containerStatsOf(container: SimContainer, now: number): ContainerStats {
    const layer = container.fs.usage();
    // Its files live in memory (a real runtime's page cache holds a written layer too); a container
    // that is not running has no processes and no cgroup, so no working set.
    const rss = this.processCount(container) * PROCESS_BASE_BYTES;
    const memory = container.state === 'CONTAINER_RUNNING' ? layer.bytes + rss : 0;
    return {
      attributes: container.attributes,
      cpu: { timestamp: now, usageCoreNanoSeconds: container.cpu.usageNanoseconds },
      memory: { timestamp: now, workingSetBytes: memory, usageBytes: memory, rssBytes: rss },
      writableLayer: { timestamp: now, usedBytes: layer.bytes, inodesUsed: layer.inodes },
    };
  }

  /** The pod's figures: its containers' plus one base process for the sandbox itself (the pause process). */
  private sandboxStatsOf(sandbox: SimSandbox, now: number): PodSandboxStats {
    const running = [...sandbox.containers].filter((c) => c.state === 'CONTAINER_RUNNING');
    const containers = running.map((c) => this.containerStatsOf(c, now));
    const pause = sandbox.state === 'SANDBOX_READY' ? 1 : 0;
    let memory = pause * PROCESS_BASE_BYTES;
    for (const stats of containers) memory += stats.memory?.workingSetBytes ?? 0;
    let processes = pause;
    for (const c of running) processes += this.processCount(c);
    return {
      attributes: sandbox.attributes,
      linux: {
        cpu: { timestamp: now, usageCoreNanoSeconds: sandbox.cpu.usageNanoseconds },
        memory: { timestamp: now, workingSetBytes: memory, usageBytes: memory, rssBytes: processes * PROCESS_BASE_BYTES },
        process: { timestamp: now, processCount: processes },
        containers,
      },
    };
  }

  private containerStatusOf(container: SimContainer): ContainerStatus {
    return {
      id: container.id,
      metadata: container.config.metadata,
      state: container.state,
      createdAt: container.createdAt,
      startedAt: container.startedAt,
      finishedAt: container.finishedAt,
      exitCode: container.exitCode,
      image: container.image,
      imageRef: container.imageRef,
      reason: container.reason,
      message: '',
      labels: container.config.labels,
      annotations: container.config.annotations,
      mounts: container.config.mounts,
      logPath: container.logPath,
      user: container.user,
      // As containerd reports them: what the container was created or last updated with.
      ...(container.config.linux?.resources ? { resources: container.config.linux.resources } : {}),
    };
  }
}

function envOf(container: SimContainer): Record<string, string> {
  const hostname = container.sandbox.networkMode === NamespaceMode.NODE ? os.hostname() : container.sandbox.config.hostname || container.sandbox.config.metadata.name;
  const env: Record<string, string> = { HOSTNAME: hostname, HOME: '/root', PATH: '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' };
  for (const { key, value } of container.config.envs) env[key] = value;
  return env;
}

function addToIndex<T>(index: Map<string, Set<T>>, key: string | undefined, value: T): void {
  if (key === undefined) return;
  let set = index.get(key);
  if (!set) {
    set = new Set();
    index.set(key, set);
  }
  set.add(value);
}

function removeFromIndex<T>(index: Map<string, Set<T>>, key: string | undefined, value: T): void {
  if (key === undefined) return;
  const set = index.get(key);
  if (!set) return;
  set.delete(value);
  if (set.size === 0) index.delete(key);
}

/**
 * The sandbox's resolv.conf as a runtime renders CRI's DNSConfig (containerd: search, then one
 * nameserver line each, then options); none without a DNSConfig.
 */
function resolvConf(dns: PodSandboxConfig['dnsConfig']): string | null {
  if (!dns) return null;
  let text = '';
  if (dns.searches.length) text += `search ${dns.searches.join(' ')}\n`;
  for (const server of dns.servers) text += `nameserver ${server}\n`;
  if (dns.options.length) text += `options ${dns.options.join(' ')}\n`;
  return text;
}

/**
 * A container's devices (CRI `devices`, a raw block volume's link) as the paths its processes reach:
 * the host's device, read and written through like a mount's file, read-only unless its permissions
 * allow writing. As containerd resolves the host path and makes a device node of what it finds, a
 * path that is not a device fails the create (oci.DeviceFromPath: "not a device node").
 */
function deviceMounts(config: ContainerConfig): { containerPath: string; hostPath: string; readonly: boolean }[] {
  return (config.devices ?? []).map((device) => {
    let info: Stats | undefined;
    let resolved = device.hostPath;
    try {
      resolved = realpathSync(device.hostPath);
      info = statSync(resolved);
    } catch (err) {
      throw new SimError('UNKNOWN', `failed to generate container "${config.metadata.name}" spec: failed to apply OCI options: lstat ${device.hostPath}: ${messageOf(err)}`);
    }
    if (!info.isBlockDevice() && !info.isCharacterDevice()) throw new SimError('UNKNOWN', `failed to generate container "${config.metadata.name}" spec: failed to apply OCI options: ${resolved}: not a device node`);
    return { containerPath: device.containerPath, hostPath: resolved, readonly: !device.permissions.includes('w') };
  });
}
