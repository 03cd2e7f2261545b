/**
 * `npm run chaos`: the long reliability run (issue 13). First the episodes, in turn, each with its
 * own seed (derived from the run's), until their time is spent: churn with agent kills, a runtime
 * restart, crashed containers and lost sandboxes; a hanging runtime call; a full, then read-only
 * disk (root); the API server's faults; agent kills with pods that have claims (the last two with
 * the control plane). Then the soak: one agent, the built `statelet`, with
 * hundreds of pods churning for `--duration`, sampled every minute. At the end a table: episodes,
 * faults injected by kind, observations checked against the invariants, violations, the time the
 * node took to converge after each kind of fault, and the soak's memory slopes and figures.
 *
 *   npm run chaos -- --duration 1h [--episodes-duration 10m] [--seed N] [--pods 20] [--kills 5] [--soak-pods 500] [--manifests 10000]
 *
 * The episodes' time starts with the generated manifests (`--manifests`, once; 0 leaves them out).
 * `--duration 0` runs the episodes only; `--episodes-duration 0` the soak only.
 *
 * A failing episode prints its seed; `npm run chaos -- --seed <run seed>` replays the whole run.
 */
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { seededRandom } from '../support/faults.ts';
import { percentile } from '../../bench/lib.ts';
import { runChurn } from './churn.ts';
import { type ControlPlane, startControlPlane } from '../support/controlPlane.ts';
import { API_FAULT_NAMES, type ApiFaultsOptions, CLAIM_KINDS, apiFaultsProblems, runApiFaults } from './apiFaults.ts';
import { diskProblems, runDiskEpisode } from './disk.ts';
import { runHang } from './hang.ts';
import { type ManifestFuzzReport, runManifestFuzz } from './manifestFuzz.ts';
import { type SoakReport, runSoak } from './soak.ts';

const argv = process.argv.slice(2);
const arg = (name: string): string | undefined => {
  const i = argv.indexOf(`--${name}`);
  return i >= 0 ? argv[i + 1] : argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3);
};
const duration = (text: string): number => {
  const match = /^(\d+(?:\.\d+)?)(ms|s|m|h)?$/.exec(text);
  if (!match) throw new Error(`duration ${text}: expected a number with ms, s, m or h`);
  return Number(match[1]) * { ms: 1, s: 1000, m: 60_000, h: 3_600_000 }[match[2] ?? 's']!;
};

const runSeed = Number(arg('seed') ?? Math.floor(Math.random() * 2 ** 31));
const soakMs = duration(arg('duration') ?? '10m');
const episodesMs = duration(arg('episodes-duration') ?? '10m');
const pods = Number(arg('pods') ?? 20);
const kills = Number(arg('kills') ?? 5);
const soakPods = Number(arg('soak-pods') ?? 500);
const manifests = Number(arg('manifests') ?? 10_000);
const image = 'statelet.local/busybox:1';
const seeds = seededRandom(runSeed);
const nextSeed = () => Math.floor(seeds() * 2 ** 31);

/** One episode as the table counts it. */
interface Episode {
  kind: string;
  seed: number;
  changes: number;
  observations: number;
  violations: number;
  faults: { fault: string; convergeMs: number }[];
  /** Why it failed; null when it did not. */
  failure: string | null;
}

const FAULT_NAMES = { runtimeRestart: 'runtime restart (1 s down)', containerCrash: 'a container crashed', sandboxLost: "a sandbox's own process lost" };

const API_NODE = 'chaos-api-node';
const controlPlane = episodesMs > 0 ? await startControlPlane({ nodeNames: [API_NODE] }) : null;
if (episodesMs > 0 && !controlPlane) console.log('NO CONTROL PLANE: the API-server faults and agent kills with claims episodes are left out of this run (see the message above)');

