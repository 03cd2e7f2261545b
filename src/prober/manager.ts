/**
 * The probe manager: the kubelet's `prober_manager.go` as a callback actor the syncLoop invokes
 * (`probes`). It keeps one worker per (pod UID, container, probe kind) for regular containers and
 * sidecars, all served by one scheduler (scheduler.ts: one timer, bounded concurrency).
 *
 * Where it learns from: the status manager (`subscribe`). A status for a pod with probes in its spec
 * (from the PodManager) adds that pod's workers, once; a deleted or terminal (Succeeded/Failed)
 * status removes them. On each tick a worker reads the pod's latest status (container ID, running
 * state, start time, pod IP), decides with the pure `decide.ts`, and runs its handler (handlers.ts).
 * A pod missing from the PodManager (removed from config) or with a deletionTimestamp is deleting.
 *
 * What it says: `PROBE.RESULT { podUid, containerId, containerName, kind, result }` to its parent,
 * only when a worker's result for a container changes. A container's initial result (readiness
 * Failure, liveness Success) is what the pod assumes without one, so it is not sent. Each failed
 * probe is logged as an `Unhealthy` event line with the probe's output, as the kubelet records it.
 *
 * What it counts (prober_manager.go ProberResults, ProberDuration): each probe that ran, by
 * result, and the duration of each successful one, told to `metrics` with the worker's labels;
 * a worker's series are dropped when the worker goes (worker.go run), so they do not outlive pods.
 *
 * Never: keeps per-worker timers, or state in the syncLoop's context.
 */
import { setMaxListeners } from 'node:events';
import { type EventObject, fromCallback } from 'xstate';
import type { Container, ContainerStatus, Pod, PodStatus, Probe, ProbeKind } from '../api/types.ts';
import { containerShouldRestart } from '../api/containerRestart.ts';
import { type EventRecorder, podReference } from '../eventrecorder/recorder.ts';
import type { Logger } from '../log.ts';
import type { ProbeResultEvent } from '../events.ts';
import type { PodManager } from '../pod/podManager.ts';
import type { RuntimeService } from '../runtime/types.ts';
import type { PodStatusReader, ReadinessSetter } from '../status/manager.ts';
import {
  type ProbeSettings,
  type PublishedResult,
  type TickObservation,
  type WorkerState,
  initialResult,
  type ProbeMetricResult,
  initialWorkerState,
  planTick,
  probeMetricResult,
  probeSettings,
  recordOutcome,
} from './decide.ts';
import { type ProbeOutcome, type ProbeTarget, runProbe } from './handlers.ts';
import { createProbeScheduler } from './scheduler.ts';
import type { Clock } from '../clock.ts';

/** Probes running at once, node-wide (the rest wait their turn in due order). */
const MAX_CONCURRENT_PROBES = 32;

interface ProbeManagerDeps {
  statuses: PodStatusReader & ReadinessSetter;
  podManager: Pick<PodManager, 'get'>;
  runtime: RuntimeService;
  /** The node's clock: the probes' periods and timeouts, their times. */
  clock: Clock;
  /** The jitter of each worker's first probe. */
  random(): number;
  log: Logger;
  /** Unhealthy and ProbeWarning events (prober.go recordContainerEvent). */
  recorder: EventRecorder;
  /** Told of each probe run and of each worker removed (the prober metrics), as its methods. */
  metrics?: Partial<ProbeMetrics>;
  /** The probe handlers (tests replace them). */
  runProbe?: (probe: Probe, target: ProbeTarget, signal: AbortSignal) => Promise<ProbeOutcome>;
}

/** The labels of a worker's series (worker.go newWorker); `probe_type` is Liveness, Readiness or Startup. */
export interface ProbeLabels {
  probe_type: string;
  container: string;
  pod: string;
  namespace: string;
  pod_uid: string;
}

export interface ProbeMetrics {
  /** A probe ran: its counted result and, when successful, how long it took. */
  probed(labels: ProbeLabels, result: ProbeMetricResult, seconds: number): void;
  /** The worker went: its series go too. */
  probeRemoved(labels: ProbeLabels): void;
}

const kinds: readonly ProbeKind[] = ['startup', 'liveness', 'readiness'];
const capitalized: Record<ProbeKind, string> = { liveness: 'Liveness', readiness: 'Readiness', startup: 'Startup' };

interface Worker {
  id: string;
  uid: string;
  pod: Pod;
  container: Container;
  kind: ProbeKind;
  probe: Probe;
  settings: ProbeSettings;
  labels: ProbeLabels;
  state: WorkerState;
  /** The last result sent for a container ID. */
  sent: { containerId: string; result: PublishedResult } | null;
}

