/**
 * statelet beside the upstream kubelet (bench/agent.ts with `--agents=statelet,kubelet,cri`): the
 * mean of each agent's runs, the ratio statelet ÷ kubelet, and the raw CRI floor, as the terminal
 * table and the Markdown section of docs/benchmarks.md (between its two markers).
 */
import type { AgentResult, AgentRun, CriBurstRun } from './results.ts';

export const VERSUS_START = '<!-- versus-kubelet: written by `npm run bench -- --only=versus-kubelet` -->';
export const VERSUS_END = '<!-- /versus-kubelet -->';
/** The second table of the same bench: pods that each mount a local PersistentVolume (`--local-pv`). */
export const LOCAL_PV_START = '<!-- versus-kubelet-local-pv: written by `npm run bench -- --only=versus-kubelet` -->';
export const LOCAL_PV_END = '<!-- /versus-kubelet-local-pv -->';
/** What the local-volume table keeps: the start's latency and the agent's CPU (the rest is the first table's). */
const LOCAL_PV_METRICS = new Set(['create→Ready p50 (ms)', 'create→Ready p99 (ms)', 'pods/s to all Ready', 'agent CPU per pod start (ms)', 'agent CPU per pod deletion (ms)', 'delete → all gone from the API (ms)']);

interface Row {
  metric: string;
  pick(run: AgentRun): number;
  /** The same figure for the runtime alone, when there is one. */
  cri?(run: CriBurstRun): number;
}

const ROWS: Row[] = [
  { metric: 'create→Ready p50 (ms)', pick: (r) => r.createToReadyMs.p50, cri: (r) => r.startMs.p50 },
  { metric: 'create→Ready p99 (ms)', pick: (r) => r.createToReadyMs.p99, cri: (r) => r.startMs.p99 },
  { metric: 'pods/s to all Ready', pick: (r) => r.podsPerSecond, cri: (r) => r.podsPerSecond },
  { metric: 'agent CPU per pod start (ms)', pick: (r) => r.agentCpuMsPerPodStart },
  { metric: "containerd's CPU per pod start (ms)", pick: (r) => r.containerdCpuMsPerPodStart, cri: (r) => r.containerdCpuMsPerPodStart },
  { metric: 'agent CPU per pod deletion (ms)', pick: (r) => r.agentCpuMsPerPodDeletion },
  { metric: 'delete → all gone from the API (ms)', pick: (r) => r.deleteToAllGoneMs, cri: (r) => r.stopAndRemoveAllMs },
  { metric: 'agent RSS at 0 pods (MB)', pick: (r) => r.rssMBAtZeroPods },
  { metric: 'agent RSS at N pods, mean over the idle window (MB)', pick: (r) => r.rssMBAtNPods },
  { metric: 'agent RSS at N pods, highest (MB)', pick: (r) => r.rssMBAtNPodsHighest },
  { metric: 'agent idle CPU at N pods (% of one core)', pick: (r) => r.idleCpuPercentOfOneCoreAtN },
];

const mean = (values: number[]) => (values.length ? Math.round((values.reduce((a, b) => a + b, 0) / values.length) * 10) / 10 : undefined);

/** Each metric: statelet's mean, the kubelet's, statelet ÷ kubelet (2 decimals), and the runtime alone's. */
export function versusRows(result: AgentResult): { metric: string; statelet?: number; kubelet?: number; ratio?: number; cri?: number }[] {
  const of = (agent: string) => result.runs.filter((r) => r.agent === agent);
  return ROWS.map((row) => {
    const statelet = mean(of('statelet').map(row.pick));
    const kubelet = mean(of('kubelet').map(row.pick));
    const cri = row.cri ? mean((result.cri ?? []).map(row.cri)) : undefined;
    const ratio = statelet !== undefined && kubelet ? Math.round((statelet / kubelet) * 100) / 100 : undefined;
    return { metric: row.metric, statelet, kubelet, ratio, cri };
  });
}

const cell = (value: number | undefined, suffix = '') => (value === undefined ? '—' : `${value}${suffix}`);

/** The section of docs/benchmarks.md: how it was run, then the table. */
export function versusMarkdown(result: AgentResult, about: string): string {
  const counts = ['statelet', 'kubelet'].map((agent) => `${result.runs.filter((r) => r.agent === agent).length} ${agent}`).join(', ');
  const lines = [
    VERSUS_START,
    `${about}: ${result.runs[0]?.pods ?? 0} pods created through the API at once, kube-apiserver ${result.apiServer}, kubelet ${result.kubelet ?? '(not run)'}; runs: ${counts}, ${result.cri?.length ?? 0} raw CRI; means of the runs.`,
    '',
    '| | statelet | kubelet | statelet ÷ kubelet | the runtime alone (raw CRI) |',
    '|---|---|---|---|---|',
    ...versusRows(result).map((r) => `| ${r.metric} | ${cell(r.statelet)} | ${cell(r.kubelet)} | ${cell(r.ratio, '×')} | ${cell(r.cri)} |`),
    VERSUS_END,
  ];
  return lines.join('\n');
}

/** The local-volume section: each pod with a claim of its own bound to a local PersistentVolume. */
export function localPvMarkdown(result: AgentResult, about: string): string {
  const counts = ['statelet', 'kubelet'].map((agent) => `${result.runs.filter((r) => r.agent === agent).length} ${agent}`).join(', ');
  return [
    LOCAL_PV_START,
    `${about}: ${result.runs[0]?.pods ?? 0} pods, each mounting a claim bound to a local PersistentVolume (a directory, bind-mounted), created through the API at once; runs: ${counts}; means of the runs.`,
    '',
    '| | statelet | kubelet | statelet ÷ kubelet |',
    '|---|---|---|---|',
    ...versusRows(result)
      .filter((r) => LOCAL_PV_METRICS.has(r.metric))
      .map((r) => `| ${r.metric} | ${cell(r.statelet)} | ${cell(r.kubelet)} | ${cell(r.ratio, '×')} |`),
    LOCAL_PV_END,
  ].join('\n');
}

/** `doc` with the section between `startMarker` and `endMarker` replaced by `section` (appended when it has none yet). */
export function withSection(doc: string, startMarker: string, endMarker: string, section: string): string {
  const start = doc.indexOf(startMarker);
  const end = doc.indexOf(endMarker);
  if (start < 0 || end < start) return `${doc.trimEnd()}\n\n${section}\n`;
  return doc.slice(0, start) + section + doc.slice(end + endMarker.length);
}

/** `doc` with its versus section replaced by `section` (appended when it has none yet). */
export function withVersusSection(doc: string, section: string): string {
  return withSection(doc, VERSUS_START, VERSUS_END, section);
}
