/**
 * Faults on demand, for the reliability suite (part of the test kit, not of the package): a
 * decorator over any `RuntimeService`/`ImageService` (sim://, the in-process runtime, the gRPC
 * client to containerd) that makes chosen calls fail, wait, or hang, by method, by pod, with a
 * probability and a count, drawn from a seeded generator so that a run can be replayed.
 *
 * A hanging call behaves as a gRPC call to a runtime that does not answer: it ends when the rule
 * is released (the call then proceeds), when its caller aborts (CANCELLED), or at its deadline
 * (`timeoutMs`: DEADLINE_EXCEEDED). Calls are tied to pods by what they carry: a sandbox config's
 * UID, or an id the injector saw the runtime hand out or list for that pod. The event stream
 * (`containerEvents`) passes through untouched.
 *
 * The same rules apply on a runtime's serving side (`intercept`, for sim:// served from a test's
 * process): there the agent in another process makes the calls, and a held call is one its gRPC
 * client waits on.
 */
import { type CallOptions, CriError, type CriErrorCode, type ImageService, type RuntimeService } from '../../src/runtime/types.ts';
import type { CallInterceptor } from '../../src/runtime/sim/server.ts';
import { CRI_CALLS, type CriMethod, criMethodOf, isCriMethod } from '../../src/runtime/criCalls.ts';


export type FaultAction = { kind: 'fail'; code: CriErrorCode; message?: string } | { kind: 'delay'; ms: number } | { kind: 'hang' };

export interface FaultRule {
  /** The calls it applies to; all when absent. */
  methods?: readonly CriMethod[];
  /** Only calls about this pod. */
  podUid?: string;
  /** Chance that a matching call is hit (1 when absent), drawn from the injector's seed. */
  probability?: number;
  /** How many calls it hits at most (no limit when absent). */
  count?: number;
  action: FaultAction;
}

/** A rule once added: how to take it back, and (for hangs) let the calls it holds go on. */
export interface ActiveFault {
  readonly rule: FaultRule;
  /** Calls it has hit so far. */
  readonly hits: number;
  /** Removes the rule; calls it holds proceed. */
  remove(): void;
}

/** A call held by a hang rule, for the suite's reports and assertions. */
export interface HeldCall {
  method: CriMethod;
  podUid: string | undefined;
  since: number;
}

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

interface Rule extends ActiveFault {
  hits: number;
  removed: boolean;
  /** Resumes the calls this rule holds. */
  held: Set<() => void>;
}

export class FaultInjector {
  private readonly rules: Rule[] = [];
  private readonly random: () => number;
  /** Sandbox and container ids seen, to the UID of their pod. */
  private readonly podOf = new Map<string, string>();
  private readonly holding = new Set<HeldCall>();
  /** Faults injected so far, by kind. */
  readonly injected = { fail: 0, delay: 0, hang: 0 };

  constructor(private readonly options: { seed: number; now?: () => number }) {
    this.random = seededRandom(options.seed);
  }

  add(rule: FaultRule): ActiveFault {
    const entry: Rule = {
      rule,
      hits: 0,
      removed: false,
      held: new Set(),
      remove: () => {
        if (entry.removed) return;
        entry.removed = true;
        this.rules.splice(this.rules.indexOf(entry), 1);
        for (const resume of [...entry.held]) resume();
      },
    };
    this.rules.push(entry);
    return entry;
  }

  /** Removes every rule; held calls proceed. */
  clear(): void {
    for (const rule of [...this.rules]) rule.remove();
  }

  /** The calls hanging right now. */
  get held(): HeldCall[] {
    return [...this.holding];
  }

  runtime(inner: RuntimeService): RuntimeService {
    return this.decorate(inner, (method) => method === 'containerEvents');
  }

  images(inner: ImageService): ImageService {
    return this.decorate(inner, () => false);
  }

  /** The rules as a runtime's server applies them to the calls it serves (sim://'s `intercept`). */
  readonly intercept: CallInterceptor = async (call, request, signal, answer) => {
    const method = criMethodOf(call);
    if (!method) return answer();
    const podUid = this.podFor([request]);
    await this.interfere(method, podUid, [request, { signal }]);
    const response = await answer();
    this.learn(response, podUid);
    return response;
  };

  private decorate<T extends object>(inner: T, passThrough: (method: string) => boolean): T {
    return new Proxy(inner, {
      get: (target, property, receiver) => {
        const value: unknown = Reflect.get(target, property, receiver);
        if (typeof value !== 'function' || typeof property !== 'string' || passThrough(property)) return typeof value === 'function' ? value.bind(target) : value;
        if (!isCriMethod(property)) return value.bind(target);
        const method = property;
        return async (...args: unknown[]) => {
          const podUid = this.podFor(args);
          await this.interfere(method, podUid, args);
          const result: unknown = await (value as (...a: unknown[]) => Promise<unknown>).apply(target, args);
          this.learn(result, podUid);
          return result;
        };
      },
    });
  }

