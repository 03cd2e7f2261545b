/**
 * Worker: node agents as users run them, each a process of its own, as the node of a real control
 * plane (kube-apiserver + etcd, the cluster tests' build) on a private containerd
 * (test/containerd/harness.ts):
 *   node --import tsx bench/agent.ts --n=100 --runs=3 --idle-ms=10000 [--settle-ms=5000] [--agents=statelet,kubelet,cri] [--count-cri] [--out=FILE]
 *
 * The agents (`--agents`, default statelet), alternating run by run so that the machine's noise
 * falls on each alike (run 1: statelet, kubelet; run 2: kubelet, statelet; …):
 *   - statelet: the built `statelet` binary (dist/, made first by scripts/build.mjs);
 *   - kubelet: the upstream kubelet of the control plane's release, built from the same module
 *     graph (scripts/controlplane/build.mjs, cached; test/support/upstreamKubelet.ts configures it);
 *   - cri: no agent, the same burst sent straight to the runtime over CRI (RunPodSandbox,
 *     CreateContainer, StartContainer for every pod at once; then stopped and removed): what the
 *     runtime alone takes, which both agents wait for.
 * Both agents advertise and serve on an address this worker adds to `lo` (the kubelet refuses a
 * loopback node IP). Each agent run starts a fresh agent (its own root directory), waits for the
 * Node to be Ready, and then:
 *   1. RSS with no pods;
 *   2. N pods created through the API at once (bound by spec.nodeName, the image already in
 *      containerd): create→Ready for each, from just before its POST to the watch event that shows
 *      it Ready; pods/s to all Ready; the agent's CPU (user + system, /proc/<pid>/stat) from the
 *      first POST to the last Ready, per pod; containerd's likewise;
 *   3. with the N pods running, once the agent has come to rest (`--settle-ms` after the last
 *      Ready, 5 s by default), over an idle window: the agent's CPU, and its RSS sampled each
 *      second (mean and highest: a single sample swings by tens of MB with the garbage
 *      collector's timing, while the live heap stays the same);
 *   4. all N deleted at once (deletecollection): the agent's CPU from the delete to the last pod
 *      gone from the API (the agent stops each and lets the API server remove it), per pod.
 * Then the agent is stopped and its Node and Lease deleted, so the next agent registers afresh.
 * Before the first run, one burst goes straight to the runtime and is not counted (run 0): the
 * first burst after containerd starts is slower for whoever makes it.
 * `--count-cri` puts a counting CRI proxy (test/support/criProxy.ts, in this process) between the
 * agents and containerd and reports the CRI calls each made per pod start and per deletion, by
 * method; the proxy adds its own latency and CPU, so such runs are for the counts, not the timings.
 * Only the agent's own process is measured, as another node agent would be on the same machine;
 * this bench's client and the control plane are other processes. Timings are reported, never
 * asserted. `BENCH_AGENT_NODE_FLAGS="--cpu-prof --cpu-prof-dir=DIR"` (or any Node flags) is passed
 * to statelet's process, to profile it or to try V8's settings.
 */
import { execFile, execFileSync, spawn } from 'node:child_process';
import { mkdir, readFile, rm } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import * as k8s from '@kubernetes/client-node';
import { CriClient } from '../src/runtime/cri/client.ts';
import { startContainerd } from '../test/containerd/harness.ts';
import { startControlPlane, type ControlPlane } from '../test/support/controlPlane.ts';
import { startCriProxy } from '../test/support/criProxy.ts';
import { addLoopbackAddress } from '../test/support/loopbackAddress.ts';
import { unmountUnder } from '../test/support/mounts.ts';
import { startUpstreamKubelet } from '../test/support/upstreamKubelet.ts';
import { argValue, emit, IMAGE, LONG_RUNNING, NODE_NAME, processCpuMs, progress, round, runWorker, sleep, summarize, tempDir } from './lib.ts';
import { binaryLaunch, STATELET_BIN } from './launch.ts';
import { type AgentKind, type AgentRun, type CriBurstRun, AGENT_KINDS } from './results.ts';

