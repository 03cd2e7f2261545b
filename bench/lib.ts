/**
 * Shared pieces of the benchmarks: manifests, an in-process agent with timing hooks, percentiles,
 * memory/CPU sampling. Used by the worker scripts (sim.ts, containerd.ts, actors.ts), each of
 * which run.ts starts in a fresh Node process so that memory figures are not polluted by a
 * previous scenario.
 */
import { mkdtemp, readFile, unlink, writeFile } from 'node:fs/promises';
import http from 'node:http';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import type { AnyActorRef, InspectionEvent } from 'xstate';
import type { PodStatus } from '../src/api/types.ts';
import { type Agent, startAgent } from '../src/agent/agent.ts';
import { type AgentConfig, agentDefaults, finalizeAgentConfig } from '../src/cli/config.ts';
import { silentLogger } from '../src/log.ts';
import { removeAgentDir } from '../test/support/removeAgentDir.ts';

export const IMAGE = 'statelet.local/busybox:1';
export const LONG_RUNNING = `trap 'exit 0' TERM; while true; do sleep 1; done`;
export const NODE_NAME = 'bench-node';

/** A pod serving HTTP on 8080, for the probe scenarios (the same with and without probes). */
export const HTTPD = `mkdir -p /www; echo ok > /www/healthz; trap 'exit 0' TERM; httpd -f -p 8080 -h /www & wait`;

/** Three probes of three kinds, at the kubelet's default period of 10 s. */
const threeProbes = {
  startupProbe: { exec: { command: ['test', '-e', '/www/healthz'] }, periodSeconds: 10 },
  livenessProbe: { tcpSocket: { port: 8080 }, periodSeconds: 10 },
  readinessProbe: { httpGet: { path: '/healthz', port: 8080 }, periodSeconds: 10 },
};

export interface Workload {
  httpd?: boolean;
  probes?: boolean;
}

export function manifest(name: string, grace = 2, workload: Workload = {}): string {
  const main = {
    name: 'main',
    image: IMAGE,
    imagePullPolicy: 'IfNotPresent',
    command: ['sh', '-c', workload.httpd ? HTTPD : LONG_RUNNING],
    ...(workload.probes ? threeProbes : {}),
  };
  return JSON.stringify({
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace: 'default' },
    spec: { terminationGracePeriodSeconds: grace, containers: [main] },
  });
}

export const podName = (i: number) => `bench-${String(i).padStart(5, '0')}`;
export const manifestFile = (dir: string, i: number) => path.join(dir, `${podName(i)}.json`);

export async function writeManifests(dir: string, from: number, count: number, workload: Workload = {}): Promise<void> {
  const writes: Promise<void>[] = [];
  for (let i = from; i < from + count; i++) writes.push(writeFile(manifestFile(dir, i), manifest(podName(i), 2, workload)));
  await Promise.all(writes);
}

export async function removeManifests(dir: string, from: number, count: number): Promise<void> {
  const removals: Promise<void>[] = [];
  for (let i = from; i < from + count; i++) removals.push(unlink(manifestFile(dir, i)));
  await Promise.all(removals);
}

/** The static pod name on the node is `<name>-<node>`; this maps it back to the manifest's name. */
export function baseName(podFullName: string): string {
  return podFullName.endsWith(`-${NODE_NAME}`) ? podFullName.slice(0, -NODE_NAME.length - 1) : podFullName;
}

export function isRunningReady(status: PodStatus | undefined): boolean {
  if (!status || status.phase !== 'Running') return false;
  const cs = status.containerStatuses ?? [];
  return cs.length > 0 && cs.every((c) => c.ready === true && c.state?.running !== undefined);
}

/** All containers reported, none of them running. */
export function containersStopped(status: PodStatus | undefined): boolean {
  if (!status) return false;
  const cs = status.containerStatuses ?? [];
  return cs.length > 0 && cs.every((c) => c.state?.running === undefined);
}

