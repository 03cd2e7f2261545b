/**
 * An in-memory container runtime for machine tests. It follows CRI semantics closely enough that
 * the pod machines cannot tell it from containerd on the paths they exercise (idempotent stop and
 * remove, NOT_FOUND on status of unknown ids, FAILED_PRECONDITION when removing a running
 * container), and it is scriptable: calls can be made to fail, held until the test releases them,
 * and containers can be made to exit. It never uses real timers; time comes from `now()`.
 */
import { createHash } from 'node:crypto';
import { posix } from 'node:path';
import {
  CriError,
  NamespaceMode,
  type CallOptions,
  type Container,
  type ContainerConfig,
  type ContainerEvent,
  type ContainerEventType,
  type ContainerFilter,
  type ContainerState,
  type ContainerStatus,
  type CriErrorCode,
  type ExecResult,
  type ImageInfo,
  type ImageService,
  type KeyValueMap,
  type PodSandbox,
  type PodSandboxConfig,
  type PodSandboxFilter,
  type PodSandboxStatus,
  type RuntimeCondition,
  type RuntimeService,
  type RuntimeStatusInfo,
  type SandboxState,
  type VersionInfo,
} from './types.ts';

/** Every runtime call the fake answers, by its method name on the TypeScript interfaces. */
export type FakeMethod = keyof RuntimeService | keyof ImageService;

/** The CRI RPC behind each method, so scripted errors name the call the way the gRPC client does. */
const CRI_CALL: Record<FakeMethod, string> = {
  version: 'Version',
  status: 'Status',
  runPodSandbox: 'RunPodSandbox',
  stopPodSandbox: 'StopPodSandbox',
  removePodSandbox: 'RemovePodSandbox',
  podSandboxStatus: 'PodSandboxStatus',
  listPodSandbox: 'ListPodSandbox',
  createContainer: 'CreateContainer',
  startContainer: 'StartContainer',
  stopContainer: 'StopContainer',
  removeContainer: 'RemoveContainer',
  listContainers: 'ListContainers',
  containerStatus: 'ContainerStatus',
  execSync: 'ExecSync',
  containerEvents: 'GetContainerEvents',
  pullImage: 'PullImage',
  imageStatus: 'ImageStatus',
  listImages: 'ListImages',
  removeImage: 'RemoveImage',
};

/** Exit code of a container killed by SIGKILL after its grace period, as runtimes report it. */
const KILLED_EXIT_CODE = 137;

export interface FakeRuntimeOptions {
  /** Milliseconds since the epoch; defaults to `Date.now`. */
  now?: () => number;
}

/** One entry of the call log: the method and the id, name or image it was about. */
export interface FakeCall {
  method: FakeMethod;
  target: string;
  /** The timeout argument of `stopContainer` and `execSync`, in seconds. */
  timeoutSeconds?: number;
}

/** Controls calls held by `holdCalls`. */
export interface HoldController {
  /** Number of calls currently waiting. */
  readonly pending: number;
  /** Resolves once at least `count` calls are waiting. */
  whenPending(count?: number): Promise<void>;
  /** Lets the oldest waiting call proceed; later calls keep being held. Returns false if none waited. */
  releaseNext(): boolean;
  /** Lets every waiting call proceed and stops holding: later calls run straight through. */
  releaseAll(): void;
  /** Fails every waiting call with this error and stops holding. */
  failAll(code: CriErrorCode, message?: string): void;
}

export type ExecHandler = (containerId: string, cmd: string[]) => ExecResult;

interface SandboxRecord {
  id: string;
  config: PodSandboxConfig;
  state: SandboxState;
  createdAt: number;
  ip: string;
  networkMode: NamespaceMode;
}

interface ContainerRecord {
  id: string;
  podSandboxId: string;
  config: ContainerConfig;
  state: ContainerState;
  imageRef: string;
  createdAt: number;
  startedAt: number;
  finishedAt: number;
  exitCode: number;
  reason: string;
  message: string;
}

