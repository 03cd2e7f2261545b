/**
 * The agent's `/metrics`, through prom-client, with the kubelet's metric names, labels and
 * histogram buckets where the kubelet has the metric (pkg/kubelet/metrics/metrics.go):
 *   kubelet_node_name{node}, kubelet_running_pods, kubelet_running_containers{container_state},
 *   kubelet_pleg_last_seen_seconds, kubelet_pleg_relist_duration_seconds and _interval_seconds,
 *   kubelet_started_containers_total{container_type} and _errors_total{container_type, code}
 *   (told by the node, NodeMetrics), kubelet_runtime_operations_total /
 *   _duration_seconds / _errors_total {operation_type} (instrumented.ts),
 *   rest_client_requests_total{method, resource, code};
 * and statelet's own: desired pods, the last relist's duration, events routed by the syncLoop by
 * type, the status writer's and the event recorder's work. Values that live in the agent's
 * actors are read when the metrics are collected; nothing is computed on the agent's path.
 */
import { Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { Pod } from '../api/types.ts';
import type { RequestCounts } from '../client/api.ts';
import type { SyncLoopContext } from '../kubelet/syncLoop.ts';
import type { RuntimeOperations } from '../runtime/instrumented.ts';
import type { NodeMetrics } from '../kubelet/composeNode.ts';
import type { StartedContainerType } from '../kuberuntime/execute.ts';

export interface MetricsInput {
  pods: Pod[];
  syncLoop: SyncLoopContext;
  /** In a cluster: the requests made to the API server. */
  apiRequests?: RequestCounts;
  /** In a cluster: the pod status writer's work. */
  statusWrites?: { writes: number; deletes: number; queued: number };
  /** In a cluster: events written to the API, and dropped (spam filter, refusals, overflow). */
  events?: { written: number; dropped: number; queued: number };
}

/** prometheus ExponentialBuckets(start, factor, count). */
export const exponentialBuckets = (start: number, factor: number, count: number) => Array.from({ length: count }, (_, i) => start * factor ** i);

/** prometheus DefBuckets. */
export const DEFAULT_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

export class AgentMetrics implements RuntimeOperations, NodeMetrics {
  readonly registry = new Registry();
  private readonly operations = new Counter({ name: 'kubelet_runtime_operations_total', help: 'Cumulative number of runtime operations by operation type.', labelNames: ['operation_type'], registers: [this.registry] });
  private readonly operationErrors = new Counter({ name: 'kubelet_runtime_operations_errors_total', help: 'Cumulative number of runtime operation errors by operation type.', labelNames: ['operation_type'], registers: [this.registry] });
  private readonly operationDuration = new Histogram({
    name: 'kubelet_runtime_operations_duration_seconds',
    help: 'Duration in seconds of runtime operations. Broken down by operation type.',
    labelNames: ['operation_type'],
    buckets: exponentialBuckets(0.005, 2.5, 14),
    registers: [this.registry],
  });

  private readonly startedContainers = new Counter({ name: 'kubelet_started_containers_total', help: 'Cumulative number of containers started', labelNames: ['container_type'], registers: [this.registry] });
  private readonly startedContainerErrors = new Counter({
    name: 'kubelet_started_containers_errors_total',
    help: 'Cumulative number of errors when starting containers',
    labelNames: ['container_type', 'code'],
    registers: [this.registry],
  });
  private readonly relistDuration = new Histogram({ name: 'kubelet_pleg_relist_duration_seconds', help: 'Duration in seconds for relisting pods in PLEG.', buckets: DEFAULT_BUCKETS, registers: [this.registry] });
  private readonly relistInterval = new Histogram({ name: 'kubelet_pleg_relist_interval_seconds', help: 'Interval in seconds between relisting in PLEG.', buckets: DEFAULT_BUCKETS, registers: [this.registry] });

  /** What the agent's actors hold, read once per scrape. */
  private scrape: MetricsInput | undefined;

  constructor(
    nodeName: string,
    private readonly input: () => MetricsInput,
  ) {
    const registers = [this.registry];
    new Gauge({ name: 'kubelet_node_name', help: "The node's name. The count is always 1.", labelNames: ['node'], registers }).set({ node: nodeName }, 1);
    // Everything below is read from the agent when collected.
    const now = () => (this.scrape ??= this.input());
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
    new Gauge({ name: 'statelet_desired_pods', help: 'Number of pods in the merged config', registers, collect() { this.set(now().pods.length); } });
    /** A gauge in seconds of a value the syncLoop keeps in ms; absent until it has one. */
    const secondsOf = (name: string, help: string, readMs: (loop: SyncLoopContext) => number | null) =>
      new Gauge({
        name,
        help,
        registers,
        collect() {
          const ms = readMs(now().syncLoop);
          if (ms === null) this.reset();
          else this.set(ms / 1000);
        },
      });
    secondsOf('kubelet_pleg_last_seen_seconds', 'Timestamp in seconds when PLEG was last seen active.', (loop) => loop.lastRelistAt);
    secondsOf('statelet_pleg_last_relist_duration_seconds', 'Duration of the last PLEG relist', (loop) => loop.lastRelistDurationMs);
    new Counter({
      name: 'statelet_syncloop_routed_events_total',
      help: 'Events the syncLoop routed, by type',
      labelNames: ['type'],
      registers,
      collect() {
        this.reset();
        for (const [type, count] of Object.entries(now().syncLoop.routed)) this.inc({ type }, count);
      },
    });
    const fromInput = <K extends 'statusWrites' | 'events'>(key: K, field: keyof NonNullable<MetricsInput[K]>) =>
      function collect(this: Gauge | Counter) {
        this.reset();
        const values = now()[key] as Record<string, number> | undefined;
        if (!values) return;
        if (this instanceof Gauge) this.set(values[field as string] ?? 0);
        else this.inc(values[field as string] ?? 0);
      };
    new Counter({ name: 'statelet_pod_status_writes_total', help: 'Pod statuses written to the API server', registers, collect: fromInput('statusWrites', 'writes') });
    new Counter({ name: 'statelet_pod_deletes_total', help: 'Terminated pods deleted from the API server', registers, collect: fromInput('statusWrites', 'deletes') });
    new Gauge({ name: 'statelet_pod_status_queued', help: 'Pods whose status is waiting to be written or being written', registers, collect: fromInput('statusWrites', 'queued') });
    new Counter({ name: 'statelet_events_written_total', help: 'Events written to the API server (new or counted)', registers, collect: fromInput('events', 'written') });
    new Counter({ name: 'statelet_events_dropped_total', help: 'Events not written: rate-limited, refused or overflowing the queue', registers, collect: fromInput('events', 'dropped') });
    new Gauge({ name: 'statelet_events_queued', help: 'Events waiting to be written', registers, collect: fromInput('events', 'queued') });
    new Counter({
      name: 'rest_client_requests_total',
      help: 'Number of HTTP requests, partitioned by status code, method, and host.',
      labelNames: ['method', 'resource', 'code'],
      registers,
      collect() {
        this.reset();
        for (const { method, resource, code, count } of now().apiRequests?.entries() ?? []) this.inc({ method, resource, code: String(code) }, count);
      },
    });
  }

  containerStarted(type: StartedContainerType, failure: string | null): void {
    this.startedContainers.inc({ container_type: type });
    if (failure !== null) this.startedContainerErrors.inc({ container_type: type, code: failure });
  }

  relisted(durationMs: number, intervalMs: number | null): void {
    this.relistDuration.observe(durationMs / 1000);
    if (intervalMs !== null) this.relistInterval.observe(intervalMs / 1000);
  }

  observe(operation: string, seconds: number, failed: boolean): void {
    this.operations.inc({ operation_type: operation });
    this.operationDuration.observe({ operation_type: operation }, seconds);
    if (failed) this.operationErrors.inc({ operation_type: operation });
  }

  /** The Prometheus text exposition. */
  async render(): Promise<string> {
    this.scrape = undefined;
    try {
      return await this.registry.metrics();
    } finally {
      this.scrape = undefined;
    }
  }
}

function running(pods: Pod[]): { pods: number; containers: number } {
  let runningPods = 0;
  let containers = 0;
  for (const pod of pods) {
    const count = [...(pod.status?.containerStatuses ?? []), ...(pod.status?.initContainerStatuses ?? [])].filter((s) => s.state.running).length;
    if (count > 0) runningPods++;
    containers += count;
  }
  return { pods: runningPods, containers };
}