export function percentile(values: number[], p: number): number {
  if (values.length === 0) return NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const rank = Math.ceil((p / 100) * sorted.length) - 1;
  return sorted[Math.min(sorted.length - 1, Math.max(0, rank))]!;
}

export interface Summary {
  count: number;
  p50: number;
  p99: number;
  max: number;
}

export function summarize(values: number[]): Summary {
  return { count: values.length, p50: round(percentile(values, 50)), p99: round(percentile(values, 99)), max: round(Math.max(...values)) };
}

export const round = (x: number, digits = 1) => (Number.isFinite(x) ? Math.round(x * 10 ** digits) / 10 ** digits : x);
export const mb = (bytes: number) => round(bytes / 1024 / 1024);

export function gc(): boolean {
  const g = (globalThis as { gc?: () => void }).gc;
  if (!g) return false;
  g();
  g();
  return true;
}

export function memory(): { rssMB: number; heapUsedMB: number; heapTotalMB: number; externalMB: number; afterGc: boolean } {
  const afterGc = gc();
  const m = process.memoryUsage();
  return { rssMB: mb(m.rss), heapUsedMB: mb(m.heapUsed), heapTotalMB: mb(m.heapTotal), externalMB: mb(m.external), afterGc };
}

/** CPU time (user + system, ms) a process has used, from /proc (clock ticks of 10 ms). */
export async function processCpuMs(pid: number): Promise<number> {
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10;
}

/** CPU used by this process over `ms` of wall time, as % of one core. */
export async function idleCpu(ms: number): Promise<{ windowS: number; cpuPercentOfOneCore: number; userMs: number; systemMs: number }> {
  const start = process.cpuUsage();
  const t0 = performance.now();
  await sleep(ms);
  const d = process.cpuUsage(start);
  const wall = performance.now() - t0;
  return {
    windowS: round(wall / 1000),
    cpuPercentOfOneCore: round(((d.user + d.system) / 1000 / wall) * 100, 2),
    userMs: round(d.user / 1000),
    systemMs: round(d.system / 1000),
  };
}

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

export async function tempDir(prefix: string): Promise<string> {
  return mkdtemp(path.join(os.tmpdir(), prefix));
}

/** Removes a directory, first unmounting the tmpfs a stopped agent leaves under it for its running pods. */
export async function removeDir(dir: string | undefined): Promise<void> {
  if (dir) await removeAgentDir(dir);
}

/** Stops the agent (a failure is printed, not thrown: the cleanup goes on) and removes the directories. */
export async function stopAndClean(agent: Agent | undefined, ...dirs: (string | undefined)[]): Promise<void> {
  await agent?.stop().catch((err: unknown) => console.error('agent stop failed', err));
  for (const dir of dirs) await removeDir(dir);
}

/** Runs a worker's `main` and exits: 0 once it resolves, 1 (the error printed) if it rejects. */
export function runWorker(main: () => Promise<void>): void {
  main().then(
    () => process.exit(0),
    (err: unknown) => {
      console.error(err);
      process.exit(1);
    },
  );
}

function isSyncLoop(ref: InspectionEvent['actorRef']): boolean {
  const actor = ref as AnyActorRef;
  return actor.system?.get('syncLoop') === actor;
}

/**
 * Per-pod timeline gathered from the agent's hooks: when the first CONFIG.ADD carrying pods was
 * routed, when each pod (by manifest name) was first Running+ready, when its containers were
 * first seen stopped, when its status was deleted (the pod is gone from the agent).
 */
export class Timeline {
  firstAddAt: number | null = null;
  /** CONFIG.ADD events with pods, with their time and size. */
  adds: { at: number; pods: number }[] = [];
  removes: { at: number; pods: number }[] = [];
  /** By manifest name: when the CONFIG.ADD / CONFIG.REMOVE carrying the pod was routed. */
  readonly addedAt = new Map<string, number>();
  readonly removedAt = new Map<string, number>();
  readonly running = new Map<string, number>();
  readonly stopped = new Map<string, number>();
  readonly deleted = new Map<string, number>();
  readonly uidToName = new Map<string, string>();
  private waiters: { check: () => boolean; resolve: () => void }[] = [];