interface ScriptedFailure {
  remaining: number;
  code: CriErrorCode;
  message: string;
}

// ------------------------------------------------------------------------------------------------
// Small helpers

function matchesLabels(labels: KeyValueMap, selector: KeyValueMap | undefined): boolean {
  if (selector === undefined) return true;
  return Object.entries(selector).every(([key, value]) => labels[key] === value);
}

function imageIdFor(image: string): string {
  return `sha256:${createHash('sha256').update(image).digest('hex')}`;
}

function sandboxNetworkMode(config: PodSandboxConfig): NamespaceMode {
  return config.linux?.securityContext?.namespaceOptions?.network ?? NamespaceMode.POD;
}

function sandboxName(config: PodSandboxConfig): string {
  const { namespace, name, uid, attempt } = config.metadata;
  return `${namespace}/${name}/${uid}/${attempt}`;
}

function exitReason(exitCode: number): string {
  return exitCode === 0 ? 'Completed' : 'Error';
}

// ------------------------------------------------------------------------------------------------
// Holding calls

interface HeldCall {
  release: () => void;
  fail: (err: CriError) => void;
}

class CallHold implements HoldController {
  private readonly waiting: HeldCall[] = [];
  private readonly pendingWatchers: { count: number; resolve: () => void }[] = [];
  private active = true;

  constructor(
    /** The CRI call being held, so errors from `failAll` name it. */
    private readonly callName: string,
    private readonly onEnd: () => void,
  ) {}

  get pending(): number {
    return this.waiting.length;
  }

  get isActive(): boolean {
    return this.active;
  }

  wait(call: string, signal: AbortSignal | undefined): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      const onAbort = (): void => {
        this.forget(held);
        reject(new CriError(call, 'CANCELLED', 'aborted while the call was held'));
      };
      const held: HeldCall = {
        release: () => {
          signal?.removeEventListener('abort', onAbort);
          resolve();
        },
        fail: (err) => {
          signal?.removeEventListener('abort', onAbort);
          reject(err);
        },
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      this.waiting.push(held);
      this.notifyWatchers();
    });
  }

  whenPending(count = 1): Promise<void> {
    if (this.waiting.length >= count) return Promise.resolve();
    return new Promise((resolve) => this.pendingWatchers.push({ count, resolve }));
  }

  releaseNext(): boolean {
    const held = this.waiting.shift();
    held?.release();
    return held !== undefined;
  }

  releaseAll(): void {
    this.end();
    for (const held of this.waiting.splice(0)) held.release();
  }

  failAll(code: CriErrorCode, message = 'failed while held'): void {
    this.end();
    for (const held of this.waiting.splice(0)) held.fail(new CriError(this.callName, code, message));
  }

  private end(): void {
    if (!this.active) return;
    this.active = false;
    this.onEnd();
  }

  private forget(held: HeldCall): void {
    const index = this.waiting.indexOf(held);
    if (index >= 0) this.waiting.splice(index, 1);
  }

  private notifyWatchers(): void {
    for (let i = this.pendingWatchers.length - 1; i >= 0; i--) {
      const watcher = this.pendingWatchers[i];
      if (watcher !== undefined && this.waiting.length >= watcher.count) {
        this.pendingWatchers.splice(i, 1);
        watcher.resolve();
      }
    }
  }
}

// ------------------------------------------------------------------------------------------------
// Event streams

/** One subscriber's buffer of events, handed out in order; a failure ends the stream. */
class EventQueue {
  private readonly buffer: ContainerEvent[] = [];
  private waiter: { resolve: (event: ContainerEvent) => void; reject: (err: CriError) => void } | undefined;
  private failure: CriError | undefined;

  push(event: ContainerEvent): void {
    if (this.failure) return;
    if (this.waiter) {
      this.waiter.resolve(event);
      this.waiter = undefined;
    } else {
      this.buffer.push(event);
    }
  }

