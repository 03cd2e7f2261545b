/**
 * Fault injection and call recording as a decorator over any `RuntimeService`/`ImageService` (the
 * in-process simulated runtime, the gRPC client to `sim://` or to containerd): it records every
 * call, can make chosen calls fail (the next N, or all until cleared), hold them until the test
 * releases them, answer ExecSync itself, refuse the container event stream (UNIMPLEMENTED, as
 * containerd 1.6 does) or break the streams that are open (as a runtime restart would). Everything
 * else passes through to the runtime underneath, whose behaviour it does not change.
 */
import type {
  AttachRequest,
  ExecRequest,
  PortForwardRequest,
  CallOptions,
  Container,
  ContainerConfig,
  ContainerEvent,
  ContainerFilter,
  ContainerStats,
  ContainerStatsFilter,
  ContainerStatus,
  CriErrorCode,
  ExecResult,
  ImageFsInfo,
  ImageInfo,
  ImageService,
  LinuxContainerResources,
  PodSandbox,
  PodSandboxConfig,
  PodSandboxFilter,
  PodSandboxStats,
  PodSandboxStatsFilter,
  PodSandboxStatus,
  RuntimeService,
  RuntimeStatusInfo,
  VersionInfo,
} from '../../src/runtime/types.ts';
import { CriError } from '../../src/runtime/types.ts';
import { CRI_CALLS } from '../../src/runtime/criCalls.ts';

/** A runtime call, by its method name on the TypeScript interfaces. */
export type RuntimeMethod = keyof RuntimeService | keyof ImageService;

/** The CRI RPC behind each method, so scripted errors name the call the way the gRPC client does. */
const criCall = (method: RuntimeMethod): string => (method === 'containerEvents' ? 'GetContainerEvents' : CRI_CALLS[method].rpc);

/** One entry of the call log: the method and the id, name or image it was about. */
export interface RecordedCall {
  method: RuntimeMethod;
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

interface ScriptedFailure {
  remaining: number;
  code: CriErrorCode;
  message: string;
}

interface HeldCall {
  release(): void;
  fail(err: CriError): void;
}

class CallHold implements HoldController {
  private readonly waiting: HeldCall[] = [];
  private readonly watchers: { count: number; resolve: () => void }[] = [];
  active = true;

  constructor(
    private readonly call: string,
    private readonly onEnd: () => void,
  ) {}

  get pending(): number {
    return this.waiting.length;
  }

  wait(signal: AbortSignal | undefined): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      const onAbort = () => {
        this.waiting.splice(this.waiting.indexOf(held), 1);
        reject(new CriError(this.call, 'CANCELLED', 'aborted while the call was held'));
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
      for (const watcher of [...this.watchers]) {
        if (this.waiting.length < watcher.count) continue;
        this.watchers.splice(this.watchers.indexOf(watcher), 1);
        watcher.resolve();
      }
    });
  }

  whenPending(count = 1): Promise<void> {
    if (this.waiting.length >= count) return Promise.resolve();
    return new Promise((resolve) => this.watchers.push({ count, resolve }));
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
    for (const held of this.waiting.splice(0)) held.fail(new CriError(this.call, code, message));
  }

  private end(): void {
    if (!this.active) return;
    this.active = false;
    this.onEnd();
  }
}

export class FaultyRuntime implements RuntimeService, ImageService {
  private readonly failures = new Map<RuntimeMethod, ScriptedFailure[]>();
  private readonly holds = new Map<RuntimeMethod, CallHold>();
  private readonly log: RecordedCall[] = [];
  /** The open event streams, each with how to break it. */
  private readonly streams = new Set<(err: CriError) => void>();
  private execHandler: ExecHandler | undefined;
  private eventsUnimplemented = false;

  constructor(
    private readonly runtime: RuntimeService,
    private readonly images: ImageService,
  ) {}

  // ---------------------------------------------------------------- scripting

