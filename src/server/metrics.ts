/**
 * The agent's `/metrics`, through prom-client, with the kubelet's metric names, labels and
 * histogram buckets where the kubelet has the metric (pkg/kubelet/metrics/metrics.go):
 *   kubelet_node_name{node}, kubelet_running_pods, kubelet_running_containers{container_state},
 *   kubelet_pleg_last_seen_seconds, kubelet_pleg_relist_duration_seconds and _interval_seconds,
 *   kubelet_started_containers_total{container_type} and _errors_total{container_type, code},
 *   kubelet_pod_start_duration_seconds, kubelet_pod_start_sli_duration_seconds{first_with_network},
 *   kubelet_pod_worker_duration_seconds{operation_type}, kubelet_restarted_pods_total{static}
 *   (told by the node, NodeMetrics), kubelet_runtime_operations_total /
 *   _duration_seconds / _errors_total {operation_type} (instrumented.ts),
 *   rest_client_requests_total{method, resource, code};
 * the process's own (`collectProcessMetrics`: resident memory, open fds, CPU — the kubelet's
 * /metrics has the process collector's — and Node's heap, event-loop delay and active handles,
 * where the kubelet has Go's runtime figures); and statelet's own: desired pods, the last relist's duration, events routed by the syncLoop by
 * type, the status writer's and the event recorder's work. Values that live in the agent's
 * actors are read when the metrics are collected; nothing is computed on the agent's path.
 *
 * `/metrics/probes` is a registry of its own, as the kubelet's (pkg/kubelet/server/server.go
 * InstallDefaultHandlers, proberMetricsPath): prober_probe_total{probe_type, result, container,
 * pod, namespace, pod_uid}, prober_probe_duration_seconds{probe_type, container, pod, namespace}
 * (pkg/kubelet/prober/prober_manager.go ProberResults, ProberDuration) and
 * process_start_time_seconds. A probe worker's series go with the worker.
 */
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { Pod } from '../api/types.ts';
import type { RequestCounts } from '../client/api.ts';
import type { RuntimeOperations } from '../runtime/instrumented.ts';
import type { NodeMetrics } from '../kubelet/composeNode.ts';
import type { StartedContainerType } from '../kuberuntime/podWork.ts';
import type { PodWorkType } from '../podworkers/workDuration.ts';
import type { ProbeMetricResult } from '../prober/decide.ts';
import type { ProbeLabels } from '../prober/manager.ts';
import type { VolumeStats } from '../stats/summary.ts';

/** What the metrics read of the node when they are collected. */
export interface NodeMetricsView {
  /** The pods with the statuses the agent reports. */
  pods(): Pod[];
  /** The stage of each pod's worker (syncing, terminating, terminated). */
  workerStages(): Iterable<string>;
  /** When the last relist started and how long it took (ms); null before the first. */
  relist(): { lastRelistAt: number | null; durationMs: number | null };
  /** In a cluster: the requests made to the API server. */
  apiRequests?: RequestCounts;
  /** In a cluster: events written to the API, and dropped (spam filter, refusals, overflow). */
  events?(): { written: number; dropped: number; queued: number };
  /** The usage of the pods' claim-backed volumes that measure it, each with its claim (`pvcRef`). */
  volumeStats?(): Promise<VolumeStats[]>;
}

/** The kubelet's volume gauges (pkg/kubelet/metrics/collectors/volume_stats.go), by the field of VolumeStats each reports. */
const VOLUME_GAUGES = [
  ['kubelet_volume_stats_capacity_bytes', 'Capacity in bytes of the volume', 'capacityBytes'],
  ['kubelet_volume_stats_available_bytes', 'Number of available bytes in the volume', 'availableBytes'],
  ['kubelet_volume_stats_used_bytes', 'Number of used bytes in the volume', 'usedBytes'],
  ['kubelet_volume_stats_inodes', 'Maximum number of inodes in the volume', 'inodes'],
  ['kubelet_volume_stats_inodes_free', 'Number of free inodes in the volume', 'inodesFree'],
  ['kubelet_volume_stats_inodes_used', 'Number of used inodes in the volume', 'inodesUsed'],
] as const;