const n = Number(argValue('n') ?? 100);
const runs = Number(argValue('runs') ?? 3);
const idleMs = Number(argValue('idle-ms') ?? 10_000);
/** From the last pod Ready to the idle window: the agent comes to rest (a garbage collector gives memory back only then). */
const settleMs = Number(argValue('settle-ms') ?? 5_000);
const timeoutMs = Number(argValue('timeout-ms') ?? 300_000);
const agents = (argValue('agents') ?? 'statelet').split(',') as (AgentKind | 'cri')[];
for (const agent of agents) if (agent !== 'cri' && !AGENT_KINDS.includes(agent)) throw new Error(`--agents: unknown agent ${agent} (statelet, kubelet, cri)`);
const repoRoot = path.resolve(import.meta.dirname, '..');
/** The node's address, added to `lo` for the bench (a private range; the conformance runner uses another). */
const NODE_IP = '10.89.253.1';
const exec = promisify(execFile);
const countCri = process.argv.includes('--count-cri');
/**
 * `--local-pv`: each pod mounts a claim of its own, bound to a local PersistentVolume (a directory
 * of this machine, node affinity to the node) before the burst: claim and volume made and bound
 * by this worker as the binder would (no controller-manager runs), so the burst times the node's
 * part alone: the live reads of claim and volume, the bind mount, the volume's teardown.
 */
const localPv = process.argv.includes('--local-pv');

/** CRI calls seen by the counting proxy, by method. */
const criCalls = new Map<string, number>();
const snapshotCalls = () => new Map(criCalls);
/** Calls per pod by method between two snapshots, most first. */
function callsPerPod(before: Map<string, number>, after: Map<string, number>): Record<string, number> {
  const per = [...after].map(([method, count]) => [method, round((count - (before.get(method) ?? 0)) / n, 2)] as const).filter(([, count]) => count > 0);
  return Object.fromEntries(per.sort((a, b) => b[1] - a[1]));
}

/** A process's resident memory (MB), from /proc. */
async function rssMB(pid: number): Promise<number> {
  const status = await readFile(`/proc/${pid}/status`, 'utf8');
  return round(Number(/^VmRSS:\s+(\d+) kB/m.exec(status)?.[1]) / 1024);
}

/** A pod's or a Node's Ready condition is True. */
const isReady = (object: { status?: { conditions?: { type: string; status: string }[] } } | null) =>
  object?.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false;

/**
 * Follows the namespace's pods from now on: when each was first seen Ready, and which are gone.
 * (The admin's watch, as a controller's; started before the first POST so nothing is missed.)
 */
async function followPods(cp: ControlPlane, namespace: string) {
  const readyAt = new Map<string, number>();
  const present = new Set<string>();
  const watch = new k8s.Watch(cp.admin);
  const request = await watch.watch(
    `/api/v1/namespaces/${namespace}/pods`,
    {},
    (type: string, pod: k8s.V1Pod) => {
      const name = pod.metadata?.name ?? '';
      if (type === 'DELETED') present.delete(name);
      else present.add(name);
      if (isReady(pod) && !readyAt.has(name)) readyAt.set(name, performance.now());
    },
    () => {},
  );
  return { readyAt, present, stop: () => request.abort() };
}

async function until(check: () => boolean | Promise<boolean>, what: string): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  while (!(await check())) {
    if (performance.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(50);
  }
}

interface NodeAgent {
  pid: number;
  stop(): Promise<void>;
}

interface Setup {
  cp: ControlPlane;
  endpoint: string;
  containerdPid: number;
  kubeletBinary?: string;
}

