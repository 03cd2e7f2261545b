/**
 * `npm run chaos`: the long reliability run (issue 13). Churn episodes with agent kills, one
 * after another, each with its own seed (derived from the run's), until the duration is spent;
 * then a table: episodes, faults injected by kind, observations checked against the invariants,
 * violations, and the time the node took to converge after each kind of fault.
 *
 *   npm run chaos -- --duration 10m [--seed N] [--pods 20] [--kills 5]
 *
 * A failing episode prints its seed; `npm run chaos -- --seed <it> --episodes 1` replays it.
 */
import { seededRandom } from '../../src/runtime/faults.ts';
import { percentile } from '../../bench/lib.ts';
import { type ChurnReport, runChurn } from './churn.ts';

const argv = process.argv.slice(2);
const arg = (name: string): string | undefined => {
  const i = argv.indexOf(`--${name}`);
  return i >= 0 ? argv[i + 1] : argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3);
};
const duration = (text: string): number => {
  const match = /^(\d+(?:\.\d+)?)(ms|s|m|h)?$/.exec(text);
  if (!match) throw new Error(`--duration ${text}: expected a number with ms, s, m or h`);
  return Number(match[1]) * { ms: 1, s: 1000, m: 60_000, h: 3_600_000 }[match[2] ?? 's']!;
};

const runSeed = Number(arg('seed') ?? Math.floor(Math.random() * 2 ** 31));
const budgetMs = duration(arg('duration') ?? '5m');
const maxEpisodes = Number(arg('episodes') ?? Infinity);
const pods = Number(arg('pods') ?? 20);
const kills = Number(arg('kills') ?? 5);
const seeds = seededRandom(runSeed);

console.log(`chaos run seed ${runSeed}: churn episodes of ${pods} pods with ${kills} agent kills and a runtime restart each, for ${arg('duration') ?? '5m'}`);
const started = performance.now();
const reports: ChurnReport[] = [];
let failed = false;
while (performance.now() - started < budgetMs && reports.length < maxEpisodes) {
  const seed = Math.floor(seeds() * 2 ** 31);
  const report = await runChurn({ seed, pods, rounds: kills * 4, kills, runtimeRestarts: 1, image: 'statelet.local/busybox:1' });
  reports.push(report);
  const ok = report.violations.length === 0 && report.finalConvergeMs !== null && report.faults.every((f) => f.convergeMs >= 0);
  console.log(`episode ${reports.length} seed ${seed}: ${report.changes} changes, ${report.faults.length} faults, ${report.observations} observations, ${report.violations.length} violations${ok ? '' : ` — FAILED: ${JSON.stringify({ violations: report.violations, notConverged: report.notConverged })}`}`);
  if (!ok) failed = true;
}

const byPoint = new Map<string, number[]>();
for (const f of reports.flatMap((r) => r.faults)) if (f.convergeMs >= 0) byPoint.set(f.fault, [...(byPoint.get(f.fault) ?? []), f.convergeMs]);
const rows: [string, string][] = [
  ['run seed', String(runSeed)],
  ['episodes run', String(reports.length)],
  ['pod changes (add, update, delete)', String(reports.reduce((n, r) => n + r.changes, 0))],
  ['faults injected: agent SIGKILL', String(reports.reduce((n, r) => n + r.faults.filter((f) => f.fault !== 'runtimeRestart').length, 0))],
  ['faults injected: runtime restart', String(reports.reduce((n, r) => n + r.faults.filter((f) => f.fault === 'runtimeRestart').length, 0))],
  ['observations checked against the invariants', String(reports.reduce((n, r) => n + r.observations, 0))],
  ['violations', String(reports.reduce((n, r) => n + r.violations.length, 0))],
  ['episodes that did not converge', String(reports.filter((r) => r.finalConvergeMs === null || r.faults.some((f) => f.convergeMs < 0)).length)],
  ...[...byPoint].map(([point, times]): [string, string] => [`converged after ${point === 'runtimeRestart' ? 'a runtime restart' : `a kill (${point})`}: p50 / p99 ms (n)`, `${Math.round(percentile(times, 50))} / ${Math.round(percentile(times, 99))} (${times.length})`]),
];
const width = Math.max(...rows.map(([k]) => k.length));
console.log(`\n${rows.map(([k, v]) => `${k.padEnd(width)}  ${v}`).join('\n')}`);
process.exit(failed ? 1 : 0);
