/** /metrics through prom-client (metrics.ts) and the instrumented runtime (instrumented.ts): the kubelet's names, labels and buckets. */
import { describe, expect, it } from 'vitest';
import { RequestCounts } from '../../src/client/api.ts';
import { instrumentedImages, instrumentedRuntime } from '../../src/runtime/instrumented.ts';
import { CriError, type ImageService, type RuntimeService } from '../../src/runtime/types.ts';
import { AgentMetrics, POD_STARTUP_BUCKETS, exponentialBuckets } from '../../src/server/metrics.ts';
import type { Pod } from '../../src/api/types.ts';

const runningPod = (name: string) =>
  ({ metadata: { name, namespace: 'default', uid: name }, spec: { containers: [{ name: 'app', image: 'busybox' }] }, status: { phase: 'Running', containerStatuses: [{ name: 'app', state: { running: {} } }] } }) as unknown as Pod;

describe('AgentMetrics', () => {
  it('exposes the node, pods, PLEG and API figures read from the node at scrape time, and what the node told it', async () => {
    const requests = new RequestCounts();
    requests.add('PUT', 'leases', 200);
    requests.add('PUT', 'leases', 200);
    let pods: Pod[] = [runningPod('web')];
    const metrics = new AgentMetrics('node-a');
    metrics.addNodeGauges({
      pods: () => pods,
      workerStages: () => ['syncing', 'syncing', 'terminating'],
      relist: () => ({ lastRelistAt: 1_700_000_000_000, durationMs: 12 }),
      apiRequests: requests,
      events: () => ({ written: 5, dropped: 1, queued: 0 }),
    });
    for (let i = 0; i < 3; i++) metrics.eventRouted('PLEG.CONTAINER_STARTED');
    const text = await metrics.render();
    expect(text).toContain('kubelet_node_name{node="node-a"} 1');
    expect(text).toContain('kubelet_running_pods 1');
    expect(text).toContain('kubelet_running_containers{container_state="running"} 1');
    expect(text).toContain('kubelet_pleg_last_seen_seconds 1700000000');
    expect(text).toContain('statelet_syncloop_routed_events_total{type="PLEG.CONTAINER_STARTED"} 3');
    expect(text).toContain('rest_client_requests_total{method="PUT",resource="leases",code="200"} 2');
    expect(text).toContain('statelet_events_written_total 5');
    expect(text).toContain('statelet_pod_actors{state="syncing"} 2');
    expect(text).toContain('statelet_pod_actors{state="terminating"} 1');
    expect(text).toContain('statelet_pleg_last_relist_duration_seconds 0.012');
    expect(text).not.toContain('statelet_pod_status_writes_total 0\n# ');
    metrics.statusWrites({ writes: 7, deletes: 2, queued: 1 });
    pods = [];
    const later = await metrics.render();
    expect(later).toContain('kubelet_running_pods 0');
    expect(later).toContain('statelet_pod_status_writes_total 7');
    expect(later).toContain('statelet_pod_deletes_total 2');
    expect(later).toContain('statelet_pod_status_queued 1');
  });

  it('counts, times and counts the failures of runtime calls under the kubelet\'s operation names and buckets', async () => {
    const metrics = new AgentMetrics('node-a');
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
    const metrics = new AgentMetrics('node-a');
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

  it('observes pod starts, the SLI by first_with_network, pod worker runs by type and restarted pods by static, with the kubelet\'s buckets', async () => {
    const metrics = new AgentMetrics('node-a');
    metrics.podStarted(3.2);
    metrics.podStartedSli(1.2, true);
    metrics.podStartedSli(7, false);
    metrics.podWorked('create', 0.3);
    metrics.podWorked('sync', 0.004);
    metrics.podWorked('sync', 0.02);
    metrics.podRestarted(true);
    metrics.podRestarted(true);
    metrics.podRestarted(false);
    const text = await metrics.render();
    const buckets = (name: string, labels = '') => [...text.matchAll(new RegExp(`^${name}_bucket\\{le="([^"]+)"${labels}\\}`, 'gm'))].map((m) => m[1]);
    expect(buckets('kubelet_pod_start_duration_seconds')).toEqual([...POD_STARTUP_BUCKETS.map(String), '+Inf']);
    expect(text.split('\n')).toEqual(
      expect.arrayContaining([
        'kubelet_pod_start_duration_seconds_bucket{le="3"} 0',
        'kubelet_pod_start_duration_seconds_bucket{le="4"} 1',
        'kubelet_pod_start_duration_seconds_sum 3.2',
        'kubelet_pod_start_sli_duration_seconds_bucket{le="2",first_with_network="true"} 1',
        'kubelet_pod_start_sli_duration_seconds_bucket{le="6",first_with_network=""} 0',
        'kubelet_pod_start_sli_duration_seconds_bucket{le="8",first_with_network=""} 1',
        'kubelet_pod_worker_duration_seconds_bucket{le="0.005",operation_type="sync"} 1',
        'kubelet_pod_worker_duration_seconds_count{operation_type="sync"} 2',
        'kubelet_pod_worker_duration_seconds_count{operation_type="create"} 1',
        'kubelet_restarted_pods_total{static="true"} 2',
        'kubelet_restarted_pods_total{static=""} 1',
      ]),
    );
    expect(buckets('kubelet_pod_worker_duration_seconds', ',operation_type="sync"')).toEqual(['0.005', '0.01', '0.025', '0.05', '0.1', '0.25', '0.5', '1', '2.5', '5', '10', '+Inf']);
    expect(text).not.toContain('prober_probe');
  });

  it('serves the prober metrics apart, times successful probes only, and drops a removed worker\'s series', async () => {
    const metrics = new AgentMetrics('node-a', Date.UTC(2026, 0, 1));
    const web = { probe_type: 'Readiness', container: 'app', pod: 'web', namespace: 'shop', pod_uid: 'u1' };
    const db = { ...web, probe_type: 'Liveness', pod: 'db', pod_uid: 'u2' };
    metrics.probed(web, 'successful', 0.02);
    metrics.probed(web, 'successful', 0.3);
    metrics.probed(web, 'failed', 1);
    metrics.probed(db, 'successful', 0.001);
    const text = await metrics.renderProbes();
    expect(text.split('\n')).toEqual(
      expect.arrayContaining([
        'prober_probe_total{probe_type="Readiness",container="app",pod="web",namespace="shop",pod_uid="u1",result="successful"} 2',
        'prober_probe_total{probe_type="Readiness",container="app",pod="web",namespace="shop",pod_uid="u1",result="failed"} 1',
        'prober_probe_duration_seconds_count{probe_type="Readiness",container="app",pod="web",namespace="shop"} 2',
        'prober_probe_duration_seconds_bucket{le="0.025",probe_type="Readiness",container="app",pod="web",namespace="shop"} 1',
        `process_start_time_seconds ${Date.UTC(2026, 0, 1) / 1000}`,
      ]),
    );
    expect(text).not.toContain('kubelet_');
    expect(await metrics.render()).not.toContain('prober_');
    metrics.probeRemoved(web);
    const after = await metrics.renderProbes();
    expect(after).not.toContain('pod="web"');
    expect(after).toContain('prober_probe_total{probe_type="Liveness",container="app",pod="db",namespace="shop",pod_uid="u2",result="successful"} 1');
  });

  it("shows the process's figures on every node of one process (--nodes), collected once for all", async () => {
    const nodes = ['hollow-0', 'hollow-1'].map((name) => new AgentMetrics(name));
    for (const node of nodes) node.collectProcessMetrics();
    const [first, second] = await Promise.all(nodes.map((node) => node.render()));
    for (const [text, name] of [[first!, 'hollow-0'], [second!, 'hollow-1']] as const) {
      expect(text).toContain(`kubelet_node_name{node="${name}"} 1`);
      expect(text).toMatch(/^process_resident_memory_bytes \d+$/m);
      expect(text).toMatch(/^nodejs_eventloop_lag_p99_seconds [\d.e-]+$/m);
      // Each family once: the process's figures are not registered per node.
      expect(text.match(/^# TYPE process_resident_memory_bytes /gm)).toHaveLength(1);
      expect(text).not.toContain('nodejs_active_handles_total');
    }
    // A node that does not collect them (a test's) shows its own alone.
    const own = await new AgentMetrics('n').render();
    expect(own).not.toContain('process_resident_memory_bytes');
  });

  it('uses the ExponentialBuckets of the Prometheus client', () => {
    expect(exponentialBuckets(0.005, 2.5, 14).slice(0, 4)).toEqual([0.005, 0.0125, 0.03125, 0.078125]);
    expect(exponentialBuckets(0.005, 2.5, 14)).toHaveLength(14);
  });

  it.each([
    ['client', 'addClientCertificateManager', 'kubelet_certificate_manager_client_ttl_seconds', 'kubelet_certificate_manager_client_expiration_renew_errors'],
    ['serving', 'addServingCertificateManager', 'kubelet_certificate_manager_server_ttl_seconds', 'kubelet_server_expiration_renew_errors'],
  ] as const)("tells the %s certificate's TTL (+Inf without one) and the failed renewals, under the kubelet's names", async (_kind, add, ttl, errors) => {
    const metrics = new AgentMetrics('node-a');
    let current: { notAfter: Date } | null = null;
    const manager = metrics[add]({ current: () => current }, () => 1_000_000);
    expect(await metrics.render()).toContain(`${ttl} +Inf`);
    current = { notAfter: new Date(1_000_000 + 3_600_500) };
    manager.renewFailed();
    manager.renewFailed();
    const text = await metrics.render();
    expect(text).toContain(`${ttl} 3600`);
    expect(text).toContain(`${errors} 2`);
  });
});