function startStatelet(setup: Setup, rootDir: string): NodeAgent {
  const bin = STATELET_BIN;
  const launch = binaryLaunch(bin);
  const child = spawn(
    process.execPath,
    [
      ...launch.nodeFlags,
      ...(process.env.BENCH_AGENT_NODE_FLAGS ?? '').split(' ').filter(Boolean),
      bin,
      `--container-runtime-endpoint=${setup.endpoint}`,
      `--kubeconfig=${setup.cp.nodeKubeconfig(NODE_NAME)}`,
      `--hostname-override=${NODE_NAME}`,
      `--node-ip=${NODE_IP}`,
      `--address=${NODE_IP}`,
      `--root-dir=${rootDir}`,
      `--pod-logs-dir=${path.join(rootDir, 'logs')}`,
      `--client-ca-file=${setup.cp.kubeletClientCaFile}`,
      // Its own cgroup tree, removed after the run, beside whatever else the machine runs.
      '--cgroup-root=/statelet-bench',
      '--read-only-port=0',
    ],
    { stdio: ['ignore', 'ignore', 'pipe'], env: { ...process.env, ...launch.env } },
  );
  let tail = '';
  child.stderr!.on('data', (chunk: Buffer) => (tail = (tail + chunk.toString()).slice(-4000)));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.once('exit', (code, signal) => {
    if (code !== 0 && signal !== 'SIGTERM') console.error(`statelet exited (${code ?? signal}); its last lines:\n${tail}`);
  });
  return {
    pid: child.pid!,
    async stop() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      await exited;
    },
  };
}

async function startKubelet(setup: Setup, rootDir: string): Promise<NodeAgent> {
  let tail = '';
  const kubelet = await startUpstreamKubelet({
    binary: setup.kubeletBinary!,
    runtimeEndpoint: setup.endpoint,
    kubeconfig: setup.cp.nodeKubeconfig(NODE_NAME),
    nodeName: NODE_NAME,
    nodeIp: NODE_IP,
    clientCaFile: setup.cp.kubeletClientCaFile,
    rootDir,
    onOutput: (chunk) => (tail = (tail + chunk).slice(-4000)),
  });
  kubelet.child.once('exit', (code, signal) => {
    if (code !== 0 && signal !== 'SIGTERM') console.error(`kubelet exited (${code ?? signal}); its last lines:\n${tail}`);
  });
  return { pid: kubelet.child.pid!, stop: kubelet.stop };
}

