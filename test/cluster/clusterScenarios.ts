/**
 * statelet as a node of a real cluster (kube-apiserver + etcd, Node authorizer, NodeRestriction),
 * with the node's own identity only, on one runtime: it registers its Node and turns it Ready,
 * keeps its Lease, runs the pods bound to it and writes their status, admits pods against the
 * Node, lets a deleted pod go after its grace period, keeps its static pods' mirrors, and records
 * the kubelet's events. The same scenarios run on sim:// (node.test.ts) and on containerd
 * (containerd.test.ts).
 */
import { execFile, spawn } from 'node:child_process';
import { mkdtemp, readdir, readFile, rm, stat, unlink, writeFile } from 'node:fs/promises';
import { type Server, createServer } from 'node:http';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { PatchStrategy, setHeaderOptions, type V1Lease, type V1Node, type V1Pod } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type AgentProcess, runStatelet } from '../support/agentProcess.ts';
import { type ControlPlane, leases, nodes, pods, startControlPlane, waitFor } from '../support/controlPlane.ts';

export interface ClusterRuntime {
  name: string;
  /** The image every pod runs (present in the runtime, or pullable there). */
  image: string;
  endpoint(): string;
  /** What the Node's nodeInfo.containerRuntimeVersion looks like. */
  runtimeVersion: RegExp;
  /** The Node's status.features: what the runtime reports in its Status (nothing from containerd before 2.0). */
  features?: { supplementalGroupsPolicy: boolean };
  /** Makes the runtime stop answering (a hung daemon); resolves with what makes it answer again. */
  freeze?: () => Promise<() => Promise<void>>;
}

