/**
 * `npm run bench`: runs every benchmark, each in a fresh Node process (`--expose-gc`, so memory
 * is measured after a GC and one scenario's garbage does not count against the next), prints a
 * table and then one JSON document with all figures, and writes that JSON to bench/results.json.
 *
 *   npm run bench                       everything (~6 min on a 2-vCPU machine)
 *   npm run bench -- --quick            sim at N=100 only, 10 s idle windows, fewer actor sizes
 *   npm run bench -- --only=sim         or actors, containerd, agent, page, cluster, logs, exec, metrics (comma-separated list allowed)
 *   npm run bench -- --only=versus-kubelet   statelet and the upstream kubelet side by side (not part of "everything":
 *                                       it builds the kubelet and takes ~15 min); its table goes to docs/benchmarks.md
 *   npm run bench -- --only=scale       100 simulated nodes in one statelet process beside kwok faking
 *                                       them, a Deployment of 3,000 pods (not part of "everything": ~30 min);
 *                                       its table goes to docs/benchmarks.md
 *   npm run bench -- --only=rotation    a client certificate rotation under load: statelet joined to a kubeadm-like
 *                                       control plane by TLS bootstrap, 100 sim:// pods, one replaced a second,
 *                                       until two renewals (not part of "everything": ~5 min)
 *   BENCH_QUICK=1 BENCH_ONLY=sim npm run bench
 *
 * See docs/benchmarks.md for what each figure means.
 */