/** One agent's run: registered and Ready, N pods through the API, idle, all deleted. */
async function agentRun(kind: AgentKind, setup: Setup, run: number): Promise<AgentRun> {
  const { cp, containerdPid } = setup;
  const rootDir = await tempDir(`statelet-bench-${kind}-`);
  const namespace = await cp.namespace(`bench-${kind}-${run}`);
  const agent = kind === 'kubelet' ? await startKubelet(setup, rootDir) : startStatelet(setup, rootDir);
  const pid = agent.pid;
  try {
    await cp.waitFor<k8s.V1Node>({ path: '/api/v1/nodes' }, NODE_NAME, isReady, timeoutMs);
    // Started, registered and Ready: what it holds with nothing to run.
    await sleep(3_000);
    const rssAtZero = await rssMB(pid);

    const pods = await followPods(cp, namespace);
    const names = Array.from({ length: n }, (_, i) => `p${i}`);
    const volumes = localPv ? await bindLocalVolumes(cp, namespace, names, path.join(rootDir, 'disks'), `${kind}-${run}`) : null;
    const postAt = new Map<string, number>();
    const agentCpu0 = await processCpuMs(pid);
    const daemonCpu0 = await processCpuMs(containerdPid);
    const calls0 = snapshotCalls();
    const firstPost = performance.now();
    await Promise.all(
      names.map((name) => {
        postAt.set(name, performance.now());
        return cp.core.createNamespacedPod({
          namespace,
          body: {
            metadata: { name },
            spec: {
              nodeName: NODE_NAME,
              automountServiceAccountToken: false,
              terminationGracePeriodSeconds: 5,
              containers: [
                { name: 'app', image: IMAGE, imagePullPolicy: 'Never', command: ['sh', '-c', LONG_RUNNING], ...(volumes ? { volumeMounts: [{ name: 'data', mountPath: '/data' }] } : {}) },
              ],
              ...(volumes ? { volumes: [{ name: 'data', persistentVolumeClaim: { claimName: volumes.claimOf(name) } }] } : {}),
            },
          },
        });
      }),
    );
    await until(() => names.every((name) => pods.readyAt.has(name)), `${n} pods Ready (${kind})`);
    const agentCpu1 = await processCpuMs(pid);
    const daemonCpu1 = await processCpuMs(containerdPid);
    const calls1 = snapshotCalls();
    const lastReady = Math.max(...names.map((name) => pods.readyAt.get(name)!));
    const createToReady = summarize(names.map((name) => pods.readyAt.get(name)! - postAt.get(name)!));
    progress(`${kind} run ${run}: ${n} Ready in ${round((lastReady - firstPost) / 1000, 2)} s, create→Ready p50 ${createToReady.p50} ms`);

    await sleep(settleMs);
    const idle0 = await processCpuMs(pid);
    const idleFrom = performance.now();
    const rssSamples: number[] = [];
    while (performance.now() - idleFrom < idleMs) {
      rssSamples.push(await rssMB(pid));
      await sleep(1_000);
    }
    const idlePercent = round(((await processCpuMs(pid)) - idle0) / (performance.now() - idleFrom) * 100, 2);
    const rssAtN = round(rssSamples.reduce((a, b) => a + b, 0) / rssSamples.length);

    const deleteCpu0 = await processCpuMs(pid);
    const calls2 = snapshotCalls();
    const deleteAt = performance.now();
    await cp.core.deleteCollectionNamespacedPod({ namespace });
    await until(() => pods.present.size === 0, `${n} pods gone (${kind})`);
    const deleteCpu1 = await processCpuMs(pid);
    const calls3 = snapshotCalls();
    const allGoneMs = round(performance.now() - deleteAt);
    pods.stop();
    if (countCri) progress(`${kind} run ${run}: CRI calls per pod start ${JSON.stringify(callsPerPod(calls0, calls1))}, per deletion ${JSON.stringify(callsPerPod(calls2, calls3))}`);
    progress(`${kind} run ${run}: RSS ${rssAtZero} MB at 0 pods, ${rssAtN} MB at ${n}; all gone ${allGoneMs} ms after the delete`);
    return {
      agent: kind,
      run,
      pods: n,
      createToReadyMs: createToReady,
      podsPerSecond: round(n / ((lastReady - firstPost) / 1000), 2),
      agentCpuMsPerPodStart: round((agentCpu1 - agentCpu0) / n),
      containerdCpuMsPerPodStart: round((daemonCpu1 - daemonCpu0) / n),
      agentCpuMsPerPodDeletion: round((deleteCpu1 - deleteCpu0) / n),
      deleteToAllGoneMs: allGoneMs,
      rssMBAtZeroPods: rssAtZero,
      rssMBAtNPods: rssAtN,
      rssMBAtNPodsHighest: Math.max(...rssSamples),
      idleCpuPercentOfOneCoreAtN: idlePercent,
      ...(countCri ? { criCallsPerPodStart: callsPerPod(calls0, calls1), criCallsPerPodDeletion: callsPerPod(calls2, calls3) } : {}),
    };
  } finally {
    await agent.stop();
    if (localPv) await cp.kubectl(['delete', 'pv', '-l', `bench-run=${kind}-${run}`, '--ignore-not-found', '--wait=false']).catch(() => {});
    // The next agent registers its own Node and Lease: none of this one's status is taken for it.
    await cp.kubectl(['delete', 'node', NODE_NAME, '--ignore-not-found']).catch(() => {});
    await cp.kubectl(['delete', 'lease', NODE_NAME, '-n', 'kube-node-lease', '--ignore-not-found']).catch(() => {});
    await unmountUnder(rootDir, (line) => progress(`${kind}: ${line}`));
    await rm(rootDir, { recursive: true, force: true });
  }
}

/**
 * A claim per pod, each bound to a local PersistentVolume on a directory of its own: the claim
 * first (its UID goes in the volume's claimRef), then the volume, then both marked Bound through
 * their status, which is what the controller-manager's binder would write.
 */