export function defineClusterScenarios(runtime: ClusterRuntime): void {
  const NODE = `node-${runtime.name.replace(/[^a-z0-9]/g, '')}`;
  let cp: ControlPlane | null = null;
  let agent: AgentProcess | undefined;
  let manifests: string;
  let tokenPod: ShortTokenPod | undefined;
  // The HTTP manifest source (--manifest-url): what it serves, changed by the scenario.
  let manifestServer: Server | undefined;
  let served = '';
  const STATIC_POD = [
    'apiVersion: v1',
    'kind: Pod',
    'metadata: {name: static-web, namespace: default, labels: {app: static-web}}',
    'spec:',
    '  containers:',
    `  - {name: web, image: ${runtime.image}, command: [sh, -c, 'while true; do sleep 1; done']}`,
    '',
  ].join('\n');

  beforeAll(async () => {
    cp = await startControlPlane({ nodeNames: [NODE] });
    if (!cp) return;
    manifests = await mkdtemp(path.join(os.tmpdir(), 'statelet-cluster-manifests-'));
    await writeFile(path.join(manifests, 'static-web.yaml'), STATIC_POD);
    served = STATIC_POD.replace(/static-web/g, 'url-web');
    manifestServer = createServer((_req, res) => res.end(served));
    await new Promise<void>((resolve) => manifestServer!.listen(0, '127.0.0.1', resolve));
    agent = await runStatelet([
      `--pod-manifest-path=${manifests}`,
      `--manifest-url=http://127.0.0.1:${(manifestServer.address() as AddressInfo).port}/pods`,
      '--http-check-frequency=1s',
      `--container-runtime-endpoint=${runtime.endpoint()}`,
      `--kubeconfig=${cp.nodeKubeconfig(NODE)}`,
      `--hostname-override=${NODE}`,
      '--node-labels=statelet.dev/pool=test',
      '--system-reserved=cpu=500m,memory=512Mi',
      '--cluster-dns=10.96.0.10',
      '--cluster-domain=cluster.local',
      // Volumes follow their ConfigMaps at each pod sync: a short period keeps the test short.
      '--sync-frequency=10s',
      // The API server reaches the authenticated API at the node's InternalIP, on loopback here,
      // with its kubelet client certificate.
      '--node-ip=127.0.0.1',
      `--client-ca-file=${cp.kubeletClientCaFile}`,
      // Small logs rotate within a second or two, so rotation and following across it are seen.
      '--container-log-max-size=8Ki',
      '--container-log-max-files=3',
      '--container-log-monitor-interval=1s',
    ]);
    // The shortest token the API grants (600 s) is refreshed after 480 s: the pod starts now and
    // the last scenario checks the refresh, so the wait overlaps the other scenarios.
    tokenPod = await startShortTokenPod(cp, NODE, runtime.image, agent.rootDir);
  }, 15 * 60_000);

  afterAll(async () => {
    await agent?.stop();
    if (manifestServer) await new Promise<void>((resolve) => manifestServer!.close(() => resolve()));
    await cp?.close();
    if (manifests) await rm(manifests, { recursive: true, force: true });
  });

  const condition = (node: V1Node | null, type: string) => node?.status?.conditions?.find((c) => c.type === type);

  describe(`statelet in a cluster (${runtime.name})`, () => {
    it('registers its Node with the kubelet labels, capacity and nodeInfo, and turns it Ready', async ({ skip }) => {
      if (!cp) return skip();
      const node = (await cp.waitFor<V1Node>(nodes, NODE, (n) => condition(n, 'Ready')?.status === 'True'))!;
      expect(node.metadata?.labels).toMatchObject({
        'kubernetes.io/hostname': NODE,
        'kubernetes.io/os': 'linux',
        'beta.kubernetes.io/os': 'linux',
        'statelet.dev/pool': 'test',
      });
      expect(node.metadata?.annotations?.['volumes.kubernetes.io/controller-managed-attach-detach']).toBe('true');
      expect(condition(node, 'Ready')).toMatchObject({ reason: 'KubeletReady', message: 'kubelet is posting ready status' });
      expect(node.status?.conditions?.map((c) => c.type)).toEqual(['MemoryPressure', 'DiskPressure', 'PIDPressure', 'Ready']);
      expect(condition(node, 'MemoryPressure')).toMatchObject({ status: 'False', reason: 'KubeletHasSufficientMemory' });
      expect(node.status?.nodeInfo?.containerRuntimeVersion).toMatch(runtime.runtimeVersion);
      expect(node.status?.features).toEqual(runtime.features);
      expect(node.status?.nodeInfo?.kubeletVersion).toMatch(/^v1\.37\.0-statelet\./);
      expect(node.status?.daemonEndpoints?.kubeletEndpoint?.Port).toBe(agent!.kubeletPort);
      expect(node.status?.capacity?.pods).toBe('110');
      // Allocatable is capacity less the reservations (and the 100Mi hard eviction threshold).
      const cores = Number(node.status?.capacity?.cpu);
      expect(node.status?.allocatable?.cpu).toBe(`${cores * 1000 - 500}m`);
      const ki = (q: string | undefined) => Number(q?.replace(/Ki$/, ''));
      expect(ki(node.status?.capacity?.memory) - ki(node.status?.allocatable?.memory)).toBe(512 * 1024 + 100 * 1024);
      expect(node.status?.addresses?.find((a) => a.type === 'Hostname')?.address).toBe(NODE);
    });

    it('keeps a Lease owned by the Node and renews it', async ({ skip }) => {
      if (!cp) return skip();
      const node = (await cp.waitFor<V1Node>(nodes, NODE, (n) => !!n))!;
      const first = (await cp.waitFor<V1Lease>(leases, NODE, (l) => !!l?.spec?.renewTime))!;
      expect(first.spec).toMatchObject({ holderIdentity: NODE, leaseDurationSeconds: 40 });
      expect(first.metadata?.ownerReferences).toEqual([expect.objectContaining({ kind: 'Node', name: NODE, uid: node.metadata?.uid })]);
      const renewed = await cp.waitFor<V1Lease>(leases, NODE, (l) => String(l?.spec?.renewTime) !== String(first.spec?.renewTime), 20_000);
      expect(new Date(String(renewed!.spec!.renewTime)).getTime()).toBeGreaterThan(new Date(String(first.spec!.renewTime)).getTime());
    });

    it('runs a pod bound to it and writes its status: Running, podIP, conditions, container statuses', async ({ skip }) => {
      if (!cp) return skip();
      const namespace = await cp.namespace('run');
      await cp.core.createNamespacedPod({
        namespace,
        body: {
          metadata: { name: 'web' },
          spec: { nodeName: NODE, containers: [{ name: 'app', image: runtime.image, command: ['sh', '-c', 'while true; do sleep 1; done'] }] },
        },
      });
      const pod = (await cp.waitFor<V1Pod>(pods(namespace), 'web', (p) => p?.status?.phase === 'Running' && !!p.status.podIP))!;
      expect(pod.status?.hostIP).toBeTruthy();
      expect(pod.status?.conditions?.find((c) => c.type === 'Ready')?.status).toBe('True');
      expect(pod.status?.containerStatuses?.[0]).toMatchObject({ name: 'app', ready: true, restartCount: 0, state: { running: expect.anything() } });
      const wide = await cp.kubectl(['get', 'pod', 'web', '-n', namespace, '-o', 'wide']);
      expect(wide).toMatch(new RegExp(`web\\s+1/1\\s+Running\\s+0\\s+\\S+\\s+${pod.status!.podIP!.replace(/\./g, '\\.')}\\s+${NODE}`));
    });

    it("keeps each pod inside the boundaries it asks for, as kubectl exec shows: user and group, runAsNonRoot, a read-only root, capabilities, its own pid 1, CPU and memory limits, an OOM kill", { timeout: 150_000 }, async ({ skip }) => {
      if (!cp) return skip();
      const namespace = await cp.namespace('bounds');
      const sleeper = { image: runtime.image, command: ['sh', '-c', "trap 'exit 0' TERM; while true; do sleep 1; done"] };
      const create = (name: string, spec: Record<string, unknown>, container: Record<string, unknown> = {}) =>
        cp!.core.createNamespacedPod({ namespace, body: { metadata: { name }, spec: { nodeName: NODE, terminationGracePeriodSeconds: 2, ...spec, containers: [{ name: 'app', ...sleeper, ...container }] } } });
      await create('ids', { securityContext: { runAsUser: 1000, runAsGroup: 3000 } });
      await create('nonroot', { securityContext: { runAsNonRoot: true } });
      await create('readonly', {}, { securityContext: { readOnlyRootFilesystem: true } });
      await create('nocaps', {}, { securityContext: { capabilities: { drop: ['ALL'] } } });
      await create('limited', {}, { resources: { limits: { cpu: '100m', memory: '64Mi' } } });
      await create('oom', {}, { command: ['dd', 'if=/dev/zero', 'of=/dev/null', 'bs=200M', 'count=1'], resources: { limits: { memory: '32Mi' } } });
      const exec = (pod: string, script: string) => cp!.kubectl(['exec', '-n', namespace, pod, '--', 'sh', '-c', script]);
      const running = (pod: string) => cp!.waitFor<V1Pod>(pods(namespace), pod, (p) => !!p?.status?.containerStatuses?.[0]?.state?.running);

      await running('ids');
      expect(await exec('ids', 'id -u; id -g')).toBe('1000\n3000\n');
      const nonroot = (await cp.waitFor<V1Pod>(pods(namespace), 'nonroot', (p) => p?.status?.containerStatuses?.[0]?.state?.waiting?.reason === 'CreateContainerConfigError'))!;
      expect(nonroot.status?.containerStatuses?.[0]?.state?.waiting?.message).toBe(
        `container has runAsNonRoot and image will run as root (pod: "nonroot_${namespace}(${nonroot.metadata!.uid})", container: app)`,
      );
      await running('readonly');
      await expect(exec('readonly', 'touch /file')).rejects.toThrow(/Read-only file system/);
      await running('nocaps');
      expect(await exec('nocaps', 'grep CapEff /proc/self/status')).toBe('CapEff:\t0000000000000000\n');
      // Its own pid namespace: pid 1 is the container's command, not the sandbox's pause process.
      expect(await exec('nocaps', 'cat /proc/1/cmdline')).toContain('while true');
      await running('limited');
      const cgroup = (v2: string, v1: string) => exec('limited', `cat /sys/fs/cgroup/${v2} 2>/dev/null || cat /sys/fs/cgroup/${v1}`);
      expect((await cgroup('cpu.max', 'cpu/cpu.cfs_quota_us')).split(/\s+/)[0]).toBe('10000');
      expect((await cgroup('memory.max', 'memory/memory.limit_in_bytes')).trim()).toBe('67108864');
      // containerd's shim reports the task's exit and its OOM as two events with no order between
      // them: a status read in between says Error, and the next read of the same container says
      // OOMKilled (the kubelet shows the same until its next sync). So wait for the runtime's last word.
      const oomKilled = (p: V1Pod | null) => p?.status?.containerStatuses?.[0]?.lastState?.terminated?.reason === 'OOMKilled';
      const oom = (await cp.waitFor<V1Pod>(pods(namespace), 'oom', oomKilled, 60_000))!;
      expect(oom.status?.containerStatuses?.[0]?.restartCount).toBeGreaterThanOrEqual(1);
      expect(oom.status?.containerStatuses?.[0]?.lastState?.terminated).toMatchObject({ reason: 'OOMKilled', exitCode: 137 });
    });

    it('stops a deleted pod within its grace period and then removes it from the API', async ({ skip }) => {
      if (!cp) return skip();
      const namespace = await cp.namespace('delete');
      await cp.core.createNamespacedPod({
        namespace,
        body: {
          metadata: { name: 'graceful' },
          spec: {
            nodeName: NODE,
            terminationGracePeriodSeconds: 5,
            containers: [{ name: 'app', image: runtime.image, command: ['sh', '-c', "trap 'sleep 1; exit 0' TERM; while true; do sleep 1; done"] }],
          },
        },
      });
      await cp.waitFor<V1Pod>(pods(namespace), 'graceful', (p) => p?.status?.phase === 'Running');
      const started = Date.now();
      await cp.core.deleteNamespacedPod({ namespace, name: 'graceful' });
      const marked = await cp.core.readNamespacedPod({ namespace, name: 'graceful' });
      expect(marked.metadata?.deletionTimestamp).toBeTruthy();
      await cp.waitFor<V1Pod>(pods(namespace), 'graceful', (p) => p === null, 20_000);
      // The agent let the container run its TERM trap (about 1 s) before deleting the object.
      expect(Date.now() - started).toBeGreaterThanOrEqual(1_000);
      await agent!.waitForLog(/Deleted the pod from the API: it has terminated.*graceful/);
    });

    it("gives a static pod its mirror pod, with the static pod's status; re-creates it when deleted and deletes it with the static pod", { timeout: 60_000 }, async ({ skip }) => {
      if (!cp) return skip();
      const name = `static-web-${NODE}`;
      const mirror = (await cp.waitFor<V1Pod>(pods('default'), name, (p) => p?.status?.phase === 'Running', 15_000).catch((err) => {
        throw new Error(`${err}\n${agent!.output()}`);
      }))!;
      expect(mirror.metadata?.annotations?.['kubernetes.io/config.mirror']).toBeTruthy();
      expect(mirror.metadata?.ownerReferences).toEqual([expect.objectContaining({ kind: 'Node', name: NODE, controller: true })]);
      expect(mirror.spec?.nodeName).toBe(NODE);
      expect(mirror.status?.containerStatuses?.[0]).toMatchObject({ name: 'web', ready: true });
      // Deleted by a user: the agent creates it again (a new object) and keeps the pod running.
      await cp.core.deleteNamespacedPod({ namespace: 'default', name, gracePeriodSeconds: 0 });
      const again = (await cp.waitFor<V1Pod>(pods('default'), name, (p) => !!p && p.metadata?.uid !== mirror.metadata?.uid && p.status?.phase === 'Running'))!;
      expect(again.metadata?.annotations?.['kubernetes.io/config.mirror']).toBe(mirror.metadata?.annotations?.['kubernetes.io/config.mirror']);
      // The static pod goes: so does its mirror.
      await unlink(path.join(manifests, 'static-web.yaml'));
      await cp.waitFor<V1Pod>(pods('default'), name, (p) => p === null, 30_000);
    });

    it('runs the pod --manifest-url serves as a static pod, with its mirror pod, and stops both when the URL no longer serves it', { timeout: 60_000 }, async ({ skip }) => {
      if (!cp) return skip();
      const name = `url-web-${NODE}`;
      const mirror = (await cp.waitFor<V1Pod>(pods('default'), name, (p) => p?.status?.phase === 'Running', 30_000))!;
      expect(mirror.metadata?.annotations).toMatchObject({ 'kubernetes.io/config.source': 'http', 'kubernetes.io/config.mirror': expect.any(String) });
      expect(mirror.status?.containerStatuses?.[0]).toMatchObject({ name: 'web', ready: true });
      served = '';
      await cp.waitFor<V1Pod>(pods('default'), name, (p) => p === null, 30_000);
    });

    it('rejects a pod asking more CPU than the node has: Failed with OutOfcpu, never started', async ({ skip }) => {
      if (!cp) return skip();
      const namespace = await cp.namespace('admit');
      await cp.core.createNamespacedPod({
        namespace,
        body: {
          metadata: { name: 'greedy' },
          spec: { nodeName: NODE, containers: [{ name: 'app', image: runtime.image, command: ['sleep', '3600'], resources: { requests: { cpu: '512' } } }] },
        },
      });
      const pod = (await cp.waitFor<V1Pod>(pods(namespace), 'greedy', (p) => p?.status?.phase === 'Failed'))!;
      expect(pod.status?.reason).toBe('OutOfcpu');
      expect(pod.status?.message).toMatch(/^Pod was rejected: Node didn't have enough resource: cpu, requested: 512000, used: \d+, capacity: \d+$/);
      expect(pod.status?.containerStatuses ?? []).toEqual([]);
    });

    it("shows a crash-looping container's restarts and CrashLoopBackOff in the API", { timeout: 60_000 }, async ({ skip }) => {
      if (!cp) return skip();
      const namespace = await cp.namespace('crash');
      await cp.core.createNamespacedPod({
        namespace,
        body: { metadata: { name: 'crasher' }, spec: { nodeName: NODE, containers: [{ name: 'app', image: runtime.image, command: ['sh', '-c', 'exit 3'] }] } },
      });
      const pod = (await cp.waitFor<V1Pod>(
        pods(namespace),
        'crasher',
        (p) => (p?.status?.containerStatuses?.[0]?.restartCount ?? 0) >= 1 && p?.status?.containerStatuses?.[0]?.state?.waiting?.reason === 'CrashLoopBackOff',
        40_000,
      ))!;
      const status = pod.status!.containerStatuses![0]!;
      expect(status.state?.waiting?.message).toMatch(/^back-off \d+s restarting failed container=app pod=crasher_/);
      expect(status.lastState?.terminated).toMatchObject({ exitCode: 3, reason: 'Error' });
      expect(pod.status?.phase).toBe('Running');
      const table = await cp.kubectl(['get', 'pod', 'crasher', '-n', namespace]);
      expect(table).toMatch(/crasher\s+0\/1\s+CrashLoopBackOff\s+[1-9]/);
      // The crash loop's events: one BackOff Event whose count grows, not one object per back-off.
      const listed = async () => (await cp!.core.listNamespacedEvent({ namespace })).items;
      await waitFor(async () => (await listed()).some((e) => e.reason === 'BackOff' && (e.count ?? 0) >= 2), 'a BackOff event counted twice', 40_000);
      const all = await listed();
      expect(all.filter((e) => e.reason === 'BackOff')).toHaveLength(1);
      const started = all.find((e) => e.reason === 'Started')!;
      expect(started).toMatchObject({
        type: 'Normal',
        message: 'Started container app',
        involvedObject: { kind: 'Pod', name: 'crasher', fieldPath: 'spec.containers{app}', uid: pod.metadata?.uid },
        source: { component: 'kubelet', host: NODE },
      });
      expect(all.find((e) => e.reason === 'BackOff')!.message).toBe(`Back-off restarting failed container app in pod crasher_${namespace}(${pod.metadata?.uid})`);
    });

    it('holds Ready False until a readiness gate set by a controller is True; puts back a condition of its own changed behind it', { timeout: 90_000 }, async ({ skip }) => {
      if (!cp) return skip();
      const namespace = await cp.namespace('gates');
      await cp.core.createNamespacedPod({
        namespace,
        body: {
          metadata: { name: 'gated' },
          spec: { nodeName: NODE, readinessGates: [{ conditionType: 'example.com/lb' }], containers: [{ name: 'app', image: runtime.image, command: ['sleep', '3600'] }] },
        },
      });
      const ready = (p: V1Pod | null) => p?.status?.conditions?.find((c) => c.type === 'Ready');
      const held = (await cp.waitFor<V1Pod>(pods(namespace), 'gated', (p) => ready(p)?.reason === 'ReadinessGatesNotReady'))!;
      expect(ready(held)).toMatchObject({ status: 'False', message: 'corresponding condition of pod readiness gate "example.com/lb" does not exist.' });
      expect(held.status?.conditions?.find((c) => c.type === 'ContainersReady')?.status).toBe('True');
      // The load balancer's controller says yes: the agent keeps its condition and turns Ready.
      const conditions = [...(held.status?.conditions ?? []), { type: 'example.com/lb', status: 'True', lastTransitionTime: new Date() }];
      await cp.core.patchNamespacedPodStatus(
        { namespace, name: 'gated', body: { status: { conditions } } },
        setHeaderOptions('Content-Type', PatchStrategy.StrategicMergePatch),
      );
      const open = (await cp.waitFor<V1Pod>(pods(namespace), 'gated', (p) => ready(p)?.status === 'True'))!;
      expect(open.status?.conditions?.find((c) => c.type === 'example.com/lb')?.status).toBe('True');
      // Ready True has no reason or message: the patch removes those it had (conditions merge field by field).
      expect(ready(open)?.reason).toBeUndefined();
      expect(ready(open)?.message).toBeUndefined();
      // A condition of the node's changed behind it is put back at its next status resync (every 10 s).
      await cp.core.patchNamespacedPodStatus(
        { namespace, name: 'gated', body: { status: { conditions: [{ type: 'ContainersReady', status: 'False', reason: 'ChangedBehind' }] } } },
        setHeaderOptions('Content-Type', PatchStrategy.StrategicMergePatch),
      );
      const back = (await cp.waitFor<V1Pod>(pods(namespace), 'gated', (p) => p?.status?.conditions?.find((c) => c.type === 'ContainersReady')?.status === 'True', 30_000))!;
      expect(back.status?.conditions?.find((c) => c.type === 'ContainersReady')?.reason).toBeUndefined();
    });

    it('records the node events: Starting, then the conditions as they are first written', async ({ skip }) => {
      if (!cp) return skip();
      const nodeEvents = async () => (await cp!.core.listNamespacedEvent({ namespace: 'default' })).items.filter((e) => e.involvedObject.kind === 'Node' && e.involvedObject.name === NODE);
      await waitFor(async () => (await nodeEvents()).some((e) => e.reason === 'NodeReady'), 'the NodeReady event');
      const reasons = (await nodeEvents()).map((e) => e.reason);
      expect(reasons).toEqual(expect.arrayContaining(['Starting', 'NodeHasSufficientMemory', 'NodeHasNoDiskPressure', 'NodeHasSufficientPID', 'NodeReady']));
      expect((await nodeEvents()).find((e) => e.reason === 'NodeReady')?.message).toBe(`Node ${NODE} status is now: NodeReady`);
    });

    it('counts its API requests, status writes and events on /metrics', async ({ skip }) => {
      if (!cp) return skip();
      await cp.waitFor<V1Node>(nodes, NODE, (n) => condition(n, 'Ready')?.status === 'True');
      const metrics = await (await fetch(`http://127.0.0.1:${agent!.readOnlyPort}/metrics`)).text();
      const value = (pattern: RegExp) => Number(pattern.exec(metrics)?.[1] ?? NaN);
      expect(value(/^rest_client_requests_total\{method="PUT",resource="leases",code="200"\} (\d+)$/m)).toBeGreaterThanOrEqual(1);
      expect(value(/^rest_client_requests_total\{method="PATCH",resource="nodes\/status",code="200"\} (\d+)$/m)).toBeGreaterThanOrEqual(1);
      expect(value(/^statelet_events_written_total (\d+)$/m)).toBeGreaterThan(0);
      expect(value(/^statelet_pod_status_queued (\d+)$/m)).toBeGreaterThanOrEqual(0);
      // The kubelet's own names: the node, and every CRI call counted by operation.
      expect(value(new RegExp(`^kubelet_node_name\\{node="${NODE}"\\} (\\d+)$`, 'm'))).toBe(1);
      expect(value(/^kubelet_runtime_operations_total\{operation_type="create_container"\} (\d+)$/m)).toBeGreaterThanOrEqual(1);
      expect(value(/^kubelet_runtime_operations_duration_seconds_count\{operation_type="list_podsandbox"\} (\d+)$/m)).toBeGreaterThanOrEqual(1);
      expect(value(/^kubelet_started_containers_total\{container_type="container"\} (\d+)$/m)).toBeGreaterThanOrEqual(1);
      expect(value(/^kubelet_pleg_relist_duration_seconds_count (\d+)$/m)).toBeGreaterThanOrEqual(1);
    });

    it('probes readiness as soon as the container runs: Ready long before a 20 s probe period', { timeout: 60_000 }, async ({ skip }) => {
      if (!cp) return skip();
      const namespace = await cp.namespace('ready');
      await cp.core.createNamespacedPod({
        namespace,
        body: {
          metadata: { name: 'probed' },
          spec: {
            nodeName: NODE,
            containers: [{ name: 'app', image: runtime.image, command: ['sh', '-c', 'while true; do sleep 1; done'], readinessProbe: { exec: { command: ['true'] }, periodSeconds: 20 } }],
          },
        },
      });
      const pod = (await cp.waitFor<V1Pod>(pods(namespace), 'probed', (p) => p?.status?.conditions?.find((c) => c.type === 'Ready')?.status === 'True'))!;
      const startedAt = Date.parse(String(pod.status!.containerStatuses![0]!.state!.running!.startedAt));
      const readyAt = Date.parse(String(pod.status!.conditions!.find((c) => c.type === 'Ready')!.lastTransitionTime));
      // The API's times are whole seconds; a first probe a period later would make this ≥ 20 s.
      expect(readyAt - startedAt).toBeLessThan(10_000);
    });

    // Only where the runtime can be made to hang from outside (containerd: its daemon stopped).
    const freeze = runtime.freeze;
    if (freeze) it('turns the Node NotReady with the kubelet\'s message while the runtime does not answer, and Ready again after', { timeout: 120_000 }, async ({ skip }) => {
      if (!cp) return skip();
      await cp.waitFor<V1Node>(nodes, NODE, (n) => condition(n, 'Ready')?.status === 'True');
      const thaw = await freeze();
      try {
        const down = (await cp.waitFor<V1Node>(nodes, NODE, (n) => condition(n, 'Ready')?.status === 'False', 60_000))!;
        expect(condition(down, 'Ready')).toMatchObject({ reason: 'KubeletNotReady', message: expect.stringContaining('container runtime is down') });
      } finally {
        await thaw();
      }
      await cp.waitFor<V1Node>(nodes, NODE, (n) => condition(n, 'Ready')?.status === 'True', 60_000);
    });

    it('gives containers their environment from ConfigMaps, Secrets, the downward API and the kubernetes Service; a missing key waits as CreateContainerConfigError until it exists', { timeout: 90_000 }, async ({ skip }) => {
      if (!cp) return skip();
      const namespace = await cp.namespace('env');
      await cp.core.createNamespacedConfigMap({ namespace, body: { metadata: { name: 'settings' }, data: { MODE: 'fast', LEVEL: '3' } } });
      await cp.core.createNamespacedSecret({ namespace, body: { metadata: { name: 'creds' }, stringData: { user: 'ana' } } });
      // The container checks its own environment and exits 1 (a crash loop) if anything is off.
      const kubernetes = await cp.core.readNamespacedService({ namespace: 'default', name: 'kubernetes' });
      const check = [
        'test "$MODE" = fast && test "$CFG_LEVEL" = 3 && test "$USER_NAME" = ana && test "$POD_NAME" = env-pod',
        'test "$POD_NS" = "$EXPECTED_NS" && test -n "$POD_IP" && test "$GREETING" = "hi env-pod"',
        `test "$KUBERNETES_SERVICE_HOST" = ${kubernetes.spec!.clusterIP} && test "$KUBERNETES_SERVICE_PORT" = 443`,
      ].join(' && ') + ' || exit 1; while true; do sleep 1; done';
      await cp.core.createNamespacedPod({
        namespace,
        body: {
          metadata: { name: 'env-pod' },
          spec: {
            nodeName: NODE,
            restartPolicy: 'Never',
            containers: [
              {
                name: 'app',
                image: runtime.image,
                command: ['sh', '-c', check],
                envFrom: [{ configMapRef: { name: 'settings' } }, { prefix: 'CFG_', configMapRef: { name: 'settings' } }],
                env: [
                  { name: 'USER_NAME', valueFrom: { secretKeyRef: { name: 'creds', key: 'user' } } },
                  { name: 'POD_NAME', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } },
                  { name: 'POD_NS', valueFrom: { fieldRef: { fieldPath: 'metadata.namespace' } } },
                  { name: 'POD_IP', valueFrom: { fieldRef: { fieldPath: 'status.podIP' } } },
                  { name: 'EXPECTED_NS', value: namespace },
                  { name: 'GREETING', value: 'hi $(POD_NAME)' },
                ],
              },
            ],
          },
        },
      });
      const running = (await cp.waitFor<V1Pod>(pods(namespace), 'env-pod', (p) => p?.status?.phase !== 'Pending' && p?.status?.phase !== undefined, 30_000))!;
      expect(running.status?.phase).toBe('Running');

      await cp.core.createNamespacedPod({
        namespace,
        body: {
          metadata: { name: 'needs-key' },
          spec: { nodeName: NODE, containers: [{ name: 'app', image: runtime.image, command: ['sleep', '3600'], env: [{ name: 'TOKEN', valueFrom: { secretKeyRef: { name: 'creds', key: 'token' } } }] }] },
        },
      });
      const waiting = (await cp.waitFor<V1Pod>(pods(namespace), 'needs-key', (p) => p?.status?.containerStatuses?.[0]?.state?.waiting?.reason === 'CreateContainerConfigError'))!;
      expect(waiting.status!.containerStatuses![0]!.state!.waiting!.message).toBe(`couldn't find key token in Secret ${namespace}/creds`);
      await cp.core.replaceNamespacedSecret({ namespace, name: 'creds', body: { metadata: { name: 'creds' }, stringData: { user: 'ana', token: 't0k3n' } } });
      await cp.waitFor<V1Pod>(pods(namespace), 'needs-key', (p) => p?.status?.phase === 'Running', 40_000);
      // The Secret's values never reach the agent's log.
      expect(agent!.output()).not.toContain('t0k3n');
    });

    it("gives pods the cluster's DNS in /etc/resolv.conf by dnsPolicy, with dnsConfig merged", { timeout: 60_000 }, async ({ skip }) => {
      if (!cp) return skip();
      const namespace = await cp.namespace('dns');
      const checks = [
        `grep -q '^nameserver 10.96.0.10$' /etc/resolv.conf`,
        `grep -q '^search ${namespace}.svc.cluster.local svc.cluster.local cluster.local' /etc/resolv.conf`,
        `grep -q 'extra.example' /etc/resolv.conf`,
        `grep -q '^options.*ndots:2' /etc/resolv.conf`,
      ].join(' && ');
      await cp.core.createNamespacedPod({
        namespace,
        body: {
          metadata: { name: 'resolver' },
          spec: {
            nodeName: NODE,
            restartPolicy: 'Never',
            dnsConfig: { searches: ['extra.example'], options: [{ name: 'ndots', value: '2' }] },
            containers: [{ name: 'app', image: runtime.image, command: ['sh', '-c', `${checks} || exit 1; while true; do sleep 1; done`] }],
          },
        },
      });
      const pod = (await cp.waitFor<V1Pod>(pods(namespace), 'resolver', (p) => p?.status?.phase === 'Running' || p?.status?.phase === 'Failed', 30_000))!;
      expect(pod.status?.phase).toBe('Running');
    });

    it('writes each pod its /etc/hosts (its own name on its IP, subdomain and host aliases) and removes the file with the pod', { timeout: 60_000 }, async ({ skip }) => {
      if (!cp) return skip();
      const namespace = await cp.namespace('hosts');
      const checks = [
        `grep -q 'db-0.db.${namespace}.svc.cluster.local' /etc/hosts`,
        `grep -q '^10.9.9.9' /etc/hosts`,
        `grep -q 'api.local' /etc/hosts`,
        `grep -q '^127.0.0.1' /etc/hosts`,
      ].join(' && ');
      await cp.core.createNamespacedPod({
        namespace,
        body: {
          metadata: { name: 'named' },
          spec: {
            nodeName: NODE,
            hostname: 'db-0',
            subdomain: 'db',
            restartPolicy: 'Never',
            terminationGracePeriodSeconds: 1,
            hostAliases: [{ ip: '10.9.9.9', hostnames: ['api.local'] }],
            containers: [{ name: 'app', image: runtime.image, command: ['sh', '-c', `${checks} || exit 1; trap 'exit 0' TERM; while true; do sleep 1; done`] }],
          },
        },
      });
      const pod = (await cp.waitFor<V1Pod>(pods(namespace), 'named', (p) => p?.status?.phase === 'Running' || p?.status?.phase === 'Failed', 30_000))!;
      expect(pod.status?.phase).toBe('Running');
      const podDir = path.join(agent!.rootDir, 'pods', pod.metadata!.uid!);
      expect(await readFile(path.join(podDir, 'etc-hosts'), 'utf8')).toMatch(new RegExp(`^${pod.status!.podIP!.replace(/\./g, '\\.')}\tdb-0\.db\.`, 'm'));
      await cp.core.deleteNamespacedPod({ namespace, name: 'named' });
      await cp.waitFor<V1Pod>(pods(namespace), 'named', (p) => p === null, 30_000);
      await expect(stat(podDir)).rejects.toThrow(/ENOENT/);
    });

    it('shares an emptyDir between an init container and the main container; a read-only mount refuses writes', { timeout: 60_000 }, async ({ skip }) => {
      if (!cp) return skip();
      const namespace = await cp.namespace('emptydir');
      await cp.core.createNamespacedPod({
        namespace,
        body: {
          metadata: { name: 'shared' },
          spec: {
            nodeName: NODE,
            restartPolicy: 'Never',
            volumes: [{ name: 'work', emptyDir: {} }],
            initContainers: [{ name: 'prepare', image: runtime.image, command: ['sh', '-c', 'mkdir -p /work/out && echo ready > /work/out/state'], volumeMounts: [{ name: 'work', mountPath: '/work' }] }],
            containers: [
              {
                name: 'app',
                image: runtime.image,
                command: ['sh', '-c', "grep -q ready /data/out/state && ! touch /data/new 2>/dev/null || exit 1; trap 'exit 0' TERM; while true; do sleep 1; done"],
                volumeMounts: [{ name: 'work', mountPath: '/data', readOnly: true }],
              },
            ],
          },
        },
      });
      const pod = (await cp.waitFor<V1Pod>(pods(namespace), 'shared', (p) => p?.status?.phase === 'Running' || p?.status?.phase === 'Failed', 30_000))!;
      expect(pod.status?.phase).toBe('Running');
      const volume = path.join(agent!.rootDir, 'pods', pod.metadata!.uid!, 'volumes', 'kubernetes.io~empty-dir', 'work');
      expect(await readFile(path.join(volume, 'out', 'state'), 'utf8')).toBe('ready\n');
    });

    it('mounts ConfigMap and Secret volumes (modes, updates) and holds a pod whose ConfigMap is missing until it exists', { timeout: 180_000 }, async ({ skip }) => {
      if (!cp) return skip();
      const namespace = await cp.namespace('keyed');
      await cp.core.createNamespacedConfigMap({ namespace, body: { metadata: { name: 'settings' }, data: { MODE: 'fast' } } });
      await cp.core.createNamespacedSecret({ namespace, body: { metadata: { name: 'creds' }, stringData: { password: 'hunter2' } } });
      const check = "grep -q fast /config/MODE && grep -q hunter2 /secret/password && ! touch /config/new 2>/dev/null || exit 1; trap 'exit 0' TERM; while true; do sleep 1; done";
      await cp.core.createNamespacedPod({
        namespace,
        body: {
          metadata: { name: 'keyed' },
          spec: {
            nodeName: NODE,
            restartPolicy: 'Never',
            terminationGracePeriodSeconds: 1,
            volumes: [
              { name: 'config', configMap: { name: 'settings' } },
              { name: 'secret', secret: { secretName: 'creds', defaultMode: 0o400 } },
            ],
            containers: [
              {
                name: 'app',
                image: runtime.image,
                command: ['sh', '-c', check],
                volumeMounts: [
                  { name: 'config', mountPath: '/config' },
                  { name: 'secret', mountPath: '/secret' },
                ],
              },
              // Not root, no fsGroup: the volume's directory lets it in, the file's mode (0644) lets it read.
              { name: 'nonroot', image: runtime.image, securityContext: { runAsUser: 1000 }, command: ['sh', '-c', "trap 'exit 0' TERM; while true; do sleep 1; done"], volumeMounts: [{ name: 'config', mountPath: '/config' }] },
            ],
          },
        },
      });
      const pod = (await cp.waitFor<V1Pod>(pods(namespace), 'keyed', (p) => p?.status?.phase === 'Running' || p?.status?.phase === 'Failed', 30_000))!;
      expect(pod.status?.phase).toBe('Running');
      expect(await cp.kubectl(['exec', '-n', namespace, 'keyed', '-c', 'nonroot', '--', 'sh', '-c', 'id -u; cat /config/MODE'])).toBe('1000\nfast');
      const volumes = path.join(agent!.rootDir, 'pods', pod.metadata!.uid!, 'volumes');
      expect((await stat(path.join(volumes, 'kubernetes.io~secret', 'secret', 'password'))).mode & 0o777).toBe(0o400);
      // An update of the ConfigMap reaches the mounted file: within the object cache's TTL (1 min) and a sync (10 s here).
      await cp.core.replaceNamespacedConfigMap({ namespace, name: 'settings', body: { metadata: { name: 'settings' }, data: { MODE: 'slow' } } });
      await waitFor(async () => (await readFile(path.join(volumes, 'kubernetes.io~configmap', 'config', 'MODE'), 'utf8')) === 'slow', 'the updated ConfigMap in the volume', 90_000);
      expect(agent!.output()).not.toContain('hunter2');

      // A pod whose ConfigMap does not exist yet waits, saying why, and starts once it exists.
      await cp.core.createNamespacedPod({
        namespace,
        body: {
          metadata: { name: 'early' },
          spec: {
            nodeName: NODE,
            volumes: [{ name: 'config', configMap: { name: 'later' } }],
            containers: [{ name: 'app', image: runtime.image, command: ['sh', '-c', 'grep -q on /config/FLAG || exit 1; while true; do sleep 1; done'], volumeMounts: [{ name: 'config', mountPath: '/config' }] }],
          },
        },
      });
      const listEvents = async () => (await cp!.core.listNamespacedEvent({ namespace })).items;
      await waitFor(async () => (await listEvents()).some((e) => e.reason === 'FailedMount' && e.involvedObject.name === 'early'), 'the FailedMount event');
      const failed = (await listEvents()).find((e) => e.reason === 'FailedMount')!;
      expect(failed.message).toBe('MountVolume.SetUp failed for volume "config" : configmap "later" not found');
      const waiting = await cp.core.readNamespacedPod({ namespace, name: 'early' });
      expect(waiting.status?.containerStatuses?.[0]?.state?.waiting?.reason).toBe('ContainerCreating');
      await cp.core.createNamespacedConfigMap({ namespace, body: { metadata: { name: 'later' }, data: { FLAG: 'on' } } });
      await cp.waitFor<V1Pod>(pods(namespace), 'early', (p) => p?.status?.phase === 'Running', 40_000);
    });

    it('tells a pod about itself through a downwardAPI volume: name, labels, its memory limit', { timeout: 60_000 }, async ({ skip }) => {
      if (!cp) return skip();
      const namespace = await cp.namespace('downward');
      const check = "grep -q '^self$' /info/name && grep -q 'tier=\"front\"' /info/labels && grep -q '^64$' /info/mem || exit 1; trap 'exit 0' TERM; while true; do sleep 1; done";
      await cp.core.createNamespacedPod({
        namespace,
        body: {
          metadata: { name: 'self', labels: { tier: 'front' } },
          spec: {
            nodeName: NODE,
            restartPolicy: 'Never',
            terminationGracePeriodSeconds: 1,
            volumes: [
              {
                name: 'info',
                downwardAPI: {
                  items: [
                    { path: 'name', fieldRef: { fieldPath: 'metadata.name' } },
                    { path: 'labels', fieldRef: { fieldPath: 'metadata.labels' } },
                    { path: 'mem', resourceFieldRef: { containerName: 'app', resource: 'limits.memory', divisor: '1Mi' } },
                  ],
                },
              },
            ],
            containers: [{ name: 'app', image: runtime.image, command: ['sh', '-c', check], resources: { limits: { memory: '64Mi' } }, volumeMounts: [{ name: 'info', mountPath: '/info' }] }],
          },
        },
      });
      const pod = (await cp.waitFor<V1Pod>(pods(namespace), 'self', (p) => p?.status?.phase === 'Running' || p?.status?.phase === 'Failed', 30_000))!;
      expect(pod.status?.phase).toBe('Running');
    });

    it('mounts a hostPath volume, creating it by its type, and refuses a missing Directory with FailedMount', { timeout: 60_000 }, async ({ skip }) => {
      if (!cp) return skip();
      const namespace = await cp.namespace('hostpath');
      const shared = path.join(agent!.rootDir, 'host-data', namespace);
      await cp.core.createNamespacedPod({
        namespace,
        body: {
          metadata: { name: 'writer' },
          spec: {
            nodeName: NODE,
            restartPolicy: 'Never',
            volumes: [{ name: 'data', hostPath: { path: shared, type: 'DirectoryOrCreate' } }],
            containers: [{ name: 'app', image: runtime.image, command: ['sh', '-c', 'echo from-pod > /data/out'], volumeMounts: [{ name: 'data', mountPath: '/data' }] }],
          },
        },
      });
      const done = (await cp.waitFor<V1Pod>(pods(namespace), 'writer', (p) => p?.status?.phase === 'Succeeded' || p?.status?.phase === 'Failed', 30_000))!;
      expect(done.status?.phase).toBe('Succeeded');
      expect(await readFile(path.join(shared, 'out'), 'utf8')).toBe('from-pod\n');

      await cp.core.createNamespacedPod({
        namespace,
        body: {
          metadata: { name: 'needs-dir' },
          spec: {
            nodeName: NODE,
            volumes: [{ name: 'data', hostPath: { path: path.join(shared, 'absent'), type: 'Directory' } }],
            containers: [{ name: 'app', image: runtime.image, command: ['sleep', '3600'], volumeMounts: [{ name: 'data', mountPath: '/data' }] }],
          },
        },
      });
      await waitFor(
        async () => (await cp!.core.listNamespacedEvent({ namespace })).items.some((e) => e.reason === 'FailedMount' && e.message === `MountVolume.SetUp failed for volume "data" : hostPath ${path.join(shared, 'absent')} doesn't exist`),
        'the FailedMount event of the missing directory',
      );
    });
    it('mounts one key of a ConfigMap with subPath, and a per-pod directory of an emptyDir with subPathExpr; unmounts the volumes of the finished pod', { timeout: 60_000 }, async ({ skip }) => {
      if (!cp) return skip();
      const namespace = await cp.namespace('subpath');
      await cp.core.createNamespacedConfigMap({ namespace, body: { metadata: { name: 'app' }, data: { 'app.conf': 'mode=fast', other: 'x' } } });
      await cp.core.createNamespacedPod({
        namespace,
        body: {
          metadata: { name: 'sub' },
          spec: {
            nodeName: NODE,
            restartPolicy: 'Never',
            volumes: [
              { name: 'config', configMap: { name: 'app' } },
              { name: 'scratch', emptyDir: {} },
            ],
            containers: [
              {
                name: 'app',
                image: runtime.image,
                // It waits for the test to have seen its file: a finished pod's emptyDir goes with its volumes.
                command: ['sh', '-c', 'grep -q mode=fast /etc/app.conf && test ! -e /etc/other && echo done > /work/out || exit 1; while [ ! -e /work/stop ]; do sleep 0.2; done'],
                env: [{ name: 'POD_NAME', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } }],
                volumeMounts: [
                  { name: 'config', mountPath: '/etc/app.conf', subPath: 'app.conf' },
                  { name: 'scratch', mountPath: '/work', subPathExpr: '$(POD_NAME)' },
                ],
              },
            ],
          },
        },
      });
      const running = (await cp.waitFor<V1Pod>(pods(namespace), 'sub', (p) => p?.status?.phase === 'Running' || p?.status?.phase === 'Failed', 30_000))!;
      expect(running.status?.phase).toBe('Running');
      // subPathExpr: the pod's own directory, named by $(POD_NAME), of the emptyDir.
      const scratch = path.join(agent!.rootDir, 'pods', running.metadata!.uid!, 'volumes', 'kubernetes.io~empty-dir', 'scratch');
      await waitFor(async () => (await readFile(path.join(scratch, 'sub', 'out'), 'utf8').catch(() => '')) === 'done\n', 'the file the container wrote in its subPathExpr directory');
      await writeFile(path.join(scratch, 'sub', 'stop'), '');
      const done = (await cp.waitFor<V1Pod>(pods(namespace), 'sub', (p) => p?.status?.phase === 'Succeeded' || p?.status?.phase === 'Failed', 30_000))!;
      expect(done.status?.phase).toBe('Succeeded');
      // Finished but still there: its kube-api-access tmpfs comes off, its directory stays.
      const podDir = path.join(agent!.rootDir, 'pods', done.metadata!.uid!);
      await waitFor(async () => (await mountsUnder(podDir)).length === 0, "the finished pod's volumes unmounted");
      expect((await stat(podDir)).isDirectory()).toBe(true);
    });

    it('gives every pod its kube-api-access volume: the token authenticates to the API server with the mounted CA; on tmpfs; gone with the pod', { timeout: 90_000 }, async ({ skip }) => {
      if (!cp) return skip();
      const namespace = await cp.namespace('access');
      const out = path.join(agent!.rootDir, 'host-data', namespace);
      const SA = '/var/run/secrets/kubernetes.io/serviceaccount';
      await cp.core.createNamespacedPod({
        namespace,
        body: {
          metadata: { name: 'client' },
          spec: {
            nodeName: NODE,
            terminationGracePeriodSeconds: 1,
            // The ServiceAccount admission plugin adds the kube-api-access-* volume and its mount.
            volumes: [{ name: 'out', hostPath: { path: out, type: 'DirectoryOrCreate' } }],
            containers: [
              {
                name: 'app',
                image: runtime.image,
                command: ['sh', '-c', `cat ${SA}/token > /out/token; cat ${SA}/ca.crt > /out/ca.crt; cat ${SA}/namespace > /out/namespace; trap 'exit 0' TERM; while true; do sleep 1; done`],
                volumeMounts: [{ name: 'out', mountPath: '/out' }],
              },
            ],
          },
        },
      });
      const pod = (await cp.waitFor<V1Pod>(pods(namespace), 'client', (p) => p?.status?.phase === 'Running' || p?.status?.phase === 'Failed', 30_000))!;
      expect(pod.status?.phase).toBe('Running');
      const access = pod.spec!.volumes!.find((v) => v.name.startsWith('kube-api-access-'))!;
      await waitFor(async () => (await readFile(path.join(out, 'namespace'), 'utf8').catch(() => '')) === namespace, 'the files the container copied');
      const token = await readFile(path.join(out, 'token'), 'utf8');
      const answer = await getWithToken(cp.server, '/api', token, await readFile(path.join(out, 'ca.crt')));
      expect(answer.status).toBe(200);
      expect(JSON.parse(answer.body)).toMatchObject({ kind: 'APIVersions' });
      expect(jwtClaims(token)).toMatchObject({ sub: `system:serviceaccount:${namespace}:default`, 'kubernetes.io': { pod: { name: 'client', uid: pod.metadata!.uid } } });
      expect(agent!.output()).not.toContain(token);
      const podDir = path.join(agent!.rootDir, 'pods', pod.metadata!.uid!);
      const volume = path.join(podDir, 'volumes', 'kubernetes.io~projected', access.name);
      expect((await stat(path.join(volume, 'token'))).mode & 0o777).toBe(0o644);
      // The agent runs as root in CI: the projection is on tmpfs, as the kubelet's.
      if (process.getuid?.() === 0) expect(await mountsUnder(podDir)).toEqual([volume]);

      await cp.core.deleteNamespacedPod({ namespace, name: 'client' });
      await cp.waitFor<V1Pod>(pods(namespace), 'client', (p) => p === null, 30_000);
      await waitFor(async () => !(await stat(podDir).catch(() => null)), "the pod's directory removed");
      expect(await mountsUnder(podDir)).toEqual([]);
    });

    it("gives the CPU and memory of a pod's running containers on /metrics/resource to a metrics reader, and /stats/summary to one who may read stats", { timeout: 60_000 }, async ({ skip }) => {
      if (!cp) return skip();
      const namespace = await cp.namespace('stats');
      const work = 'mkdir -p /data; echo payload > /data/f; while true; do echo tick > /tmp/t; sleep 0.2; done';
      await cp.core.createNamespacedPod({
        namespace,
        body: {
          metadata: { name: 'worker' },
          spec: { nodeName: NODE, terminationGracePeriodSeconds: 1, containers: [{ name: 'app', image: runtime.image, command: ['sh', '-c', work] }, { name: 'side', image: runtime.image, command: ['sleep', '3600'] }] },
        },
      });
      await cp.waitFor<V1Pod>(pods(namespace), 'worker', (p) => p?.status?.phase === 'Running');
      // metrics-server scrapes the node itself (the API server's node proxy refuses this node's
      // loopback address), with a token whose role may get nodes/metrics, as system:metrics-server.
      await cp.kubectl(['create', 'clusterrole', `${namespace}-metrics`, '--verb=get', '--resource=nodes/metrics']);
      await cp.kubectl(['create', 'clusterrolebinding', `${namespace}-metrics`, `--clusterrole=${namespace}-metrics`, `--serviceaccount=${namespace}:default`]);
      const token = (await cp.core.createNamespacedServiceAccountToken({ namespace, name: 'default', body: { spec: { audiences: [], expirationSeconds: 600 } } })).status!.token!;
      const url = `https://127.0.0.1:${agent!.kubeletPort}`;
      const sampleOf = (text: string, name: string, labels: string) => Number(new RegExp(`^${name}\\{${labels}\\} (\\S+) \\d+$`, 'm').exec(text)?.[1] ?? Number.NaN);

      // The containers are in the runtime's stats once they run, and the role binding takes a
      // moment to reach the authorizer: the first scrapes may precede either.
      let scrape = { status: 0, body: '' };
      await waitFor(async () => {
        scrape = await httpsGet(`${url}/metrics/resource`, token);
        return ['app', 'side'].every((c) => sampleOf(scrape.body, 'container_memory_working_set_bytes', `container="${c}",namespace="${namespace}",pod="worker"`) > 0);
      }, 'both containers in /metrics/resource', 30_000).catch((err: Error) => {
        throw new Error(`${err.message}; last scrape: ${scrape.status}\n${scrape.body}`);
      });
      const metrics = scrape.body;
      for (const c of ['app', 'side']) expect(sampleOf(metrics, 'container_cpu_usage_seconds_total', `container="${c}",namespace="${namespace}",pod="worker"`)).toBeGreaterThan(0);
      expect(sampleOf(metrics, 'pod_cpu_usage_seconds_total', `namespace="${namespace}",pod="worker"`)).toBeGreaterThan(0);
      expect(sampleOf(metrics, 'pod_memory_working_set_bytes', `namespace="${namespace}",pod="worker"`)).toBeGreaterThan(0);
      expect(metrics).toMatch(/^node_memory_working_set_bytes [^ ]+ \d+$/m);
      expect(metrics).toMatch(/^container_start_time_seconds\{container="app",[^}]*\} [\d.e+]+$/m);
      expect(metrics).toContain('resource_scrape_error 0\n');
      expect(await httpsGet(`${url}/stats/summary`, token)).toEqual({ status: 403, body: `Forbidden (user=system:serviceaccount:${namespace}:default, verb=get, resource=nodes, subresource=stats)` });

      type Summary = { node: { nodeName: string; cpu?: object }; pods: { podRef: { name: string; namespace: string }; memory?: { workingSetBytes?: number }; containers: { name: string; memory?: { workingSetBytes?: number }; logs?: object }[] }[] };
      const adminToken = /token: (\S+)/.exec(await readFile(cp.adminKubeconfig, 'utf8'))![1]!;
      const summary = JSON.parse((await httpsGet(`${url}/stats/summary`, adminToken)).body) as Summary;
      expect(summary.node).toMatchObject({ nodeName: NODE, cpu: expect.anything() });
      const worker = summary.pods.find((p) => p.podRef.name === 'worker' && p.podRef.namespace === namespace);
      expect(worker?.memory?.workingSetBytes).toBeGreaterThan(0);
      expect(worker?.containers.map((c) => c.name).sort()).toEqual(['app', 'side']);
      expect(worker?.containers.find((c) => c.name === 'app')?.logs).toBeDefined();
      const slim = JSON.parse((await httpsGet(`${url}/stats/summary?only_cpu_and_memory=true`, adminToken)).body) as Summary;
      const slimWorker = slim.pods.find((p) => p.podRef.name === 'worker' && p.podRef.namespace === namespace);
      expect(slimWorker?.containers.every((c) => (c.memory?.workingSetBytes ?? 0) > 0 && c.logs === undefined)).toBe(true);
    });

    it('serves kubectl logs through the API server: all, --tail, --timestamps, --limit-bytes, --since, --since-time, --previous, -f to the end', { timeout: 90_000 }, async ({ skip }) => {
      if (!cp) return skip();
      const namespace = await cp.namespace('logs');
      const create = (name: string, command: string, extra: Partial<V1Pod['spec']> = {}) =>
        cp!.core.createNamespacedPod({
          namespace,
          body: { metadata: { name }, spec: { nodeName: NODE, terminationGracePeriodSeconds: 1, containers: [{ name: 'app', image: runtime.image, command: ['sh', '-c', command] }], ...extra } as V1Pod['spec'] },
        });
      await create('lines', "echo l1; echo l2; echo l3; echo l4; echo l5; trap 'exit 0' TERM; while true; do sleep 1; done");
      // First run prints "first" and fails; the restart prints "second" and stays.
      const twice = "if [ -e /data/ran ]; then echo second; trap 'exit 0' TERM; while true; do sleep 1; done; else touch /data/ran; echo first; exit 1; fi";
      await cp.core.createNamespacedPod({
        namespace,
        body: {
          metadata: { name: 'twice' },
          spec: {
            nodeName: NODE,
            terminationGracePeriodSeconds: 1,
            volumes: [{ name: 'data', emptyDir: {} }],
            containers: [{ name: 'app', image: runtime.image, command: ['sh', '-c', twice], volumeMounts: [{ name: 'data', mountPath: '/data' }] }],
          },
        },
      });
      await cp.waitFor<V1Pod>(pods(namespace), 'lines', (p) => p?.status?.phase === 'Running');
      let seen = '';
      await waitFor(async () => (seen = await cp!.kubectl(['logs', '-n', namespace, 'lines']).catch((err: Error) => err.message)) === 'l1\nl2\nl3\nl4\nl5\n', 'all five lines through kubectl logs').catch((err: Error) => {
        throw new Error(`${err.message}; last seen: ${JSON.stringify(seen)}`);
      });
      expect(await cp.kubectl(['logs', '-n', namespace, 'lines', '--tail=2'])).toBe('l4\nl5\n');
      expect(await cp.kubectl(['logs', '-n', namespace, 'lines', '--tail=1', '--timestamps'])).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{9}Z l5\n$/);
      expect(await cp.kubectl(['logs', '-n', namespace, 'lines', '--limit-bytes=4'])).toBe('l1\nl');
      expect(await cp.kubectl(['logs', '-n', namespace, 'lines', '--since=1h'])).toBe('l1\nl2\nl3\nl4\nl5\n');
      expect(await cp.kubectl(['logs', '-n', namespace, 'lines', `--since-time=${new Date(Date.now() + 3_600_000).toISOString()}`])).toBe('');

      await cp.waitFor<V1Pod>(pods(namespace), 'twice', (p) => (p?.status?.containerStatuses?.[0]?.restartCount ?? 0) >= 1 && !!p?.status?.containerStatuses?.[0]?.state?.running, 40_000);
      await waitFor(async () => (await cp!.kubectl(['logs', '-n', namespace, 'twice'])) === 'second\n', 'the current instance');
      expect(await cp.kubectl(['logs', '-n', namespace, 'twice', '--previous'])).toBe('first\n');

      // Followed while it runs; kubectl returns when the container ends.
      await create('brief', 'echo a; sleep 2; echo b', { restartPolicy: 'Never' });
      await cp.waitFor<V1Pod>(pods(namespace), 'brief', (p) => p?.status?.phase === 'Running' || p?.status?.phase === 'Succeeded');
      expect(await cp.kubectl(['logs', '-n', namespace, 'brief', '-f'])).toBe('a\nb\n');
      await expect(cp.kubectl(['logs', '-n', namespace, 'lines', '-c', 'nope'])).rejects.toThrow(/container nope is not valid for pod lines|container "nope" not found/);
    });

    it('rotates a chatty container\'s log by size, keeping at most --container-log-max-files, and kubectl logs -f follows across the rotations', { timeout: 60_000 }, async ({ skip }) => {
      if (!cp) return skip();
      const namespace = await cp.namespace('rotate');
      const LINE = 'x'.repeat(99);
      await cp.core.createNamespacedPod({
        namespace,
        body: { metadata: { name: 'chatty' }, spec: { nodeName: NODE, terminationGracePeriodSeconds: 1, containers: [{ name: 'app', image: runtime.image, command: ['sh', '-c', `trap 'exit 0' TERM; while true; do echo ${LINE}; sleep 0.01; done`] }] } },
      });
      const pod = (await cp.waitFor<V1Pod>(pods(namespace), 'chatty', (p) => p?.status?.phase === 'Running'))!;
      const logDir = path.join(agent!.rootDir, 'logs', `${namespace}_chatty_${pod.metadata!.uid}`, 'app');
      const follower = spawn(cp.kubectlPath, ['--kubeconfig', cp.adminKubeconfig, 'logs', '-f', '-n', namespace, 'chatty']);
      let followed = '';
      follower.stdout.on('data', (chunk: Buffer) => (followed += chunk.toString()));
      // Two rotations while following: a compressed file appears once the second one happened.
      await waitFor(async () => (await readdir(logDir)).some((name) => name.endsWith('.gz')), 'a second rotation (a compressed log)', 30_000);
      const seenBefore = followed.length;
      await waitFor(async () => followed.length > seenBefore + 16_384, 'more output followed after the rotations', 30_000);
      follower.kill();
      const lines = followed.split('\n').slice(0, -1);
      expect(lines.length).toBeGreaterThan(250);
      expect(lines.every((line) => line === LINE)).toBe(true);
      const files = await readdir(logDir);
      expect(files.length).toBeLessThanOrEqual(3);
      expect(files).toContain('0.log');
    });

    it('runs kubectl exec (output and exit code), attach and port-forward through the API server to the runtime', { timeout: 90_000 }, async ({ skip }) => {
      if (!cp) return skip();
      const namespace = await cp.namespace('stream');
      const serve = "mkdir -p /www; echo forwarded > /www/index.html; trap 'exit 0' TERM; httpd -f -p 8080 -h /www & wait";
      await cp.core.createNamespacedPod({
        namespace,
        body: { metadata: { name: 'shell' }, spec: { nodeName: NODE, terminationGracePeriodSeconds: 1, containers: [{ name: 'app', image: runtime.image, command: ['sh', '-c', serve] }] } },
      });
      await cp.waitFor<V1Pod>(pods(namespace), 'shell', (p) => p?.status?.phase === 'Running');

      const exec = await kubectlExit(cp, ['exec', '-n', namespace, 'shell', '--', 'sh', '-c', 'echo hi; echo oops >&2; exit 3']);
      expect(exec).toEqual({ code: 3, stdout: 'hi\n', stderr: expect.stringContaining('oops\n') as string });
      expect(await cp.kubectl(['exec', '-n', namespace, 'shell', '--', 'cat', '/www/index.html'])).toBe('forwarded\n');
      await expect(cp.kubectl(['exec', '-n', namespace, 'shell', '-c', 'nope', '--', 'true'])).rejects.toThrow(/container nope is not valid for pod shell|container "nope" not found/);

      // port-forward: kubectl listens locally and says where; a request there reaches httpd in the pod.
      const forwarder = spawn(cp.kubectlPath, ['--kubeconfig', cp.adminKubeconfig, 'port-forward', '-n', namespace, 'pod/shell', ':8080', '--address', '127.0.0.1']);
      try {
        let said = '';
        forwarder.stdout.on('data', (chunk: Buffer) => (said += chunk.toString()));
        await waitFor(async () => /Forwarding from 127\.0\.0\.1:(\d+)/.test(said), 'kubectl port-forward listening', 30_000);
        const local = Number(/Forwarding from 127\.0\.0\.1:(\d+)/.exec(said)![1]);
        for (let i = 0; i < 3; i++) expect(await (await fetch(`http://127.0.0.1:${local}/index.html`)).text()).toBe('forwarded\n');
      } finally {
        forwarder.kill();
      }

      // attach: the main process's output from now on; kubectl returns when the container ends.
      await cp.core.createNamespacedPod({
        namespace,
        body: { metadata: { name: 'talker' }, spec: { nodeName: NODE, restartPolicy: 'Never', terminationGracePeriodSeconds: 1, containers: [{ name: 'app', image: runtime.image, command: ['sh', '-c', 'for i in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20; do echo line-$i; sleep 0.5; done'] }] } },
      });
      await cp.waitFor<V1Pod>(pods(namespace), 'talker', (p) => p?.status?.phase === 'Running');
      const attached = await kubectlExit(cp, ['attach', '-n', namespace, 'talker']);
      expect(attached.stdout).toMatch(/^line-\d+$/m);
      expect(attached.code).toBe(0);
    });

    it("runs kubectl debug --target: an ephemeral container in the target's pid namespace, in ephemeralContainerStatuses, reached by exec, logs and attach, never restarted, stopped with the pod", { timeout: 120_000 }, async ({ skip }) => {
      if (!cp) return skip();
      const namespace = await cp.namespace('debug');
      const app = "echo the-app-process; trap 'exit 0' TERM; while true; do sleep 1; done";
      await cp.core.createNamespacedPod({
        namespace,
        body: { metadata: { name: 'target' }, spec: { nodeName: NODE, terminationGracePeriodSeconds: 1, containers: [{ name: 'app', image: runtime.image, command: ['sh', '-c', app] }] } },
      });
      await cp.waitFor<V1Pod>(pods(namespace), 'target', (p) => p?.status?.phase === 'Running');
      const ephemeral = (p: V1Pod | null, name: string) => p?.status?.ephemeralContainerStatuses?.find((s) => s.name === name);

      // kubectl debug without -i: the container is added through pods/ephemeralcontainers, and kubectl returns.
      const debug = (name: string, script: string) =>
        cp!.kubectl(['debug', '-n', namespace, 'target', `--image=${runtime.image}`, '--image-pull-policy=IfNotPresent', '--target=app', `--container=${name}`, '--', 'sh', '-c', script]);
      await debug('debugger', 'cat /proc/1/cmdline; echo; while true; do echo polo; sleep 1; done');
      const running = (await cp.waitFor<V1Pod>(pods(namespace), 'target', (p) => !!ephemeral(p, 'debugger')?.state?.running, 60_000))!;
      expect(ephemeral(running, 'debugger')).toMatchObject({ name: 'debugger', ready: false, restartCount: 0 });
      expect(ephemeral(running, 'debugger')?.started).toBeUndefined();
      expect(running.status?.phase).toBe('Running');
      expect(running.status?.containerStatuses?.map((c) => c.name)).toEqual(['app']);

      // In the app's pid namespace: pid 1 is the app's shell, as exec and the debugger's own log show.
      expect(await cp.kubectl(['exec', '-n', namespace, 'target', '-c', 'debugger', '--', 'cat', '/proc/1/cmdline'])).toContain('the-app-process');
      await waitFor(async () => (await cp!.kubectl(['logs', '-n', namespace, 'target', '-c', 'debugger'])).includes('polo'), 'the debugger logging', 30_000);
      expect(await cp.kubectl(['logs', '-n', namespace, 'target', '-c', 'debugger'])).toContain('the-app-process');

      // attach: its output from now on (kubectl stays attached until stopped here).
      const attach = spawn(cp.kubectlPath, ['--kubeconfig', cp.adminKubeconfig, 'attach', '-n', namespace, 'target', '-c', 'debugger']);
      try {
        let said = '';
        attach.stdout.on('data', (chunk: Buffer) => (said += chunk.toString()));
        await waitFor(async () => said.includes('polo'), 'kubectl attach to the debugger', 30_000);
      } finally {
        attach.kill();
      }

      // kubectl debug -i: kubectl waits for the container to run, attaches its stdin, and a shell
      // reads what is typed. sim:// processes read no input, so only a real runtime shows it.
      if (runtime.name === 'containerd') {
        const interactive = spawn(cp.kubectlPath, ['--kubeconfig', cp.adminKubeconfig, 'debug', '-i', '-n', namespace, 'target', `--image=${runtime.image}`, '--image-pull-policy=IfNotPresent', '--target=app', '--container=shell', '--', 'sh']);
        let typedOut = '';
        interactive.stdout.on('data', (chunk: Buffer) => (typedOut += chunk.toString()));
        const ended = new Promise<number | null>((resolve) => interactive.once('close', resolve));
        await cp.waitFor<V1Pod>(pods(namespace), 'target', (p) => !!ephemeral(p, 'shell')?.state?.running, 60_000);
        // Typed until the shell answers: kubectl attaches a moment after the container runs.
        await waitFor(async () => {
          interactive.stdin.write('cat /proc/1/cmdline; echo\n');
          await new Promise((resolve) => setTimeout(resolve, 300));
          return typedOut.includes('the-app-process');
        }, 'the interactive shell answering', 30_000);
        interactive.stdin.end('exit 0\n');
        expect(await ended).toBe(0);
      }

      // One that ends is not started again, whatever the pod's restart policy (Always here).
      await debug('oneshot', 'echo done; exit 3');
      const ended = (await cp.waitFor<V1Pod>(pods(namespace), 'target', (p) => !!ephemeral(p, 'oneshot')?.state?.terminated, 60_000))!;
      const first = ephemeral(ended, 'oneshot')!;
      expect(first.state?.terminated).toMatchObject({ exitCode: 3, reason: 'Error' });
      // Past a full --sync-frequency (10 s) later: the same instance, no restart.
      await new Promise((resolve) => setTimeout(resolve, 12_000));
      const later = ephemeral(await cp.core.readNamespacedPod({ namespace, name: 'target' }), 'oneshot')!;
      expect(later).toMatchObject({ restartCount: 0, containerID: first.containerID, state: { terminated: { exitCode: 3 } } });

      // Deleted: every container, the debugger too, is stopped before the pod's object goes.
      await cp.core.deleteNamespacedPod({ namespace, name: 'target' });
      await cp.waitFor<V1Pod>(pods(namespace), 'target', (p) => p === null, 60_000);
    });

    it('refuses callers of its authenticated API without credentials (401) or without the right (403), and answers those with it', { timeout: 60_000 }, async ({ skip }) => {
      if (!cp) return skip();
      const url = `https://127.0.0.1:${agent!.kubeletPort}`;
      expect((await httpsGet(`${url}/pods`)).status).toBe(401);
      expect((await httpsGet(`${url}/pods`, 'not-a-token')).status).toBe(401);
      const namespace = await cp.namespace('authz');
      const saToken = (await cp.core.createNamespacedServiceAccountToken({ namespace, name: 'default', body: { spec: { audiences: [], expirationSeconds: 600 } } })).status!.token!;
      const denied = await httpsGet(`${url}/containerLogs/${namespace}/x/y`, saToken);
      expect(denied).toEqual({ status: 403, body: `Forbidden (user=system:serviceaccount:${namespace}:default, verb=get, resource=nodes, subresource=proxy)` });
      const adminToken = /token: (\S+)/.exec(await readFile(cp.adminKubeconfig, 'utf8'))![1]!;
      const answered = await httpsGet(`${url}/pods`, adminToken);
      expect(answered.status).toBe(200);
      expect(JSON.parse(answered.body)).toMatchObject({ kind: 'PodList' });
      // Every pod the agent reports with a running container is one the runtime runs — once the
      // agent has seen the latest exits (a container of another scenario may end between the reads).
      let disagreement = '';
      await waitFor(async () => {
        const reported = (JSON.parse((await httpsGet(`${url}/pods`, adminToken)).body) as { items: V1Pod[] }).items.filter((p) => p.status?.containerStatuses?.some((c) => c.state?.running));
        const running = new Set((JSON.parse((await httpsGet(`${url}/runningpods/`, adminToken)).body) as { items: { metadata: { uid: string } }[] }).items.map((p) => p.metadata.uid));
        const missing = reported.filter((p) => !running.has(p.metadata!.uid!)).map((p) => `${p.metadata!.namespace}/${p.metadata!.name}`);
        disagreement = `reported running: ${reported.length}, not run by the runtime: ${missing.join(', ')}`;
        return reported.length > 0 && missing.length === 0;
      }, 'the running pods the agent reports among those the runtime runs').catch((err: Error) => {
        throw new Error(`${err.message}; ${disagreement}`);
      });
      expect(JSON.parse((await httpsGet(`${url}/configz`, adminToken)).body).kubeletconfig).toMatchObject({ kind: 'KubeletConfiguration', syncFrequency: '10s', containerLogMaxFiles: 3 });
      expect(agent!.output()).not.toContain(saToken);
    });

    it('refreshes a short-lived projected token before it expires (past 80 % of its 600 s)', { timeout: 11 * 60_000 }, async ({ skip }) => {
      if (!cp || !tokenPod) return skip();
      const first = tokenPod.firstToken;
      const expiresAt = Number(jwtClaims(first).exp) * 1000;
      let seen = first;
      await waitFor(
        async () => {
          seen = await readFile(tokenPod!.copy, 'utf8').catch(() => first);
          return seen !== first && seen.split('.').length === 3;
        },
        'the refreshed token in the container',
        Math.max(expiresAt - Date.now(), 1_000),
      );
      expect(Date.now()).toBeLessThan(expiresAt);
      const claims = jwtClaims(seen);
      expect(Number(claims.exp)).toBeGreaterThan(Number(jwtClaims(first).exp));
      // 80 % of 600 s, less at most 10 s of jitter.
      expect(Number(claims.iat) - Number(jwtClaims(first).iat)).toBeGreaterThanOrEqual(470);
      expect((await getWithToken(cp.server, '/api', seen, tokenPod.ca)).status).toBe(200);
    });
  });
}