/** What the status writer last reported of its work. */
interface StatusWrites {
  writes: number;
  deletes: number;
  queued: number;
}

let processRegistry: Registry | undefined;

/**
 * The process's figures, collected once per process: the nodes of `--nodes` share one process, and
 * each node's /metrics shows its figures (prom-client watches the event loop with a histogram of
 * its own per collection: one per node would hold ~350 KB each).
 */
function processMetrics(): Registry {
  if (processRegistry) return processRegistry;
  processRegistry = new Registry();
  collectDefaultMetrics({ register: processRegistry });
  // Gauges named like counters, which `promtool check metrics` refuses; the process's open fds
  // and Node's heap and event-loop figures stay.
  for (const name of ['nodejs_active_handles_total', 'nodejs_active_requests_total', 'nodejs_active_resources_total']) processRegistry.removeSingleMetric(name);
  return processRegistry;
}

/** prometheus ExponentialBuckets(start, factor, count). */
export const exponentialBuckets = (start: number, factor: number, count: number) => Array.from({ length: count }, (_, i) => start * factor ** i);

/** prometheus DefBuckets. */
const DEFAULT_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

/** pkg/kubelet/metrics/metrics.go podStartupDurationBuckets. */
export const POD_STARTUP_BUCKETS = [0.5, 1, 2, 3, 4, 5, 6, 8, 10, 20, 30, 45, 60, 120, 180, 240, 300, 360, 480, 600, 900, 1200, 1800, 2700, 3600];

const PROBE_RESULTS: readonly ProbeMetricResult[] = ['successful', 'failed'];

/** A histogram (with its labels) in `registry`. */
function histogram<L extends string>(registry: Registry, name: string, help: string, buckets: number[], labelNames: L[] = []) {
  return new Histogram<L>({ name, help, labelNames, buckets, registers: [registry] });
}

/** A collect function that sets a gauge (or a counter, from 0) to one figure of what `read` gives; to none when it gives nothing. */
function figureOf<T extends object>(read: () => T | undefined, field: { [K in keyof T]: T[K] extends number ? K : never }[keyof T]) {
  return function collect(this: Gauge | Counter) {
    this.reset();
    const values = read();
    if (values === undefined) return;
    const value = values[field] as number;
    if (this instanceof Gauge) this.set(value);
    else this.inc(value);
  };
}

/** A counter (with its labels) in `registry`. */
function counter<L extends string>(registry: Registry, name: string, help: string, labelNames: L[] = []) {
  return new Counter<L>({ name, help, labelNames, registers: [registry] });
}

export class AgentMetrics implements RuntimeOperations, NodeMetrics {
  readonly registry = new Registry();
  private readonly operations = counter(this.registry, 'kubelet_runtime_operations_total', 'Cumulative number of runtime operations by operation type.', ['operation_type']);
  private readonly operationErrors = counter(this.registry, 'kubelet_runtime_operations_errors_total', 'Cumulative number of runtime operation errors by operation type.', ['operation_type']);
  private readonly operationDuration = histogram(
    this.registry,
    'kubelet_runtime_operations_duration_seconds',
    'Duration in seconds of runtime operations. Broken down by operation type.',
    exponentialBuckets(0.005, 2.5, 14),
    ['operation_type'],
  );
  private readonly startedContainers = counter(this.registry, 'kubelet_started_containers_total', 'Cumulative number of containers started', ['container_type']);
  private readonly startedContainerErrors = counter(this.registry, 'kubelet_started_containers_errors_total', 'Cumulative number of errors when starting containers', ['container_type', 'code']);
  private readonly relistDuration = histogram(this.registry, 'kubelet_pleg_relist_duration_seconds', 'Duration in seconds for relisting pods in PLEG.', DEFAULT_BUCKETS);
  private readonly relistInterval = histogram(this.registry, 'kubelet_pleg_relist_interval_seconds', 'Interval in seconds between relisting in PLEG.', DEFAULT_BUCKETS);
  private readonly podStartDuration = histogram(
    this.registry,
    'kubelet_pod_start_duration_seconds',
    'Duration in seconds from kubelet seeing a pod for the first time to the pod starting to run',
    POD_STARTUP_BUCKETS,
  );
  private readonly podStartSliDuration = histogram(
    this.registry,
    'kubelet_pod_start_sli_duration_seconds',
    'Duration in seconds to start a pod, excluding time to pull images and run init containers, measured from pod creation timestamp to when all its containers are reported as started and observed via watch',
    POD_STARTUP_BUCKETS,
    ['first_with_network'],
  );
  private readonly podWorkerDuration = histogram(
    this.registry,
    'kubelet_pod_worker_duration_seconds',
    'Duration in seconds to sync a single pod. Broken down by operation type: create, update, or sync',
    DEFAULT_BUCKETS,
    ['operation_type'],
  );
  private readonly restartedPods = counter(
    this.registry,
    'kubelet_restarted_pods_total',
    'Number of pods that have been restarted because they were deleted and recreated with the same UID while the kubelet was watching them (common for static pods, extremely uncommon for API pods)',
    ['static'],
  );