async function bindLocalVolumes(cp: ControlPlane, namespace: string, names: readonly string[], disks: string, run: string) {
  const runLabel = { 'bench-run': run };
  const status = k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch);
  await Promise.all(
    names.map(async (name) => {
      const pvName = `${namespace}-${name}`;
      const dir = path.join(disks, name);
      await mkdir(dir, { recursive: true });
      const claim = await cp.core.createNamespacedPersistentVolumeClaim({
        namespace,
        body: { metadata: { name }, spec: { accessModes: ['ReadWriteOnce'], storageClassName: '', volumeName: pvName, resources: { requests: { storage: '1Gi' } } } },
      });
      await cp.core.createPersistentVolume({
        body: {
          metadata: { name: pvName, labels: runLabel },
          spec: {
            capacity: { storage: '1Gi' },
            accessModes: ['ReadWriteOnce'],
            storageClassName: '',
            claimRef: { namespace, name, uid: claim.metadata!.uid! },
            local: { path: dir },
            nodeAffinity: { required: { nodeSelectorTerms: [{ matchExpressions: [{ key: 'kubernetes.io/hostname', operator: 'In', values: [NODE_NAME] }] }] } },
          },
        },
      });
      await cp.core.patchPersistentVolumeStatus({ name: pvName, body: { status: { phase: 'Bound' } } }, status);
      await cp.core.patchNamespacedPersistentVolumeClaimStatus({ namespace, name, body: { status: { phase: 'Bound', accessModes: ['ReadWriteOnce'], capacity: { storage: '1Gi' } } } }, status);
    }),
  );
  // Each pod's claim has the pod's name.
  return { claimOf: (pod: string) => pod };
}

/** The same burst straight to the runtime: every pod's sandbox and container started at once, then stopped and removed. */
async function criRun(setup: Setup, run: number): Promise<CriBurstRun> {
  const cri = new CriClient(setup.endpoint, { requestTimeoutMs: timeoutMs });
  const logs = await tempDir('statelet-bench-cri-');
  try {
    const daemonCpu0 = await processCpuMs(setup.containerdPid);
    const first = performance.now();
    const started = await Promise.all(
      Array.from({ length: n }, async (_, i) => {
        const name = `cri-${run}-${i}`;
        const uid = `bench-cri-${run}-${i}`;
        const logDirectory = path.join(logs, uid);
        await mkdir(logDirectory, { recursive: true });
        const sandboxConfig = { metadata: { name, uid, namespace: 'bench-cri', attempt: 0 }, hostname: name, logDirectory, portMappings: [], labels: {}, annotations: {} };
        const at = performance.now();
        const sandbox = await cri.runPodSandbox(sandboxConfig);
        const container = await cri.createContainer(
          sandbox,
          { metadata: { name: 'app', attempt: 0 }, image: { image: IMAGE }, command: ['sh', '-c', LONG_RUNNING], args: [], workingDir: '', envs: [], mounts: [], labels: {}, annotations: {}, logPath: 'app/0.log', stdin: false, tty: false },
          sandboxConfig,
        );
        await cri.startContainer(container);
        return { sandbox, container, ms: performance.now() - at, done: performance.now() };
      }),
    );
    const daemonCpu1 = await processCpuMs(setup.containerdPid);
    const last = Math.max(...started.map((s) => s.done));
    const removeAt = performance.now();
    await Promise.all(
      started.map(async ({ sandbox, container }) => {
        await cri.stopContainer(container, 5);
        await cri.removeContainer(container);
        await cri.stopPodSandbox(sandbox);
        await cri.removePodSandbox(sandbox);
      }),
    );
    const result: CriBurstRun = {
      run,
      pods: n,
      startMs: summarize(started.map((s) => s.ms)),
      podsPerSecond: round(n / ((last - first) / 1000), 2),
      containerdCpuMsPerPodStart: round((daemonCpu1 - daemonCpu0) / n),
      stopAndRemoveAllMs: round(performance.now() - removeAt),
    };
    progress(`cri run ${run}: ${n} started in ${round((last - first) / 1000, 2)} s, p50 ${result.startMs.p50} ms; all removed in ${result.stopAndRemoveAllMs} ms`);
    return result;
  } finally {
    cri.close();
    await rm(logs, { recursive: true, force: true });
  }
}