  private async interfere(method: CriMethod, podUid: string | undefined, args: unknown[]): Promise<void> {
    for (const rule of [...this.rules]) {
      const { methods, podUid: onlyPod, probability = 1, count = Infinity, action } = rule.rule;
      if (rule.removed || rule.hits >= count) continue;
      if (methods && !methods.includes(method)) continue;
      if (onlyPod !== undefined && onlyPod !== podUid) continue;
      if (probability < 1 && this.random() >= probability) continue;
      rule.hits++;
      this.injected[action.kind]++;
      const opts = callOptions(args);
      if (action.kind === 'fail') throw new CriError(CRI_CALLS[method].rpc, action.code, action.message ?? `injected fault (${action.code})`);
      if (action.kind === 'delay') await pause(action.ms, opts, method);
      else await this.hang(rule, method, podUid, opts);
    }
  }

  private hang(rule: Rule, method: CriMethod, podUid: string | undefined, opts: CallOptions | undefined): Promise<void> {
    const call: HeldCall = { method, podUid, since: (this.options.now ?? Date.now)() };
    this.holding.add(call);
    return new Promise<void>((resolve, reject) => {
      const done = () => {
        this.holding.delete(call);
        rule.held.delete(resume);
        if (deadline) clearTimeout(deadline);
        opts?.signal?.removeEventListener('abort', cancelled);
      };
      const resume = () => {
        done();
        resolve();
      };
      const cancelled = () => {
        done();
        reject(new CriError(CRI_CALLS[method].rpc, 'CANCELLED', 'call cancelled'));
      };
      const deadline = opts?.timeoutMs
        ? setTimeout(() => {
            done();
            reject(new CriError(CRI_CALLS[method].rpc, 'DEADLINE_EXCEEDED', `no answer within ${opts.timeoutMs} ms (injected hang)`));
          }, opts.timeoutMs)
        : null;
      rule.held.add(resume);
      if (opts?.signal?.aborted) return cancelled();
      opts?.signal?.addEventListener('abort', cancelled, { once: true });
    });
  }

  /** The pod a call is about: a sandbox config's UID, or an id handed out or listed for it. */
  private podFor(args: unknown[]): string | undefined {
    for (const arg of args) {
      if (typeof arg === 'string') {
        const uid = this.podOf.get(arg);
        if (uid) return uid;
      } else if (arg && typeof arg === 'object') {
        // A sandbox config, or a request that carries one (RunPodSandbox's, CreateContainer's on the wire).
        const record = arg as { metadata?: { uid?: string }; config?: { metadata?: { uid?: string } }; sandboxConfig?: { metadata?: { uid?: string } }; containerId?: string; podSandboxId?: string };
        const uid = record.metadata?.uid || record.config?.metadata?.uid || record.sandboxConfig?.metadata?.uid;
        if (uid) return uid;
        const id = record.containerId ?? record.podSandboxId;
        if (id && this.podOf.has(id)) return this.podOf.get(id);
      }
    }
    return undefined;
  }

  /**
   * Ids in a result: a new sandbox's or container's (for the call's pod; on the wire, the
   * response's `podSandboxId` or `containerId`), or listed ones with their pod label.
   */
  private learn(result: unknown, podUid: string | undefined): void {
    if (typeof result === 'string' && podUid) this.podOf.set(result, podUid);
    if (result && typeof result === 'object' && !Array.isArray(result)) {
      const response = result as { podSandboxId?: unknown; containerId?: unknown; items?: unknown; containers?: unknown };
      const created = response.podSandboxId ?? response.containerId;
      if (typeof created === 'string' && podUid) this.podOf.set(created, podUid);
      result = response.items ?? response.containers;
    }
    if (!Array.isArray(result)) return;
    for (const item of result as { id?: string; labels?: Record<string, string> }[]) {
      const uid = item?.labels?.[POD_UID_LABEL];
      if (item?.id && uid) this.podOf.set(item.id, uid);
    }
  }
}

function callOptions(args: unknown[]): CallOptions | undefined {
  const last = args.at(-1);
  return last && typeof last === 'object' && ('signal' in last || 'timeoutMs' in last) ? (last as CallOptions) : undefined;
}


function pause(ms: number, opts: CallOptions | undefined, method: CriMethod): Promise<void> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      opts?.signal?.removeEventListener('abort', cancelled);
      resolve();
    }, ms);
    const cancelled = () => {
      clearTimeout(timer);
      reject(new CriError(CRI_CALLS[method].rpc, 'CANCELLED', 'call cancelled'));
    };
    opts?.signal?.addEventListener('abort', cancelled, { once: true });
  });
}