  /** Buffered events are still delivered first, as a broken gRPC stream would have delivered them. */
  fail(err: CriError): void {
    if (this.failure) return;
    this.failure = err;
    if (this.waiter) {
      this.waiter.reject(err);
      this.waiter = undefined;
    }
  }

  /** Cancellation discards what is buffered: the caller no longer wants it. */
  cancel(err: CriError): void {
    this.buffer.length = 0;
    this.fail(err);
  }

  next(): Promise<ContainerEvent> {
    const event = this.buffer.shift();
    if (event !== undefined) return Promise.resolve(event);
    if (this.failure) return Promise.reject(this.failure);
    return new Promise((resolve, reject) => {
      this.waiter = { resolve, reject };
    });
  }
}

// ------------------------------------------------------------------------------------------------
// The fake

export class FakeRuntime implements RuntimeService, ImageService {
  private readonly now: () => number;
  private readonly sandboxesById = new Map<string, SandboxRecord>();
  private readonly containersById = new Map<string, ContainerRecord>();
  private readonly imagesByName = new Map<string, ImageInfo>();
  private readonly pullFailures = new Map<string, { code: CriErrorCode; message: string }>();
  private readonly exitCodesOnTerm = new Map<string, number>();
  private readonly failures = new Map<FakeMethod, ScriptedFailure[]>();
  private readonly holds = new Map<FakeMethod, CallHold>();
  private readonly eventQueues = new Set<EventQueue>();
  private readonly log: FakeCall[] = [];
  private readonly conditions: RuntimeCondition[] = [
    { type: 'RuntimeReady', status: true, reason: '', message: '' },
    { type: 'NetworkReady', status: true, reason: '', message: '' },
  ];
  private execHandler: ExecHandler = () => ({ stdout: Buffer.alloc(0), stderr: Buffer.alloc(0), exitCode: 0 });
  private eventsUnimplemented = false;
  private nextSandboxNumber = 1;
  private nextContainerNumber = 1;
  private nextIpHost = 2;

  constructor(options: FakeRuntimeOptions = {}) {
    this.now = options.now ?? Date.now;
  }

  // ---------------------------------------------------------------- scripting

  /** Makes the next `times` calls of `method` fail with this error (after any already scripted). */
  failNext(method: FakeMethod, code: CriErrorCode, message = 'scripted failure', times = 1): void {
    this.scriptFailure(method, { remaining: times, code, message });
  }

  /** Makes every call of `method` fail until `clearFailures`. */
  failAlways(method: FakeMethod, code: CriErrorCode, message = 'scripted failure'): void {
    this.scriptFailure(method, { remaining: Number.POSITIVE_INFINITY, code, message });
  }

  clearFailures(method?: FakeMethod): void {
    if (method === undefined) this.failures.clear();
    else this.failures.delete(method);
  }

  /**
   * Holds every call of `method` before it takes effect until the test releases it; an aborted
   * signal still cancels a held call. Holding an already held method returns the same controller.
   */
  holdCalls(method: FakeMethod): HoldController {
    const existing = this.holds.get(method);
    if (existing?.isActive) return existing;
    const hold = new CallHold(CRI_CALL[method], () => {
      if (this.holds.get(method) === hold) this.holds.delete(method);
    });
    this.holds.set(method, hold);
    return hold;
  }

  /** Simulates the container's process exiting on its own. */
  exitContainer(containerId: string, exitCode: number, reason = exitReason(exitCode), message = ''): void {
    const container = this.containersById.get(containerId);
    if (container === undefined) throw new Error(`FakeRuntime: no container ${containerId}`);
    if (container.state !== 'CONTAINER_RUNNING') {
      throw new Error(`FakeRuntime: container ${containerId} is ${container.state}, not running`);
    }
    this.markExited(container, exitCode, reason, message);
  }

  /** Makes a later stop of this container report `exitCode` (a process that handles SIGTERM) instead of 137. */
  exitOnTerm(containerId: string, exitCode: number): void {
    this.exitCodesOnTerm.set(containerId, exitCode);
  }

