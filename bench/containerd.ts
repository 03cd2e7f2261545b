/**
 * Worker: the agent in-process against a private containerd (test/containerd/harness.ts).
 *   node --expose-gc --import tsx bench/containerd.ts [--sequential=20] [--burst=100] [--idle-ms=10000] [--out=FILE]
 * 1. `sequential` pods one at a time: write a manifest, wait until Running and ready, next.
 * 2. `burst` pods at once; then (idle) agent CPU at `burst` pods; then all deleted at once.
 * containerd is a separate process here, so the agent's CPU and RSS are the agent's alone.
 * Skips (emits `skipped`) where startContainerd() returns null (not root, containerd missing).
 */
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { Label } from '../src/kuberuntime/labels.ts';
import { CriClient } from '../src/runtime/cri/client.ts';
import { startContainerd } from '../test/containerd/harness.ts';
import {
  type BenchAgent,
  argValue,
  baseName,
  emit,
  idleCpu,
  memory,
  podName,
  progress,
  runWorker,
  stopAndClean,
  removeManifests,
  round,
  sleep,
  startBenchAgent,
  summarize,
  tempDir,
  writeManifests,
  type Summary,
} from './lib.ts';
import type { ContainerdResult } from './results.ts';

const sequential = Number(argValue('sequential') ?? 20);
const burst = Number(argValue('burst') ?? 100);
const idleMs = Number(argValue('idle-ms') ?? 10_000);
const timeoutMs = Number(argValue('timeout-ms') ?? 180_000);

/** CPU seconds (user + system) used so far by a process, from /proc (clock ticks of 10 ms). */
async function processCpuMs(pid: number): Promise<number | null> {
  try {
    const stat = await readFile(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) * 10;
  } catch {
    return null;
  }
}

async function containerdVersion(cri: CriClient): Promise<string> {
  const v = await cri.version();
  return `${v.runtimeName} ${v.runtimeVersion} (CRI ${v.runtimeApiVersion})`;
}