runWorker(async () => {
  if (process.getuid?.() !== 0) {
    await emit({ skipped: 'needs root (a private containerd, cgroups, an address on lo)' });
    return;
  }
  let kubeletBinary: string | undefined;
  if (agents.includes('kubelet')) {
    // @ts-expect-error: a plain ESM script without type declarations
    const { conformanceBinaries } = (await import('../scripts/controlplane/build.mjs')) as { conformanceBinaries(options: { only: string[] }): Promise<{ kubelet: string } | { skip: string }> };
    const built = await conformanceBinaries({ only: ['kubelet'] });
    if ('skip' in built) {
      await emit({ skipped: `the upstream kubelet cannot be built here: ${built.skip}` });
      return;
    }
    kubeletBinary = built.kubelet;
  }
  // What users run: the package's binary over a fresh build.
  if (agents.includes('statelet')) execFileSync(process.execPath, [path.join(repoRoot, 'scripts/build.mjs')], { stdio: ['ignore', 'ignore', 'inherit'] });
  const containerd = await startContainerd();
  if (!containerd) {
    await emit({ skipped: 'startContainerd() returned null (needs root and containerd; see stderr)' });
    return;
  }
  let removeAddress: (() => Promise<void>) | undefined;
  let closeProxy: (() => Promise<void>) | undefined;
  const cp = await startControlPlane({ nodeNames: [NODE_NAME], required: true }).catch(async (err: unknown) => {
    await containerd.stop();
    throw err;
  });
  try {
    if (!cp) {
      await emit({ skipped: 'the control plane cannot be built here (no Go)' });
      return;
    }
    removeAddress = await addLoopbackAddress(NODE_IP);
    const containerdPid = Number((await readFile(path.join(containerd.workDir, 'containerd.pid'), 'utf8')).trim());
    const proxy = countCri
      ? await startCriProxy({
          socketPath: path.join(containerd.workDir, 'counting-proxy.sock'),
          target: containerd.endpoint,
          intercept: (call, _args, proceed) => {
            criCalls.set(call.rpc, (criCalls.get(call.rpc) ?? 0) + 1);
            return proceed();
          },
        })
      : undefined;
    closeProxy = proxy?.close;
    const setup: Setup = { cp, endpoint: proxy?.endpoint ?? containerd.endpoint, containerdPid, ...(kubeletBinary ? { kubeletBinary } : {}) };
    const agentRuns: AgentRun[] = [];
    const criRuns: CriBurstRun[] = [];
    // One burst straight to the runtime first, not counted: the first burst after containerd
    // starts pays for its caches (and the page cache's copy of runc and the image's layers),
    // which would otherwise fall on whichever agent happens to go first.
    await criRun(setup, 0);
    for (let run = 1; run <= runs; run++) {
      // Alternating: each agent goes first in every other run.
      const order = run % 2 === 1 ? agents : [...agents].reverse();
      for (const kind of order) {
        if (kind === 'cri') criRuns.push(await criRun(setup, run));
        else agentRuns.push(await agentRun(kind, setup, run));
      }
    }
    const version = await cp.kubectl(['version', '-o', 'json']).then((text) => JSON.parse(text).serverVersion?.gitVersion as string).catch(() => 'unknown');
    const kubelet = kubeletBinary ? (await exec(kubeletBinary, ['--version'])).stdout.trim().replace(/^Kubernetes /, '') : undefined;
    await emit({ scenario: 'agent', apiServer: version, ...(kubelet ? { kubelet } : {}), runs: agentRuns, ...(criRuns.length ? { cri: criRuns } : {}) });
  } finally {
    await removeAddress?.();
    await closeProxy?.();
    await cp?.close();
    await containerd.stop();
  }
});