  addImage(image: string, size = 1024 * 1024): ImageInfo {
    const info: ImageInfo = { id: imageIdFor(image), repoTags: [image], repoDigests: [], size };
    this.imagesByName.set(image, info);
    return { ...info };
  }

  /** Makes every pull of `image` fail until `clearPullFailure`; registries answer bad pulls with UNKNOWN. */
  failPull(image: string, message: string, code: CriErrorCode = 'UNKNOWN'): void {
    this.pullFailures.set(image, { code, message });
  }

  clearPullFailure(image: string): void {
    this.pullFailures.delete(image);
  }

  setExecHandler(handler: ExecHandler): void {
    this.execHandler = handler;
  }

  setCondition(type: string, status: boolean, reason = '', message = ''): void {
    const condition = this.conditions.find((c) => c.type === type);
    if (condition) Object.assign(condition, { status, reason, message });
    else this.conditions.push({ type, status, reason, message });
  }

  /** Makes GetContainerEvents answer UNIMPLEMENTED, as containerd 1.6 does. */
  setEventsUnimplemented(unimplemented = true): void {
    this.eventsUnimplemented = unimplemented;
  }

  /** Ends every open event stream with this error, as a runtime restart would. */
  breakEventStreams(code: CriErrorCode = 'UNAVAILABLE', message = 'event stream broken'): void {
    for (const queue of this.eventQueues) queue.fail(new CriError('GetContainerEvents', code, message));
    this.eventQueues.clear();
  }

  // ---------------------------------------------------------------- inspection

  get calls(): readonly FakeCall[] {
    return this.log;
  }

  /** The call log rendered as `method(target)` strings, convenient for `toEqual`. */
  callLog(method?: FakeMethod): string[] {
    return this.log.filter((c) => method === undefined || c.method === method).map((c) => `${c.method}(${c.target})`);
  }

  clearCalls(): void {
    this.log.length = 0;
  }

  getSandbox(id: string): PodSandboxStatus | undefined {
    const sandbox = this.sandboxesById.get(id);
    return sandbox && this.sandboxStatusOf(sandbox);
  }

  getContainer(id: string): ContainerStatus | undefined {
    const container = this.containersById.get(id);
    return container && this.containerStatusOf(container);
  }

  get openEventStreams(): number {
    return this.eventQueues.size;
  }

  // ---------------------------------------------------------------- RuntimeService

  version(opts?: CallOptions): Promise<VersionInfo> {
    return this.invoke('version', '', opts, () => ({
      version: '0.1.0',
      runtimeName: 'fake',
      runtimeVersion: '0.0.0',
      runtimeApiVersion: 'v1',
    }));
  }

  status(opts?: CallOptions): Promise<RuntimeStatusInfo> {
    return this.invoke('status', '', opts, () => ({ conditions: this.conditions.map((c) => ({ ...c })) }));
  }

  runPodSandbox(config: PodSandboxConfig, opts?: CallOptions): Promise<string> {
    return this.invoke('runPodSandbox', sandboxName(config), opts, () => this.doRunPodSandbox(config));
  }

  stopPodSandbox(podSandboxId: string, opts?: CallOptions): Promise<void> {
    return this.invoke('stopPodSandbox', podSandboxId, opts, () => this.doStopPodSandbox(podSandboxId));
  }

  removePodSandbox(podSandboxId: string, opts?: CallOptions): Promise<void> {
    return this.invoke('removePodSandbox', podSandboxId, opts, () => this.doRemovePodSandbox(podSandboxId));
  }

  podSandboxStatus(podSandboxId: string, opts?: CallOptions): Promise<PodSandboxStatus> {
    return this.invoke('podSandboxStatus', podSandboxId, opts, () =>
      this.sandboxStatusOf(this.requireSandbox('podSandboxStatus', podSandboxId)),
    );
  }

