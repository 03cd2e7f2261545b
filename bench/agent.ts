/**
 * Worker: statelet as users run it — the built `statelet` binary (dist/, made first by
 * scripts/build.mjs), a process of its own — as the node of a real control plane (kube-apiserver +
 * etcd, the cluster tests' build) on a private containerd (test/containerd/harness.ts).
 *   node --import tsx bench/agent.ts --n=100 --runs=3 --idle-ms=10000 [--out=FILE]
 *
 * Each run starts a fresh agent (its own --root-dir), waits for the Node to be Ready, and then:
 *   1. RSS with no pods;
 *   2. N pods created through the API at once (bound by spec.nodeName, the image already in
 *      containerd): create→Ready for each, from just before its POST to the watch event that shows
 *      it Ready; pods/s to all Ready; the agent's CPU (user + system, /proc/<pid>/stat) from the
 *      first POST to the last Ready, per pod; containerd's likewise;
 *   3. with the N pods running, over an idle window: the agent's CPU, and its RSS sampled each
 *      second (mean and highest: a single sample swings by tens of MB with the garbage
 *      collector's timing, while the live heap stays the same);
 *   4. all N deleted at once (deletecollection): the agent's CPU from the delete to the last pod
 *      gone from the API (the agent stops each and lets the API server remove it), per pod.
 * Only the agent's own process is measured, as another node agent would be on the same machine;
 * this bench's client and the control plane are other processes. Timings are reported, never
 * asserted. `BENCH_AGENT_NODE_FLAGS="--cpu-prof --cpu-prof-dir=DIR"` (or any Node flags) is passed
 * to the agent's process, to profile it or to try V8's settings.
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { readFile, rm } from 'node:fs/promises';
import path from 'node:path';
import * as k8s from '@kubernetes/client-node';
import { startContainerd } from '../test/containerd/harness.ts';
import { startControlPlane, type ControlPlane } from '../test/support/controlPlane.ts';
import { argValue, emit, IMAGE, LONG_RUNNING, NODE_NAME, progress, round, runWorker, sleep, summarize, tempDir } from './lib.ts';
import type { AgentRun } from './results.ts';

const n = Number(argValue('n') ?? 100);
const runs = Number(argValue('runs') ?? 3);
const idleMs = Number(argValue('idle-ms') ?? 10_000);
const timeoutMs = Number(argValue('timeout-ms') ?? 300_000);
const repoRoot = path.resolve(import.meta.dirname, '..');

/** CPU time (user + system, ms) a process has used, from /proc (clock ticks of 10 ms). */
async function cpuMs(pid: number): Promise<number> {
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10;
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

async function until(check: () => boolean, what: string): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  while (!check()) {
    if (performance.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(50);
  }
}

/** The Node flags the binary's first line gives (`#!/usr/bin/env -S node <flags>`): the agent runs with them, as when run by its name. */
function binaryNodeFlags(bin: string): string[] {
  const shebang = readFileSync(bin, 'utf8').split('\n', 1)[0] ?? '';
  return shebang.split(/\s+/).slice(shebang.includes(' -S ') ? 3 : 2);
}

function startAgent(endpoint: string, kubeconfig: string, rootDir: string, clientCa: string): ChildProcess {
  const bin = path.join(repoRoot, 'bin/statelet.js');
  const child = spawn(
    process.execPath,
    [
      ...binaryNodeFlags(bin),
      ...(process.env.BENCH_AGENT_NODE_FLAGS ?? '').split(' ').filter(Boolean),
      bin,
      `--container-runtime-endpoint=${endpoint}`,
      `--kubeconfig=${kubeconfig}`,
      `--hostname-override=${NODE_NAME}`,
      `--root-dir=${rootDir}`,
      `--pod-logs-dir=${path.join(rootDir, 'logs')}`,
      `--client-ca-file=${clientCa}`,
      // Its own cgroup tree, removed after the run, beside whatever else the machine runs.
      '--cgroup-root=/statelet-bench',
      '--port=0',
      '--read-only-port=0',
      '--healthz-port=0',
    ],
    { stdio: ['ignore', 'ignore', 'pipe'] },
  );
  let tail = '';
  child.stderr!.on('data', (chunk: Buffer) => (tail = (tail + chunk.toString()).slice(-4000)));
  child.once('exit', (code, signal) => {
    if (code !== 0 && signal !== 'SIGTERM') console.error(`statelet exited (${code ?? signal}); its last lines:\n${tail}`);
  });
  return child;
}

async function oneRun(cp: ControlPlane, endpoint: string, containerdPid: number, run: number): Promise<AgentRun> {
  const rootDir = await tempDir('statelet-bench-agent-');
  const namespace = await cp.namespace(`bench-${run}`);
  const agent = startAgent(endpoint, cp.nodeKubeconfig(NODE_NAME), rootDir, cp.kubeletClientCaFile);
  const pid = agent.pid!;
  try {
    await cp.waitFor<k8s.V1Node>({ path: '/api/v1/nodes' }, NODE_NAME, isReady, timeoutMs);
    // Started, registered and Ready: what it holds with nothing to run.
    await sleep(3_000);
    const rssAtZero = await rssMB(pid);

    const pods = await followPods(cp, namespace);
    const names = Array.from({ length: n }, (_, i) => `p${i}`);
    const postAt = new Map<string, number>();
    const agentCpu0 = await cpuMs(pid);
    const daemonCpu0 = await cpuMs(containerdPid);
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
              containers: [{ name: 'app', image: IMAGE, imagePullPolicy: 'Never', command: ['sh', '-c', LONG_RUNNING] }],
            },
          },
        });
      }),
    );
    await until(() => names.every((name) => pods.readyAt.has(name)), `${n} pods Ready`);
    const agentCpu1 = await cpuMs(pid);
    const daemonCpu1 = await cpuMs(containerdPid);
    const lastReady = Math.max(...names.map((name) => pods.readyAt.get(name)!));
    const createToReady = summarize(names.map((name) => pods.readyAt.get(name)! - postAt.get(name)!));
    progress(`agent run ${run}: ${n} Ready in ${round((lastReady - firstPost) / 1000, 2)} s, create→Ready p50 ${createToReady.p50} ms`);

    await sleep(5_000);
    const idle0 = await cpuMs(pid);
    const idleFrom = performance.now();
    const rssSamples: number[] = [];
    while (performance.now() - idleFrom < idleMs) {
      rssSamples.push(await rssMB(pid));
      await sleep(1_000);
    }
    const idlePercent = round(((await cpuMs(pid)) - idle0) / (performance.now() - idleFrom) * 100, 2);
    const rssAtN = round(rssSamples.reduce((a, b) => a + b, 0) / rssSamples.length);

    const deleteCpu0 = await cpuMs(pid);
    const deleteAt = performance.now();
    await cp.core.deleteCollectionNamespacedPod({ namespace });
    await until(() => pods.present.size === 0, `${n} pods gone`);
    const deleteCpu1 = await cpuMs(pid);
    const allGoneMs = round(performance.now() - deleteAt);
    pods.stop();
    progress(`agent run ${run}: RSS ${rssAtZero} MB at 0 pods, ${rssAtN} MB at ${n}; all gone ${allGoneMs} ms after the delete`);
    return {
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
    };
  } finally {
    agent.kill('SIGTERM');
    if (agent.exitCode === null && agent.signalCode === null) await new Promise((resolve) => agent.once('exit', resolve));
    await rm(rootDir, { recursive: true, force: true });
  }
}

