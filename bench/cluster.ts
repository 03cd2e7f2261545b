/**
 * Worker: statelet on sim:// as the node of a real control plane (kube-apiserver + etcd, the
 * cluster tests' build), with the node's identity.
 *   node --expose-gc --import tsx bench/cluster.ts --n=100 --idle-ms=60000 [--volumes=none|three] [--kube-api-qps=N] [--out=FILE]
 *
 * `--volumes=none` (the default): pods without volumes (automountServiceAccountToken false);
 * `--volumes=three`: each pod mounts a ConfigMap, a Secret and the kube-api-access projection the
 * API server adds (a service-account token, the cluster CA, the namespace), as a Deployment's pod
 * usually does.
 *
 * N pods are created through the API at once (concurrent POSTs); each one's create→Running is
 * measured as a client sees it: from just before its POST to the watch event that shows it Running
 * (the agent's status write, through the API server). Requests per pod are the agent's own
 * (`rest_client_requests_total` on its /metrics) from the burst's start until it has nothing left
 * queued (statuses and events, which drain at the client's rate limits). The idle request rate is the node's heartbeat (Lease and Node status)
 * with the N pods running. The agent (and the simulated runtime) run in this process, so the CPU
 * figure includes them and this bench's own client; the control plane is another process.
 */
import * as k8s from '@kubernetes/client-node';
import { startControlPlane } from '../test/support/controlPlane.ts';
import { argValue, emit, freeLoopbackPort, IMAGE, LONG_RUNNING, memory, NODE_NAME, processCpuMs, progress, round, runWorker, sleep, startBenchAgent, stopAndClean, summarize, tempDir } from './lib.ts';
import type { ClusterResult } from './results.ts';

const n = Number(argValue('n') ?? 100);
const idleMs = Number(argValue('idle-ms') ?? 60_000);
const volumes = argValue('volumes') ?? 'none';
/** `--kube-api-qps=N`: the agent's API rate limit (burst 2N); absent: the kubelet's default 50/100. */
const kubeApiQps = argValue('kube-api-qps') ? Number(argValue('kube-api-qps')) : undefined;
if (volumes !== 'none' && volumes !== 'three') throw new Error(`--volumes is none or three, not ${volumes}`);

/** The pod's spec beyond its container command: no volumes, or three. */
function podVolumes(): Partial<k8s.V1PodSpec> & { mounts: k8s.V1VolumeMount[] } {
  if (volumes === 'none') return { automountServiceAccountToken: false, mounts: [] };
  return {
    volumes: [
      { name: 'config', configMap: { name: 'bench-config' } },
      { name: 'secret', secret: { secretName: 'bench-secret' } },
    ],
    mounts: [
      { name: 'config', mountPath: '/etc/config' },
      { name: 'secret', mountPath: '/etc/secret' },
    ],
  };
}