  listPodSandbox(filter: PodSandboxFilter = {}, opts?: CallOptions): Promise<PodSandbox[]> {
    return this.invoke('listPodSandbox', JSON.stringify(filter), opts, () =>
      [...this.sandboxesById.values()]
        .filter((s) => this.sandboxMatches(s, filter))
        .map((s) => this.sandboxOf(s)),
    );
  }

  createContainer(
    podSandboxId: string,
    config: ContainerConfig,
    sandboxConfig: PodSandboxConfig,
    opts?: CallOptions,
  ): Promise<string> {
    const target = `${podSandboxId}/${config.metadata.name}`;
    return this.invoke('createContainer', target, opts, () => this.doCreateContainer(podSandboxId, config, sandboxConfig));
  }

  startContainer(containerId: string, opts?: CallOptions): Promise<void> {
    return this.invoke('startContainer', containerId, opts, () => this.doStartContainer(containerId));
  }

  stopContainer(containerId: string, timeoutSeconds: number, opts?: CallOptions): Promise<void> {
    return this.invoke('stopContainer', containerId, opts, () => {
      const container = this.containersById.get(containerId);
      if (container) this.terminate(container);
    }, timeoutSeconds);
  }

  removeContainer(containerId: string, opts?: CallOptions): Promise<void> {
    return this.invoke('removeContainer', containerId, opts, () => this.doRemoveContainer(containerId));
  }

  listContainers(filter: ContainerFilter = {}, opts?: CallOptions): Promise<Container[]> {
    return this.invoke('listContainers', JSON.stringify(filter), opts, () =>
      [...this.containersById.values()]
        .filter((c) => this.containerMatches(c, filter))
        .map((c) => this.containerOf(c)),
    );
  }

  containerStatus(containerId: string, opts?: CallOptions): Promise<ContainerStatus> {
    return this.invoke('containerStatus', containerId, opts, () =>
      this.containerStatusOf(this.requireContainer('containerStatus', containerId)),
    );
  }

  execSync(containerId: string, cmd: string[], timeoutSeconds: number, opts?: CallOptions): Promise<ExecResult> {
    return this.invoke('execSync', containerId, opts, () => {
      const container = this.requireContainer('execSync', containerId);
      if (container.state !== 'CONTAINER_RUNNING') {
        throw new CriError('ExecSync', 'FAILED_PRECONDITION', `container ${containerId} is not running`);
      }
      return this.execHandler(containerId, [...cmd]);
    }, timeoutSeconds);
  }

  /**
   * Subscribes at once, like opening the gRPC stream: events that happen before the first `next()`
   * are kept. Failure scripting applies; holding does not.
   */
  containerEvents(opts?: CallOptions): AsyncIterable<ContainerEvent> {
    this.log.push({ method: 'containerEvents', target: '' });
    const queue = new EventQueue();
    const failure = this.openingFailure(opts);
    if (failure) queue.fail(failure);
    else this.eventQueues.add(queue);
    return this.drain(queue, opts?.signal);
  }

  // ---------------------------------------------------------------- ImageService

  pullImage(image: string, sandboxConfig?: PodSandboxConfig, opts?: CallOptions): Promise<string> {
    return this.invoke('pullImage', image, opts, () => {
      const failure = this.pullFailures.get(image);
      if (failure) throw new CriError('PullImage', failure.code, failure.message);
      const present = this.imagesByName.get(image) ?? this.addImage(image);
      return present.id;
    });
  }

  imageStatus(image: string, opts?: CallOptions): Promise<ImageInfo | null> {
    return this.invoke('imageStatus', image, opts, () => {
      const info = this.findImage(image);
      return info ? this.imageOf(info) : null;
    });
  }

  listImages(opts?: CallOptions): Promise<ImageInfo[]> {
    return this.invoke('listImages', '', opts, () => [...this.imagesByName.values()].map((i) => this.imageOf(i)));
  }

  removeImage(image: string, opts?: CallOptions): Promise<void> {
    return this.invoke('removeImage', image, opts, () => {
      const info = this.findImage(image);
      if (info) for (const tag of info.repoTags) this.imagesByName.delete(tag);
    });
  }