  /** By pod UID: when its actor first entered `terminating`, `terminated`, and `terminated.finished`. */
  readonly terminatingAt = new Map<string, number>();
  readonly terminatedAt = new Map<string, number>();
  readonly finishedAt = new Map<string, number>();

  /** performance.now() at each pod actor's creation (`@xstate.actor` of the `pod` machine). */
  readonly actorCreatedAt: number[] = [];
  /** PLEG relists as the syncLoop received them. */
  readonly relists: { at: number; durationMs: number }[] = [];

  inspect = (event: InspectionEvent): void => {
    if (event.type === '@xstate.snapshot') {
      this.recordPodStep(event);
      return;
    }
    if (event.type === '@xstate.actor') {
      if ((event.actorRef as unknown as { logic?: { id?: string } }).logic?.id === 'pod') this.actorCreatedAt.push(performance.now());
      return;
    }
    if (event.type !== '@xstate.event') return;
    const e = event.event as { type: string; pods?: { metadata: { uid: string; name: string } }[]; durationMs?: number };
    if (e.type === 'PLEG.RELISTED' && e.durationMs !== undefined) {
      if (isSyncLoop(event.actorRef)) this.relists.push({ at: performance.now(), durationMs: e.durationMs });
      return;
    }
    if (e.type === 'CONFIG.ADD' || e.type === 'CONFIG.REMOVE') {
      // Only the syncLoop's own receipt (the same event is inspected again when routed to `pods`).
      if (!isSyncLoop(event.actorRef)) return;
      const pods = e.pods ?? [];
      if (pods.length === 0) return;
      const at = performance.now();
      for (const pod of pods) this.uidToName.set(pod.metadata.uid, baseName(pod.metadata.name));
      const byName = e.type === 'CONFIG.ADD' ? this.addedAt : this.removedAt;
      for (const pod of pods) if (!byName.has(baseName(pod.metadata.name))) byName.set(baseName(pod.metadata.name), at);
      if (e.type === 'CONFIG.ADD') {
        this.firstAddAt ??= at;
        this.adds.push({ at, pods: pods.length });
      } else {
        this.removes.push({ at, pods: pods.length });
      }
    }
  };

  private recordPodStep(event: InspectionEvent & { type: '@xstate.snapshot' }): void {
    const id = (event.actorRef as AnyActorRef).id;
    if (!id.startsWith('pod/')) return;
    const uid = id.slice('pod/'.length);
    const snapshot = event.snapshot as unknown as { value?: unknown; tags?: Set<string> };
    const value = snapshot.value;
    const top = typeof value === 'string' ? value : value && typeof value === 'object' ? Object.keys(value)[0] : undefined;
    const at = performance.now();
    if (top === 'terminating' && !this.terminatingAt.has(uid)) this.terminatingAt.set(uid, at);
    if (top === 'terminated' && !this.terminatedAt.has(uid)) this.terminatedAt.set(uid, at);
    if (snapshot.tags?.has('finished') && !this.finishedAt.has(uid)) this.finishedAt.set(uid, at);
  }

  onStatus = (uid: string, status: PodStatus | undefined): void => {
    const name = this.uidToName.get(uid);
    if (name === undefined) return;
    const at = performance.now();
    if (status === undefined) {
      if (!this.deleted.has(name)) this.deleted.set(name, at);
    } else {
      if (!this.running.has(name) && isRunningReady(status)) this.running.set(name, at);
      if (this.running.has(name) && !this.stopped.has(name) && containersStopped(status)) this.stopped.set(name, at);
    }
    this.wake();
  };

  wake(): void {
    this.waiters = this.waiters.filter((w) => {
      if (!w.check()) return true;
      w.resolve();
      return false;
    });
  }

  until(check: () => boolean, timeoutMs: number, what: string): Promise<void> {
    if (check()) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.waiters = this.waiters.filter((w) => w.check !== check);
        reject(new Error(`timed out after ${timeoutMs} ms waiting for ${what}`));
      }, timeoutMs);
      this.waiters.push({
        check,
        resolve: () => {
          clearTimeout(timer);
          resolve();
        },
      });
    });
  }
}

