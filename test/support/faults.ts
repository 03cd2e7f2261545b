/**
 * Faults on demand and a record of every call, for the whole test kit (not part of the package):
 * one injector standing around the CRI calls (`decorate`'s `around`), wherever they are answered:
 *
 * - over a runtime in the test's process (`runtime`, `images`: sim:// in process, the gRPC client
 *   to sim:// or to containerd), where it also stands around the event stream. `TestRuntime`
 *   (testRuntime.ts) is one over the in-process engine, for the unit tests;
 * - where a runtime serves the calls (`intercept`: sim:// served from the test's process, or a CRI
 *   proxy in front of containerd, criProxy.ts), for an agent in another process (the reliability
 *   suite, test/chaos).
 *
 * It records every call with what it is about (`calls`, `callLog`), and makes chosen calls fail
 * (`failNext`, `failAlways`), wait (`delayCalls`) or hang until the test lets them go (`holdCalls`),
 * chosen by method, by pod and by chance: a draw from a seeded generator, so that a run can be
 * replayed. Over a runtime it can also answer ExecSync itself (`setExecHandler`), refuse the event
 * stream (UNIMPLEMENTED, as containerd 1.6 does) or break the streams that are open (as a runtime
 * restart would). Nothing else changes what the runtime underneath does.
 *
 * A held call behaves as a gRPC call to a runtime that does not answer: it ends when the test
 * releases it (the call then proceeds) or fails it, when its caller aborts (CANCELLED), or at its
 * deadline (`timeoutMs`: DEADLINE_EXCEEDED). Calls are tied to pods by what they carry: a sandbox
 * config's UID, or an ID the injector saw the runtime hand out or list for that pod.
 */
import {
  CRI_CALLS,
  type CriArgs,
  type CriCall,
  type CriMethod,
  type CriResult,
  allowanceSecondsOf,
  containerIdOf,
  containerNameOf,
  imageOf,
  optionsOf,
  podConfigOf,
  podUidOf,
  sandboxIdOf,
} from '../../src/runtime/criCalls.ts';
import { type Around, type AroundEvents, decorate } from '../../src/runtime/decorate.ts';
import { type CallOptions, type ContainerEvent, CriError, type CriErrorCode, type ExecResult, type ImageService, type RuntimeService } from '../../src/runtime/types.ts';

/** A runtime call, by its method name on the TypeScript interfaces: a CRI call or the event stream. */
export type RuntimeMethod = CriMethod | 'containerEvents';

/** The calls a fault applies to: every call of a method, or the calls of some methods (all when absent), of one pod, each hit with a probability. */
export type CallMatch = RuntimeMethod | { methods?: readonly RuntimeMethod[]; podUid?: string; probability?: number };

/** One entry of the call log: the method and the ID, name or image it was about. */
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
  /** Calls it has held so far (a call retried after its deadline counts again). */
  readonly hits: number;
  /** Resolves once at least `count` calls are waiting. */
  whenPending(count?: number): Promise<void>;
  /** Lets the oldest waiting call proceed; later calls keep being held. Returns false if none waited. */
  releaseNext(): boolean;
  /** Lets every waiting call proceed and stops holding: later calls run straight through. */
  releaseAll(): void;
  /** Fails every waiting call with this error and stops holding. */
  failAll(code: CriErrorCode, message?: string): void;
}

/** A call held right now, for the suite's reports and assertions. */
export interface HeldCall {
  method: CriMethod;
  podUid: string | undefined;
  since: number;
}

export type ExecHandler = (containerId: string, cmd: string[]) => ExecResult;