/** The episodes, in turn; each gets a fresh seed. */
const EPISODES: ((seed: number) => Promise<Episode>)[] = [
  async (seed) => {
    const report = await runChurn({ seed, pods, rounds: kills * 4 + 4, kills, runtimeRestarts: 1, podFailures: 2, image });
    const stuck = report.faults.filter((f) => f.convergeMs < 0);
    const failed = report.violations.length > 0 || report.finalConvergeMs === null || stuck.length > 0;
    return {
      kind: 'churn with agent kills',
      seed,
      changes: report.changes,
      observations: report.observations,
      violations: report.violations.length,
      faults: report.faults.map(({ fault, convergeMs }) => ({ fault: FAULT_NAMES[fault as keyof typeof FAULT_NAMES] ?? `agent SIGKILL (${fault})`, convergeMs })),
      failure: failed ? JSON.stringify({ violations: report.violations, stuck, notConverged: report.notConverged }) : null,
    };
  },
  async (seed) => {
    const report = await runHang({ seed, image, pods: 10, hangMs: 180_000, requestTimeoutMs: 120_000 });
    const failed = report.violations.length > 0 || report.notConverged.length > 0 || report.named === null || report.releasedConvergeMs === null || report.healthzStatuses.some((s) => s !== 200);
    return {
      kind: 'hanging runtime call',
      seed,
      changes: report.changes,
      observations: report.observations,
      violations: report.violations.length,
      faults: [
        { fault: `hanging call: pods around it converged`, convergeMs: Math.max(...report.convergeMs) },
        { fault: `hanging call: its pod after the answer`, convergeMs: report.releasedConvergeMs ?? -1 },
      ],
      failure: failed ? JSON.stringify({ call: report.call, named: report.named, notConverged: report.notConverged, violations: report.violations }) : null,
    };
  },
  // Mounting a small filesystem needs root: without it the episode is left out, and the run says so.
  ...(process.getuid?.() === 0 ? [diskEpisode] : []),
  // The API server's faults, and agent kills with pods that have claims, need the control plane (test/controlplane, built once).
  ...(controlPlane
    ? [apiEpisode(controlPlane, 'API-server faults', { rounds: 8 }), apiEpisode(controlPlane, 'agent kills with claims', { rounds: kills + 2, faults: ['agentKill'], faultsEach: kills, kinds: CLAIM_KINDS })]
    : []),
];

/** An episode of apiFaults.ts: the API server's faults by default, or the faults and kinds of pods given. */
function apiEpisode(cp: ControlPlane, kind: string, options: Pick<ApiFaultsOptions, 'rounds' | 'faults' | 'faultsEach' | 'kinds'>): (seed: number) => Promise<Episode> {
  return async (seed) => {
    const report = await runApiFaults({ seed, controlPlane: cp, node: API_NODE, pods: 8, ...options });
    const problems = apiFaultsProblems(report);
    return {
      kind,
      seed,
      changes: report.changes,
      observations: report.observations + report.apiVersions,
      violations: report.violations.length,
      faults: report.faults.map((f) => ({ fault: API_FAULT_NAMES[f.fault], convergeMs: f.convergeMs })),
      failure: problems.length ? JSON.stringify(problems) : null,
    };
  };
}

async function diskEpisode(seed: number): Promise<Episode> {
  const report = await runDiskEpisode({ seed, pods: 6, faultMs: 10_000, changesPerFault: 2, image });
  const problems = diskProblems(report);
  return {
    kind: 'disk full, then read-only',
    seed,
    changes: report.faults.reduce((n, f) => n + f.added + f.deleted, 0),
    observations: report.observations,
    violations: report.violations.length,
    faults: report.faults.map((f) => ({ fault: f.fault === 'full' ? 'disk full (10 s)' : 'disk read-only (10 s)', convergeMs: f.convergeMs })),
    failure: problems.length ? JSON.stringify(problems) : null,
  };
}