/** The agent's CRI calls so far, by operation: its kubelet_runtime_operations_total, scraped from the read-only server. */
export async function runtimeOperations(agent: Agent): Promise<Record<string, number>> {
  if (!agent.readOnlyUrl) throw new Error('runtimeOperations: the agent serves no read-only port');
  const text = await (await fetch(`${agent.readOnlyUrl}/metrics`)).text();
  const counts: Record<string, number> = {};
  for (const [, op, value] of text.matchAll(/^kubelet_runtime_operations_total\{operation_type="([^"]+)"\} (\S+)$/gm)) counts[op!] = Number(value);
  return counts;
}

/** The calls made between two readings of `runtimeOperations`, per second of `windowS`, busiest first. */
export function operationsPerSecond(before: Record<string, number>, after: Record<string, number>, windowS: number): Record<string, number> {
  const rates = Object.entries(after).map(([op, count]) => [op, round((count - (before[op] ?? 0)) / windowS, 2)] as const);
  return Object.fromEntries(rates.filter(([, rate]) => rate > 0).sort((a, b) => b[1] - a[1]));
}

export interface BenchAgent {
  agent: Agent;
  timeline: Timeline;
  /** performance.now() just before startAgent was called. */
  startedAt: number;
  /** How long startAgent took to resolve. */
  startMs: number;
}

export async function startBenchAgent(options: {
  endpoint: string;
  manifestDir: string;
  /** The agent's root dir; pod logs go to its `logs/`. */
  rootDir: string;
  maxPods: number;
  /** Serve the live visualizer on this port (0 or absent: disabled, as by default). */
  visualizerPort?: number;
  /** Join the cluster of this kubeconfig (the node's identity), as `--kubeconfig`. */
  kubeconfig?: string;
  /** Serve `/pods` and `/metrics` on this port (absent: disabled). */
  readOnlyPort?: number;
  /** --kube-api-qps and --kube-api-burst (absent: the kubelet's 50 and 100). */
  kubeApi?: { qps: number; burst: number };
  /** `--inspect=stately --inspect-url=<this>` (absent: no inspector). */
  inspectUrl?: string;
}): Promise<BenchAgent> {
  const settings = {
    ...agentDefaults('flags'),
    containerRuntimeEndpoint: options.endpoint,
    podManifestPath: options.manifestDir,
    rootDir: options.rootDir,
    podLogsDir: path.join(options.rootDir, 'logs'),
    readOnlyPort: options.readOnlyPort ?? 0,
    port: 0,
    healthzPort: 0,
    maxPods: options.maxPods,
    hostnameOverride: NODE_NAME,
    // The bench's pods' cgroups under a root of its own, apart from anything else on the machine.
    cgroupRoot: '/statelet-bench',
    ...(options.visualizerPort ? { visualizerPort: options.visualizerPort } : {}),
    ...(options.kubeconfig ? { kubeconfig: options.kubeconfig } : {}),
    ...(options.inspectUrl ? { inspect: 'stately' as const, inspectUrl: options.inspectUrl } : {}),
    ...(options.kubeApi ? { kubeApiQps: options.kubeApi.qps, kubeApiBurst: options.kubeApi.burst } : {}),
  };
  const config: AgentConfig = finalizeAgentConfig(settings);
  const timeline = new Timeline();
  const startedAt = performance.now();
  const agent = await startAgent(config, silentLogger, { inspect: { next: timeline.inspect } });
  const startMs = performance.now() - startedAt;
  agent.statuses.subscribe(timeline.onStatus);
  return { agent, timeline, startedAt, startMs };
}

export function argValue(name: string): string | undefined {
  const prefix = `--${name}=`;
  const arg = process.argv.find((a) => a.startsWith(prefix));
  return arg?.slice(prefix.length);
}

/** Workers write their result to the file named by --out=…, so stdout stays free for humans. */
export async function emit(result: unknown): Promise<void> {
  const out = argValue('out');
  const text = JSON.stringify(result, null, 2);
  if (out) await writeFile(out, text);
  else process.stdout.write(`${text}\n`);
}

export function progress(message: string): void {
  process.stderr.write(`  · ${message}\n`);
}

/** A V8 CPU profile of this process (for `--profile-idle=FILE.cpuprofile`, open in Chrome DevTools). */
export async function startProfiler(kind: 'cpu' | 'allocations' = 'cpu'): Promise<{ stop(file: string): Promise<void> }> {
  const { Session } = await import('node:inspector/promises');
  const session = new Session();
  session.connect();
  if (kind === 'allocations') {
    // Sampled allocations, garbage included: what the collector has to deal with, not what stays.
    await session.post('HeapProfiler.enable');
    await session.post('HeapProfiler.startSampling', { samplingInterval: 16_384, includeObjectsCollectedByMajorGC: true, includeObjectsCollectedByMinorGC: true });
  } else {
    await session.post('Profiler.enable');
    await session.post('Profiler.start');
  }
  return {
    async stop(file: string) {
      const { profile } = kind === 'allocations' ? await session.post('HeapProfiler.stopSampling') : await session.post('Profiler.stop');
      await writeFile(file, JSON.stringify(profile));
      session.disconnect();
    },
  };
}

/** A free TCP port on the loopback interface (bound once, then released). */
export function freeLoopbackPort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close((err) => (err ? reject(err) : resolve(port)));
    });
  });
}

