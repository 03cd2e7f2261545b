/**
 * The scale bench: simulated nodes by the hundred behind a real control plane (kube-apiserver +
 * etcd, kube-scheduler, kube-controller-manager with node IPAM), a Deployment of
 * nodes × pods-per-node replicas over them.
 *
 *   node --import tsx bench/scale.ts --faker=statelet|kwok [--nodes=100] [--pods-per-node=30] [--settle-ms=30000] [--idle-ms=30000] [--out=FILE]
 *
 * `statelet`: one `statelet --nodes=N` process on sim:// (the binary, as users run it), each node
 * with its own credentials; first one lone node the same way, for what the first node costs.
 * `kwok`: the same N Nodes made by this bench and faked by one `kwok` process (sigs.k8s.io/kwok,
 * built from Go modules at the version bench/kwok/go.mod pins; scripts/controlplane/build.mjs kwokBinary),
 * with its default stages: nodes kept Ready with Leases, pods marked Running and Ready, nothing run.
 *
 * Measured: time from the process's start to all Nodes Ready; the faker process's RSS (the mean of
 * a reading a second over the rest window) and CPU at rest (no pods), the API server's request
 * rate at rest (`apiserver_request_total`, every client: the controllers are idle then); the
 * Deployment's time to all pods Ready, pods/s, the faker's CPU per pod start; RSS and request
 * rate at rest with the pods. For statelet, every node is then
 * checked as the reliability suite checks one: its runtime (CRI, the node's sim:// socket) against
 * the pods it lists (read-only /pods) and the pods the API server bound to it.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { createWriteStream } from 'node:fs';
import { mkdir, readFile } from 'node:fs/promises';
import https from 'node:https';
import path from 'node:path';
import * as k8s from '@kubernetes/client-node';
import { CriClient } from '../src/runtime/cri/client.ts';
import { FIRST_NODE_IP } from '../src/agent/nodes.ts';
import { fromDotted, toDotted } from '../src/runtime/sim/podAddresses.ts';
import type { Pod } from '../src/api/types.ts';
import { type ControlPlane, startControlPlane } from '../test/support/controlPlane.ts';
import { notConverged, runtimeViolations } from '../test/chaos/invariants.ts';
import { STATELET_BIN, binaryLaunch } from './launch.ts';
import type { AtRest } from './scaleTable.ts';
import { LONG_RUNNING, argValue, emit, processCpuMs, progress, removeDir, round, runWorker, sleep, tempDir } from './lib.ts';

const faker = argValue('faker') ?? 'statelet';
if (faker !== 'statelet' && faker !== 'kwok') throw new Error(`--faker is statelet or kwok, not ${faker}`);
const nodeCount = Number(argValue('nodes') ?? 100);
const podsPerNode = Number(argValue('pods-per-node') ?? 30);
const settleMs = Number(argValue('settle-ms') ?? 30_000);
const idleMs = Number(argValue('idle-ms') ?? 30_000);
const PREFIX = 'hollow';
const names = Array.from({ length: nodeCount }, (_, i) => `${PREFIX}-${i}`);
const LONE = 'lone';
/** Node i's address: statelet --nodes puts its nodes at 127.0.1.1 and on. */
const nodeIp = (i: number) => toDotted(fromDotted(FIRST_NODE_IP)! + i);

async function rssMB(pid: number): Promise<number> {
  const status = await readFile(`/proc/${pid}/status`, 'utf8');
  return round(Number(/^VmRSS:\s+(\d+) kB$/m.exec(status)?.[1] ?? NaN) / 1024);
}

/** All requests the API server has answered so far (every client). */
async function apiRequests(cp: ControlPlane): Promise<number> {
  const options: https.RequestOptions = {};
  await cp.admin.applyToHTTPSOptions(options);
  const text = await new Promise<string>((resolve, reject) => {
    https
      .get(`${cp.server}/metrics`, options, (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => (body += chunk));
        res.on('end', () => resolve(body));
      })
      .on('error', reject);
  });
  let total = 0;
  for (const match of text.matchAll(/^apiserver_request_total\{[^}]*\} (\d+(?:\.\d+)?(?:e\+\d+)?)$/gm)) total += Number(match[1]);
  return total;
}