  // ---------------------------------------------------------------- call plumbing

  private async invoke<T>(
    method: FakeMethod,
    target: string,
    opts: CallOptions | undefined,
    perform: () => T,
    timeoutSeconds?: number,
  ): Promise<T> {
    this.log.push(timeoutSeconds === undefined ? { method, target } : { method, target, timeoutSeconds });
    const call = CRI_CALL[method];
    if (opts?.signal?.aborted) throw new CriError(call, 'CANCELLED', 'aborted before the call was made');
    const hold = this.holds.get(method);
    if (hold) await hold.wait(call, opts?.signal);
    const failure = this.takeFailure(method);
    if (failure) throw failure;
    return perform();
  }

  private scriptFailure(method: FakeMethod, failure: ScriptedFailure): void {
    const queue = this.failures.get(method) ?? [];
    queue.push(failure);
    this.failures.set(method, queue);
  }

  private takeFailure(method: FakeMethod): CriError | undefined {
    const queue = this.failures.get(method);
    const next = queue?.[0];
    if (queue === undefined || next === undefined) return undefined;
    next.remaining -= 1;
    if (next.remaining <= 0) queue.shift();
    if (queue.length === 0) this.failures.delete(method);
    return new CriError(CRI_CALL[method], next.code, next.message);
  }

  private openingFailure(opts: CallOptions | undefined): CriError | undefined {
    if (opts?.signal?.aborted) return new CriError('GetContainerEvents', 'CANCELLED', 'aborted before the call was made');
    const scripted = this.takeFailure('containerEvents');
    if (scripted) return scripted;
    if (this.eventsUnimplemented) {
      return new CriError('GetContainerEvents', 'UNIMPLEMENTED', 'unknown method GetContainerEvents for service runtime.v1.RuntimeService');
    }
    return undefined;
  }

  private async *drain(queue: EventQueue, signal: AbortSignal | undefined): AsyncGenerator<ContainerEvent> {
    const onAbort = (): void => queue.cancel(new CriError('GetContainerEvents', 'CANCELLED', 'event stream cancelled'));
    signal?.addEventListener('abort', onAbort, { once: true });
    try {
      for (;;) yield await queue.next();
    } finally {
      signal?.removeEventListener('abort', onAbort);
      this.eventQueues.delete(queue);
    }
  }

  private emit(container: ContainerRecord, type: ContainerEventType): void {
    const sandbox = this.sandboxesById.get(container.podSandboxId);
    const event: ContainerEvent = { containerId: container.id, type, createdAt: this.now() };
    if (sandbox) event.podSandboxMetadata = { ...sandbox.config.metadata };
    for (const queue of this.eventQueues) queue.push({ ...event });
  }

  // ---------------------------------------------------------------- sandboxes

  private doRunPodSandbox(config: PodSandboxConfig): string {
    const name = sandboxName(config);
    if ([...this.sandboxesById.values()].some((s) => sandboxName(s.config) === name)) {
      throw new CriError('RunPodSandbox', 'UNKNOWN', `failed to reserve sandbox name ${JSON.stringify(name)}: name is reserved`);
    }
    const networkMode = sandboxNetworkMode(config);
    const sandbox: SandboxRecord = {
      id: `sandbox-${this.nextSandboxNumber++}`,
      config: structuredClone(config),
      state: 'SANDBOX_READY',
      createdAt: this.now(),
      ip: networkMode === NamespaceMode.NODE ? '' : this.allocateIp(),
      networkMode,
    };
    this.sandboxesById.set(sandbox.id, sandbox);
    return sandbox.id;
  }

  private allocateIp(): string {
    const host = this.nextIpHost++;
    return `10.244.${Math.floor(host / 256)}.${host % 256}`;
  }

  private doStopPodSandbox(podSandboxId: string): void {
    const sandbox = this.sandboxesById.get(podSandboxId);
    if (sandbox === undefined) return;
    for (const container of this.containersIn(podSandboxId)) this.terminate(container);
    sandbox.state = 'SANDBOX_NOTREADY';
  }

