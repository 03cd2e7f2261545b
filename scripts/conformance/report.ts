/**
 * What a run of the upstream conformance suite says, pure: the specs of ginkgo's JSON report
 * (`--json-report`) with their outcome and, for a failure, its first line; and the comparison
 * with the list of specs expected to pass (test/conformance/expected-pass.txt), which may only
 * grow: a spec on it that did not pass is a regression, one that passed and is not on it is new.
 */

/** One spec of ginkgo's JSON report (types.SpecReport), the fields read here. */
interface GinkgoSpecReport {
  ContainerHierarchyTexts?: string[] | null;
  LeafNodeText?: string;
  LeafNodeType?: string;
  State?: string;
  RunTime?: number;
  Failure?: { Message?: string; Location?: { FileName?: string; LineNumber?: number } };
}

/** One suite of the report (types.Report). */
interface GinkgoReport {
  SuiteDescription?: string;
  /** Nanoseconds. */
  RunTime?: number;
  SuiteConfig?: { ParallelTotal?: number; FocusStrings?: string[] | null; SkipStrings?: string[] | null };
  SpecReports?: GinkgoSpecReport[] | null;
}

/** What ran, as a summary states it. */
export interface RunFacts {
  minutes: number;
  processes: number;
  focus: string;
  skip: string;
}

/** The run a ginkgo JSON report tells of: its length (to 0.1 min), its processes, focus and skip. */
export function runFacts(json: string): RunFacts {
  const [suite] = JSON.parse(json) as GinkgoReport[];
  return {
    minutes: Math.round((suite?.RunTime ?? 0) / 6e9) / 10,
    processes: suite?.SuiteConfig?.ParallelTotal ?? 1,
    focus: (suite?.SuiteConfig?.FocusStrings ?? []).join('|'),
    skip: (suite?.SuiteConfig?.SkipStrings ?? []).join('|'),
  };
}

export type Outcome = 'passed' | 'failed' | 'skipped' | 'pending' | 'panicked' | 'timedout' | 'interrupted' | 'aborted';

export interface SpecResult {
  /** The spec's full text, as --ginkgo.focus matches it: its containers' texts and its own, joined by spaces. */
  name: string;
  outcome: Outcome;
  /** Seconds it ran. */
  seconds: number;
  /** For a spec that did not pass: the first line of its failure, and where. */
  reason?: string;
}

/** The specs (It nodes) of a ginkgo JSON report; setup nodes (BeforeSuite, ReportAfterSuite…) are left out. */
export function specResults(json: string): SpecResult[] {
  const reports = JSON.parse(json) as GinkgoReport[];
  const results: SpecResult[] = [];
  for (const report of reports) {
    for (const spec of report.SpecReports ?? []) {
      if (spec.LeafNodeType !== 'It') continue;
      // A spec left out by the focus is reported skipped with nothing else; one that skipped itself
      // (a feature the cluster lacks) says why in its failure message, and is kept.
      if (spec.State === 'skipped' && !spec.Failure?.Message) continue;
      const name = [...(spec.ContainerHierarchyTexts ?? []), spec.LeafNodeText ?? ''].filter(Boolean).join(' ');
      const outcome = (spec.State ?? 'failed') as Outcome;
      const result: SpecResult = { name, outcome, seconds: Math.round((spec.RunTime ?? 0) / 1e8) / 10 };
      if (outcome !== 'passed' && outcome !== 'pending') {
        const message = (spec.Failure?.Message ?? '').trim().split('\n')[0] ?? '';
        const where = spec.Failure?.Location?.FileName ? ` (${spec.Failure.Location.FileName.replace(/^.*\/k8s\.io\/kubernetes@[^/]+\//, '')}:${spec.Failure.Location.LineNumber})` : '';
        result.reason = `${message}${where}`;
      }
      results.push(result);
    }
  }
  return results.sort((a, b) => a.name.localeCompare(b.name));
}

/** The expected-pass list: one spec name a line; blank lines and `#` comments ignored. */
export function parseExpected(text: string): string[] {
  return text
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line !== '' && !line.startsWith('#'));
}

export interface Comparison {
  /** Expected to pass and did not (or did not run): the run fails. */
  regressions: { name: string; outcome: Outcome | 'not run'; reason?: string }[];
  /** Passed and not yet on the list: to add. */
  newlyPassing: string[];
}