  /** What `/metrics/probes` serves. */
  readonly probeRegistry = new Registry();
  private readonly probes = counter(this.probeRegistry, 'prober_probe_total', 'Cumulative number of a liveness, readiness or startup probe for a container by result.', [
    'probe_type',
    'result',
    'container',
    'pod',
    'namespace',
    'pod_uid',
  ]);
  private readonly probeDuration = histogram(this.probeRegistry, 'prober_probe_duration_seconds', 'Duration in seconds for a probe response.', DEFAULT_BUCKETS, [
    'probe_type',
    'container',
    'pod',
    'namespace',
  ]);

  /** The process's figures, once `collectProcessMetrics` is called. */
  private process: Registry | undefined;

  /** Adds the process's figures (prom-client's default metrics) to `/metrics`. */
  collectProcessMetrics(): void {
    this.process = processMetrics();
  }

  private readonly routedEvents = counter(this.registry, 'statelet_syncloop_routed_events_total', 'Events the syncLoop routed, by type', ['type']);
  /** The status writer's work as it last told it; none outside a cluster. */
  private statusWritesNow: StatusWrites | undefined;
  /** The node's pods with their statuses, read once per scrape. */
  private scrapedPods: Pod[] | undefined;

  constructor(
    nodeName: string,
    /** When the process started (ms since the epoch): process_start_time_seconds. */
    startedAtMs = Date.now() - process.uptime() * 1000,
  ) {
    new Gauge({ name: 'process_start_time_seconds', help: 'Start time of the process since unix epoch in seconds.', registers: [this.probeRegistry] }).set(startedAtMs / 1000);
    new Gauge({ name: 'kubelet_node_name', help: "The node's name. The count is always 1.", labelNames: ['node'], registers: [this.registry] }).set({ node: nodeName }, 1);
    const registers = [this.registry];
    const writes = () => this.statusWritesNow;
    new Counter({ name: 'statelet_pod_status_writes_total', help: 'Pod statuses written to the API server', registers, collect: figureOf(writes, 'writes') });
    new Counter({ name: 'statelet_pod_deletes_total', help: 'Terminated pods deleted from the API server', registers, collect: figureOf(writes, 'deletes') });
    new Gauge({ name: 'statelet_pod_status_queued', help: 'Pods whose status is waiting to be written or being written', registers, collect: figureOf(writes, 'queued') });
  }

  /**
   * The client certificate manager's metrics (pkg/kubelet/certificate/kubelet.go
   * NewKubeletClientCertificateManager): the TTL of the certificate in use (+Inf without one), and
   * the renewals that failed. Returns what counts a failure.
   */
  addClientCertificateManager(source: { current(): { notAfter: Date } | null }, now: () => number): { renewFailed(): void } {
    return this.addCertificateManager(
      {
        ttl: 'kubelet_certificate_manager_client_ttl_seconds',
        ttlHelp: "Gauge of the TTL (time-to-live) of the Kubelet's client certificate. The value is in seconds until certificate expiry (negative if already expired). If client certificate is invalid or unused, the value will be +INF.",
        errors: 'kubelet_certificate_manager_client_expiration_renew_errors',
      },
      source,
      now,
    );
  }

