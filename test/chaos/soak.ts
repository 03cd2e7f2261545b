/**
 * The soak (issue 13): one agent, the built `statelet` as users run it, with hundreds of static
 * pods churning for a long time on sim:// — pods added, updated and deleted every couple of
 * seconds, crash-looping and probe-failing ones among them — and its process sampled at a fixed
 * period: resident memory and the heap after a full garbage collection (through the inspector),
 * open file descriptors, the event loop's delay p99 since the previous sample (from `/metrics`)
 * and its active handles and requests (`process.getActiveResourcesInfo()`), and on the runtime's side the event streams open and the calls in
 * flight. What must hold: memory flat (the slope over the run after warm-up), descriptors and
 * streams bounded, every observation within the invariants, the node converged at the end.
 */
import { readdir } from 'node:fs/promises';
import path from 'node:path';
import type { Around } from '../../src/runtime/decorate.ts';
import { seededRandom } from '../support/faults.ts';
import { ChaosNode, type Kind } from './chaosNode.ts';
import { Inspector } from './inspector.ts';
import type { Violation } from './invariants.ts';

export interface SoakOptions {
  seed: number;
  image: string;
  pods: number;
  durationMs: number;
  sampleEveryMs: number;
  /** Called with each sample as it is taken (progress on a long run). */
  onSample?: (sample: SoakSample) => void;
}

export interface SoakSample {
  /** Since the soak's start (ms). */
  atMs: number;
  rssBytes: number;
  heapAfterGcBytes: number;
  openFds: number;
  activeHandles: number;
  eventLoopDelayP99Ms: number;
  /** The runtime's side: container event streams open, unary calls in flight. */
  eventStreams: number;
  callsInFlight: number;
  podsListed: number;
  /** Listed pods whose phase is Running. */
  podsRunning: number;
}

export interface SoakReport {
  seed: number;
  pods: number;
  changes: number;
  samples: SoakSample[];
  /** Least-squares slopes over the samples after the first fifth (warm-up), in MiB per hour. */
  rssSlopeMiBPerHour: number;
  heapSlopeMiBPerHour: number;
  observations: number;
  violations: Violation[];
  finalConvergeMs: number | null;
  notConverged: string[];
}

const KINDS: Kind[] = ['steady', 'steady', 'steady', 'steady', 'init', 'crashloop', 'unhealthy', 'completes'];
const MiB = 2 ** 20;

/** Slope of y over x (per ms) by least squares. */
export function slope(points: readonly [number, number][]): number {
  const n = points.length;
  if (n < 2) return 0;
  const mx = points.reduce((s, [x]) => s + x, 0) / n;
  const my = points.reduce((s, [, y]) => s + y, 0) / n;
  const sxy = points.reduce((s, [x, y]) => s + (x - mx) * (y - my), 0);
  const sxx = points.reduce((s, [x]) => s + (x - mx) ** 2, 0);
  return sxx === 0 ? 0 : sxy / sxx;
}

/** The slope of one figure over the samples after warm-up, in MiB per hour. */
export function slopeMiBPerHour(samples: readonly SoakSample[], figure: (s: SoakSample) => number): number {
  const steady = samples.slice(Math.floor(samples.length / 5));
  return (slope(steady.map((s) => [s.atMs, figure(s)])) * 3_600_000) / MiB;
}

export async function runSoak(options: SoakOptions): Promise<SoakReport> {
  const random = seededRandom(options.seed);
  const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)]!;
  let callsInFlight = 0;
  const counting: Around = async (_call, _args, proceed) => {
    callsInFlight++;
    try {
      return await proceed();
    } finally {
      callsInFlight--;
    }
  };
  // The built agent (bin/statelet.js runs dist/), its inspector on a free loopback port.
  const command = { file: process.execPath, args: ['--inspect=127.0.0.1:0', path.resolve(import.meta.dirname, '../../bin/statelet.js')] };
  // Room for every pod: the kubelet's default of 110 would reject most of them (OutOfpods).
  const node = await ChaosNode.start({ image: options.image, intercept: counting, command, agentArgs: [`--max-pods=${options.pods * 2}`] }, options.seed);
  const report: SoakReport = { seed: options.seed, pods: options.pods, changes: 0, samples: [], rssSlopeMiBPerHour: 0, heapSlopeMiBPerHour: 0, observations: 0, violations: node.violations, finalConvergeMs: null, notConverged: [] };
  let inspector: Inspector | null = null;
  let serial = 0;
  try {
    for (let i = 0; i < options.pods; i++) await node.write(`p${serial++}`, pick(KINDS), 0);
    const agent = await node.startAgent();
    inspector = await Inspector.fromOutput(agent.output());
    const started = performance.now();
    const sample = async (): Promise<void> => {
      const memory = await inspector!.memoryAfterGc();
      const metrics = await (await fetch(`http://127.0.0.1:${agent.readOnlyPort}/metrics`)).text();
      const pods = await agent.pods();
      const value = (name: string) => Number(new RegExp(`^${name}(?:\\{[^}]*\\})? (\\S+)$`, 'm').exec(metrics)?.[1] ?? NaN);
      const taken: SoakSample = {
        atMs: Math.round(performance.now() - started),
        rssBytes: memory.rss,
        heapAfterGcBytes: memory.heapUsed,
        openFds: (await readdir(`/proc/${agent.child.pid}/fd`)).length,
        activeHandles: memory.activeResources,
        eventLoopDelayP99Ms: value('nodejs_eventloop_lag_p99_seconds') * 1000,
        eventStreams: node.sim!.eventStreams(),
        callsInFlight,
        podsListed: pods.length,
        podsRunning: pods.filter((pod) => pod.status?.phase === 'Running').length,
      };
      report.samples.push(taken);
      options.onSample?.(taken);
    };
    let nextSample = performance.now();
    while (performance.now() - started < options.durationMs) {
      if (performance.now() >= nextSample) {
        await sample();
        nextSample += options.sampleEveryMs;
      }
      for (let change = 0; change < 1 + Math.floor(random() * 3); change++) {
        const names = [...node.live.keys()];
        const op = node.live.size < options.pods * 0.9 ? 'add' : node.live.size > options.pods * 1.1 ? 'delete' : pick(['add', 'update', 'update', 'delete'] as const);
        if (op === 'add' || names.length === 0) await node.write(`p${serial++}`, pick(KINDS), 0);
        else if (op === 'update') {
          const name = pick(names);
          const { kind, generation } = node.live.get(name)!;
          await node.write(name, kind, generation + 1);
        } else await node.remove(pick(names));
        report.changes++;
      }
      await node.observe();
      await new Promise((resolve) => setTimeout(resolve, 1_000 + random() * 2_000));
    }
    await sample();
    report.rssSlopeMiBPerHour = slopeMiBPerHour(report.samples, (s) => s.rssBytes);
    report.heapSlopeMiBPerHour = slopeMiBPerHour(report.samples, (s) => s.heapAfterGcBytes);
    report.finalConvergeMs = await node.converge(120_000);
    report.notConverged = node.notConverged;
    return report;
  } finally {
    report.observations = node.observations;
    inspector?.close();
    await node.close();
  }
}