  /** Makes the next `times` calls of `method` fail with this error (after any already scripted). */
  failNext(method: RuntimeMethod, code: CriErrorCode, message = 'scripted failure', times = 1): void {
    this.failures.set(method, [...(this.failures.get(method) ?? []), { remaining: times, code, message }]);
  }

  /** Makes every call of `method` fail until `clearFailures`. */
  failAlways(method: RuntimeMethod, code: CriErrorCode, message = 'scripted failure'): void {
    this.failNext(method, code, message, Number.POSITIVE_INFINITY);
  }

  clearFailures(method?: RuntimeMethod): void {
    if (method === undefined) this.failures.clear();
    else this.failures.delete(method);
  }

  /**
   * Holds every call of `method` before it reaches the runtime until the test releases it; an
   * aborted signal still cancels a held call. Holding an already held method returns the same controller.
   */
  holdCalls(method: RuntimeMethod): HoldController {
    const existing = this.holds.get(method);
    if (existing?.active) return existing;
    const hold = new CallHold(criCall(method), () => {
      if (this.holds.get(method) === hold) this.holds.delete(method);
    });
    this.holds.set(method, hold);
    return hold;
  }

  /** Answers ExecSync with `handler` instead of running the command (the container must exist and run). */
  setExecHandler(handler: ExecHandler): void {
    this.execHandler = handler;
  }

  /** Makes GetContainerEvents answer UNIMPLEMENTED, as containerd 1.6 does. */
  setEventsUnimplemented(unimplemented = true): void {
    this.eventsUnimplemented = unimplemented;
  }

  /** Ends every open event stream with this error, as a runtime restart would. */
  breakEventStreams(code: CriErrorCode = 'UNAVAILABLE', message = 'event stream broken'): void {
    for (const fail of [...this.streams]) fail(new CriError('GetContainerEvents', code, message));
  }

  // ---------------------------------------------------------------- inspection

  get calls(): readonly RecordedCall[] {
    return this.log;
  }

  /** The call log rendered as `method(target)` strings, convenient for `toEqual`. */
  callLog(method?: RuntimeMethod): string[] {
    return this.log.filter((c) => method === undefined || c.method === method).map((c) => `${c.method}(${c.target})`);
  }

  clearCalls(): void {
    this.log.length = 0;
  }

  get openEventStreams(): number {
    return this.streams.size;
  }

  // ---------------------------------------------------------------- RuntimeService