/**
 * The faker's RSS over `ms` of rest, read every second: its mean, least and most. One reading
 * would depend on its moment: a collected heap's RSS rises with what is allocated until the next
 * collection (at 100 × 30, by ~100 MB between two).
 */
async function rssAtRest(pid: number, ms: number): Promise<NonNullable<AtRest['rss']>> {
  const readings: number[] = [];
  for (const end = performance.now() + ms; performance.now() < end; await sleep(1000)) readings.push(await rssMB(pid));
  return { meanMB: round(readings.reduce((sum, mb) => sum + mb, 0) / readings.length), minMB: Math.min(...readings), maxMB: Math.max(...readings) };
}

/** The faker's CPU (% of one core), RSS and the API server's request rate over `ms` of rest. */
async function atRest(cp: ControlPlane, pid: number, ms: number): Promise<Required<AtRest>> {
  const [cpu0, req0, t0] = [await processCpuMs(pid), await apiRequests(cp), performance.now()];
  const rss = await rssAtRest(pid, ms);
  const [cpu1, req1, t1] = [await processCpuMs(pid), await apiRequests(cp), performance.now()];
  // The bench's own metrics read is one request per read: not the nodes'.
  return { cpuPercent: round(((cpu1 - cpu0) / (t1 - t0)) * 100, 2), apiRequestsPerS: round((req1 - req0 - 1) / ((t1 - t0) / 1000), 2), rss };
}

