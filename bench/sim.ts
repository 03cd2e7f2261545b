/**
 * Worker: N static pods on `sim://`, added at once, then deleted at once.
 *   node --expose-gc --import tsx bench/sim.ts --n=1000 --idle-ms=30000 [--settle-ms=2000] [--out=FILE]
 *   node --expose-gc --import tsx bench/sim.ts --n=1000 --idle-ms=0 --warm-image --visualizer
 * The simulated runtime runs inside this process (startAgent starts it for `sim://`), so every
 * CPU and memory figure here includes the simulator as well as the agent.
 */
import { type IntervalHistogram, monitorEventLoopDelay } from 'node:perf_hooks';
import { CriClient } from '../src/runtime/cri/client.ts';
import {
  argValue,
  connectSseClient,
  emit,
  freeLoopbackPort,
  IMAGE,
  idleCpu,
  memory,
  podName,
  progress,
  startProfiler,
  runWorker,
  stopAndClean,
  removeManifests,
  round,
  runtimeOperations,
  operationsPerSecond,
  sleep,
  startBenchAgent,
  type SseClient,
  summarize,
  tempDir,
  writeManifests,
} from './lib.ts';
import type { SimResult } from './results.ts';

const n = Number(argValue('n') ?? 100);
const idleMs = Number(argValue('idle-ms') ?? 30_000);
/**
 * How long after the last pod Running memory and idle CPU are measured: the burst's aftermath
 * (the collector giving back what the burst grew, the first periodic passes over the new pods)
 * is not rest. The agent bench waits as long (`--settle-ms`) before its idle window.
 */
const settleMs = Number(argValue('settle-ms') ?? 2_000);
const timeoutMs = Number(argValue('timeout-ms') ?? 240_000);
/**
 * Cold (default, the scenario as specified): the manifests are in the directory when the agent
 * starts, and the image is not yet in the simulated runtime, so the burst of new pods finds it
 * missing. Warm: the agent starts on an empty directory, the image is pulled through CRI first,
 * then the N manifests are written at once (the file watcher picks them up).
 */
const warmImage = process.argv.includes('--warm-image');
/** `--workload=httpd` serves HTTP in every pod; `--probes` adds startup, liveness and readiness probes. */
const workload = { httpd: argValue('workload') === 'httpd', probes: process.argv.includes('--probes') };
/**
 * `--visualizer`: the agent serves its live visualizer on a free loopback port, and one SSE
 * client (in this process, counting bytes and messages, discarding the data) is connected to
 * /api/stream before the manifests are written (warm; cold: right after startAgent, when the
 * manifests are already there), so the start is measured with a visualizer watching.
 */
const withVisualizer = process.argv.includes('--visualizer');
/**
 * `--stately-inspector`: the agent runs with `--inspect=stately`, sending its inspection records
 * to a WebSocket relay in this process (on a free loopback port) that counts the messages and
 * their bytes and discards them, as `@statelyai/inspect/server` would pass them to a browser.
 */
const withStatelyInspector = process.argv.includes('--stately-inspector');

const LAG_RESOLUTION_MS = 10;

/** Event-loop delay beyond the sampling timer's own interval (the histogram includes it). */
function lagSummary(h: IntervalHistogram): { p50: number; p99: number; max: number } {
  const ms = (ns: number) => round(Math.max(0, ns / 1e6 - LAG_RESOLUTION_MS));
  return { p50: ms(h.percentile(50)), p99: ms(h.percentile(99)), max: ms(h.max) };
}

/** Counts the agent's PullImage calls (the bench's own warm-up pull included, reported apart). */
let pullImageCalls = 0;
const originalPull = CriClient.prototype.pullImage;
CriClient.prototype.pullImage = function (this: CriClient, ...args: Parameters<CriClient['pullImage']>) {
  pullImageCalls++;
  return originalPull.apply(this, args);
};