const workerId = (uid: string, container: string, kind: ProbeKind) => `${uid}/${container}/${kind}`;

function probeOf(container: Container, kind: ProbeKind): Probe | undefined {
  return kind === 'liveness' ? container.livenessProbe : kind === 'readiness' ? container.readinessProbe : container.startupProbe;
}

/** The containers that are probed: regular containers and sidecars (restartable init containers). */
function probedContainers(pod: Pod): Container[] {
  return [...(pod.spec.initContainers ?? []).filter((c) => c.restartPolicy === 'Always'), ...pod.spec.containers];
}

/** The runtime's ID in a status' `containerID` (`<runtime>://<id>`). */
function runtimeContainerId(containerID: string | undefined): string {
  if (!containerID) return '';
  const at = containerID.indexOf('://');
  return at < 0 ? containerID : containerID.slice(at + 3);
}

function containerStatusOf(status: PodStatus, name: string): ContainerStatus | undefined {
  return status.containerStatuses?.find((s) => s.name === name) ?? status.initContainerStatuses?.find((s) => s.name === name);
}

export function createProbeManagerLogic(deps: ProbeManagerDeps) {
  const probeOnce = deps.runProbe ?? runProbe;
  return fromCallback<EventObject>(({ sendBack }) => {
    const scheduler = createProbeScheduler({
      clock: deps.clock,
      random: deps.random,
      maxConcurrent: MAX_CONCURRENT_PROBES,
      onError: (worker, err) => deps.log('error', 'Probe worker failed', { worker, err }),
    });
    const now = () => deps.clock.now();
    const cancel = new AbortController();
    // Every probe in flight (up to the scheduler's concurrency bound) listens on this one signal;
    // each removes its listener when it ends, so more than Node's default of 10 is not a leak.
    setMaxListeners(0, cancel.signal);
    const workers = new Map<string, Worker>();
    const podsSeen = new Map<string, string[]>();

    const isStarted = (uid: string, name: string, containerId: string): boolean => {
      const startup = workers.get(workerId(uid, name, 'startup'));
      return !startup || (startup.state.containerId === containerId && startup.state.published === 'Success');
    };

    const send = (worker: Worker, result: PublishedResult) => {
      const containerId = worker.state.containerId;
      if (containerId === null || result === 'Unknown') return;
      const previous = worker.sent;
      worker.sent = { containerId, result };
      if (previous === null || previous.containerId !== containerId) {
        if (result === initialResult(worker.kind)) return;
      } else if (previous.result === result) return;
      const event: ProbeResultEvent = {
        type: 'PROBE.RESULT',
        podUid: worker.uid,
        containerId,
        containerName: worker.container.name,
        kind: worker.kind,
        result,
      };
      sendBack(event);
      if (worker.kind === 'readiness') {
        // The pod as its sources have it now (status_manager.go SetContainerReadiness reads the pod manager): its generation goes on Ready.
        const pod = deps.podManager.get(worker.uid) ?? worker.pod;
        deps.statuses.setContainerReadiness(pod, worker.container.name, result === 'Success', now());
      }
    };

    const observe = (worker: Worker): TickObservation => {
      const status = deps.statuses.get(worker.uid);
      const spec = deps.podManager.get(worker.uid);
      const observation: TickObservation = {
        kind: worker.kind,
        hasStatus: status !== undefined,
        podTerminal: status?.phase === 'Succeeded' || status?.phase === 'Failed',
        podDeleting: spec === undefined || spec.metadata.deletionTimestamp !== undefined,
        started: false,
        nowMs: now(),
      };
      const cs = status ? containerStatusOf(status, worker.container.name) : undefined;
      const id = runtimeContainerId(cs?.containerID);
      if (cs && id) {
        const startedAt = cs.state.running?.startedAt;
        observation.container = {
          id,
          running: cs.state.running !== undefined,
          terminated: cs.state.terminated !== undefined,
          restarts: cs.state.terminated !== undefined && containerShouldRestart(worker.container, worker.pod, cs.state.terminated.exitCode),
          startedAtMs: startedAt ? Date.parse(startedAt) : 0,
        };
        observation.started = isStarted(worker.uid, worker.container.name, id);
      }
      return observation;
    };

    const tick = async (worker: Worker): Promise<boolean> => {
      if (workers.get(worker.id) !== worker) return false;
      const plan = planTick(worker.state, worker.settings, observe(worker));
      worker.state = plan.state;
      if (plan.publish !== undefined) send(worker, plan.publish);
      if (plan.action !== 'probe') return plan.action === 'wait';
      const containerId = worker.state.containerId ?? '';
      const startedAt = now();
      const outcome = await probeOnce(
        worker.probe,
        {
          runtime: deps.runtime,
          pod: worker.pod,
          container: worker.container,
          containerId,
          podIP: deps.statuses.get(worker.uid)?.podIP ?? '',
        },
        cancel.signal,
      );
      // Removed, or the container changed, while the probe ran: the outcome is stale.
      if (workers.get(worker.id) !== worker || worker.state.containerId !== containerId) return workers.get(worker.id) === worker;
      const counted = probeMetricResult(outcome.result);
      if (counted !== null) deps.metrics?.probed?.(worker.labels, counted, (now() - startedAt) / 1000);
      const ref = podReference(worker.pod, worker.container.name);
      const kind = capitalized[worker.kind];
      if (outcome.result === 'Failure') {
        deps.recorder.event(ref, 'Warning', 'Unhealthy', `${kind} probe failed: ${outcome.output}`);
      } else if (outcome.result === 'Unknown') {
        deps.recorder.event(ref, 'Warning', 'Unhealthy', `${kind} probe errored: ${outcome.output}`);
      } else if (outcome.result === 'Warning') {
        deps.recorder.event(ref, 'Warning', 'ProbeWarning', `${kind} probe warning: ${outcome.output}`);
      }
      const recorded = recordOutcome(worker.state, worker.settings, worker.kind, outcome.result);
      worker.state = recorded.state;
      if (recorded.publish !== undefined) send(worker, recorded.publish);
      return true;
    };

    const addPod = (uid: string, pod: Pod) => {
      const ids: string[] = [];
      for (const container of probedContainers(pod)) {
        for (const kind of kinds) {
          const probe = probeOf(container, kind);
          if (!probe) continue;
          const settings = probeSettings(probe, kind);
          const labels = { probe_type: capitalized[kind], container: container.name, pod: pod.metadata.name, namespace: pod.metadata.namespace, pod_uid: uid };
          const worker: Worker = { id: workerId(uid, container.name, kind), uid, pod, container, kind, probe, settings, labels, state: initialWorkerState, sent: null };
          workers.set(worker.id, worker);
          ids.push(worker.id);
          scheduler.add(worker.id, settings.periodSeconds * 1000, () => tick(worker));
        }
      }
      podsSeen.set(uid, ids);
    };

    const removePod = (uid: string) => {
      for (const id of podsSeen.get(uid) ?? []) {
        const worker = workers.get(id);
        if (worker) deps.metrics?.probeRemoved?.(worker.labels);
        workers.delete(id);
        scheduler.remove(id);
      }
      podsSeen.delete(uid);
    };

    /**
     * A readiness or startup worker with no result yet for a running container probes at once
     * instead of a period later: the container is not Ready (or started) until it has
     * (prober_manager.go UpdatePodStatus triggers the worker's manual run).
     */
    const triggerUnprobed = (ids: readonly string[], status: PodStatus) => {
      for (const id of ids) {
        const worker = workers.get(id);
        if (!worker || worker.kind === 'liveness') continue;
        const cs = containerStatusOf(status, worker.container.name);
        const containerId = runtimeContainerId(cs?.containerID);
        if (!containerId || cs?.state.running === undefined) continue;
        if (worker.state.containerId !== containerId || worker.state.lastResult === null) scheduler.trigger(id);
      }
    };

    const onStatus = (uid: string, status: PodStatus | undefined) => {
      if (status === undefined || status.phase === 'Succeeded' || status.phase === 'Failed') {
        // A terminal pod never runs again; a UID that comes back starts with a deleted status.
        removePod(uid);
        if (status !== undefined) podsSeen.set(uid, []);
        return;
      }
      const seen = podsSeen.get(uid);
      if (seen) return triggerUnprobed(seen, status);
      const pod = deps.podManager.get(uid);
      if (!pod || pod.metadata.deletionTimestamp !== undefined) return;
      addPod(uid, pod);
    };

    const unsubscribe = deps.statuses.subscribe(onStatus);
    for (const uid of [...deps.statuses.uids()]) onStatus(uid, deps.statuses.get(uid));

    return () => {
      unsubscribe();
      cancel.abort();
      scheduler.stop();
      workers.clear();
    };
  });
}