if (process.getuid?.() !== 0) console.log('NOT ROOT: the disk episode (a small tmpfs as --root-dir) is left out of this run');
console.log(`chaos run seed ${runSeed}: episodes for ${arg('episodes-duration') ?? '10m'}${soakMs > 0 ? `, then a soak of ${soakPods} pods for ${arg('duration') ?? '10m'}` : ''}`);
const started = performance.now();
let fuzz: ManifestFuzzReport | null = null;
if (manifests > 0 && episodesMs > 0) {
  const seed = nextSeed();
  console.log(`manifest fuzz seed ${seed}: ${manifests} generated manifests`);
  fuzz = await runManifestFuzz({ seed, manifests });
  console.log(`manifest fuzz: ${fuzz.accepted} accepted, ${fuzz.rejected} rejected, ${fuzz.agentCrashes} agent crashes, ${fuzz.sentinelRestarts} sentinel restarts, ${fuzz.failures.length} failures${fuzz.failures.length ? `: ${fuzz.failures.slice(0, 5).join('; ')}` : ''}`);
}
const episodes: Episode[] = [];
while (performance.now() - started < episodesMs) {
  const seed = nextSeed();
  const episode = await EPISODES[episodes.length % EPISODES.length]!(seed);
  episodes.push(episode);
  console.log(`episode ${episodes.length} (${episode.kind}) seed ${seed}: ${episode.changes} changes, ${episode.faults.length} faults, ${episode.observations} observations, ${episode.violations} violations${episode.failure ? ` — FAILED: ${episode.failure}` : ''}`);
}

// The soak runs the agent as users do: built. `--duration 0` leaves it out.
let soak: SoakReport | null = null;
if (soakMs > 0) {
  execFileSync(process.execPath, [path.resolve(import.meta.dirname, '../../scripts/build.mjs')], { stdio: 'inherit' });
  const soakSeed = nextSeed();
  console.log(`soak seed ${soakSeed}: ${soakPods} pods for ${arg('duration') ?? '10m'}, sampled every minute`);
  soak = await runSoak({
    seed: soakSeed,
    image,
    pods: soakPods,
    durationMs: soakMs,
    sampleEveryMs: 60_000,
    onSample: (s) => console.log(`  ${Math.round(s.atMs / 60_000)} min: rss ${mib(s.rssBytes)} MiB, heap after GC ${mib(s.heapAfterGcBytes)} MiB, fds ${s.openFds}, event-loop p99 ${s.eventLoopDelayP99Ms.toFixed(1)} ms, handles ${s.activeHandles}, event streams ${s.eventStreams}, calls in flight ${s.callsInFlight}, pods ${s.podsListed} (${s.podsRunning} running)`),
  });
}

function mib(bytes: number): string {
  return (bytes / 2 ** 20).toFixed(1);
}

await controlPlane?.close();
const fuzzFailed = fuzz !== null && (fuzz.failures.length > 0 || fuzz.violations.length > 0 || fuzz.agentCrashes > 0 || fuzz.sentinelRestarts > 0);
const failed = fuzzFailed || episodes.some((e) => e.failure) || (soak !== null && (soak.violations.length > 0 || soak.finalConvergeMs === null));
console.log(`\n${table(episodes, soak)}`);
process.exit(failed ? 1 : 0);