export function compare(results: readonly SpecResult[], expected: readonly string[]): Comparison {
  const byName = new Map(results.map((r) => [r.name, r]));
  const regressions: Comparison['regressions'] = [];
  for (const name of expected) {
    const result = byName.get(name);
    if (!result) regressions.push({ name, outcome: 'not run' });
    else if (result.outcome !== 'passed') regressions.push({ name, outcome: result.outcome, ...(result.reason ? { reason: result.reason } : {}) });
  }
  const listed = new Set(expected);
  const newlyPassing = results.filter((r) => r.outcome === 'passed' && !listed.has(r.name)).map((r) => r.name);
  return { regressions, newlyPassing };
}

/** The counts by outcome, in a fixed order. */
export function tally(results: readonly SpecResult[]): Record<'passed' | 'failed' | 'other', number> {
  const counts = { passed: 0, failed: 0, other: 0 };
  for (const r of results) {
    if (r.outcome === 'passed') counts.passed++;
    else if (r.outcome === 'skipped' || r.outcome === 'pending') counts.other++;
    else counts.failed++;
  }
  return counts;
}

/**
 * What the upstream kubelet did on this machine kind (`npm run conformance -- --agent=kubelet`
 * writes it to test/conformance/kubelet-baseline.txt): a `# ` line saying what ran, then the specs it
 * passed, one a line.
 */
export interface Baseline {
  /** The run, in words (its first comment line). */
  about: string;
  passed: ReadonlySet<string>;
}

export function baselineText(results: readonly SpecResult[], about: string): string {
  return [`# ${about}`, ...results.filter((r) => r.outcome === 'passed').map((r) => r.name), ''].join('\n');
}

export function parseBaseline(text: string): Baseline {
  const about = text.split('\n').find((line) => line.startsWith('# '))?.slice(2) ?? '';
  return { about, passed: new Set(parseExpected(text)) };
}

/** The specs the kubelet passed and this run did not (or did not run): what statelet still owes. */
export function behindBaseline(results: readonly SpecResult[], baseline: Baseline): string[] {
  const passed = new Set(results.filter((r) => r.outcome === 'passed').map((r) => r.name));
  return [...baseline.passed].filter((name) => !passed.has(name)).sort();
}

/** docs/conformance.md: what ran, the counts, and every spec that did not pass with its reason (and whether the kubelet passed it). */
export function summary(results: readonly SpecResult[], run: RunFacts, baseline?: Baseline): string {
  const { minutes, processes, focus, skip } = run;
  const counts = tally(results);
  const failed = results.filter((r) => r.outcome !== 'passed' && r.outcome !== 'skipped' && r.outcome !== 'pending');
  const skippedBySpec = results.filter((r) => r.outcome === 'skipped');
  const kubelet = (r: SpecResult) => (baseline ? ` ${baseline.passed.has(r.name) ? 'passed' : 'did not pass'} |` : '');
  const row = (r: SpecResult) => `| ${r.name} | ${r.outcome} | ${(r.reason ?? '').replace(/\|/g, '\\|')} |${kubelet(r)}`;
  const head = baseline ? ['| spec | outcome | reason | the kubelet |', '| --- | --- | --- | --- |'] : ['| spec | outcome | reason |', '| --- | --- | --- |'];
  const behind = baseline ? behindBaseline(results, baseline) : [];
  const side = baseline
    ? [
        `The upstream kubelet on the same machine kind (${baseline.about}): **${baseline.passed.size} passed**.`,
        behind.length === 0
          ? 'statelet passes every spec the kubelet passed.'
          : `Passed by the kubelet and not by statelet: ${behind.length} (marked in the table below).`,
        '',
      ]
    : [];
  return [
    '# The upstream node conformance suite against statelet',
    '',
    'Written by `npm run conformance` (scripts/conformance/run.ts): the `e2e.test` of the pinned',
    'Kubernetes release, statelet (the built binary) as the only node, on a private containerd,',
    `with kube-scheduler and kube-controller-manager; ${processes} ginkgo processes.`,
    '',
    `Focus: \`${focus}\`; skip: \`${skip}\`.`,
    '',
    `**${counts.passed} passed, ${counts.failed} failed**${counts.other ? `, ${counts.other} skipped` : ''} of ${results.length} specs, in ${minutes} min.`,
    '',
    ...side,
    '## Specs that did not pass',
    '',
    ...(failed.length === 0 ? ['None.'] : [...head, ...failed.map(row)]),
    '',
    ...(skippedBySpec.length === 0 ? [] : ['## Specs that skipped themselves', '', ...head, ...skippedBySpec.map(row), '']),
  ].join('\n');
}