  /**
   * The serving certificate manager's (kubelet.go NewKubeletServerCertificateManager): the TTL of
   * the serving certificate (+Inf before one is issued), and the renewals that failed, under the
   * kubelet's names for them.
   */
  addServingCertificateManager(source: { current(): { notAfter: Date } | null }, now: () => number): { renewFailed(): void } {
    return this.addCertificateManager(
      {
        ttl: 'kubelet_certificate_manager_server_ttl_seconds',
        ttlHelp: "Gauge of the shortest TTL (time-to-live) of the Kubelet's serving certificate. The value is in seconds until certificate expiry (negative if already expired). If serving certificate is invalid or unused, the value will be +INF.",
        errors: 'kubelet_server_expiration_renew_errors',
      },
      source,
      now,
    );
  }

  private addCertificateManager(names: { ttl: string; ttlHelp: string; errors: string }, source: { current(): { notAfter: Date } | null }, now: () => number): { renewFailed(): void } {
    const registers = [this.registry];
    new Gauge({
      name: names.ttl,
      help: names.ttlHelp,
      registers,
      collect() {
        const current = source.current();
        this.set(current ? Math.trunc((current.notAfter.getTime() - now()) / 1000) : Infinity);
      },
    });
    const errors = new Counter({ name: names.errors, help: 'Counter of certificate renewal errors.', registers });
    return { renewFailed: () => errors.inc() };
  }

  /**
   * Registers what is read from the node when the metrics are collected: built after the node,
   * which is itself told what the metrics count (this object) as it is built.
   */
  addNodeGauges(view: NodeMetricsView): void {
    const registers = [this.registry];
    const now = () => ({ pods: (this.scrapedPods ??= view.pods()) });
    new Gauge({
      name: 'kubelet_running_pods',
      help: 'Number of pods that have a running pod sandbox',
      registers,
      collect() {
        this.set(running(now().pods).pods);
      },
    });
    new Gauge({
      name: 'kubelet_running_containers',
      help: 'Number of containers currently running',
      labelNames: ['container_state'],
      registers,
      collect() {
        this.set({ container_state: 'running' }, running(now().pods).containers);
      },
    });
    if (view.volumeStats) {
      // One series per claim, however many of the node's pods mount it (the collector's allPVCs set); read once per scrape.
      let scrape: Promise<VolumeStats[]> | null = null;
      const claims = async () => {
        scrape ??= view.volumeStats!().finally(() => setImmediate(() => (scrape = null)));
        const byClaim = new Map<string, VolumeStats>();
        for (const volume of await scrape) if (volume.pvcRef) byClaim.set(`${volume.pvcRef.namespace}/${volume.pvcRef.name}`, volume);
        return [...byClaim.values()];
      };
      for (const [name, help, field] of VOLUME_GAUGES) {
        new Gauge({
          name,
          help,
          labelNames: ['namespace', 'persistentvolumeclaim'],
          registers,
          async collect() {
            this.reset();
            for (const volume of await claims()) {
              const value = volume[field];
              if (value !== undefined) this.set({ namespace: volume.pvcRef!.namespace, persistentvolumeclaim: volume.pvcRef!.name }, value);
            }
          },
        });
      }
    }
    new Gauge({ name: 'statelet_desired_pods', help: 'Number of pods in the merged config', registers, collect() { this.set(now().pods.length); } });
    new Gauge({
      name: 'statelet_pod_actors',
      help: 'Pod actors, by the top-level state of their statechart',
      labelNames: ['state'],
      registers,
      collect() {
        this.reset();
        const counts = new Map<string, number>();
        for (const state of view.workerStages()) counts.set(state, (counts.get(state) ?? 0) + 1);
        for (const [state, count] of counts) this.set({ state }, count);
      },
    });
    /** A gauge in seconds of a value the node keeps in ms; absent until it has one. */
    const secondsOf = (name: string, help: string, readMs: () => number | null) =>
      new Gauge({
        name,
        help,
        registers,
        collect() {
          const ms = readMs();
          if (ms === null) this.reset();
          else this.set(ms / 1000);
        },
      });
    secondsOf('kubelet_pleg_last_seen_seconds', 'Timestamp in seconds when PLEG was last seen active.', () => view.relist().lastRelistAt);
    secondsOf('statelet_pleg_last_relist_duration_seconds', 'Duration of the last PLEG relist', () => view.relist().durationMs);
    const events = () => view.events?.();
    new Counter({ name: 'statelet_events_written_total', help: 'Events written to the API server (new or counted)', registers, collect: figureOf(events, 'written') });
    new Counter({ name: 'statelet_events_dropped_total', help: 'Events not written: rate-limited, refused or overflowing the queue', registers, collect: figureOf(events, 'dropped') });
    new Gauge({ name: 'statelet_events_queued', help: 'Events waiting to be written', registers, collect: figureOf(events, 'queued') });
    new Counter({
      name: 'rest_client_requests_total',
      help: 'Number of HTTP requests, partitioned by status code, method, and host.',
      labelNames: ['method', 'resource', 'code'],
      registers,
      collect() {
        this.reset();
        for (const { method, resource, code, count } of view.apiRequests?.entries() ?? []) this.inc({ method, resource, code: String(code) }, count);
      },
    });
  }