runWorker(async () => {
  // What users run: the package's binary over a fresh build.
  execFileSync(process.execPath, [path.join(repoRoot, 'scripts/build.mjs')], { stdio: ['ignore', 'ignore', 'inherit'] });
  const containerd = await startContainerd();
  if (!containerd) {
    await emit({ skipped: 'startContainerd() returned null (needs root and containerd; see stderr)' });
    return;
  }
  const cp = await startControlPlane({ nodeNames: [NODE_NAME], required: true }).catch(async (err: unknown) => {
    await containerd.stop();
    throw err;
  });
  try {
    if (!cp) {
      await emit({ skipped: 'the control plane cannot be built here (no Go)' });
      return;
    }
    const containerdPid = Number((await readFile(path.join(containerd.workDir, 'containerd.pid'), 'utf8')).trim());
    const results: AgentRun[] = [];
    for (let run = 1; run <= runs; run++) results.push(await oneRun(cp, containerd.endpoint, containerdPid, run));
    const version = await cp.kubectl(['version', '-o', 'json']).then((text) => JSON.parse(text).serverVersion?.gitVersion as string).catch(() => 'unknown');
    await emit({ scenario: 'agent', apiServer: version, runs: results });
  } finally {
    await cp?.close();
    await containerd.stop();
  }
});
