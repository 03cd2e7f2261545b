/** The statelet-versus-kubelet table of the benchmark (bench/versus.ts). */
import { describe, expect, it } from 'vitest';
import type { AgentResult, AgentRun } from '../../bench/results.ts';
import { VERSUS_END, VERSUS_START, versusMarkdown, versusRows, withVersusSection } from '../../bench/versus.ts';

const run = (agent: AgentRun['agent'], cpu: number, rss: number): AgentRun => ({
  agent,
  run: 1,
  pods: 100,
  createToReadyMs: { count: 100, p50: 1000, p99: 2000, max: 2100 },
  podsPerSecond: 10,
  agentCpuMsPerPodStart: cpu,
  containerdCpuMsPerPodStart: 60,
  agentCpuMsPerPodDeletion: cpu / 2,
  deleteToAllGoneMs: 3000,
  rssMBAtZeroPods: rss / 2,
  rssMBAtNPods: rss,
  rssMBAtNPodsHighest: rss + 5,
  idleCpuPercentOfOneCoreAtN: 2,
});

const result: AgentResult = {
  apiServer: 'v1.37.2',
  kubelet: 'v1.37.2',
  runs: [run('statelet', 20, 80), run('kubelet', 30, 100), run('statelet', 30, 90), run('kubelet', 30, 120)],
  cri: [{ run: 1, pods: 100, startMs: { count: 100, p50: 400, p99: 900, max: 950 }, podsPerSecond: 40, containerdCpuMsPerPodStart: 50, stopAndRemoveAllMs: 1500 }],
};

describe('versusRows', () => {
  it('gives each agent the mean of its own runs and statelet ÷ kubelet', () => {
    const rows = Object.fromEntries(versusRows(result).map((r) => [r.metric, r]));
    expect(rows['agent CPU per pod start (ms)']).toEqual({ metric: 'agent CPU per pod start (ms)', statelet: 25, kubelet: 30, ratio: 0.83, cri: undefined });
    expect(rows['agent RSS at N pods, mean over the idle window (MB)']).toMatchObject({ statelet: 85, kubelet: 110, ratio: 0.77 });
    // The runtime alone has the start figures, not an agent's.
    expect(rows['create→Ready p99 (ms)']).toMatchObject({ cri: 900 });
  });

  it('leaves the ratio out when the kubelet did not run', () => {
    const rows = versusRows({ ...result, runs: result.runs.filter((r) => r.agent === 'statelet') });
    expect(rows.every((r) => r.kubelet === undefined && r.ratio === undefined)).toBe(true);
  });
});

describe('withVersusSection', () => {
  const section = versusMarkdown(result, 'here');
  it('replaces what is between the markers and keeps the rest', () => {
    const doc = `# Benchmarks\n\nbefore\n\n${VERSUS_START}\nold table\n${VERSUS_END}\n\nafter\n`;
    const next = withVersusSection(doc, section);
    expect(next).toContain('before');
    expect(next).toContain('after');
    expect(next).not.toContain('old table');
    expect(next).toContain('| agent CPU per pod start (ms) | 25 | 30 | 0.83× | — |');
    expect(withVersusSection(next, section)).toBe(next);
  });

  it('appends the section to a document without one', () => {
    expect(withVersusSection('# Benchmarks\n', section)).toBe(`# Benchmarks\n\n${section}\n`);
  });
});