async function main() {
  const manifestDir = await tempDir('statelet-bench-manifests-');
  const rootDir = await tempDir('sb-');
  let bench: Awaited<ReturnType<typeof startBenchAgent>> | undefined;
  let cri: CriClient | undefined;
  let sse: SseClient | undefined;
  let inspectorRelay: InspectorRelay | undefined;
  try {
    if (!warmImage) await writeManifests(manifestDir, 0, n, workload);
    inspectorRelay = withStatelyInspector ? await startInspectorRelay() : undefined;
    const baseline = memory();
    const lag = monitorEventLoopDelay({ resolution: LAG_RESOLUTION_MS });
    lag.enable();
    // Cold: from the agent's start, as `startedAt`; warm: reset when the manifests are written.
    let cpuAtStart = process.cpuUsage();
    bench = await startBenchAgent({
      endpoint: 'sim://',
      manifestDir,
      rootDir,
      maxPods: Math.max(110, n),
      readOnlyPort: await freeLoopbackPort(),
      ...(withVisualizer ? { visualizerPort: await freeLoopbackPort() } : {}),
      ...(inspectorRelay ? { inspectUrl: inspectorRelay.url } : {}),
    });
    const { agent, timeline } = bench;
    let startedAt = bench.startedAt;
    if (withVisualizer) {
      if (!agent.visualizerUrl) throw new Error('--visualizer: the agent has no visualizerUrl');
      sse = await connectSseClient(agent.visualizerUrl);
    }
    const sseAtConnect = sse?.snapshot();
    if (inspectorRelay) await inspectorRelay.connected;
    const inspectorAtConnect = inspectorRelay?.snapshot();
    cri = new CriClient(agent.runtimeEndpoint);
    if (warmImage) {
      await cri.pullImage(IMAGE);
      pullImageCalls = 0;
      startedAt = performance.now();
      cpuAtStart = process.cpuUsage();
      await writeManifests(manifestDir, 0, n, workload);
    }
    await timeline.until(() => timeline.running.size >= n, timeoutMs, `${n} pods Running`);
    lag.disable();
    const cpuDuringStart = process.cpuUsage(cpuAtStart);
    const sseAtRunning = sse?.snapshot();
    const inspectorAtRunning = inspectorRelay?.snapshot();
    const addAt = timeline.firstAddAt!;
    const names = Array.from({ length: n }, (_, i) => podName(i));
    const runAt = names.map((name) => timeline.running.get(name)!);
    const lastRunning = Math.max(...runAt);
    const lastActor = timeline.actorCreatedAt.at(-1)!;
    const start = {
      /** Cold: from startAgent() to the first CONFIG.ADD; warm: from writing the manifests. */
      startToFirstAddMs: round(addAt - startedAt),
      addEvents: timeline.adds.length,
      addToRunningMs: summarize(runAt.map((t) => t - addAt)),
      startToRunningMs: summarize(runAt.map((t) => t - startedAt)),
      timeToAllRunningMs: round(lastRunning - addAt),
      podsPerSecond: round(n / ((lastRunning - addAt) / 1000)),
      /** PullImage calls the agent made for the single image all N pods use. */
      pullImageCalls,
      podActors: timeline.actorCreatedAt.length,
      timeToAllActorsMs: round(lastActor - addAt),
      eventLoopDelayDuringStartMs: lagSummary(lag),
      /** This process's CPU (agent, simulator, this bench and any in-process client) per pod, from the manifests to all Running. */
      cpuMsPerPod: round((cpuDuringStart.user + cpuDuringStart.system) / 1000 / n),
    };
    const tag = `sim N=${n} ${warmImage ? 'warm' : 'cold'}${withVisualizer ? ' +visualizer' : ''}${withStatelyInspector ? ' +stately-inspector' : ''}`;
    progress(`${tag}: all Running ${start.timeToAllRunningMs} ms after ADD (${start.podsPerSecond} pods/s)`);
    if (sseAtRunning) progress(`${tag}: stream ${sseAtRunning.bytes} bytes, ${sseAtRunning.batches} batches by all Running`);

    // Steady state: let in-flight work finish, then measure memory and idle CPU.
    await sleep(settleMs);
    const atN = memory();
    let idle: SimResult['idle'] = null;
    if (idleMs > 0) {
      const idleLag = monitorEventLoopDelay({ resolution: LAG_RESOLUTION_MS });
      const idleFrom = performance.now();
      idleLag.enable();
      const profileFile = argValue('profile-idle') ?? argValue('profile-idle-allocations');
      const profiler = profileFile ? await startProfiler(argValue('profile-idle') ? 'cpu' : 'allocations') : undefined;
      const callsBefore = await runtimeOperations(agent);
      const cpu = await idleCpu(idleMs);
      const criCallsPerSecond = operationsPerSecond(callsBefore, await runtimeOperations(agent), cpu.windowS);
      if (profiler) await profiler.stop(profileFile!);
      idleLag.disable();
      const relists = timeline.relists.filter((r) => r.at >= idleFrom).map((r) => r.durationMs);
      idle = {
        settleS: settleMs / 1000,
        ...cpu,
        eventLoopDelayMs: lagSummary(idleLag),
        relists: relists.length,
        relistDurationMs: relists.length ? summarize(relists) : null,
        criCallsPerSecond,
      };
      progress(`${tag}: idle ${cpu.cpuPercentOfOneCore}% of a core over ${cpu.windowS} s from ${settleMs / 1000} s after all Running, rss ${atN.rssMB} MB`);
    }

    // Delete: remove every manifest at once.
    const runningBefore = (await cri.listContainers({ state: 'CONTAINER_RUNNING' })).length;
    const delAt = performance.now();
    await removeManifests(manifestDir, 0, n);
    await timeline.until(() => timeline.stopped.size >= n, timeoutMs, `${n} pods stopped`);
    const stopAt = names.map((name) => timeline.stopped.get(name)!);
    const lastStopped = Math.max(...stopAt);
    // Cross-check with the runtime itself: no running container left.
    const stillRunning = (await cri.listContainers({ state: 'CONTAINER_RUNNING' })).length;
    await timeline.until(() => timeline.deleted.size >= n, timeoutMs, `${n} pods forgotten`);
    const lastDeleted = Math.max(...names.map((name) => timeline.deleted.get(name)!));
    let sandboxesLeftAt = performance.now();
    const sandboxesLeft = async () => (await cri!.listPodSandbox()).length;
    const deadline = performance.now() + timeoutMs;
    while ((await sandboxesLeft()) > 0 && performance.now() < deadline) await sleep(50);
    sandboxesLeftAt = performance.now();
    // Each pod's own steps, from the REMOVE that carried it: the kubelet spends up to a relist
    // period (~1 s) waiting for its cache before each of these steps; statelet should not.
    const uids = [...timeline.uidToName.keys()];
    const removeAt = timeline.removes[0]?.at ?? delAt;
    const step = (from: Map<string, number> | null, to: Map<string, number>) =>
      summarize(uids.filter((u) => to.has(u) && (from === null || from.has(u))).map((u) => to.get(u)! - (from === null ? removeAt : from.get(u)!)));
    const del = {
      removeToTerminatingMs: step(null, timeline.terminatingAt),
      terminatingToTerminatedMs: step(timeline.terminatingAt, timeline.terminatedAt),
      terminatedToFinishedMs: step(timeline.terminatedAt, timeline.finishedAt),
      runningContainersBefore: runningBefore,
      removeRoutedAfterMs: timeline.removes[0] ? round(timeline.removes[0].at - delAt) : null,
      deleteToContainersStoppedMs: summarize(stopAt.map((t) => t - delAt)),
      timeToAllStoppedMs: round(lastStopped - delAt),
      runningContainersAfterAllStopped: stillRunning,
      timeToAllForgottenMs: round(lastDeleted - delAt),
      timeToRuntimeEmptyMs: round(sandboxesLeftAt - delAt),
      sandboxesLeft: await sandboxesLeft(),
    };
    progress(`${tag}: all stopped ${del.timeToAllStoppedMs} ms after removal, runtime empty after ${del.timeToRuntimeEmptyMs} ms`);
    /** What the one SSE client received: on connecting (the first picture), by all Running, by the end. */
    const visualizer = sse
      ? { client: 'one in-process SSE client on /api/stream', atConnect: sseAtConnect, atAllRunning: sseAtRunning, atEnd: sse.snapshot() }
      : null;
    /** What the relay received from the agent's Stately inspector: on connecting, by all Running, by the end. */
    const statelyInspector = inspectorRelay
      ? { client: 'one in-process WebSocket relay', atConnect: inspectorAtConnect, atAllRunning: inspectorAtRunning, atEnd: inspectorRelay.snapshot() }
      : null;

    const result = {
      scenario: 'sim' as const,
      n,
      image: warmImage ? 'warm' : 'cold',
      workload,
      visualizer,
      statelyInspector,
      includesSimulator: true,
      agentStartMs: round(bench.startMs),
      start,
      memory: { baseline, atN },
      idle,
      delete: del,
    };
    await emit(result satisfies SimResult);
  } finally {
    sse?.close();
    cri?.close();
    await inspectorRelay?.close();
    await stopAndClean(bench?.agent, manifestDir, rootDir);
  }
}

interface InspectorRelay {
  url: string;
  /** Resolves once the agent's inspector has connected. */
  connected: Promise<void>;
  snapshot(): { bytes: number; messages: number };
  close(): Promise<void>;
}

/** A WebSocket server on a free loopback port that counts what its clients send. */
async function startInspectorRelay(): Promise<InspectorRelay> {
  const { WebSocketServer } = await import('ws');
  const port = await freeLoopbackPort();
  const server = new WebSocketServer({ host: '127.0.0.1', port });
  await new Promise<void>((resolve, reject) => server.once('listening', resolve).once('error', reject));
  const counts = { bytes: 0, messages: 0 };
  const connected = new Promise<void>((resolve) => server.once('connection', () => resolve()));
  server.on('connection', (socket) =>
    socket.on('message', (data: Buffer) => {
      counts.bytes += data.length;
      counts.messages++;
    }),
  );
  return {
    url: `ws://127.0.0.1:${port}`,
    connected,
    snapshot: () => ({ ...counts }),
    close: () =>
      new Promise<void>((resolve) => {
        for (const client of server.clients) client.terminate();
        server.close(() => resolve());
      }),
  };
}

runWorker(main);