  version(opts?: CallOptions): Promise<VersionInfo> {
    return this.invoke('version', '', opts, () => this.runtime.version(opts));
  }
  status(opts?: CallOptions): Promise<RuntimeStatusInfo> {
    return this.invoke('status', '', opts, () => this.runtime.status(opts));
  }
  updateRuntimeConfig(podCidr: string, opts?: CallOptions): Promise<void> {
    return this.invoke('updateRuntimeConfig', podCidr, opts, () => this.runtime.updateRuntimeConfig(podCidr, opts));
  }
  runPodSandbox(config: PodSandboxConfig, opts?: CallOptions): Promise<string> {
    const { namespace, name, uid, attempt } = config.metadata;
    return this.invoke('runPodSandbox', `${namespace}/${name}/${uid}/${attempt}`, opts, () => this.runtime.runPodSandbox(config, opts));
  }
  stopPodSandbox(id: string, opts?: CallOptions): Promise<void> {
    return this.invoke('stopPodSandbox', id, opts, () => this.runtime.stopPodSandbox(id, opts));
  }
  removePodSandbox(id: string, opts?: CallOptions): Promise<void> {
    return this.invoke('removePodSandbox', id, opts, () => this.runtime.removePodSandbox(id, opts));
  }
  podSandboxStatus(id: string, opts?: CallOptions): Promise<PodSandboxStatus> {
    return this.invoke('podSandboxStatus', id, opts, () => this.runtime.podSandboxStatus(id, opts));
  }
  listPodSandbox(filter?: PodSandboxFilter, opts?: CallOptions): Promise<PodSandbox[]> {
    return this.invoke('listPodSandbox', JSON.stringify(filter ?? {}), opts, () => this.runtime.listPodSandbox(filter, opts));
  }
  createContainer(sandboxId: string, config: ContainerConfig, sandboxConfig: PodSandboxConfig, opts?: CallOptions): Promise<string> {
    return this.invoke('createContainer', `${sandboxId}/${config.metadata.name}`, opts, () => this.runtime.createContainer(sandboxId, config, sandboxConfig, opts));
  }
  startContainer(id: string, opts?: CallOptions): Promise<void> {
    return this.invoke('startContainer', id, opts, () => this.runtime.startContainer(id, opts));
  }
  stopContainer(id: string, timeoutSeconds: number, opts?: CallOptions): Promise<void> {
    return this.invoke('stopContainer', id, opts, () => this.runtime.stopContainer(id, timeoutSeconds, opts), timeoutSeconds);
  }
  removeContainer(id: string, opts?: CallOptions): Promise<void> {
    return this.invoke('removeContainer', id, opts, () => this.runtime.removeContainer(id, opts));
  }
  listContainers(filter?: ContainerFilter, opts?: CallOptions): Promise<Container[]> {
    return this.invoke('listContainers', JSON.stringify(filter ?? {}), opts, () => this.runtime.listContainers(filter, opts));
  }
  containerStatus(id: string, opts?: CallOptions): Promise<ContainerStatus> {
    return this.invoke('containerStatus', id, opts, () => this.runtime.containerStatus(id, opts));
  }
  updateContainerResources(id: string, resources: LinuxContainerResources, opts?: CallOptions): Promise<void> {
    return this.invoke('updateContainerResources', id, opts, () => this.runtime.updateContainerResources(id, resources, opts));
  }
  reopenContainerLog(id: string, opts?: CallOptions): Promise<void> {
    return this.invoke('reopenContainerLog', id, opts, () => this.runtime.reopenContainerLog(id, opts));
  }
  containerStats(id: string, opts?: CallOptions): Promise<ContainerStats> {
    return this.invoke('containerStats', id, opts, () => this.runtime.containerStats(id, opts));
  }
  listContainerStats(filter?: ContainerStatsFilter, opts?: CallOptions): Promise<ContainerStats[]> {
    return this.invoke('listContainerStats', JSON.stringify(filter ?? {}), opts, () => this.runtime.listContainerStats(filter, opts));
  }
  podSandboxStats(id: string, opts?: CallOptions): Promise<PodSandboxStats> {
    return this.invoke('podSandboxStats', id, opts, () => this.runtime.podSandboxStats(id, opts));
  }
  listPodSandboxStats(filter?: PodSandboxStatsFilter, opts?: CallOptions): Promise<PodSandboxStats[]> {
    return this.invoke('listPodSandboxStats', JSON.stringify(filter ?? {}), opts, () => this.runtime.listPodSandboxStats(filter, opts));
  }
  execSync(id: string, cmd: string[], timeoutSeconds: number, opts?: CallOptions): Promise<ExecResult> {
    return this.invoke(
      'execSync',
      id,
      opts,
      async () => {
        const handler = this.execHandler;
        if (!handler) return this.runtime.execSync(id, cmd, timeoutSeconds, opts);
        const status = await this.runtime.containerStatus(id, opts);
        if (status.state !== 'CONTAINER_RUNNING') throw new CriError('ExecSync', 'FAILED_PRECONDITION', `container ${id} is not running`);
        return handler(id, [...cmd]);
      },
      timeoutSeconds,
    );
  }