/** mulberry32: a small, fast, seedable generator with a 2^32 period, enough for fault draws. */
export function seededRandom(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const POD_UID_LABEL = 'io.kubernetes.pod.uid';

/** The RPC that names a method's errors, as the gRPC client names them. */
const rpcOf = (method: RuntimeMethod): string => (method === 'containerEvents' ? 'GetContainerEvents' : CRI_CALLS[method].rpc);

type Fault = { kind: 'fail'; code: CriErrorCode; message: string } | { kind: 'delay'; ms: number } | { kind: 'hold'; hold: CallHold };

interface Rule {
  match: Exclude<CallMatch, RuntimeMethod>;
  /** Calls it may still hit. */
  remaining: number;
  fault: Fault;
}

interface WaitingCall extends HeldCall {
  release(): void;
  fail(err: CriError): void;
}

class CallHold implements HoldController {
  private readonly waiting: WaitingCall[] = [];
  private readonly watchers: { count: number; resolve: () => void }[] = [];
  hits = 0;
  active = true;

  constructor(private readonly onEnd: (hold: CallHold) => void) {}

  get pending(): number {
    return this.waiting.length;
  }

  get held(): readonly HeldCall[] {
    return this.waiting;
  }

  /** Holds one call until it is let go, failed, aborted by its caller or past its deadline. */
  wait(method: CriMethod, podUid: string | undefined, opts: CallOptions | undefined): Promise<void> {
    this.hits++;
    const signal = opts?.signal;
    return new Promise<void>((resolve, reject) => {
      const done = () => {
        const at = this.waiting.indexOf(held);
        if (at >= 0) this.waiting.splice(at, 1);
        signal?.removeEventListener('abort', cancelled);
        if (deadline) clearTimeout(deadline);
      };
      const cancelled = () => held.fail(new CriError(rpcOf(method), 'CANCELLED', 'aborted while the call was held'));
      const held: WaitingCall = {
        method,
        podUid,
        since: Date.now(),
        release: () => {
          done();
          resolve();
        },
        fail: (err) => {
          done();
          reject(err);
        },
      };
      const deadline = opts?.timeoutMs
        ? setTimeout(() => held.fail(new CriError(rpcOf(method), 'DEADLINE_EXCEEDED', `no answer within ${opts.timeoutMs} ms (held)`)), opts.timeoutMs)
        : undefined;
      if (signal?.aborted) return cancelled();
      signal?.addEventListener('abort', cancelled, { once: true });
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
    const held = this.waiting[0];
    held?.release();
    return held !== undefined;
  }

  releaseAll(): void {
    this.end();
    for (const held of [...this.waiting]) held.release();
  }

  failAll(code: CriErrorCode, message = 'failed while held'): void {
    this.end();
    for (const held of [...this.waiting]) held.fail(new CriError(rpcOf(held.method), code, message));
  }

  private end(): void {
    if (!this.active) return;
    this.active = false;
    this.onEnd(this);
  }
}

export class FaultInjector {
  private rules: Rule[] = [];
  private readonly random: () => number;
  /** Holds by the method given to `holdCalls`, so that holding a held method again returns the same controller. */
  private readonly holdsByMethod = new Map<RuntimeMethod, CallHold>();
  /** Sandbox and container IDs seen, to the UID of their pod. */
  private readonly podOf = new Map<string, string>();
  private readonly log: RecordedCall[] = [];
  /** The open event streams, each with how to break it. */
  private readonly streams = new Set<(err: CriError) => void>();
  private execHandler: ExecHandler | undefined;
  private eventsUnimplemented = false;
  /** Faults injected so far, by kind. */
  readonly injected = { fail: 0, delay: 0, hang: 0 };

  /** `seed`: what the draws of rules with a probability start from (0 when absent). */
  constructor(options: { seed?: number } = {}) {
    this.random = seededRandom(options.seed ?? 0);
  }

  // ---------------------------------------------------------------- where it stands

  /** `inner` with the faults applied to its calls, ExecSync's handler and the event stream's faults with them. */
  runtime(inner: RuntimeService & ImageService): RuntimeService & ImageService;
  runtime(inner: RuntimeService): RuntimeService;
  runtime(inner: RuntimeService): RuntimeService {
    return decorate(inner, this.around(inner), this.aroundEvents);
  }

  images(inner: ImageService): ImageService {
    return decorate(inner, this.around(undefined));
  }

  /** The faults as a runtime's server applies them to the calls it serves (sim://'s `intercept`, the CRI proxy's). */
  readonly intercept: Around = this.around(undefined);

  // ---------------------------------------------------------------- scripting

  /** Makes the next `times` matching calls fail with this error (after any failures already scripted for them). */
  failNext(calls: CallMatch, code: CriErrorCode, message = 'scripted failure', times = 1): void {
    this.rules.push({ match: matchOf(calls), remaining: times, fault: { kind: 'fail', code, message } });
  }

  /** Makes every matching call fail until `clearFailures`. */
  failAlways(calls: CallMatch, code: CriErrorCode, message = 'scripted failure'): void {
    this.failNext(calls, code, message, Number.POSITIVE_INFINITY);
  }

  /** Takes back the failures scripted for `method` (for every method when absent). */
  clearFailures(method?: RuntimeMethod): void {
    this.rules = this.rules.filter((rule) => rule.fault.kind !== 'fail' || (method !== undefined && !appliesTo(rule.match, method)));
  }

  /** Makes the next `times` matching calls wait `ms` before they reach the runtime (an aborted caller still ends one). */
  delayCalls(calls: CallMatch, ms: number, times = Number.POSITIVE_INFINITY): void {
    this.rules.push({ match: matchOf(calls), remaining: times, fault: { kind: 'delay', ms } });
  }

  /**
   * Holds every matching call before it reaches the runtime until the test lets it go (the call
   * then proceeds) or fails it; its caller's abort or deadline still ends it. Holding an already
   * held method returns the same controller.
   */
  holdCalls(calls: CallMatch): HoldController {
    const existing = typeof calls === 'string' ? this.holdsByMethod.get(calls) : undefined;
    if (existing?.active) return existing;
    const hold = new CallHold((ended) => {
      this.rules = this.rules.filter((rule) => rule.fault.kind !== 'hold' || rule.fault.hold !== ended);
      if (typeof calls === 'string' && this.holdsByMethod.get(calls) === ended) this.holdsByMethod.delete(calls);
    });
    this.rules.push({ match: matchOf(calls), remaining: Number.POSITIVE_INFINITY, fault: { kind: 'hold', hold } });
    if (typeof calls === 'string') this.holdsByMethod.set(calls, hold);
    return hold;
  }

  /** Takes back every fault: failures and delays cleared, held calls let go, nothing held from now on. */
  clear(): void {
    for (const rule of [...this.rules]) if (rule.fault.kind === 'hold') rule.fault.hold.releaseAll();
    this.rules = [];
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

  /** The calls held right now. */
  get held(): HeldCall[] {
    return this.rules.flatMap((rule) => (rule.fault.kind === 'hold' ? rule.fault.hold.held.map(({ method, podUid, since }) => ({ method, podUid, since })) : []));
  }

  // ---------------------------------------------------------------- the calls

  /** What stands around each call; `inner`, the runtime ExecSync's handler checks the container with (none where the calls are served). */
  private around(inner: RuntimeService | undefined): Around {
    return (call, args, proceed) => this.answer(inner, call, args, proceed);
  }

  private async answer<M extends CriMethod>(inner: RuntimeService | undefined, call: CriCall<M>, args: CriArgs<M>, proceed: () => Promise<CriResult<M>>): Promise<CriResult<M>> {
    const opts = optionsOf(call, args);
    const timeoutSeconds = allowanceSecondsOf(call, args);
    this.log.push({ method: call.method, target: targetOf(call, args), ...(timeoutSeconds === undefined ? {} : { timeoutSeconds }) });
    if (opts?.signal?.aborted) throw new CriError(call.rpc, 'CANCELLED', 'aborted before the call was made');
    const podUid = podUidOf(call, args) ?? this.podOf.get(containerIdOf(call, args) ?? sandboxIdOf(call, args) ?? '');
    await this.wait(call, podUid, opts);
    const failure = this.failure(call.method, podUid);
    if (failure) throw failure;
    const handler = this.execHandler;
    // The handler answers ExecSync (its arguments and result are ExecSync's).
    const result = inner && handler && call.method === 'execSync' ? ((await this.execAnswered(inner, handler, args as CriArgs<'execSync'>)) as CriResult<M>) : await proceed();
    this.learn(call, podUid, result);
    return result;
  }

  /** Holds and delays that apply to the call, one after the other. */
  private async wait(call: CriCall, podUid: string | undefined, opts: CallOptions | undefined): Promise<void> {
    for (const rule of [...this.rules]) {
      const { fault } = rule;
      if (fault.kind === 'fail' || !this.hits(rule, call.method, podUid)) continue;
      if (fault.kind === 'hold') {
        this.injected.hang++;
        await fault.hold.wait(call.method, podUid, opts);
      } else {
        this.injected.delay++;
        await pause(fault.ms, opts, call.rpc);
      }
    }
  }

  /** The failure scripted for the call, if one is: the first rule that hits it. */
  private failure(method: RuntimeMethod, podUid: string | undefined): CriError | undefined {
    for (const rule of this.rules) {
      if (rule.fault.kind !== 'fail' || !this.hits(rule, method, podUid)) continue;
      this.injected.fail++;
      return new CriError(rpcOf(method), rule.fault.code, rule.fault.message);
    }
    return undefined;
  }

  /** Whether the rule applies to this call and its draw hits it; a hit is counted, and a rule used up goes. */
  private hits(rule: Rule, method: RuntimeMethod, podUid: string | undefined): boolean {
    const { podUid: onlyPod, probability = 1 } = rule.match;
    if (rule.remaining <= 0 || !appliesTo(rule.match, method)) return false;
    if (onlyPod !== undefined && onlyPod !== podUid) return false;
    if (probability < 1 && this.random() >= probability) return false;
    if (--rule.remaining <= 0) this.rules = this.rules.filter((kept) => kept !== rule);
    return true;
  }

  private async execAnswered(inner: RuntimeService, handler: ExecHandler, [id, cmd, , opts]: CriArgs<'execSync'>): Promise<ExecResult> {
    const status = await inner.containerStatus(id, opts);
    if (status.state !== 'CONTAINER_RUNNING') throw new CriError('ExecSync', 'FAILED_PRECONDITION', `container ${id} is not running`);
    return handler(id, [...cmd]);
  }

  /** IDs in a result: a new sandbox's or container's, for the call's pod, or listed ones with their pod label. */
  private learn(call: CriCall, podUid: string | undefined, result: unknown): void {
    if (call.creates && podUid) this.podOf.set(result as string, podUid);
    if (!Array.isArray(result)) return;
    for (const item of result as { id?: string; labels?: Record<string, string> }[]) {
      const uid = item.labels?.[POD_UID_LABEL];
      if (item.id && uid) this.podOf.set(item.id, uid);
    }
  }

  /** The event stream: recorded, opened at once (failures apply; holds do not), and breakable by the test. */
  private readonly aroundEvents: AroundEvents = (opts, open) => {
    this.log.push({ method: 'containerEvents', target: '' });
    const opening = opts?.signal?.aborted
      ? new CriError('GetContainerEvents', 'CANCELLED', 'aborted before the call was made')
      : (this.failure('containerEvents', undefined) ??
        (this.eventsUnimplemented ? new CriError('GetContainerEvents', 'UNIMPLEMENTED', 'unknown method GetContainerEvents for service runtime.v1.RuntimeService') : undefined));
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
    const source = open({ ...opts, signal: inner.signal });
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
  };
}

function matchOf(calls: CallMatch): Exclude<CallMatch, RuntimeMethod> {
  return typeof calls === 'string' ? { methods: [calls] } : calls;
}

function appliesTo(match: Exclude<CallMatch, RuntimeMethod>, method: RuntimeMethod): boolean {
  return match.methods === undefined || match.methods.includes(method);
}

/**
 * What the call log names a call by: the container's ID, `sandbox/name` of a container made, the
 * sandbox's ID, the image, `namespace/name/uid/attempt` of a sandbox made; nothing for a node-wide call.
 */
function targetOf(call: CriCall, args: readonly unknown[]): string {
  const containerId = containerIdOf(call, args);
  if (containerId !== undefined) return containerId;
  const sandboxId = sandboxIdOf(call, args);
  const containerName = containerNameOf(call, args);
  if (containerName !== undefined) return `${sandboxId}/${containerName}`;
  const named = sandboxId ?? imageOf(call, args);
  if (named !== undefined) return named;
  const pod = podConfigOf(call, args)?.metadata;
  return pod ? `${pod.namespace}/${pod.name}/${pod.uid}/${pod.attempt}` : '';
}

function pause(ms: number, opts: CallOptions | undefined, rpc: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      opts?.signal?.removeEventListener('abort', cancelled);
      resolve();
    }, ms);
    const cancelled = () => {
      clearTimeout(timer);
      reject(new CriError(rpc, 'CANCELLED', 'call cancelled'));
    };
    opts?.signal?.addEventListener('abort', cancelled, { once: true });
  });
}

/** A stream that fails on its first `next()`, where an opened stream would report its error. */
async function* failing(err: CriError): AsyncGenerator<ContainerEvent> {
  throw err;
}
