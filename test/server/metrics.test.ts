/** /metrics through prom-client (metrics.ts) and the instrumented runtime (instrumented.ts): the kubelet's names, labels and buckets. */
import { describe, expect, it } from 'vitest';
import { RequestCounts } from '../../src/client/api.ts';
import type { SyncLoopContext } from '../../src/kubelet/syncLoop.ts';
import { instrumentedImages, instrumentedRuntime } from '../../src/runtime/instrumented.ts';
import { CriError, type ImageService, type RuntimeService } from '../../src/runtime/types.ts';
import { AgentMetrics, exponentialBuckets } from '../../src/server/metrics.ts';
import type { Pod } from '../../src/api/types.ts';

const runningPod = (name: string) =>
  ({ metadata: { name, namespace: 'default', uid: name }, spec: { containers: [{ name: 'app', image: 'busybox' }] }, status: { phase: 'Running', containerStatuses: [{ name: 'app', state: { running: {} } }] } }) as unknown as Pod;

describe('AgentMetrics', () => {
  const syncLoop = { routed: { 'PLEG.CONTAINER_STARTED': 3 }, lastRelistAt: 1_700_000_000_000, lastRelistDurationMs: 12 } as unknown as SyncLoopContext;

  it('exposes the node, pods, PLEG and API figures read from the agent at scrape time', async () => {
    const requests = new RequestCounts();
    requests.add('PUT', 'leases', 200);
    requests.add('PUT', 'leases', 200);
    let pods: Pod[] = [runningPod('web')];
    const metrics = new AgentMetrics('node-a', () => ({ pods, syncLoop, apiRequests: requests, events: { written: 5, dropped: 1, queued: 0 } }));
    const text = await metrics.render();
    expect(text).toContain('kubelet_node_name{node="node-a"} 1');
    expect(text).toContain('kubelet_running_pods 1');
    expect(text).toContain('kubelet_running_containers{container_state="running"} 1');
    expect(text).toContain('kubelet_pleg_last_seen_seconds 1700000000');
    expect(text).toContain('statelet_syncloop_routed_events_total{type="PLEG.CONTAINER_STARTED"} 3');
    expect(text).toContain('rest_client_requests_total{method="PUT",resource="leases",code="200"} 2');
    expect(text).toContain('statelet_events_written_total 5');
    expect(text).not.toContain('statelet_pod_status_writes_total 0\n# ');
    pods = [];
    expect(await metrics.render()).toContain('kubelet_running_pods 0');
  });

  it('counts, times and counts the failures of runtime calls under the kubelet\'s operation names and buckets', async () => {
    const metrics = new AgentMetrics('node-a', () => ({ pods: [], syncLoop }));
    let t = 0;
    const clock = () => t;
    const runtime = instrumentedRuntime(
      {
        listPodSandbox: async () => {
          t += 30;
          return [];
        },
        containerStatus: async () => {
          throw new CriError('ContainerStatus', 'NOT_FOUND', 'no such container');
        },
      } as unknown as RuntimeService,
      metrics,
      clock,
    );
    const images = instrumentedImages({ pullImage: async () => 'sha256:1' } as unknown as ImageService, metrics, clock);
    await runtime.listPodSandbox();
    await expect(runtime.containerStatus('c1')).rejects.toThrow('no such container');
    await images.pullImage('busybox');
    const text = await metrics.render();
    expect(text).toContain('kubelet_runtime_operations_total{operation_type="list_podsandbox"} 1');
    expect(text).toContain('kubelet_runtime_operations_errors_total{operation_type="container_status"} 1');
    expect(text).toContain('kubelet_runtime_operations_total{operation_type="pull_image"} 1');
    expect(text).toContain('kubelet_runtime_operations_duration_seconds_bucket{le="0.03125",operation_type="list_podsandbox"} 1');
    expect(text).toContain('kubelet_runtime_operations_duration_seconds_bucket{le="0.0125",operation_type="list_podsandbox"} 0');
  });

  it('counts container starts and their failures by type and reason, and times relists and their intervals', async () => {
    const metrics = new AgentMetrics('node-a', () => ({ pods: [], syncLoop }));
    metrics.containerStarted('container', null);
    metrics.containerStarted('init_container', 'ErrImagePull');
    metrics.relisted(12, null);
    metrics.relisted(8, 1_000);
    const text = await metrics.render();
    expect(text).toContain('kubelet_started_containers_total{container_type="container"} 1');
    expect(text).toContain('kubelet_started_containers_total{container_type="init_container"} 1');
    expect(text).toContain('kubelet_started_containers_errors_total{container_type="init_container",code="ErrImagePull"} 1');
    expect(text).toContain('kubelet_pleg_relist_duration_seconds_count 2');
    expect(text).toContain('kubelet_pleg_relist_interval_seconds_bucket{le="1"} 1');
    expect(text).toContain('kubelet_pleg_relist_interval_seconds_bucket{le="0.5"} 0');
  });

  it('uses the ExponentialBuckets of the Prometheus client', () => {
    expect(exponentialBuckets(0.005, 2.5, 14).slice(0, 4)).toEqual([0.005, 0.0125, 0.03125, 0.078125]);
    expect(exponentialBuckets(0.005, 2.5, 14)).toHaveLength(14);
  });
});