  eventRouted(type: string): void {
    this.routedEvents.inc({ type });
  }

  statusWrites(progress: StatusWrites): void {
    this.statusWritesNow = progress;
  }

  containerStarted(type: StartedContainerType, failure: string | null): void {
    this.startedContainers.inc({ container_type: type });
    if (failure !== null) this.startedContainerErrors.inc({ container_type: type, code: failure });
  }

  relisted(durationMs: number, intervalMs: number | null): void {
    this.relistDuration.observe(durationMs / 1000);
    if (intervalMs !== null) this.relistInterval.observe(intervalMs / 1000);
  }

  podStarted(seconds: number): void {
    this.podStartDuration.observe(seconds);
  }

  /** The kubelet labels the node's first pod with a network "true", the others "". */
  podStartedSli(seconds: number, firstWithNetwork: boolean): void {
    this.podStartSliDuration.observe({ first_with_network: firstWithNetwork ? 'true' : '' }, seconds);
  }

  podWorked(type: PodWorkType, seconds: number): void {
    this.podWorkerDuration.observe({ operation_type: type }, seconds);
  }

  /** pkg/kubelet/kubelet_pods.go HandlePodCleanups: static "true" for static pods, "" for the others. */
  podRestarted(isStatic: boolean): void {
    this.restartedPods.inc({ static: isStatic ? 'true' : '' });
  }

  probed(labels: ProbeLabels, result: ProbeMetricResult, seconds: number): void {
    this.probes.inc({ ...labels, result });
    if (result === 'successful') this.probeDuration.observe(durationLabels(labels), seconds);
  }

  probeRemoved(labels: ProbeLabels): void {
    for (const result of PROBE_RESULTS) this.probes.remove({ ...labels, result });
    this.probeDuration.remove(durationLabels(labels));
  }

  observe(operation: string, seconds: number, failed: boolean): void {
    this.operations.inc({ operation_type: operation });
    this.operationDuration.observe({ operation_type: operation }, seconds);
    if (failed) this.operationErrors.inc({ operation_type: operation });
  }

  /** `/metrics/probes`: the prober metrics alone. */
  renderProbes(): Promise<string> {
    return this.probeRegistry.metrics();
  }

  /** The Prometheus text exposition. */
  async render(): Promise<string> {
    this.scrapedPods = undefined;
    try {
      const own = await this.registry.metrics();
      return this.process ? `${own}\n${await this.process.metrics()}` : own;
    } finally {
      this.scrapedPods = undefined;
    }
  }
}

/** prober_probe_duration_seconds has the labels of prober_probe_total but the result and the pod's UID. */
function durationLabels({ probe_type, container, pod, namespace }: ProbeLabels) {
  return { probe_type, container, pod, namespace };
}

function running(pods: Pod[]): { pods: number; containers: number } {
  let runningPods = 0;
  let containers = 0;
  for (const pod of pods) {
    const statuses = [...(pod.status?.containerStatuses ?? []), ...(pod.status?.initContainerStatuses ?? []), ...(pod.status?.ephemeralContainerStatuses ?? [])];
    const count = statuses.filter((s) => s.state.running).length;
    if (count > 0) runningPods++;
    containers += count;
  }
  return { pods: runningPods, containers };
}