function table(episodes: Episode[], soak: SoakReport | null): string {
  const sum = (figure: (e: Episode) => number) => String(episodes.reduce((n, e) => n + figure(e), 0));
  const kinds = new Map<string, number>();
  for (const e of episodes) kinds.set(e.kind, (kinds.get(e.kind) ?? 0) + 1);
  const byFault = new Map<string, number[]>();
  const stuck = new Map<string, number>();
  for (const f of episodes.flatMap((e) => e.faults)) {
    if (f.convergeMs >= 0) byFault.set(f.fault, [...(byFault.get(f.fault) ?? []), f.convergeMs]);
    else stuck.set(f.fault, (stuck.get(f.fault) ?? 0) + 1);
  }
  const rows: [string, string][] = [
    ['run seed', String(runSeed)],
    ['episodes run', `${episodes.length} (${[...kinds].map(([k, n]) => `${n} ${k}`).join(', ')})`],
    ['seeds', episodes.map((e) => e.seed).join(' ')],
    ['pod changes (add, update, delete)', sum((e) => e.changes)],
    ...[...byFault].map(([fault, times]): [string, string] => [`faults: ${fault}`, `${times.length + (stuck.get(fault) ?? 0)} injected, converged p50 / p99 ${Math.round(percentile(times, 50))} / ${Math.round(percentile(times, 99))} ms`]),
    ...[...stuck].filter(([fault]) => !byFault.has(fault)).map(([fault, n]): [string, string] => [`faults: ${fault}`, `${n} injected, none converged`]),
    ...(fuzz ? fuzzRows(fuzz) : []),
    ['observations checked against the invariants', String(Number(sum((e) => e.observations)) + (soak?.observations ?? 0) + (fuzz?.observations ?? 0))],
    ['violations', String(Number(sum((e) => e.violations)) + (soak?.violations.length ?? 0) + (fuzz?.violations.length ?? 0))],
    ['episodes that failed', String(episodes.filter((e) => e.failure).length)],
    ...(soak ? soakRows(soak) : []),
  ];
  const width = Math.max(...rows.map(([k]) => k.length));
  return rows.map(([k, v]) => `${k.padEnd(width)}  ${v}`).join('\n');
}

function fuzzRows(fuzz: ManifestFuzzReport): [string, string][] {
  return [
    ['manifest fuzz', `seed ${fuzz.seed}, ${fuzz.manifests} generated manifests, ${fuzz.entries} directory entries (with symlinks, FIFOs, duplicates, huge files), ${Math.round(fuzz.durationMs / 1000)} s`],
    ['manifest fuzz: accepted and listed / rejected, logged with file and field', `${fuzz.accepted} / ${fuzz.rejected}`],
    ['manifest fuzz: agent crashes / sentinel restarts / failures', `${fuzz.agentCrashes} / ${fuzz.sentinelRestarts} / ${fuzz.failures.length}`],
  ];
}

function soakRows(soak: SoakReport): [string, string][] {
  const steady = soak.samples.slice(Math.floor(soak.samples.length / 5));
  const range = (figure: (s: SoakReport['samples'][number]) => number) => `${Math.min(...steady.map(figure))}–${Math.max(...steady.map(figure))}`;
  return [
    ['soak', `seed ${soak.seed}, ${soak.pods} pods (${range((s) => s.podsRunning)} running after warm-up), ${Math.round((soak.samples.at(-1)?.atMs ?? 0) / 60_000)} min, ${soak.changes} changes, ${soak.samples.length} samples`],
    ['soak: RSS first / last, slope after warm-up', `${mib(soak.samples[0]?.rssBytes ?? 0)} / ${mib(soak.samples.at(-1)?.rssBytes ?? 0)} MiB, ${soak.rssSlopeMiBPerHour.toFixed(1)} MiB/h`],
    ['soak: heap after GC first / last, slope after warm-up', `${mib(soak.samples[0]?.heapAfterGcBytes ?? 0)} / ${mib(soak.samples.at(-1)?.heapAfterGcBytes ?? 0)} MiB, ${soak.heapSlopeMiBPerHour.toFixed(1)} MiB/h`],
    ['soak: event-loop delay p99 per minute (after warm-up)', `median ${percentile(steady.map((s) => s.eventLoopDelayP99Ms), 50).toFixed(1)} ms, max ${Math.max(...steady.map((s) => s.eventLoopDelayP99Ms)).toFixed(1)} ms`],
    ['soak: open fds / active handles / event streams / calls in flight', `${range((s) => s.openFds)} / ${range((s) => s.activeHandles)} / ${range((s) => s.eventStreams)} / ${range((s) => s.callsInFlight)}`],
    ['soak: converged at the end', soak.finalConvergeMs === null ? `no: ${soak.notConverged.join('; ')}` : `in ${Math.round(soak.finalConvergeMs)} ms`],
  ];
}