  exec(request: ExecRequest, opts?: CallOptions): Promise<string> {
    return this.invoke('exec', request.containerId, opts, () => this.runtime.exec(request, opts));
  }
  attach(request: AttachRequest, opts?: CallOptions): Promise<string> {
    return this.invoke('attach', request.containerId, opts, () => this.runtime.attach(request, opts));
  }
  portForward(request: PortForwardRequest, opts?: CallOptions): Promise<string> {
    return this.invoke('portForward', request.podSandboxId, opts, () => this.runtime.portForward(request, opts));
  }

  /** Opens at once (failure scripting applies; holding does not), and can be broken by the test. */
  containerEvents(opts?: CallOptions): AsyncIterable<ContainerEvent> {
    this.log.push({ method: 'containerEvents', target: '' });
    const opening = opts?.signal?.aborted
      ? new CriError('GetContainerEvents', 'CANCELLED', 'aborted before the call was made')
      : (this.takeFailure('containerEvents') ??
        (this.eventsUnimplemented
          ? new CriError('GetContainerEvents', 'UNIMPLEMENTED', 'unknown method GetContainerEvents for service runtime.v1.RuntimeService')
          : undefined));
    if (opening) return failing(opening);
    const inner = new AbortController();
    const onAbort = () => inner.abort();
    opts?.signal?.addEventListener('abort', onAbort, { once: true });
    let broken: CriError | undefined;
    const brk = (err: CriError) => {
      broken = err;
      this.streams.delete(brk);
      inner.abort();
    };
    this.streams.add(brk);
    const source = this.runtime.containerEvents({ ...opts, signal: inner.signal });
    const streams = this.streams;
    return (async function* () {
      try {
        for await (const event of source) yield event;
      } catch (err) {
        throw broken ?? err;
      } finally {
        streams.delete(brk);
        opts?.signal?.removeEventListener('abort', onAbort);
      }
    })();
  }

  // ---------------------------------------------------------------- ImageService

  pullImage(image: string, sandboxConfig?: PodSandboxConfig, opts?: CallOptions): Promise<string> {
    return this.invoke('pullImage', image, opts, () => this.images.pullImage(image, sandboxConfig, opts));
  }
  imageStatus(image: string, opts?: CallOptions): Promise<ImageInfo | null> {
    return this.invoke('imageStatus', image, opts, () => this.images.imageStatus(image, opts));
  }
  listImages(opts?: CallOptions): Promise<ImageInfo[]> {
    return this.invoke('listImages', '', opts, () => this.images.listImages(opts));
  }
  removeImage(image: string, opts?: CallOptions): Promise<void> {
    return this.invoke('removeImage', image, opts, () => this.images.removeImage(image, opts));
  }
  imageFsInfo(opts?: CallOptions): Promise<ImageFsInfo> {
    return this.invoke('imageFsInfo', '', opts, () => this.images.imageFsInfo(opts));
  }

  // ---------------------------------------------------------------- plumbing

  private async invoke<T>(method: RuntimeMethod, target: string, opts: CallOptions | undefined, perform: () => Promise<T>, timeoutSeconds?: number): Promise<T> {
    this.log.push(timeoutSeconds === undefined ? { method, target } : { method, target, timeoutSeconds });
    const call = criCall(method);
    if (opts?.signal?.aborted) throw new CriError(call, 'CANCELLED', 'aborted before the call was made');
    const hold = this.holds.get(method);
    if (hold) await hold.wait(opts?.signal);
    const failure = this.takeFailure(method);
    if (failure) throw failure;
    return perform();
  }

  private takeFailure(method: RuntimeMethod): CriError | undefined {
    const queue = this.failures.get(method);
    const next = queue?.[0];
    if (!queue || !next) return undefined;
    next.remaining -= 1;
    if (next.remaining <= 0) queue.shift();
    if (queue.length === 0) this.failures.delete(method);
    return new CriError(criCall(method), next.code, next.message);
  }
}

/** A stream that fails on its first `next()`, where an opened stream would report its error. */
async function* failing(err: CriError): AsyncGenerator<ContainerEvent> {
  throw err;
}