import { execFileSync, spawn } from 'node:child_process';
import { readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { binaryLaunch, STATELET_BIN } from './launch.ts';
import { LOCAL_PV_END, LOCAL_PV_START, localPvMarkdown, versusMarkdown, versusRows, withSection, withVersusSection } from './versus.ts';
import { type ScaleRun, scaleMarkdown, scaleRows, withScaleSection } from './scaleTable.ts';
import type { ActorMeasure, ActorsResult, AgentResult, ClusterResult, ExecResult, LogsResult, MetricsResult, RotationResult, TokensResult, ContainerdResult, Failed, Frames, PageResult, SimResult, Skipped } from './results.ts';

const benchDir = path.dirname(fileURLToPath(import.meta.url));
const resultsFile = path.join(benchDir, 'results.json');

type Scenario = 'sim' | 'actors' | 'containerd' | 'agent' | 'page' | 'cluster' | 'logs' | 'exec' | 'metrics' | 'versus-kubelet' | 'scale' | 'rotation';
const allScenarios: Scenario[] = ['sim', 'actors', 'containerd', 'agent', 'page', 'cluster', 'logs', 'exec', 'metrics'];
/** Run only when asked for by name. */
const namedScenarios: Scenario[] = ['versus-kubelet', 'scale', 'rotation'];

const argv = process.argv.slice(2);
const quick = argv.includes('--quick') || ['1', 'true'].includes(process.env.BENCH_QUICK ?? '');
const onlyArg = argv.find((a) => a.startsWith('--only='))?.slice('--only='.length) ?? process.env.BENCH_ONLY;
const only = onlyArg ? onlyArg.split(',').map((s) => s.trim()) : allScenarios;
for (const s of only) {
  if (![...allScenarios, ...namedScenarios].includes(s as Scenario)) {
    console.error(`unknown --only value "${s}" (expected ${[...allScenarios, ...namedScenarios].join(', ')})`);
    process.exit(2);
  }
}
const idleMs = quick ? 10_000 : 30_000;

type Json = Record<string, unknown>;

/** What the driver keeps of a worker run: its result (or why it failed), and how long it took. */
type Run<T> = (T | Failed) & { wallS: number };

const failed = <T extends object>(r: T | Failed): r is Failed => 'error' in r;
const skipped = <T extends object>(r: T | Skipped): r is Skipped => 'skipped' in r;

/**
 * Runs one worker script in a fresh node process and returns what it wrote to --out. The process
 * runs with the Node flags and environment of the binary's first line (`binaryLaunch`): a worker
 * that runs the agent in its own process measures it as users run it.
 */
async function worker<T>(script: string, args: string[]): Promise<Run<T>> {
  const out = path.join(os.tmpdir(), `statelet-bench-${process.pid}-${Date.now()}.json`);
  const started = performance.now();
  const launch = binaryLaunch(STATELET_BIN);
  const code = await new Promise<number | null>((resolve, reject) => {
    const child = spawn(process.execPath, [...launch.nodeFlags, '--expose-gc', '--import', 'tsx', path.join(benchDir, script), ...args, `--out=${out}`], {
      stdio: ['ignore', 'inherit', 'inherit'],
      env: { ...process.env, ...launch.env },
    });
    child.once('error', reject);
    child.once('exit', resolve);
  });
  const wallS = Math.round((performance.now() - started) / 100) / 10;
  try {
    if (code !== 0) return { error: `${script} ${args.join(' ')} exited with ${code}`, wallS };
    return { ...(JSON.parse(await readFile(out, 'utf8')) as T), wallS };
  } finally {
    await rm(out, { force: true });
  }
}

function sh(cmd: string, args: string[]): string | null {
  try {
    return execFileSync(cmd, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
  } catch {
    return null;
  }
}

function machine(): Json {
  const cpus = os.cpus();
  return {
    nproc: sh('nproc', []) ?? String(os.availableParallelism()),
    cpuModel: cpus[0]?.model ?? 'unknown',
    memTotalGiB: Math.round((os.totalmem() / 1024 ** 3) * 10) / 10,
    freeH: sh('free', ['-h'])?.split('\n')[1]?.replace(/\s+/g, ' ') ?? null,
    kernel: os.release(),
    node: process.version,
    containerd: sh('containerd', ['--version']) ?? sh('/usr/bin/containerd', ['--version']),
    runc: sh('runc', ['--version'])?.split('\n')[0] ?? null,
    isRoot: process.getuid?.() === 0,
  };
}

// ---------------------------------------------------------------------------------------- table

const fmt = (v: unknown): string => {
  if (v === null || v === undefined) return '–';
  if (typeof v === 'number') return Number.isInteger(v) ? String(v) : v.toFixed(1);
  return String(v);
};

function table(title: string, header: string[], rows: unknown[][]): void {
  const cells = [header, ...rows.map((r) => r.map(fmt))];
  const widths = header.map((_, i) => Math.max(...cells.map((r) => String(r[i] ?? '').length)));
  const line = (r: unknown[]) => r.map((c, i) => String(c ?? '').padEnd(widths[i]!)).join('  ');
  console.log(`\n${title}`);
  console.log(line(header));
  console.log(widths.map((w) => '-'.repeat(w)).join('  '));
  for (const r of cells.slice(1)) console.log(line(r));
}

/** A sim run with the driver's label for its plan. */
type SimRun = Run<SimResult> & { n: number; image: string };

function printSim(runs: SimRun[]): void {
  const ok: (SimResult & { image: string })[] = [];
  for (const r of runs) {
    if (failed(r)) console.log(`sim: ${r.error}`);
    else ok.push(r);
  }
  if (!ok.length) return;
  const col = (r: SimResult & { image: string }) => `N=${r.n} ${r.image}`;
  table(
    'sim:// — static pods added at once (CPU and memory include the in-process simulated runtime)',
    ['metric', ...ok.map(col)],
    [
      ['ADD→Running p50 (ms)', ...ok.map((r) => r.start.addToRunningMs.p50)],
      ['ADD→Running p99 (ms)', ...ok.map((r) => r.start.addToRunningMs.p99)],
      ['time to all Running (ms)', ...ok.map((r) => r.start.timeToAllRunningMs)],
      ['pods/s to Running', ...ok.map((r) => r.start.podsPerSecond)],
      ['time to all pod actors (ms)', ...ok.map((r) => r.start.timeToAllActorsMs)],
      ['start→first ADD (ms)', ...ok.map((r) => r.start.startToFirstAddMs)],
      ['PullImage calls (one image)', ...ok.map((r) => r.start.pullImageCalls)],
      ['event-loop delay p99 / max during start (ms)', ...ok.map((r) => `${r.start.eventLoopDelayDuringStartMs.p99} / ${r.start.eventLoopDelayDuringStartMs.max}`)],
      ['RSS at N (MB, after GC)', ...ok.map((r) => r.memory.atN.rssMB)],
      ['heapUsed at N (MB, after GC)', ...ok.map((r) => r.memory.atN.heapUsedMB)],
      ['RSS before start (MB)', ...ok.map((r) => r.memory.baseline.rssMB)],
      ['idle CPU (% of one core)', ...ok.map((r) => r.idle?.cpuPercentOfOneCore)],
      ['idle window (s), after (s)', ...ok.map((r) => (r.idle ? `${r.idle.windowS}, ${r.idle.settleS}` : undefined))],
      ['relist p50 / p99 at idle (ms)', ...ok.map((r) => (r.idle?.relistDurationMs ? `${r.idle.relistDurationMs.p50} / ${r.idle.relistDurationMs.p99}` : undefined))],
      ['event-loop delay p99 at idle (ms)', ...ok.map((r) => r.idle?.eventLoopDelayMs?.p99)],
      ['REMOVE→terminating p50 / p99 (ms)', ...ok.map((r) => `${r.delete.removeToTerminatingMs.p50} / ${r.delete.removeToTerminatingMs.p99}`)],
      ['terminating→terminated p50 / p99 (ms)', ...ok.map((r) => `${r.delete.terminatingToTerminatedMs.p50} / ${r.delete.terminatingToTerminatedMs.p99}`)],
      ['terminated→finished p50 / p99 (ms)', ...ok.map((r) => `${r.delete.terminatedToFinishedMs.p50} / ${r.delete.terminatedToFinishedMs.p99}`)],
      ['delete→stopped p50 (ms)', ...ok.map((r) => r.delete.deleteToContainersStoppedMs.p50)],
      ['delete→stopped p99 (ms)', ...ok.map((r) => r.delete.deleteToContainersStoppedMs.p99)],
      ['delete→all stopped (ms)', ...ok.map((r) => r.delete.timeToAllStoppedMs)],
      ['delete→runtime empty (ms)', ...ok.map((r) => r.delete.timeToRuntimeEmptyMs)],
    ],
  );
}

/** The same N=1,000 warm start without an observer, with a visualizer client on /api/stream, and with the Stately inspector. */
function printObserverCost(runs: { without: SimRun; visualizer: SimRun; statelyInspector: SimRun }): void {
  const all = [runs.without, runs.visualizer, runs.statelyInspector];
  if (all.some(failed)) {
    for (const r of all) if (failed(r)) console.log(`sim observer cost: ${r.error}`);
    return;
  }
  const [off, viz, stately] = all as SimResult[];
  const ratio = (a: number, b: number) => (a > 0 ? `${(b / a).toFixed(2)}×` : undefined);
  const v = viz!.visualizer;
  const i = stately!.statelyInspector;
  const row = (label: string, value: (r: SimResult) => number) =>
    [label, value(off!), value(viz!), ratio(value(off!), value(viz!)), value(stately!), ratio(value(off!), value(stately!))];
  table(`sim:// N=${off!.n} warm — observer cost (one SSE client on /api/stream; --inspect=stately to a WebSocket relay)`, ['metric', 'without', '--visualizer', 'ratio', '--inspect=stately', 'ratio'], [
    row('pods/s to Running', (r) => r.start.podsPerSecond),
    row('time to all Running (ms)', (r) => r.start.timeToAllRunningMs),
    row('CPU per pod, manifests → all Running (ms)', (r) => r.start.cpuMsPerPod),
    ['ADD→Running p50 / p99 (ms)', ...[off!, viz!, stately!].flatMap((r, k) => [`${r.start.addToRunningMs.p50} / ${r.start.addToRunningMs.p99}`, ...(k ? [undefined] : [])])],
    ['event-loop delay p99 / max during start (ms)', ...[off!, viz!, stately!].flatMap((r, k) => [`${r.start.eventLoopDelayDuringStartMs.p99} / ${r.start.eventLoopDelayDuringStartMs.max}`, ...(k ? [undefined] : [])])],
    ['RSS / heapUsed at N (MB, after GC)', ...[off!, viz!, stately!].flatMap((r, k) => [`${r.memory.atN.rssMB} / ${r.memory.atN.heapUsedMB}`, ...(k ? [undefined] : [])])],
    ['sent by all Running: bytes / messages', undefined, v?.atAllRunning ? `${v.atAllRunning.bytes} / ${v.atAllRunning.batches}` : undefined, undefined, i?.atAllRunning ? `${i.atAllRunning.bytes} / ${i.atAllRunning.messages}` : undefined, undefined],
    ['sent by end of run (delete incl.): bytes / messages', undefined, v ? `${v.atEnd.bytes} / ${v.atEnd.batches}` : undefined, undefined, i ? `${i.atEnd.bytes} / ${i.atEnd.messages}` : undefined, undefined],
  ]);
}

function printActors(r: Run<ActorsResult>): void {
  if (failed(r)) return void console.log(`actors: ${r.error}`);
  const sizes = r.createActor.map((m) => m.n);
  const find = (list: readonly (ActorMeasure | { n: number; skipped: string })[], n: number) => list.find((m) => m.n === n);
  const rows: unknown[][] = [];
  for (const [label, list] of [
    ['createActor({ parent })', r.createActor],
    ['podWorkers CONFIG.ADD (admission incl.)', r.podWorkers],
    ['spawnChild from one machine', r.spawnChild],
  ] as const) {
    rows.push([`${label} ms`, ...sizes.map((n) => {
      const m = find(list, n);
      return m && 'skipped' in m ? 'skipped' : m?.ms;
    })]);
    rows.push([`${label} heap MB`, ...sizes.map((n) => {
      const m = find(list, n);
      return m && 'heapMB' in m ? m.heapMB : undefined;
    })]);
  }
  table('pod actor creation (real pod machine, effects never settle)', ['metric', ...sizes.map((n) => `n=${n}`)], rows);
}

function printCluster(r: Run<ClusterResult | Skipped>): void {
  if (failed(r)) return void console.log(`\ncluster: ${r.error}`);
  if (skipped(r)) return void console.log(`\ncluster: SKIPPED — ${r.skipped}`);
  const s = (x: { p50: number; p99: number }) => `${x.p50} / ${x.p99}`;
  table(`cluster — sim:// node of a real kube-apiserver + etcd, ${r.n} pods created through the API at once, volumes: ${r.volumes}`, ['metric', 'value'], [
    ['create→Running seen through a watch p50 / p99 (ms)', s(r.start.createToRunningMs)],
    ['  POST answered p50 / p99 (ms)', s(r.start.postMs)],
    ['  then Running in the agent p50 / p99 (ms)', s(r.start.createdToRunningInAgentMs)],
    ['  then seen through the watch p50 / p99 (ms)', s(r.start.runningInAgentToWatchMs)],
    ['time to all Running (ms)', r.start.timeToAllRunningMs],
    ['pods/s', r.start.podsPerSecond],
    ['agent API requests per pod started', r.requests.perPodStarted],
    ['  of which', Object.entries(r.requests.byCall).map(([k, v]) => `${k} ${v}`).join(', ')],
    ['CPU per pod (ms; agent, sim and this client)', r.start.cpuMsPerPod],
    ['  kube-apiserver and etcd, the same window (ms per pod)', r.start.controlPlaneCpuMsPerPod ?? '—'],
    ['RSS at N (MB, after GC)', r.memory.atN.rssMB],
    ['idle API requests per minute (node heartbeat)', r.idle.requestsPerMinute],
    ['  of which', Object.entries(r.idle.byCall).map(([k, v]) => `${k} ${v}`).join(', ')],
    ['idle CPU (% of one core)', r.idle.cpuPercentOfOneCore],
  ]);
}

function printAgent(r: Run<AgentResult | Skipped>): void {
  if (failed(r)) return void console.log(`\nagent: ${r.error}`);
  if (skipped(r)) return void console.log(`\nagent: SKIPPED — ${r.skipped}`);
  const runs = r.runs.filter((run) => run.agent === 'statelet');
  const each = (pick: (run: (typeof runs)[number]) => number | string) => runs.map(pick).join(' / ');
  const mean = (pick: (run: (typeof runs)[number]) => number) => Math.round((runs.reduce((a, run) => a + pick(run), 0) / runs.length) * 10) / 10;
  const row = (label: string, pick: (run: (typeof runs)[number]) => number) => [label, each(pick), mean(pick)];
  table(`agent — the built statelet, its own process, on containerd, node of kube-apiserver ${r.apiServer}; ${runs[0]?.pods} pods through the API at once`, ['metric', 'each run', 'mean'], [
    row('create→Ready p50 (ms)', (x) => x.createToReadyMs.p50),
    row('create→Ready p99 (ms)', (x) => x.createToReadyMs.p99),
    row('pods/s to all Ready', (x) => x.podsPerSecond),
    row('agent CPU per pod start (ms)', (x) => x.agentCpuMsPerPodStart),
    row("containerd's CPU per pod start (ms)", (x) => x.containerdCpuMsPerPodStart),
    row('agent CPU per pod deletion (ms)', (x) => x.agentCpuMsPerPodDeletion),
    row('delete → all gone from the API (ms)', (x) => x.deleteToAllGoneMs),
    row('agent RSS at 0 pods (MB)', (x) => x.rssMBAtZeroPods),
    row('agent RSS at N pods, mean over the idle window (MB)', (x) => x.rssMBAtNPods),
    row('agent RSS at N pods, highest (MB)', (x) => x.rssMBAtNPodsHighest),
    row('agent idle CPU at N pods (% of one core)', (x) => x.idleCpuPercentOfOneCoreAtN),
  ]);
}

function printRotation(r: Run<RotationResult | Skipped>): void {
  if (failed(r)) return void console.log(`\nrotation: ${r.error}`);
  if (skipped(r)) return void console.log(`\nrotation: SKIPPED — ${r.skipped}`);
  table(`rotation — ${r.renewals} client certificate renewals (signed for ${r.signingDuration}) over ${r.loadSeconds} s with ${r.pods} sim:// pods, one replaced a second, a watch open`, ['metric', 'value'], [
    ['pod status writes seen on the watch', r.statusWrites],
    ['largest gap between status writes (ms)', r.largestGapMs],
    ['gap between status writes p50 / p99 (ms)', `${r.gapMs.p50} / ${r.gapMs.p99}`],
    ['gap across each renewal (ms)', r.gapAcrossEachRenewalMs.join(', ')],
    ['the status writer\'s retry period (ms)', r.retryPeriodMs],
    ['create→Running within 15 s after a renewal p50 / max (ms)', `${r.createToRunningAfterRenewalMs.p50} / ${r.createToRunningAfterRenewalMs.max}`],
    ['create→Running otherwise p50 / max (ms)', `${r.createToRunningOtherwiseMs.p50} / ${r.createToRunningOtherwiseMs.max}`],
    ['replacement pods never Running', r.replacementPodsNeverRunning.length],
    ['longest interval between Lease renewals (ms)', r.leaseLongestIntervalMs],
    ['agent log lines naming 401, expiry or a TLS failure', r.agentTroubleLines],
  ]);
}

function printVersus(r: Run<AgentResult | Skipped>): void {
  if (failed(r)) return void console.log(`\nversus-kubelet: ${r.error}`);
  if (skipped(r)) return void console.log(`\nversus-kubelet: SKIPPED — ${r.skipped}`);
  table(`statelet and the upstream kubelet ${r.kubelet}, alternating, each its own process on the same containerd and kube-apiserver ${r.apiServer}; ${r.runs[0]?.pods} pods through the API at once; means`, ['metric', 'statelet', 'kubelet', 'statelet ÷ kubelet', 'raw CRI'], versusRows(r).map((row) => [row.metric, row.statelet, row.kubelet, row.ratio === undefined ? undefined : `${row.ratio.toFixed(2)}×`, row.cri]));
}

function printTokens(r: Run<TokensResult | Skipped>): void {
  if (failed(r)) return void console.log(`\ntokens: ${r.error}`);
  if (skipped(r)) return void console.log(`\ntokens: SKIPPED — ${r.skipped}`);
  table(`service-account tokens — ${r.n} pods' projected tokens, the node's client against a real kube-apiserver`, ['metric', 'value'], [
    ['first fetch of all: wall (ms)', r.fetch.wallMs],
    ['refresh of all (past 80 %): wall (ms)', r.refresh.wallMs],
    ['refresh: CPU per token (ms; TokenRequest through the client)', r.refresh.cpuMsPerToken],
    ['refresh: requests', r.refresh.requests],
    ['write of each refreshed token file (atomic writer): CPU per volume (ms)', r.write.cpuMsPerVolume],
    ['tokens held: heap per token (bytes)', r.heapBytesPerToken],
  ]);
}

function printLogs(r: Run<LogsResult>): void {
  if (failed(r)) return void console.log(`\nlogs: ${r.error}`);
  table(`logs — a ${r.mb} MB container log through the authenticated API (HTTPS, client certificate), in-process`, ['metric', 'value'], [
    ['the file read directly (MB/s)', r.rawReadMBps],
    ['the whole log through /containerLogs (MB/s)', r.wholeLogMBps],
    ['CPU per MB served (ms)', r.cpuMsPerMB],
    ['tailLines=100 (ms)', r.tail100Ms],
    ['follow while a writer appends as fast as it can (MB/s delivered)', r.followMBps],
  ]);
}

function printExec(r: Run<ExecResult>): void {
  if (failed(r)) return void console.log(`\nexec: ${r.error}`);
  const row = (label: string, p: ExecResult['agent']) => [label, p.p50, p.p99, p.cpuMsPerExec];
  table(`exec — ${r.n} round trips of sh -c 'echo hi; exit 3' on sim:// (gRPC), output and exit code checked`, ['path', 'p50 (ms)', 'p99 (ms)', 'CPU per exec: client, agent and runtime in one process (ms)'], [
    row('CRI ExecSync', r.execSync),
    row('CRI Exec + the runtime URL over SPDY (raw CRI)', r.rawCri),
    row("the agent's /exec over HTTPS, proxied to the runtime", r.agent),
  ]);
}

function printMetrics(runs: Run<MetricsResult>[]): void {
  const ok = runs.filter((r): r is MetricsResult & { wallS: number } => !failed(r));
  for (const r of runs) if (failed(r)) console.log(`\nmetrics: ${r.error}`);
  if (!ok.length) return;
  table(
    'metrics — one scrape of /metrics and /metrics/probes over HTTP, pods with three probes each, in-process (CPU less the agent at rest)',
    ['metric', ...ok.map((r) => `N=${r.n}`)],
    [
      ['/metrics: CPU per scrape (ms)', ...ok.map((r) => r.metrics.cpuMsPerScrape)],
      ['/metrics: wall p50 / p99 (ms)', ...ok.map((r) => `${r.metrics.wallMsP50} / ${r.metrics.wallMsP99}`)],
      ['/metrics: samples / bytes', ...ok.map((r) => `${r.metrics.series} / ${r.metrics.bytes}`)],
      ['/metrics/probes: CPU per scrape (ms)', ...ok.map((r) => r.probes.cpuMsPerScrape)],
      ['/metrics/probes: wall p50 / p99 (ms)', ...ok.map((r) => `${r.probes.wallMsP50} / ${r.probes.wallMsP99}`)],
      ['/metrics/probes: samples / bytes', ...ok.map((r) => `${r.probes.series} / ${r.probes.bytes}`)],
      ['agent at rest (% of one core)', ...ok.map((r) => r.idleCpuPercentOfOneCore)],
    ],
  );
}

function printContainerd(r: Run<ContainerdResult | Skipped>): void {
  if (failed(r)) return void console.log(`\ncontainerd: ${r.error}`);
  if (skipped(r)) return void console.log(`\ncontainerd: SKIPPED — ${r.skipped}`);
  table(`containerd — ${r.runtime} (agent in-process, containerd a separate process)`, ['metric', 'value'], [
    [`${r.oneAtATime.pods} one at a time: ADD→Running p50 / p99 (ms)`, `${r.oneAtATime.addToRunningMs.p50} / ${r.oneAtATime.addToRunningMs.p99}`],
    [`${r.oneAtATime.pods} one at a time: manifest write→Running p50 (ms)`, r.oneAtATime.writeToRunningMs.p50],
    [`${r.oneAtATime.pods} one at a time: pods/s (ADD→Running)`, r.oneAtATime.podsPerSecond],
    [`${r.burst.pods} at once: ADD→Running p50 / p99 (ms)`, `${r.burst.addToRunningMs.p50} / ${r.burst.addToRunningMs.p99}`],
    [`${r.burst.pods} at once: time to all Running (ms)`, r.burst.timeToAllRunningMs],
    [`${r.burst.pods} at once: pods/s`, r.burst.podsPerSecond],
    [`${r.burst.pods} at once: agent CPU per pod (ms)`, r.burst.agentCpuMsPerPod],
    [`${r.burst.pods} at once: containerd daemon CPU per pod (ms, shims excluded)`, r.burst.containerdDaemonCpuMsPerPod],
    [`agent RSS / heapUsed at ${r.burst.pods} pods (MB)`, `${r.memoryAtBurst.rssMB} / ${r.memoryAtBurst.heapUsedMB}`],
    [`agent idle CPU at ${r.burst.pods} pods (% of one core)`, r.idle?.cpuPercentOfOneCore],
    [`containerd daemon idle CPU (% of one core)`, r.idle?.containerdDaemonCpuPercentOfOneCore],
    [`delete ${r.delete.pods}: →status shows stopped p50 / p99 (ms)`, `${r.delete.deleteToContainersStoppedMs.p50} / ${r.delete.deleteToContainersStoppedMs.p99}`],
    [`delete ${r.delete.pods}: →CRI container not running p50 / p99 (ms)`, `${r.delete.deleteToCriContainerStoppedMs.p50} / ${r.delete.deleteToCriContainerStoppedMs.p99}`],
    [`delete ${r.delete.pods}: →all stopped / runtime empty (ms)`, `${r.delete.timeToAllStoppedMs} / ${r.delete.timeToRuntimeEmptyMs}`],
  ]);
}

function printPage(r: Run<PageResult | Skipped>): void {
  if (failed(r)) return void console.log(`\npage: ${r.error}`);
  if (skipped(r)) return void console.log(`\npage: SKIPPED — ${r.skipped}`);
  const frames = (f: Frames) => `${f.frameGapMs.p50} / ${f.frameGapMs.p99} / ${f.frameGapMs.max}`;
  const tasks = (f: Frames) => `${f.longTasks} / ${f.longTaskMaxMs}`;
  table(`visualizer page at N=${r.n} (${r.browser}, same machine as the agent)`, ['metric', 'value'], [
    ['start: agent all Running / page shows all Running (ms)', `${r.start.agentAllRunningMs} / ${r.start.pageAllRunningMs}`],
    ['start: frame gap p50 / p99 / max (ms)', frames(r.start)],
    ['start: long tasks / longest (ms)', tasks(r.start)],
    ['idle: type a search → on screen (ms)', r.idle.searchOnePod.toScreenMs],
    ['idle: clear the search (all rows back) → on screen (ms)', r.idle.clearSearch.toScreenMs],
    ['idle: phase filter Pending / All → on screen (ms)', `${r.idle.phaseFilterPending.toScreenMs} / ${r.idle.phaseFilterAll.toScreenMs}`],
    ['idle: click a pod → its chart highlighted (ms)', r.idle.selectPodToChartMs],
    ['page JS heap at N (MB)', r.pageHeapMBAtN],
    ['stop: agent all forgotten / page shows all stopped (ms)', `${r.stop.agentAllForgottenMs} / ${r.stop.pageAllStoppedMs}`],
    ['stop: typing while pods stop → on screen (ms)', r.stop.typingDuringChurn.map((t) => t.toScreenMs).join(' / ')],
    ['stop: frame gap p50 / p99 / max (ms)', frames(r.stop)],
    ['stop: long tasks / longest (ms)', tasks(r.stop)],
  ]);
}

// ----------------------------------------------------------------------------------------- main

async function main(): Promise<void> {
  const startedAt = new Date();
  const t0 = performance.now();
  const results: Json = {
    startedAt: startedAt.toISOString(),
    options: { quick, only },
    machine: machine(),
  };
  console.error(`statelet bench${quick ? ' (quick)' : ''}: ${only.join(', ')}`);
  /** The tables, printed together once every worker has run. */
  const printed: (() => void)[] = [];

  if (only.includes('sim')) {
    const plans: { n: number; warm: boolean; idle: number; workload?: 'httpd' | 'httpd+probes' }[] = quick
      ? [
          { n: 100, warm: false, idle: idleMs },
          { n: 100, warm: true, idle: 0 },
        ]
      : [
          { n: 100, warm: false, idle: idleMs },
          { n: 1000, warm: false, idle: idleMs },
          { n: 100, warm: true, idle: 0 },
          { n: 1000, warm: true, idle: 0 },
          // Idle cost of probing: the same HTTP-serving pods without and with three probes each.
          { n: 1000, warm: true, idle: idleMs, workload: 'httpd' },
          { n: 1000, warm: true, idle: idleMs, workload: 'httpd+probes' },
        ];
    const runs: SimRun[] = [];
    for (const plan of plans) {
      const image = plan.warm ? 'warm' : 'cold';
      const label = plan.workload ? `${image} ${plan.workload}` : image;
      console.error(`sim N=${plan.n} (${label})…`);
      const args = [
        `--n=${plan.n}`,
        `--idle-ms=${plan.idle}`,
        // At rest as the versus bench measures it: 30 s after the last pod Running.
        ...(plan.idle > 0 ? [`--settle-ms=${quick ? 5_000 : 30_000}`] : []),
        ...(plan.warm ? ['--warm-image'] : []),
        ...(plan.workload ? ['--workload=httpd'] : []),
        ...(plan.workload === 'httpd+probes' ? ['--probes'] : []),
      ];
      runs.push({ ...(await worker<SimResult>('sim.ts', args)), n: plan.n, image: label });
    }
    results.sim = runs;
    printed.push(() => printSim(runs));
    if (!quick) {
      // Observer cost: the same warm N=1,000 start, back to back, without an observer, with one
      // SSE client of the visualizer, and with the Stately inspector.
      const costRun = async (observer: '' | 'visualizer' | 'stately-inspector'): Promise<SimRun> => {
        console.error(`sim N=1000 (warm${observer ? ` +${observer}` : ''}, observer cost)…`);
        const args = ['--n=1000', '--idle-ms=0', '--warm-image', ...(observer ? [`--${observer}`] : [])];
        return { ...(await worker<SimResult>('sim.ts', args)), n: 1000, image: observer ? `warm +${observer}` : 'warm' };
      };
      const observers = { without: await costRun(''), visualizer: await costRun('visualizer'), statelyInspector: await costRun('stately-inspector') };
      results.simObserverCost = observers;
      printed.push(() => printObserverCost(observers));
    }
  }
  if (only.includes('actors')) {
    console.error('actors…');
    const actors = await worker<ActorsResult>('actors.ts', [`--sizes=${quick ? '1000,4000' : '1000,4000,8000'}`]);
    results.actors = actors;
    printed.push(() => printActors(actors));
  }
  if (only.includes('containerd')) {
    console.error('containerd…');
    const containerd = await worker<ContainerdResult | Skipped>('containerd.ts', ['--sequential=20', '--burst=100', `--idle-ms=${quick ? 5_000 : 10_000}`]);
    results.containerd = containerd;
    printed.push(() => printContainerd(containerd));
  }
  if (only.includes('agent')) {
    console.error('agent (the built binary on containerd, through the API)…');
    const agent = await worker<AgentResult | Skipped>('agent.ts', ['--n=100', `--runs=${quick ? 1 : 3}`, `--idle-ms=${quick ? 5_000 : 10_000}`]);
    results.agent = agent;
    printed.push(() => printAgent(agent));
  }
  if (only.includes('versus-kubelet')) {
    console.error('versus-kubelet (statelet and the upstream kubelet, alternating, and raw CRI)…');
    const runs = quick ? 1 : 4;
    const versus = await worker<AgentResult | Skipped>('agent.ts', ['--n=100', `--runs=${runs}`, `--idle-ms=${quick ? 5_000 : 10_000}`, '--settle-ms=30000', '--agents=statelet,kubelet,cri']);
    results.versusKubelet = versus;
    printed.push(() => printVersus(versus));
    if (!failed(versus) && !skipped(versus)) {
      const doc = path.join(benchDir, '../docs/benchmarks.md');
      const about = `${new Date().toISOString().slice(0, 10)}, ${os.cpus().length} CPUs, Node ${process.version}`;
      await writeFile(doc, withVersusSection(await readFile(doc, 'utf8'), versusMarkdown(versus, about)));
      console.error('wrote the versus-kubelet table to docs/benchmarks.md');
    }
    console.error('versus-kubelet with local PersistentVolumes (50 pods, each its own claim)…');
    const localPv = await worker<AgentResult | Skipped>('agent.ts', ['--n=50', `--runs=${quick ? 1 : 2}`, '--idle-ms=2000', '--settle-ms=5000', '--agents=statelet,kubelet', '--local-pv']);
    results.versusKubeletLocalPv = localPv;
    printed.push(() => printVersus(localPv));
    if (!failed(localPv) && !skipped(localPv)) {
      const doc = path.join(benchDir, '../docs/benchmarks.md');
      const about = `${new Date().toISOString().slice(0, 10)}, ${os.cpus().length} CPUs, Node ${process.version}`;
      await writeFile(doc, withSection(await readFile(doc, 'utf8'), LOCAL_PV_START, LOCAL_PV_END, localPvMarkdown(localPv, about)));
      console.error('wrote the local-volume table to docs/benchmarks.md');
    }
  }
  if (only.includes('scale')) {
    // Alternated, so that the machine's drift over the half hour falls on both alike.
    const runs: Run<ScaleRun>[] = [];
    const nodes = quick ? 10 : 100;
    for (let i = 0; i < (quick ? 1 : 2); i++) {
      for (const faker of ['statelet', 'kwok'] as const) {
        console.error(`scale: ${faker}, ${nodes} nodes × 30 pods…`);
        runs.push(await worker<ScaleRun>('scale.ts', [`--faker=${faker}`, `--nodes=${nodes}`, '--pods-per-node=30', `--settle-ms=${quick ? 5_000 : 30_000}`, `--idle-ms=${quick ? 5_000 : 30_000}`]));
      }
    }
    results.scale = runs;
    const done = runs.filter((r): r is ScaleRun & { wallS: number } => !failed(r));
    printed.push(() => {
      console.log(`\nscale (${nodes} nodes × 30 pods, means)`);
      for (const r of runs) if (failed(r)) console.log(`  FAILED: ${r.error}`);
      for (const row of scaleRows(done)) console.log(`  ${row.metric.padEnd(56)} statelet ${String(row.statelet ?? '—').padStart(9)}   kwok ${String(row.kwok ?? '—').padStart(9)}`);
    });
    if (done.length > 0) {
      const doc = path.join(benchDir, '../docs/benchmarks.md');
      const about = `${new Date().toISOString().slice(0, 10)}, ${os.cpus().length} CPUs, Node ${process.version}`;
      await writeFile(doc, withScaleSection(await readFile(doc, 'utf8'), scaleMarkdown(done, about)));
      console.error('wrote the scale table to docs/benchmarks.md');
    }
  }
  if (only.includes('cluster')) {
    console.error('cluster…');
    const idle = `--idle-ms=${quick ? 10_000 : 60_000}`;
    const cluster = await worker<ClusterResult | Skipped>('cluster.ts', ['--n=100', idle, '--volumes=none']);
    results.cluster = cluster;
    printed.push(() => printCluster(cluster));
    // The same, back to back, with each pod mounting a ConfigMap, a Secret and kube-api-access.
    console.error('cluster with three volumes per pod…');
    const withVolumes = await worker<ClusterResult | Skipped>('cluster.ts', ['--n=100', idle, '--volumes=three']);
    results.clusterVolumes = withVolumes;
    printed.push(() => printCluster(withVolumes));
    console.error('service-account tokens at 1,000 pods…');
    const tokens = await worker<TokensResult | Skipped>('tokens.ts', ['--n=1000']);
    results.tokens = tokens;
    printed.push(() => printTokens(tokens));
  }
  if (only.includes('logs')) {
    console.error('logs…');
    const logs = await worker<LogsResult>('logs.ts', [`--mb=${quick ? 16 : 64}`]);
    results.logs = logs;
    printed.push(() => printLogs(logs));
  }
  if (only.includes('exec')) {
    console.error('exec…');
    const exec = await worker<ExecResult>('exec.ts', [`--n=${quick ? 100 : 300}`]);
    results.exec = exec;
    printed.push(() => printExec(exec));
  }
  if (only.includes('metrics')) {
    const runs: Run<MetricsResult>[] = [];
    for (const n of quick ? [100] : [100, 1000]) {
      console.error(`metrics N=${n}…`);
      runs.push(await worker<MetricsResult>('metrics.ts', [`--n=${n}`]));
    }
    results.metrics = runs;
    printed.push(() => printMetrics(runs));
  }
  if (only.includes('page')) {
    console.error('page…');
    const page = await worker<PageResult | Skipped>('page.ts', [`--n=${quick ? 100 : 1000}`]);
    results.page = page;
    printed.push(() => printPage(page));
  }
  if (only.includes('rotation')) {
    console.error('rotation: a client certificate rotation under load (100 sim:// pods)…');
    const rotation = await worker<RotationResult | Skipped>('rotation.ts', ['--pods=100', '--renewals=2']);
    results.rotation = rotation;
    printed.push(() => printRotation(rotation));
  }
  results.totalWallS = Math.round((performance.now() - t0) / 100) / 10;

  console.log(`\nmachine: ${JSON.stringify(results.machine)}`);
  for (const print of printed) print();
  console.log(`\ntotal ${results.totalWallS} s\n`);
  const json = JSON.stringify(results, null, 2);
  console.log(json);
  await writeFile(resultsFile, `${json}\n`);
  console.error(`wrote ${path.relative(process.cwd(), resultsFile)}`);
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