/** The agent's API requests so far, from its /metrics. */
async function requestsMade(port: number): Promise<{ total: number; byCall: Record<string, number> }> {
  const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
  const byCall: Record<string, number> = {};
  let total = 0;
  for (const match of text.matchAll(/^rest_client_requests_total\{method="([^"]+)",resource="([^"]+)",code="[^"]*"\} (\d+)$/gm)) {
    const key = `${match[1]} ${match[2]}`;
    byCall[key] = (byCall[key] ?? 0) + Number(match[3]);
    total += Number(match[3]);
  }
  return { total, byCall };
}

/** Waits until the agent has no status write and no event queued (its /metrics), up to 60 s. */
async function drained(port: number): Promise<void> {
  const deadline = performance.now() + 60_000;
  const queued = (text: string, name: string) => Number(new RegExp(`^${name} (\\d+)$`, 'm').exec(text)?.[1] ?? NaN);
  while (performance.now() < deadline) {
    const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
    if (queued(text, 'statelet_pod_status_queued') === 0 && queued(text, 'statelet_events_queued') === 0) return;
    await sleep(200);
  }
  throw new Error('the agent still had status writes or events queued 60 s after all pods were Running');
}

const diff = (after: Record<string, number>, before: Record<string, number>) =>
  Object.fromEntries(Object.entries(after).map(([k, v]) => [k, v - (before[k] ?? 0)]).filter(([, v]) => (v as number) > 0));

runWorker(async () => {
  const cp = await startControlPlane({ nodeNames: [NODE_NAME], required: true });
  if (!cp) {
    await emit({ skipped: 'the control plane cannot be built here (no Go)' });
    return;
  }
  const rootDir = await tempDir('statelet-bench-cluster-');
  const manifestDir = await tempDir('statelet-bench-cluster-manifests-');
  const port = await freeLoopbackPort();
  let bench: Awaited<ReturnType<typeof startBenchAgent>> | undefined;
  try {
    const namespace = await cp.namespace('bench');
    if (volumes === 'three') {
      await cp.core.createNamespacedConfigMap({ namespace, body: { metadata: { name: 'bench-config' }, data: { 'app.conf': 'mode=fast\n', level: 'info' } } });
      await cp.core.createNamespacedSecret({ namespace, body: { metadata: { name: 'bench-secret' }, stringData: { password: 'bench' } } });
    }
    const { mounts, ...volumeSpec } = podVolumes();
    bench = await startBenchAgent({ endpoint: 'sim://', manifestDir, rootDir, maxPods: n + 10, kubeconfig: cp.nodeKubeconfig(NODE_NAME), readOnlyPort: port, ...(kubeApiQps ? { kubeApi: { qps: kubeApiQps, burst: 2 * kubeApiQps } } : {}) });
    await cp.waitFor<k8s.V1Node>({ path: '/api/v1/nodes' }, NODE_NAME, (node) => node?.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false, 60_000);
    progress(`cluster: node ${NODE_NAME} Ready; creating ${n} pods through the API`);

    const sentAt = new Map<string, number>();
    const createdAt = new Map<string, number>();
    const localRunningAt = new Map<string, number>();
    bench.agent.statuses.subscribe((uid, status) => {
      const pod = bench!.agent.podManager.get(uid);
      const name = pod?.metadata.name ?? '';
      if (status?.phase === 'Running' && sentAt.has(name) && !localRunningAt.has(name)) localRunningAt.set(name, performance.now());
    });
    const runningAt = new Map<string, number>();
    let allRunning: () => void = () => {};
    const done = new Promise<void>((resolve) => (allRunning = resolve));
    const watch = await new k8s.Watch(cp.admin).watch(
      `/api/v1/namespaces/${namespace}/pods`,
      {},
      (_phase: string, pod: k8s.V1Pod) => {
        const name = pod.metadata?.name ?? '';
        if (pod.status?.phase === 'Running' && !runningAt.has(name) && sentAt.has(name)) {
          runningAt.set(name, performance.now());
          if (runningAt.size === n) allRunning();
        }
      },
      () => undefined,
    );

    const before = await requestsMade(port);
    const cpPid = cp.pid();
    const controlPlaneCpuBefore = cpPid === undefined ? 0 : await processCpuMs(cpPid);
    const cpuBefore = process.cpuUsage();
    const t0 = performance.now();
    await Promise.all(
      Array.from({ length: n }, (_, i) => {
        const name = `api-${String(i).padStart(4, '0')}`;
        sentAt.set(name, performance.now());
        return cp.core
          .createNamespacedPod({
          namespace,
          body: {
            metadata: { name },
            spec: {
              nodeName: NODE_NAME,
              terminationGracePeriodSeconds: 2,
              ...volumeSpec,
              containers: [{ name: 'app', image: IMAGE, imagePullPolicy: 'IfNotPresent', command: ['sh', '-c', LONG_RUNNING], volumeMounts: mounts }],
            },
          },
          })
          .then(() => createdAt.set(name, performance.now()));
      }),
    );
    const timeout = setTimeout(() => allRunning(), 240_000);
    await done;
    clearTimeout(timeout);
    const tAll = performance.now();
    const cpu = process.cpuUsage(cpuBefore);
    const controlPlaneCpuMs = cpPid === undefined ? null : (await processCpuMs(cpPid)) - controlPlaneCpuBefore;
    if (runningAt.size < n) throw new Error(`only ${runningAt.size} of ${n} pods were seen Running within 240 s`);
    const atRunning = await requestsMade(port);
    // The burst's work is done once the agent has nothing queued: the statuses that follow Running
    // (Ready) and the events, which drain at --event-qps; only then do its requests add up, and
    // only after that is the node idle.
    await drained(port);
    const settled = await requestsMade(port);
    const latencies = [...runningAt].map(([name, at]) => at - sentAt.get(name)!);
    // Where the time goes: the API server accepting the POST, the agent starting the pod, the status reaching a watcher.
    const createMs = [...createdAt].map(([name, at]) => at - sentAt.get(name)!);
    const localMs = [...localRunningAt].map(([name, at]) => at - createdAt.get(name)!);
    const publishMs = [...runningAt].map(([name, at]) => at - (localRunningAt.get(name) ?? at));
    const memoryAtN = memory();

    progress(`cluster: all ${n} Running; idle window ${idleMs / 1000} s`);
    const idleBefore = await requestsMade(port);
    const idleCpuStart = process.cpuUsage();
    const idleT0 = performance.now();
    await sleep(idleMs);
    const idleAfter = await requestsMade(port);
    const idleCpu = process.cpuUsage(idleCpuStart);
    const idleWall = performance.now() - idleT0;
    watch.abort();

    const result: ClusterResult = {
      n,
      volumes,
      start: {
        createToRunningMs: summarize(latencies),
        postMs: summarize(createMs),
        createdToRunningInAgentMs: summarize(localMs),
        runningInAgentToWatchMs: summarize(publishMs),
        timeToAllRunningMs: round(tAll - t0),
        podsPerSecond: round(n / ((tAll - t0) / 1000)),
        cpuMsPerPod: round((cpu.user + cpu.system) / 1000 / n),
        controlPlaneCpuMsPerPod: controlPlaneCpuMs === null ? null : round(controlPlaneCpuMs / n),
      },
      requests: {
        untilAllRunning: atRunning.total - before.total,
        untilSettled: settled.total - before.total,
        perPodStarted: round((settled.total - before.total) / n, 2),
        byCall: diff(settled.byCall, before.byCall),
      },
      memory: { atN: memoryAtN },
      idle: {
        windowS: round(idleWall / 1000),
        requestsPerMinute: round(((idleAfter.total - idleBefore.total) / idleWall) * 60_000, 2),
        byCall: diff(idleAfter.byCall, idleBefore.byCall),
        cpuPercentOfOneCore: round(((idleCpu.user + idleCpu.system) / 1000 / idleWall) * 100, 2),
      },
    };
    await emit(result);
  } finally {
    await stopAndClean(bench?.agent, rootDir, manifestDir);
    await cp.close();
  }
});
