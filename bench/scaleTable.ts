/**
 * The scale bench (bench/scale.ts) of `npm run bench -- --only=scale`: statelet's simulated nodes
 * beside kwok's, the mean of each one's runs, as the terminal table and the Markdown section of
 * docs/benchmarks.md (between its two markers).
 */
import { withSection } from './versus.ts';

export const SCALE_START = '<!-- scale: written by `npm run bench -- --only=scale` -->';
export const SCALE_END = '<!-- /scale -->';

export interface AtRest {
  cpuPercent: number;
  apiRequestsPerS: number;
  /** RSS read every second over the rest window (runs before this field read it once, before the window). */
  rss?: { meanMB: number; minMB: number; maxMB: number };
}

export interface ScaleRun {
  faker: 'statelet' | 'kwok';
  nodes: number;
  podsPerNode: number;
  settleS: number;
  idleS: number;
  loneNodeRssMB?: number;
  allNodesReadyS: number;
  idleNodesRssMB: number;
  idleNodes: AtRest;
  rssPerIdleNodeMB?: number;
  burst: { pods: number; allReadyS: number; podsPerS: number; cpuPerPodStartMs: number; apiServerCpuS: number };
  withPodsRssMB: number;
  rssPerPodKB: number;
  withPods: AtRest;
  violations?: number;
  firstViolations?: string[];
}

interface Row {
  metric: string;
  pick(run: ScaleRun): number | undefined;
}

const ROWS: Row[] = [
  { metric: 'all Nodes Ready after the process starts (s)', pick: (r) => r.allNodesReadyS },
  { metric: 'RSS, one lone node (MB)', pick: (r) => r.loneNodeRssMB },
  { metric: 'RSS, all nodes at rest, no pods (MB)', pick: (r) => r.idleNodesRssMB },
  { metric: 'RSS per idle node beyond the first (MB)', pick: (r) => r.rssPerIdleNodeMB },
  { metric: 'CPU at rest, no pods (% of one core)', pick: (r) => r.idleNodes.cpuPercent },
  { metric: 'API requests/s at rest, no pods (every client)', pick: (r) => r.idleNodes.apiRequestsPerS },
  { metric: 'Deployment: all pods Ready (s)', pick: (r) => r.burst.allReadyS },
  { metric: 'pods/s to all Ready', pick: (r) => r.burst.podsPerS },
  { metric: 'CPU per pod start (ms)', pick: (r) => r.burst.cpuPerPodStartMs },
  { metric: "the API server's CPU for the burst (s)", pick: (r) => r.burst.apiServerCpuS },
  { metric: 'RSS with the pods (MB)', pick: (r) => r.withPodsRssMB },
  { metric: 'RSS per pod (KB)', pick: (r) => r.rssPerPodKB },
  { metric: 'CPU at rest with the pods (% of one core)', pick: (r) => r.withPods.cpuPercent },
  { metric: 'API requests/s at rest with the pods (every client)', pick: (r) => r.withPods.apiRequestsPerS },
  { metric: 'invariant violations over all nodes', pick: (r) => r.violations },
];

const mean = (values: (number | undefined)[]) => {
  const known = values.filter((v): v is number => v !== undefined);
  return known.length ? Math.round((known.reduce((a, b) => a + b, 0) / known.length) * 100) / 100 : undefined;
};

/** Each metric: statelet's mean, kwok's. */
export function scaleRows(runs: readonly ScaleRun[]): { metric: string; statelet?: number; kwok?: number }[] {
  const of = (faker: ScaleRun['faker']) => runs.filter((r) => r.faker === faker);
  return ROWS.map((row) => ({ metric: row.metric, statelet: mean(of('statelet').map(row.pick)), kwok: mean(of('kwok').map(row.pick)) }));
}

const cell = (value: number | undefined) => (value === undefined ? '—' : String(value));

/** The section of docs/benchmarks.md: how it was run, then the table. */
export function scaleMarkdown(runs: readonly ScaleRun[], about: string): string {
  const first = runs[0];
  const counts = (['statelet', 'kwok'] as const).map((faker) => `${runs.filter((r) => r.faker === faker).length} ${faker}`).join(', ');
  return [
    SCALE_START,
    `${about}: ${first?.nodes ?? 0} nodes, a Deployment of ${first?.burst.pods ?? 0} pods (${first?.podsPerNode ?? 0} per node), rest measured over ${first?.idleS ?? 0} s after ${first?.settleS ?? 0} s (RSS: the mean of a reading a second); runs: ${counts}, alternated; means of the runs.`,
    '',
    '| | statelet --nodes | kwok |',
    '|---|---|---|',
    ...scaleRows(runs).map((r) => `| ${r.metric} | ${cell(r.statelet)} | ${cell(r.kwok)} |`),
    SCALE_END,
  ].join('\n');
}

export function withScaleSection(doc: string, section: string): string {
  return withSection(doc, SCALE_START, SCALE_END, section);
}