  /** CRI: removing a sandbox forcibly stops and removes whatever containers it still has. */
  private doRemovePodSandbox(podSandboxId: string): void {
    if (!this.sandboxesById.has(podSandboxId)) return;
    for (const container of this.containersIn(podSandboxId)) {
      this.terminate(container);
      this.deleteContainer(container);
    }
    this.sandboxesById.delete(podSandboxId);
  }

  private requireSandbox(method: FakeMethod, id: string): SandboxRecord {
    const sandbox = this.sandboxesById.get(id);
    if (sandbox === undefined) throw new CriError(CRI_CALL[method], 'NOT_FOUND', `an error occurred when try to find sandbox ${JSON.stringify(id)}: not found`);
    return sandbox;
  }

  private sandboxMatches(sandbox: SandboxRecord, filter: PodSandboxFilter): boolean {
    return (
      (filter.id === undefined || filter.id === sandbox.id) &&
      (filter.state === undefined || filter.state === sandbox.state) &&
      matchesLabels(sandbox.config.labels, filter.labelSelector)
    );
  }

  private sandboxOf(sandbox: SandboxRecord): PodSandbox {
    return {
      id: sandbox.id,
      metadata: { ...sandbox.config.metadata },
      state: sandbox.state,
      createdAt: sandbox.createdAt,
      labels: { ...sandbox.config.labels },
      annotations: { ...sandbox.config.annotations },
      runtimeHandler: '',
    };
  }

  private sandboxStatusOf(sandbox: SandboxRecord): PodSandboxStatus {
    const status: PodSandboxStatus = { ...this.sandboxOf(sandbox), networkMode: sandbox.networkMode };
    if (sandbox.ip !== '') status.network = { ip: sandbox.ip, additionalIps: [] };
    return status;
  }

  // ---------------------------------------------------------------- containers

  private doCreateContainer(podSandboxId: string, config: ContainerConfig, sandboxConfig: PodSandboxConfig): string {
    const sandbox = this.requireSandbox('createContainer', podSandboxId);
    if (sandbox.state !== 'SANDBOX_READY') {
      throw new CriError('CreateContainer', 'FAILED_PRECONDITION', `sandbox ${podSandboxId} is not ready`);
    }
    const { name, attempt } = config.metadata;
    const reserved = this.containersIn(podSandboxId).some(
      (c) => c.config.metadata.name === name && c.config.metadata.attempt === attempt,
    );
    if (reserved) {
      throw new CriError('CreateContainer', 'UNKNOWN', `failed to reserve container name ${JSON.stringify(`${name}_${attempt}`)}: name is reserved`);
    }
    const image = this.findImage(config.image.image);
    if (image === undefined) {
      throw new CriError('CreateContainer', 'NOT_FOUND', `failed to get image ${JSON.stringify(config.image.image)}: not found`);
    }
    const container: ContainerRecord = {
      id: `container-${this.nextContainerNumber++}`,
      podSandboxId,
      config: structuredClone(config),
      state: 'CONTAINER_CREATED',
      imageRef: image.id,
      createdAt: this.now(),
      startedAt: 0,
      finishedAt: 0,
      exitCode: 0,
      reason: '',
      message: '',
    };
    this.containersById.set(container.id, container);
    this.emit(container, 'CONTAINER_CREATED_EVENT');
    return container.id;
  }

  private doStartContainer(containerId: string): void {
    const container = this.requireContainer('startContainer', containerId);
    if (container.state !== 'CONTAINER_CREATED') {
      throw new CriError('StartContainer', 'FAILED_PRECONDITION', `container ${containerId} is in ${container.state} state`);
    }
    const sandbox = this.sandboxesById.get(container.podSandboxId);
    if (sandbox?.state !== 'SANDBOX_READY') {
      throw new CriError('StartContainer', 'FAILED_PRECONDITION', `sandbox ${container.podSandboxId} is not ready`);
    }
    container.state = 'CONTAINER_RUNNING';
    container.startedAt = this.now();
    this.emit(container, 'CONTAINER_STARTED_EVENT');
  }