async function main() {
  const instance = await startContainerd();
  if (!instance) {
    await emit({ scenario: 'containerd', skipped: 'startContainerd() returned null (needs root and containerd; see stderr)' });
    return;
  }
  let manifestDir: string | undefined;
  let rootDir: string | undefined;
  let bench: BenchAgent | undefined;
  let cri: CriClient | undefined;
  try {
    manifestDir = await tempDir('statelet-bench-manifests-');
    rootDir = await tempDir('sbc-');
    cri = new CriClient(instance.endpoint);
    const version = await containerdVersion(cri);
    const daemonPid = Number((await readFile(path.join(instance.workDir, 'containerd.pid'), 'utf8')).trim());
    bench = await startBenchAgent({
      endpoint: instance.endpoint,
      manifestDir,
      rootDir,
      maxPods: Math.max(110, sequential + burst + 10),
    });
    const { timeline } = bench;
    // The empty directory's first snapshot makes the source "seen"; give the agent a moment.
    await sleep(500);

    // 1. One at a time.
    const seqWrite: number[] = [];
    for (let i = 0; i < sequential; i++) {
      const name = podName(i);
      const writtenAt = performance.now();
      await writeManifests(manifestDir, i, 1);
      await timeline.until(() => timeline.running.has(name), timeoutMs, `${name} Running`);
      seqWrite.push(writtenAt);
    }
    const seqNames = Array.from({ length: sequential }, (_, i) => podName(i));
    const seqAddToRunning = seqNames.map((name) => timeline.running.get(name)! - timeline.addedAt.get(name)!);
    const seqWriteToRunning = seqNames.map((name, i) => timeline.running.get(name)! - seqWrite[i]!);
    const seqTotal = timeline.running.get(seqNames.at(-1)!)! - seqWrite[0]!;
    const one = {
      pods: sequential,
      addToRunningMs: summarize(seqAddToRunning),
      writeToRunningMs: summarize(seqWriteToRunning),
      podsPerSecond: round(sequential / (seqAddToRunning.reduce((a, b) => a + b, 0) / 1000), 2),
      podsPerSecondIncludingFileWatch: round(sequential / (seqTotal / 1000), 2),
    };
    progress(`containerd: ${sequential} one at a time: ADD→Running p50 ${one.addToRunningMs.p50} ms`);

    // Clear them out, so the burst starts on an empty node.
    const seqDelAt = performance.now();
    await removeManifests(manifestDir, 0, sequential);
    await timeline.until(() => seqNames.every((name) => timeline.deleted.has(name)), timeoutMs, 'sequential pods gone');
    const seqDelete = summarize(seqNames.map((name) => timeline.stopped.get(name)! - seqDelAt));
    while ((await cri.listPodSandbox()).length > 0) await sleep(100);

    // 2. A burst.
    const from = sequential;
    const burstNames = Array.from({ length: burst }, (_, i) => podName(from + i));
    const daemonCpuBefore = await processCpuMs(daemonPid);
    const agentCpuBefore = process.cpuUsage();
    const burstWriteAt = performance.now();
    await writeManifests(manifestDir, from, burst);
    await timeline.until(() => burstNames.every((name) => timeline.running.has(name)), timeoutMs, `${burst} pods Running`);
    const agentCpu = process.cpuUsage(agentCpuBefore);
    const daemonCpuAfter = await processCpuMs(daemonPid);
    const addAt = Math.min(...burstNames.map((name) => timeline.addedAt.get(name)!));
    const runAt = burstNames.map((name) => timeline.running.get(name)!);
    const lastRunning = Math.max(...runAt);
    const many = {
      pods: burst,
      writeToFirstAddMs: round(addAt - burstWriteAt),
      addToRunningMs: summarize(runAt.map((t) => t - addAt)),
      timeToAllRunningMs: round(lastRunning - addAt),
      podsPerSecond: round(burst / ((lastRunning - addAt) / 1000), 2),
      agentCpuMsPerPod: round((agentCpu.user + agentCpu.system) / 1000 / burst),
      containerdDaemonCpuMsPerPod: daemonCpuBefore !== null && daemonCpuAfter !== null ? round((daemonCpuAfter - daemonCpuBefore) / burst) : null,
    };
    progress(`containerd: ${burst} at once: all Running ${many.timeToAllRunningMs} ms after ADD (${many.podsPerSecond} pods/s)`);

    await sleep(2_000);
    const atBurst = memory();
    let idle: (Awaited<ReturnType<typeof idleCpu>> & { containerdDaemonCpuPercentOfOneCore: number | null; relistDurationMs: Summary | null }) | null = null;
    if (idleMs > 0) {
      const d0 = await processCpuMs(daemonPid);
      const idleFrom = performance.now();
      const cpu = await idleCpu(idleMs);
      const d1 = await processCpuMs(daemonPid);
      const relists = timeline.relists.filter((r) => r.at >= idleFrom).map((r) => r.durationMs);
      idle = {
        ...cpu,
        containerdDaemonCpuPercentOfOneCore: d0 !== null && d1 !== null ? round(((d1 - d0) / (cpu.windowS * 1000)) * 100, 2) : null,
        relistDurationMs: relists.length ? summarize(relists) : null,
      };
      progress(`containerd: idle at ${burst} pods: agent ${cpu.cpuPercentOfOneCore}% of a core`);
    }

    // 3. Delete the burst at once. Besides the agent's own status, the runtime is polled: a pod's
    // container counts as stopped from the first ListContainers(RUNNING) it is missing from.
    const criStoppedAt = new Map<string, number>();
    let polling = true;
    const poller = (async () => {
      while (polling) {
        const containers = await cri!.listContainers({ state: 'CONTAINER_RUNNING' }).catch(() => null);
        if (containers === null) {
          await sleep(100);
          continue;
        }
        const running = new Set(containers.map((c) => baseName(c.labels[Label.podName] ?? '')));
        const at = performance.now();
        for (const name of burstNames) if (!criStoppedAt.has(name) && !running.has(name)) criStoppedAt.set(name, at);
        if (criStoppedAt.size >= burst) return;
        await sleep(100);
      }
    })();
    const delAt = performance.now();
    await removeManifests(manifestDir, from, burst);
    await timeline.until(() => burstNames.every((name) => timeline.stopped.has(name)), timeoutMs, `${burst} pods stopped`);
    await poller;
    polling = false;
    const stopAt = burstNames.map((name) => timeline.stopped.get(name)!);
    const stillRunning = (await cri.listContainers({ state: 'CONTAINER_RUNNING' })).length;
    await timeline.until(() => burstNames.every((name) => timeline.deleted.has(name)), timeoutMs, `${burst} pods forgotten`);
    const lastDeleted = Math.max(...burstNames.map((name) => timeline.deleted.get(name)!));
    const deadline = performance.now() + timeoutMs;
    while ((await cri.listPodSandbox()).length > 0 && performance.now() < deadline) await sleep(50);
    const emptyAt = performance.now();
    const del = {
      pods: burst,
      removeRoutedAfterMs: round(Math.min(...burstNames.map((name) => timeline.removedAt.get(name)!)) - delAt),
      /** The agent published a status with every container terminated (after StopContainer and StopPodSandbox). */
      deleteToContainersStoppedMs: summarize(stopAt.map((t) => t - delAt)),
      timeToAllStoppedMs: round(Math.max(...stopAt) - delAt),
      /** The runtime no longer lists the pod's container as running (polled every 100 ms). */
      deleteToCriContainerStoppedMs: summarize(burstNames.map((name) => criStoppedAt.get(name)! - delAt)),
      runningContainersAfterAllStopped: stillRunning,
      timeToAllForgottenMs: round(lastDeleted - delAt),
      timeToRuntimeEmptyMs: round(emptyAt - delAt),
    };
    progress(`containerd: delete ${burst}: all stopped ${del.timeToAllStoppedMs} ms, runtime empty ${del.timeToRuntimeEmptyMs} ms`);

    const result = {
      scenario: 'containerd' as const,
      runtime: version,
      includesSimulator: false,
      oneAtATime: { ...one, deleteOneAtATimeNote: 'the sequential pods are then deleted together', deleteToContainersStoppedMs: seqDelete },
      burst: many,
      memoryAtBurst: atBurst,
      idle,
      delete: del,
    };
    await emit(result satisfies ContainerdResult);
  } finally {
    cri?.close();
    await stopAndClean(bench?.agent, manifestDir, rootDir);
    await instance.stop().catch((err: unknown) => console.error('containerd stop failed', err));
  }
}

runWorker(main);