interface ShortTokenPod {
  /** The container's copy of its token, refreshed every two seconds, on the host. */
  copy: string;
  firstToken: string;
  ca: Buffer;
}

/** A pod with a 600 s projected token that copies what it sees to a host directory. */
async function startShortTokenPod(cp: ControlPlane | null, node: string, image: string, rootDir: string): Promise<ShortTokenPod | undefined> {
  if (!cp) return undefined;
  const namespace = await cp.namespace('token');
  const out = path.join(rootDir, 'host-data', namespace);
  await cp.core.createNamespacedPod({
    namespace,
    body: {
      metadata: { name: 'short-token' },
      spec: {
        nodeName: node,
        terminationGracePeriodSeconds: 1,
        automountServiceAccountToken: false,
        volumes: [
          { name: 'out', hostPath: { path: out, type: 'DirectoryOrCreate' } },
          { name: 'sa', projected: { sources: [{ serviceAccountToken: { path: 'token', expirationSeconds: 600 } }, { configMap: { name: 'kube-root-ca.crt', items: [{ key: 'ca.crt', path: 'ca.crt' }] } }] } },
        ],
        containers: [
          {
            name: 'app',
            image,
            command: ['sh', '-c', "trap 'exit 0' TERM; while true; do cat /sa/token > /out/token; sleep 2; done"],
            volumeMounts: [
              { name: 'out', mountPath: '/out' },
              { name: 'sa', mountPath: '/sa' },
            ],
          },
        ],
      },
    },
  });
  const copy = path.join(out, 'token');
  await waitFor(async () => (await readFile(copy, 'utf8').catch(() => '')).split('.').length === 3, 'the short-lived token in the container', 60_000);
  return { copy, firstToken: await readFile(copy, 'utf8'), ca: Buffer.from((await cp.core.readNamespacedConfigMap({ namespace, name: 'kube-root-ca.crt' })).data!['ca.crt']!) };
}