  /** containerd refuses to remove a running container; everything else about removal is idempotent. */
  private doRemoveContainer(containerId: string): void {
    const container = this.containersById.get(containerId);
    if (container === undefined) return;
    if (container.state === 'CONTAINER_RUNNING') {
      throw new CriError('RemoveContainer', 'FAILED_PRECONDITION', `container ${containerId} is running, must be stopped before removal`);
    }
    this.deleteContainer(container);
  }

  private deleteContainer(container: ContainerRecord): void {
    this.containersById.delete(container.id);
    this.exitCodesOnTerm.delete(container.id);
    this.emit(container, 'CONTAINER_DELETED_EVENT');
  }

  /** Stopping only affects a running container; a created or exited one is left as it is. */
  private terminate(container: ContainerRecord): void {
    if (container.state !== 'CONTAINER_RUNNING') return;
    const exitCode = this.exitCodesOnTerm.get(container.id) ?? KILLED_EXIT_CODE;
    this.markExited(container, exitCode, exitReason(exitCode), '');
  }

  private markExited(container: ContainerRecord, exitCode: number, reason: string, message: string): void {
    container.state = 'CONTAINER_EXITED';
    container.exitCode = exitCode;
    container.reason = reason;
    container.message = message;
    container.finishedAt = this.now();
    this.emit(container, 'CONTAINER_STOPPED_EVENT');
  }

  private containersIn(podSandboxId: string): ContainerRecord[] {
    return [...this.containersById.values()].filter((c) => c.podSandboxId === podSandboxId);
  }

  private requireContainer(method: FakeMethod, id: string): ContainerRecord {
    const container = this.containersById.get(id);
    if (container === undefined) throw new CriError(CRI_CALL[method], 'NOT_FOUND', `an error occurred when try to find container ${JSON.stringify(id)}: not found`);
    return container;
  }

  private containerMatches(container: ContainerRecord, filter: ContainerFilter): boolean {
    return (
      (filter.id === undefined || filter.id === container.id) &&
      (filter.state === undefined || filter.state === container.state) &&
      (filter.podSandboxId === undefined || filter.podSandboxId === container.podSandboxId) &&
      matchesLabels(container.config.labels, filter.labelSelector)
    );
  }

  private containerOf(container: ContainerRecord): Container {
    return {
      id: container.id,
      podSandboxId: container.podSandboxId,
      metadata: { ...container.config.metadata },
      image: container.config.image.image,
      imageRef: container.imageRef,
      state: container.state,
      createdAt: container.createdAt,
      labels: { ...container.config.labels },
      annotations: { ...container.config.annotations },
    };
  }

  private containerStatusOf(container: ContainerRecord): ContainerStatus {
    const logDirectory = this.sandboxesById.get(container.podSandboxId)?.config.logDirectory ?? '';
    return {
      id: container.id,
      metadata: { ...container.config.metadata },
      state: container.state,
      createdAt: container.createdAt,
      startedAt: container.startedAt,
      finishedAt: container.finishedAt,
      exitCode: container.exitCode,
      image: container.config.image.image,
      imageRef: container.imageRef,
      reason: container.reason,
      message: container.message,
      labels: { ...container.config.labels },
      annotations: { ...container.config.annotations },
      logPath: logDirectory ? posix.join(logDirectory, container.config.logPath) : container.config.logPath,
    };
  }

  // ---------------------------------------------------------------- images

  /** Looks an image up by the name it was added or pulled under, or by its id. */
  private findImage(image: string): ImageInfo | undefined {
    return this.imagesByName.get(image) ?? [...this.imagesByName.values()].find((i) => i.id === image);
  }

  private imageOf(info: ImageInfo): ImageInfo {
    return { ...info, repoTags: [...info.repoTags], repoDigests: [...info.repoDigests] };
  }
}
