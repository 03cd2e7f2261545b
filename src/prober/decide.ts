/**
 * What one probe worker does on a tick, as pure functions (the kubelet's
 * pkg/kubelet/prober/worker.go doProbe). No clock, no I/O: the caller observes the pod, asks
 * `planTick` what to do, runs the probe when told, and hands its outcome to `recordOutcome`.
 *
 *   planTick(state, settings, observation) → { state, action: 'probe' | 'wait' | 'stop', publish? }
 *     no status ⇒ wait; pod terminal ⇒ stop; container (or its ID) unknown ⇒ wait;
 *     a new container ID ⇒ result reset to the initial one (readiness Failure, liveness Success,
 *     startup Unknown), hold cleared, counting restarted; on hold ⇒ wait;
 *     not running ⇒ publish Failure, stop if it terminated and will not run again (worker.go doProbe, ContainerShouldRestart);
 *     pod deleting and liveness/startup ⇒ publish Success, stop;
 *     within initialDelaySeconds of the container's start ⇒ wait;
 *     startup probes run only until the container has started, the others only after ⇒ else wait;
 *     otherwise ⇒ probe.
 *   recordOutcome(state, settings, kind, outcome) → { state, publish? }
 *     Unknown (the probe could not run) is discarded; Warning counts as Success. Consecutive equal
 *     results are counted; a result is published once its run reaches failureThreshold (Failure) or
 *     successThreshold (Success). A published liveness/startup Failure puts the worker on hold until
 *     the container ID changes (the container is being restarted) and resets the count.
 *   probeMetricResult(outcome) → the `result` label of prober_probe_total, or null: not counted
 *
 * `published` is the worker's current result for `containerId` (what the results manager holds);
 * the caller tells the pod only when it changes.
 */
import type { ProbeKind, Probe } from '../api/types.ts';
import type { ProbeOutcomeResult } from './handlers.ts';

type ProbeResultValue = 'Success' | 'Failure';
/** A worker's current result; `Unknown` only as startup's initial value. */
export type PublishedResult = ProbeResultValue | 'Unknown';

export interface ProbeSettings {
  initialDelaySeconds: number;
  periodSeconds: number;
  timeoutSeconds: number;
  successThreshold: number;
  failureThreshold: number;
}

/** The API defaults (period 10 s, timeout 1 s, success 1, failure 3, no initial delay). */
export function probeSettings(probe: Probe, kind: ProbeKind): ProbeSettings {
  const positive = (value: number | undefined, fallback: number) => (value !== undefined && value > 0 ? value : fallback);
  return {
    initialDelaySeconds: Math.max(0, probe.initialDelaySeconds ?? 0),
    periodSeconds: positive(probe.periodSeconds, 10),
    timeoutSeconds: positive(probe.timeoutSeconds, 1),
    // Liveness and startup must have successThreshold 1 (API validation); we enforce it.
    successThreshold: kind === 'readiness' ? positive(probe.successThreshold, 1) : 1,
    failureThreshold: positive(probe.failureThreshold, 3),
  };
}

export interface WorkerState {
  containerId: string | null;
  published: PublishedResult | null;
  lastResult: ProbeResultValue | null;
  resultRun: number;
  onHold: boolean;
}

export const initialWorkerState: WorkerState = { containerId: null, published: null, lastResult: null, resultRun: 0, onHold: false };

export function initialResult(kind: ProbeKind): PublishedResult {
  return kind === 'readiness' ? 'Failure' : kind === 'liveness' ? 'Success' : 'Unknown';
}

/** What the worker sees of its pod and container on a tick. */
export interface TickObservation {
  kind: ProbeKind;
  /** The status manager has a status for the pod. */
  hasStatus: boolean;
  podTerminal: boolean;
  /** The pod is being deleted (deletionTimestamp set, or gone from config). */
  podDeleting: boolean;
  /** The container's newest instance, as the pod status reports it. */
  container?: {
    id: string;
    running: boolean;
    terminated: boolean;
    /** Terminated, it runs again (its restart rules and policies: api/containerRestart.ts). */
    restarts: boolean;
    /** When it started running (ms since the epoch). */
    startedAtMs: number;
  };
  /** The container has started: it passed its startup probe, or has none. */
  started: boolean;
  nowMs: number;
}

type TickAction = 'probe' | 'wait' | 'stop';

interface TickPlan {
  state: WorkerState;
  action: TickAction;
  /** A result the worker now holds for `state.containerId` (the caller sends it when it changed). */
  publish?: PublishedResult;
}

export function planTick(state: WorkerState, settings: ProbeSettings, o: TickObservation): TickPlan {
  if (!o.hasStatus) return { state, action: 'wait' };
  if (o.podTerminal) return { state, action: 'stop' };
  const c = o.container;
  if (!c || c.id === '') return { state, action: 'wait' };
  let next = state;
  let publish: PublishedResult | undefined;
  if (state.containerId !== c.id) {
    publish = initialResult(o.kind);
    next = { containerId: c.id, published: publish, lastResult: null, resultRun: 0, onHold: false };
  }
  const withPublish = (plan: TickPlan): TickPlan => (publish === undefined ? plan : { ...plan, publish });
  if (next.onHold) return withPublish({ state: next, action: 'wait' });
  if (!c.running) {
    next = { ...next, published: 'Failure' };
    publish = 'Failure';
    const stop = c.terminated && !c.restarts;
    return withPublish({ state: next, action: stop ? 'stop' : 'wait' });
  }
  if (o.podDeleting && (o.kind === 'liveness' || o.kind === 'startup')) {
    return { state: { ...next, published: 'Success' }, action: 'stop', publish: 'Success' };
  }
  if (o.nowMs - c.startedAtMs < settings.initialDelaySeconds * 1000) return withPublish({ state: next, action: 'wait' });
  if (o.started ? o.kind === 'startup' : o.kind !== 'startup') return withPublish({ state: next, action: 'wait' });
  return withPublish({ state: next, action: 'probe' });
}

interface Recorded {
  state: WorkerState;
  publish?: ProbeResultValue;
}

export function recordOutcome(state: WorkerState, settings: ProbeSettings, kind: ProbeKind, outcome: ProbeOutcomeResult): Recorded {
  if (outcome === 'Unknown') return { state };
  const result: ProbeResultValue = outcome === 'Failure' ? 'Failure' : 'Success';
  const resultRun = state.lastResult === result ? state.resultRun + 1 : 1;
  const counted: WorkerState = { ...state, lastResult: result, resultRun };
  const threshold = result === 'Failure' ? settings.failureThreshold : settings.successThreshold;
  if (resultRun < threshold) return { state: counted };
  if ((kind === 'liveness' || kind === 'startup') && result === 'Failure') {
    return { state: { ...counted, published: result, onHold: true, resultRun: 0 }, publish: result };
  }
  return { state: { ...counted, published: result }, publish: result };
}

/** The `result` label of the prober metrics (prober_manager.go probeResultSuccessful/Failed). */
export type ProbeMetricResult = 'successful' | 'failed';

/**
 * How a probe's outcome is counted (worker.go doProbe after prober.go probe): Success and Warning
 * as successful, Failure as failed; an Unknown outcome is the kubelet's probe error, thrown away
 * uncounted. Only successful probes are timed (prober_probe_duration_seconds).
 */
export function probeMetricResult(outcome: ProbeOutcomeResult): ProbeMetricResult | null {
  if (outcome === 'Unknown') return null;
  return outcome === 'Failure' ? 'failed' : 'successful';
}
