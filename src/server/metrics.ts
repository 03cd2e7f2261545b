/**
 * Prometheus text for `/metrics`, with the kubelet's metric names where one exists.
 */
import type { Pod } from '../api/types.ts';
import type { RequestCounts } from '../client/api.ts';
import type { SyncLoopContext } from '../kubelet/syncLoop.ts';

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

function gauge(name: string, help: string, value: number, labels = ''): string {
  return `# HELP ${name} ${help}\n# TYPE ${name} gauge\n${name}${labels} ${value}\n`;
}

function counter(name: string, help: string, value: number): string {
  return `# HELP ${name} ${help}\n# TYPE ${name} counter\n${name} ${value}\n`;
}

export function renderMetrics({ pods, syncLoop, apiRequests, statusWrites, events }: MetricsInput): string {
  let runningPods = 0;
  let runningContainers = 0;
  for (const pod of pods) {
    const running = (pod.status?.containerStatuses ?? []).filter((s) => s.state.running).length;
    const runningInit = (pod.status?.initContainerStatuses ?? []).filter((s) => s.state.running).length;
    if (running + runningInit > 0) runningPods++;
    runningContainers += running + runningInit;
  }
  let text = '';
  text += gauge('kubelet_running_pods', 'Number of pods that have a running pod sandbox', runningPods);
  text += gauge('kubelet_running_containers', 'Number of containers currently running', runningContainers, '{container_state="running"}');
  text += gauge('statelet_desired_pods', 'Number of pods in the merged config', pods.length);
  if (syncLoop.lastRelistDurationMs !== null) {
    text += gauge('statelet_pleg_last_relist_duration_seconds', 'Duration of the last PLEG relist', syncLoop.lastRelistDurationMs / 1000);
  }
  if (syncLoop.lastRelistAt !== null) {
    text += gauge('kubelet_pleg_last_seen_seconds', 'Timestamp when PLEG was last seen active', syncLoop.lastRelistAt / 1000);
  }
  text += '# HELP statelet_syncloop_routed_events_total Events the syncLoop routed, by type\n# TYPE statelet_syncloop_routed_events_total counter\n';
  for (const [type, count] of Object.entries(syncLoop.routed)) {
    text += `statelet_syncloop_routed_events_total{type="${type}"} ${count}\n`;
  }
  if (statusWrites) {
    text += counter('statelet_pod_status_writes_total', 'Pod statuses written to the API server', statusWrites.writes);
    text += counter('statelet_pod_deletes_total', 'Terminated pods deleted from the API server', statusWrites.deletes);
    text += gauge('statelet_pod_status_queued', 'Pods whose status is waiting to be written or being written', statusWrites.queued);
  }
  if (events) {
    text += counter('statelet_events_written_total', 'Events written to the API server (new or counted)', events.written);
    text += counter('statelet_events_dropped_total', 'Events not written: rate-limited, refused or overflowing the queue', events.dropped);
    text += gauge('statelet_events_queued', 'Events waiting to be written', events.queued);
  }
  if (apiRequests) {
    text += '# HELP rest_client_requests_total Requests to the API server, by method, resource and status code (0: no answer)\n# TYPE rest_client_requests_total counter\n';
    for (const { method, resource, code, count } of apiRequests.entries()) {
      text += `rest_client_requests_total{method="${method}",resource="${resource}",code="${code}"} ${count}\n`;
    }
  }
  return text;
}
