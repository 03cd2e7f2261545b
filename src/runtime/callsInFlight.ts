/**
 * The runtime calls the pods are waiting on, node-wide, so that a call that hangs is named rather
 * than guessed at. The kubelet's best-known symptom of a hanging runtime call is "PLEG is not
 * healthy" and a NotReady node (pkg/kubelet/pleg/generic.go relist reads every changed pod's
 * status inside the relist, so one slow call stalls them all). statelet's relist makes two list
 * calls and each pod reads its own status in its own actor: a hanging call holds one pod only. What
 * is left is to say which call it is, and for which pod.
 *
 * A call counts as hanging once it has waited beyond what it may take by design (StopContainer its
 * grace period, ExecSync its timeout) for a quarter of its deadline, 30 s at most (the default
 * deadline, --runtime-request-timeout, is 2 minutes): early enough to be seen before the deadline
 * ends it and the pod's next attempt starts waiting again. It is logged once when it crosses the
 * line and once when it returns, and listed by `/healthz?verbose` while it waits.
 */
import type { Logger } from '../log.ts';
import type { CallTrace, TracedCall } from './callTrace.ts';

/** How long past its own allowance a call may wait before it is reported as hanging, for a runtime request timeout. */
export function hangingCallThresholdMs(requestTimeoutMs: number): number {
  return Math.min(30_000, requestTimeoutMs / 4);
}

interface WaitingCall {
  /** `namespace/name` of the pod that made the call. */
  pod: string;
  /** The CRI method (`StopContainer`) and what it is about (a container's name, `sandbox`, an image). */
  call: string;
  target: string;
  since: number;
}

interface Entry extends WaitingCall {
  timer: ReturnType<typeof setTimeout>;
  reported: boolean;
}

export class CallsInFlight {
  private readonly calls = new Map<number, Entry>();

  constructor(
    private readonly now: () => number,
    private readonly log: Logger,
    private readonly thresholdMs: number,
  ) {}

  /** The trace of one pod's calls. */
  forPod(pod: string): CallTrace {
    return {
      started: (call) => this.started(pod, call),
      finished: (call, durationMs, error) => this.finished(call, durationMs, error),
    };
  }

  /** The calls waiting past their allowance and the threshold, oldest first. */
  hanging(): WaitingCall[] {
    return [...this.calls.values()].filter((entry) => entry.reported).map(({ pod, call, target, since }) => ({ pod, call, target, since }));
  }

  private started(pod: string, { id, call, target, allowanceMs = 0 }: TracedCall): void {
    const timer = setTimeout(() => {
      const entry = this.calls.get(id);
      if (!entry) return;
      entry.reported = true;
      this.log('warn', 'runtime call is not returning', { pod, call, target, waitingSeconds: Math.round((this.now() - entry.since) / 1000) });
    }, allowanceMs + this.thresholdMs);
    timer.unref?.();
    this.calls.set(id, { pod, call, target, since: this.now(), timer, reported: false });
  }

  private finished({ id }: TracedCall, durationMs: number, error: unknown): void {
    const entry = this.calls.get(id);
    if (!entry) return;
    clearTimeout(entry.timer);
    this.calls.delete(id);
    if (!entry.reported) return;
    const outcome = error === undefined ? 'ok' : error instanceof Error ? error.message : String(error);
    this.log('info', 'runtime call returned after hanging', { pod: entry.pod, call: entry.call, target: entry.target, seconds: Math.round(durationMs / 1000), outcome });
  }
}

/** One `/healthz?verbose` line per hanging call, as the operator needs it. */
export function describeHanging(calls: readonly WaitingCall[], now: number): string[] {
  return calls.map(({ pod, call, target, since }) => `${call}${target ? ` (${target})` : ''} for pod ${pod}: no answer for ${Math.round((now - since) / 1000)}s`);
}