/** A GET of the API server with a bearer token, trusting only `ca`. */
function getWithToken(server: string, urlPath: string, token: string, ca: Buffer): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = https.request(`${server}${urlPath}`, { headers: { authorization: `Bearer ${token}` }, ca, timeout: 10_000 }, (res) => {
      let body = '';
      res.on('data', (chunk: Buffer) => (body += chunk.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('error', reject);
    req.end();
  });
}

/** A GET of the agent's authenticated API (its certificate is self-signed: not checked), with a bearer token or none. */
function httpsGet(url: string, token?: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = https.request(url, { rejectUnauthorized: false, headers: token ? { authorization: `Bearer ${token}` } : {}, timeout: 10_000 }, (res) => {
      let body = '';
      res.on('data', (chunk: Buffer) => (body += chunk.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('error', reject);
    req.end();
  });
}

/** A JWT's claims (not verified: the API server's answer is the check). */
function jwtClaims(token: string): Record<string, unknown> {
  return JSON.parse(Buffer.from(token.split('.')[1] ?? '', 'base64url').toString()) as Record<string, unknown>;
}

/** The mount points at or under `dir`, as findmnt lists them. */
async function mountsUnder(dir: string): Promise<string[]> {
  const { stdout } = await promisify(execFile)('findmnt', ['-rn', '-o', 'TARGET']);
  return stdout.split('\n').map((line) => line.replace(/\\x20/g, ' ')).filter((target) => target === dir || target.startsWith(`${dir}/`));
}

/** Runs kubectl to its end and returns its exit code and output, whatever the code. */
function kubectlExit(cp: ControlPlane, args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(cp.kubectlPath, ['--kubeconfig', cp.adminKubeconfig, ...args]);
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.once('error', reject);
    child.once('close', (code) => resolve({ code, stdout, stderr }));
  });
}