/** What an SSE client of the visualizer has received so far. */
export interface SseCounts {
  bytes: number;
  pictures: number;
  batches: number;
}

export interface SseClient {
  /** Live counters (read them whenever; they keep growing until close()). */
  readonly counts: SseCounts;
  /** A copy of the counters now. */
  snapshot(): SseCounts;
  close(): void;
}

/**
 * Connects one client to `${baseUrl}/api/stream` and reads it as a browser tab would, except that
 * it only counts: bytes, `event: picture` and `event: batch` messages, and discards the data.
 * Resolves once the first `picture` has arrived, so the agent is known to be streaming to it.
 */
export function connectSseClient(baseUrl: string, timeoutMs = 10_000): Promise<SseClient> {
  const counts: SseCounts = { bytes: 0, pictures: 0, batches: 0 };
  const markers = { picture: 'event: picture\n', batch: 'event: batch\n' };
  const keep = Math.max(markers.picture.length, markers.batch.length) - 1;
  return new Promise((resolve, reject) => {
    const req = http.get(`${baseUrl}/api/stream`, { agent: false, headers: { accept: 'text/event-stream' } });
    const timer = setTimeout(() => req.destroy(new Error(`no picture on ${baseUrl}/api/stream after ${timeoutMs} ms`)), timeoutMs);
    const client: SseClient = {
      counts,
      snapshot: () => ({ ...counts }),
      close: () => req.destroy(),
    };
    req.once('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
    req.once('response', (res) => {
      if (res.statusCode !== 200) {
        clearTimeout(timer);
        req.destroy();
        reject(new Error(`GET /api/stream: HTTP ${res.statusCode}`));
        return;
      }
      res.on('error', () => {});
      // A marker may straddle two chunks: carry the last few characters over (latin1 keeps one
      // character per byte, and the markers are ASCII).
      let carry = '';
      res.on('data', (chunk: Buffer) => {
        counts.bytes += chunk.length;
        const text = carry + chunk.toString('latin1');
        for (const [key, marker] of Object.entries(markers) as [keyof typeof markers, string][]) {
          let at = text.indexOf(marker);
          while (at !== -1) {
            // Only count a marker that ends beyond the carried-over part (not already counted).
            if (at + marker.length > carry.length) counts[key === 'picture' ? 'pictures' : 'batches']++;
            at = text.indexOf(marker, at + 1);
          }
        }
        carry = text.slice(-keep);
        if (counts.pictures > 0) {
          clearTimeout(timer);
          resolve(client);
        }
      });
    });
  });
}