function spawnLogged(file: string, args: string[], env: NodeJS.ProcessEnv, logFile: string): ChildProcess {
  const child = spawn(file, args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
  const log = createWriteStream(logFile);
  child.stdout!.pipe(log);
  child.stderr!.pipe(log);
  return child;
}

async function stopProcess(child: ChildProcess | undefined): Promise<void> {
  if (!child || child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
  await exited;
  clearTimeout(timer);
}

/** Resolves once every named Node is Ready. */
async function nodesReady(cp: ControlPlane, wanted: readonly string[], timeoutMs: number): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  const ready = new Set<string>();
  while (performance.now() < deadline) {
    for (const node of (await cp.core.listNode()).items) {
      if (node.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True')) ready.add(node.metadata!.name!);
    }
    if (wanted.every((name) => ready.has(name))) return;
    await sleep(500);
  }
  throw new Error(`${wanted.filter((n) => !ready.has(n)).length} of ${wanted.length} Nodes not Ready after ${timeoutMs / 1000} s`);
}

/** statelet's processes: `--nodes` of them, or one lone node. */
async function startStatelet(cp: ControlPlane, dir: string, args: string[]): Promise<ChildProcess> {
  await mkdir(dir, { recursive: true });
  const launch = binaryLaunch(STATELET_BIN);
  return spawnLogged(
    process.execPath,
    [
      ...launch.nodeFlags,
      STATELET_BIN,
      '--container-runtime-endpoint=sim://',
      `--root-dir=${dir}`,
      `--pod-logs-dir=${path.join(dir, 'logs')}`,
      `--client-ca-file=${cp.kubeletClientCaFile}`,
      '--healthz-port=0',
      '--port=10250',
      '--read-only-port=10255',
      ...args,
    ],
    { ...process.env, ...launch.env },
    path.join(dir, 'statelet.log'),
  );
}

/** kwok's Nodes are made by the user: these are the ones its docs give (allocatable as a large machine). */
async function createKwokNodes(cp: ControlPlane): Promise<void> {
  for (const name of names) {
    await cp.core.createNode({
      body: {
        metadata: { name, annotations: { 'node.alpha.kubernetes.io/ttl': '0', 'kwok.x-k8s.io/node': 'fake' }, labels: { 'kubernetes.io/hostname': name, type: 'kwok' } },
        status: { allocatable: { cpu: '32', memory: '256Gi', pods: '110' }, capacity: { cpu: '32', memory: '256Gi', pods: '110' } },
      },
    });
  }
}

/** Every node as the reliability suite checks one: its runtime against its /pods and the API's pods bound to it. */
async function violations(cp: ControlPlane, dir: string, namespace: string): Promise<string[]> {
  const problems: string[] = [];
  const apiPods = (await cp.core.listNamespacedPod({ namespace })).items;
  for (const [i, name] of names.entries()) {
    const listed = ((await (await fetch(`http://${nodeIp(i)}:10255/pods`)).json()) as { items: Pod[] }).items.filter((pod) => pod.metadata.namespace === namespace);
    const client = new CriClient(`unix://${path.join(dir, name, 'sim.sock')}`);
    try {
      const runtime = { containers: await client.listContainers(), sandboxes: await client.listPodSandbox() };
      for (const v of runtimeViolations(runtime)) problems.push(`${name}: ${v.invariant}: ${v.detail}`);
      for (const reason of notConverged(listed, () => true, { containers: runtime.containers.filter((c) => listed.some((p) => p.metadata.uid === c.labels['io.kubernetes.pod.uid'])), sandboxes: runtime.sandboxes.filter((s) => listed.some((p) => p.metadata.uid === s.metadata.uid)) }, listed.length)) {
        problems.push(`${name}: ${reason}`);
      }
      const bound = apiPods.filter((pod) => pod.spec?.nodeName === name).map((pod) => pod.metadata!.uid).sort();
      const mine = listed.map((pod) => pod.metadata.uid).sort();
      if (JSON.stringify(bound) !== JSON.stringify(mine)) problems.push(`${name}: the API server binds ${bound.length} pods to it, it lists ${mine.length}`);
    } finally {
      client.close();
    }
  }
  return problems;
}

runWorker(async () => {
  const dir = await tempDir(`statelet-bench-scale-${faker}-`);
  const cp = await startControlPlane({
    nodeNames: faker === 'statelet' ? [LONE, ...names] : [],
    required: true,
    controllers: true,
    controllerManagerArgs: ['--allocate-node-cidrs=true', '--cluster-cidr=10.244.0.0/16', '--node-cidr-mask-size=24'],
  });
  if (!cp) {
    await emit({ skipped: 'the control plane cannot be built here (no Go)' });
    return;
  }
  let child: ChildProcess | undefined;
  try {
    const result: Record<string, unknown> = { faker, nodes: nodeCount, podsPerNode, settleS: settleMs / 1000, idleS: idleMs / 1000 };
    if (faker === 'statelet') {
      progress('scale: one lone node first, for what the first node costs');
      const lone = await startStatelet(cp, path.join(dir, LONE), [`--kubeconfig=${cp.nodeKubeconfig(LONE)}`, `--hostname-override=${LONE}`, '--node-ip=127.0.0.2', '--address=127.0.0.2', '--read-only-address=127.0.0.2']);
      await nodesReady(cp, [LONE], 120_000);
      await sleep(settleMs);
      result.loneNodeRssMB = (await rssAtRest(lone.pid!, idleMs)).meanMB;
      await stopProcess(lone);
      await cp.core.deleteNode({ name: LONE });
    }

    progress(`scale: ${nodeCount} ${faker} nodes`);
    const t0 = performance.now();
    if (faker === 'statelet') {
      child = await startStatelet(cp, dir, [`--nodes=${nodeCount}`, `--hostname-override=${PREFIX}`, `--kubeconfig=${path.join(path.dirname(cp.nodeKubeconfig(names[0]!)), '{node}.kubeconfig')}`, `--max-pods=${podsPerNode + 10}`]);
    } else {
      // @ts-expect-error: a plain ESM script without type declarations
      const { kwokBinary } = (await import('../scripts/controlplane/build.mjs')) as { kwokBinary(): Promise<{ binary: string; stages: string[] }> };
      const kwok = await kwokBinary();
      await createKwokNodes(cp);
      child = spawnLogged(
        kwok.binary,
        [`--kubeconfig=${cp.adminKubeconfig}`, `--config=${kwok.stages.join(',')}`, '--manage-all-nodes=false', '--manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake', '--node-lease-duration-seconds=40', '--cidr=10.244.0.1/16', '--node-ip=127.0.1.1', '--server-address=127.0.0.1:0'],
        process.env,
        path.join(dir, 'kwok.log'),
      );
    }
    await nodesReady(cp, names, 600_000);
    result.allNodesReadyS = round((performance.now() - t0) / 1000);
    progress(`scale: all ${nodeCount} Nodes Ready after ${result.allNodesReadyS} s; settling ${settleMs / 1000} s`);
    await sleep(settleMs);
    const pid = child.pid!;
    const idleNodes = await atRest(cp, pid, idleMs);
    const idleNodesRssMB = idleNodes.rss.meanMB;
    result.idleNodesRssMB = idleNodesRssMB;
    result.idleNodes = idleNodes;
    if (typeof result.loneNodeRssMB === 'number') result.rssPerIdleNodeMB = round((idleNodesRssMB - result.loneNodeRssMB) / (nodeCount - 1), 2);

    const namespace = await cp.namespace('scale');
    const replicas = nodeCount * podsPerNode;
    const labels = { app: 'scale' };
    const readyAt = new Map<string, number>();
    let allReady: () => void = () => {};
    const done = new Promise<void>((resolve) => (allReady = resolve));
    const watch = await new k8s.Watch(cp.admin).watch(
      `/api/v1/namespaces/${namespace}/pods`,
      {},
      (_type: string, pod: k8s.V1Pod) => {
        const name = pod.metadata?.name ?? '';
        if (!readyAt.has(name) && pod.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True')) {
          readyAt.set(name, performance.now());
          if (readyAt.size === replicas) allReady();
        }
      },
      () => undefined,
    );
    const cpuBefore = await processCpuMs(pid);
    const apiCpuBefore = await processCpuMs(cp.pid()!);
    const b0 = performance.now();
    await cp.admin.makeApiClient(k8s.AppsV1Api).createNamespacedDeployment({
      namespace,
      body: {
        metadata: { name: 'scale' },
        spec: {
          replicas,
          selector: { matchLabels: labels },
          template: {
            metadata: { labels },
            spec: {
              automountServiceAccountToken: false,
              terminationGracePeriodSeconds: 2,
              containers: [{ name: 'app', image: 'busybox', command: ['sh', '-c', LONG_RUNNING] }],
              ...(faker === 'kwok' ? { nodeSelector: { type: 'kwok' } } : {}),
            },
          },
        },
      },
    });
    const timeout = new Promise<never>((_, reject) => setTimeout(() => reject(new Error(`only ${readyAt.size} of ${replicas} pods Ready after 20 min`)), 20 * 60_000).unref());
    const ticker = setInterval(() => progress(`scale: ${readyAt.size} of ${replicas} pods Ready`), 10_000);
    await Promise.race([done, timeout]).finally(() => clearInterval(ticker));
    const burstS = (performance.now() - b0) / 1000;
    watch.abort();
    const cpuMs = (await processCpuMs(pid)) - cpuBefore;
    result.burst = {
      pods: replicas,
      allReadyS: round(burstS),
      podsPerS: round(replicas / burstS),
      cpuPerPodStartMs: round(cpuMs / replicas, 2),
      apiServerCpuS: round(((await processCpuMs(cp.pid()!)) - apiCpuBefore) / 1000),
    };
    progress(`scale: ${replicas} pods Ready in ${round(burstS)} s; settling ${settleMs / 1000} s`);
    await sleep(settleMs);
    const withPods = await atRest(cp, pid, idleMs);
    result.withPodsRssMB = withPods.rss.meanMB;
    result.rssPerPodKB = round(((withPods.rss.meanMB - idleNodesRssMB) * 1024) / replicas, 1);
    result.withPods = withPods;
    if (faker === 'statelet') {
      const problems = await violations(cp, dir, namespace);
      result.violations = problems.length;
      if (problems.length > 0) result.firstViolations = problems.slice(0, 10);
    }
    await emit(result);
  } finally {
    await stopProcess(child);
    await cp.close();
    await removeDir(dir);
  }
});
