/**
 * What a run of the upstream conformance suite says, pure: the specs of ginkgo's JSON report
 * (`--json-report`) with their outcome and, for a failure, its first line; the comparison with
 * the list of specs expected to pass (test/conformance/expected-pass.txt), which may only grow: a
 * spec on it of a group that ran and did not pass is a regression, one that passed and is not on
 * it is new; the upstream kubelet's baseline and docs/conformance.md, both kept by focus group
 * (scripts/conformance/groups.ts), a run replacing only the groups it ran.
 */
import { GROUP_NAMES, groupOf } from './groups.ts';

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
  StartTime?: string;
  /** Nanoseconds. */
  RunTime?: number;
  SuiteConfig?: { ParallelTotal?: number; FocusStrings?: string[] | null; SkipStrings?: string[] | null };
  SpecReports?: GinkgoSpecReport[] | null;
}

/** What ran, as a summary states it. */
export interface RunFacts {
  /** The day it started (YYYY-MM-DD), or '' when the report does not say. */
  date: string;
  minutes: number;
  processes: number;
  focus: string;
  skip: string;
}

/** The run a ginkgo JSON report tells of: its length (to 0.1 min), its processes, focus and skip. */
export function runFacts(json: string): RunFacts {
  const [suite] = JSON.parse(json) as GinkgoReport[];
  return {
    date: (suite?.StartTime ?? '').slice(0, 10),
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

/**
 * `ran`: the groups of the run (`other` for specs of a run's own --focus that no group selects);
 * an expected spec of another group is not looked for.
 */
export function compare(results: readonly SpecResult[], expected: readonly string[], ran: readonly string[]): Comparison {
  const byName = new Map(results.map((r) => [r.name, r]));
  const regressions: Comparison['regressions'] = [];
  for (const name of expected) {
    if (!ran.includes(groupOf(name) ?? OTHER)) continue;
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

/** The group of a spec that no focus group selects (a run with its own --focus). */
export const OTHER = 'other';

/** The groups the specs of a run belong to, in report order (`other` last). */
export function groupsOf(results: readonly SpecResult[]): string[] {
  const found = new Set<string>(results.map((r) => groupOf(r.name) ?? OTHER));
  return [...GROUP_NAMES, OTHER].filter((g) => found.has(g));
}

/**
 * What the upstream kubelet did on this machine kind, by focus group (`npm run conformance --
 * --agent=kubelet` writes test/conformance/kubelet-baseline.txt): per group a `# group <name>: `
 * line saying what ran, then the specs it passed, one a line.
 */
export interface BaselineGroup {
  /** The run, in words. */
  about: string;
  passed: ReadonlySet<string>;
}
export type Baseline = ReadonlyMap<string, BaselineGroup>;

const SECTION = /^# group ([\w-]+): (.*)$/;

export function parseBaseline(text: string): Baseline {
  const groups = new Map<string, { about: string; passed: Set<string> }>();
  let current: { about: string; passed: Set<string> } | undefined;
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    const section = SECTION.exec(line);
    if (section) {
      current = { about: section[2]!, passed: new Set() };
      groups.set(section[1]!, current);
    } else if (line !== '' && !line.startsWith('#')) {
      if (!current) throw new Error(`kubelet baseline: "${line}" comes before any "# group <name>: …" line`);
      current.passed.add(line);
    }
  }
  return groups;
}

export function baselineText(baseline: Baseline): string {
  const order = [...GROUP_NAMES, OTHER].filter((g) => baseline.has(g));
  return [
    '# What the upstream kubelet passed on this machine kind, by focus group: written by `npm run conformance -- --agent=kubelet`',
    '# (scripts/conformance/run.ts), which replaces the groups it ran and keeps the others.',
    ...order.flatMap((g) => [`# group ${g}: ${baseline.get(g)!.about}`, ...[...baseline.get(g)!.passed].sort()]),
    '',
  ].join('\n');
}

/** The baseline with the groups a kubelet run ran replaced by what it passed in each; `about(group, its results)` says what ran. */
export function withRun(baseline: Baseline, ran: readonly string[], results: readonly SpecResult[], about: (group: string, results: SpecResult[]) => string): Baseline {
  const next = new Map(baseline);
  for (const group of ran) {
    const mine = results.filter((r) => (groupOf(r.name) ?? OTHER) === group);
    next.set(group, { about: about(group, mine), passed: new Set(mine.filter((r) => r.outcome === 'passed').map((r) => r.name)) });
  }
  return next;
}

/** The specs the kubelet passed in the groups that ran and this run did not pass (or did not run): what statelet still owes. */
export function behindBaseline(results: readonly SpecResult[], baseline: Baseline, ran: readonly string[]): string[] {
  const passed = new Set(results.filter((r) => r.outcome === 'passed').map((r) => r.name));
  return ran.flatMap((g) => [...(baseline.get(g)?.passed ?? [])]).filter((name) => !passed.has(name)).sort();
}

/** What docs/conformance.md says of each group, in words. */
export const GROUP_TITLES: Record<string, string> = {
  node: 'node: sig-node and the node-storage [Conformance] specs, RuntimeClass handlers, user namespaces',
  storage: 'storage: the in-tree storage suites (local PVs, hostPath, hostPathSymlink, emptydir, PersistentVolumes-local, Subpath)',
  [OTHER]: 'other: specs of a run with its own --focus',
};

const begin = (group: string) => `<!-- conformance-group: ${group} -->`;
const end = (group: string) => `<!-- /conformance-group: ${group} -->`;

/** How many specs the kubelet passed and this run did not: failed here (in the table), or not in this run's focus. */
function behindLine(behind: readonly string[], results: readonly SpecResult[]): string {
  const ran = new Set(results.map((r) => r.name));
  const notRun = behind.filter((name) => !ran.has(name)).length;
  const failed = behind.length - notRun;
  return `Passed by the kubelet and not by statelet: ${behind.length}${notRun ? `, ${failed} of them failed here (marked in the table below), ${notRun} not in this run's focus` : ' (marked in the table below)'}.`;
}

/** One group's section of docs/conformance.md from a run: what ran, the counts, every spec that did not pass with its reason (and whether the kubelet passed it). */
export function groupSection(group: string, results: readonly SpecResult[], run: RunFacts, baseline?: BaselineGroup): string {
  const { date, minutes, processes, focus, skip } = run;
  const counts = tally(results);
  const failed = results.filter((r) => r.outcome !== 'passed' && r.outcome !== 'skipped' && r.outcome !== 'pending');
  const skippedBySpec = results.filter((r) => r.outcome === 'skipped');
  const kubelet = (r: SpecResult) => (baseline ? ` ${baseline.passed.has(r.name) ? 'passed' : 'did not pass'} |` : '');
  const row = (r: SpecResult) => `| ${r.name} | ${r.outcome} | ${(r.reason ?? '').replace(/\|/g, '\\|')} |${kubelet(r)}`;
  const head = baseline ? ['| spec | outcome | reason | the kubelet |', '| --- | --- | --- | --- |'] : ['| spec | outcome | reason |', '| --- | --- | --- |'];
  const behind = baseline ? behindBaseline(results, new Map([[group, baseline]]), [group]) : [];
  const side = baseline
    ? [
        `The upstream kubelet on the same machine kind (${baseline.about}): **${baseline.passed.size} passed**.`,
        behind.length === 0 ? 'statelet passes every spec the kubelet passed.' : behindLine(behind, results),
        '',
      ]
    : ['No kubelet baseline for this group yet (`npm run conformance -- --agent=kubelet`).', ''];
  return [
    begin(group),
    `## ${GROUP_TITLES[group] ?? group}`,
    '',
    `Run${date ? ` of ${date}` : ''}: ${processes} ginkgo processes, ${minutes} min in all; focus: \`${focus}\`; skip: \`${skip}\`.`,
    '',
    `**${counts.passed} passed, ${counts.failed} failed**${counts.other ? `, ${counts.other} skipped` : ''} of ${results.length} specs.`,
    '',
    ...side,
    '### Specs that did not pass',
    '',
    ...(failed.length === 0 ? ['None.'] : [...head, ...failed.map(row)]),
    '',
    ...(skippedBySpec.length === 0 ? [] : ['### Specs that skipped themselves', '', ...head, ...skippedBySpec.map(row), '']),
    end(group),
  ].join('\n');
}

/** The section of one group in a docs/conformance.md, if it has one. */
export function sectionOf(doc: string, group: string): string | undefined {
  const from = doc.indexOf(begin(group));
  const to = doc.indexOf(end(group));
  return from >= 0 && to > from ? doc.slice(from, to + end(group).length) : undefined;
}

/**
 * docs/conformance.md: each group's section, from this run for the groups it ran (`sections`),
 * else kept from the previous document, else a line saying it has not run, with the kubelet's
 * baseline for it.
 */
export function conformanceDoc(previous: string, sections: ReadonlyMap<string, string>, baseline?: Baseline): string {
  const order = [...GROUP_NAMES, ...(sections.has(OTHER) || sectionOf(previous, OTHER) ? [OTHER] : [])];
  const notRun = (group: string) => {
    const kubelet = baseline?.get(group);
    return [
      begin(group),
      `## ${GROUP_TITLES[group] ?? group}`,
      '',
      `Not run against statelet yet (\`npm run conformance -- --groups=${group}\`).${kubelet ? ` The upstream kubelet (${kubelet.about}): **${kubelet.passed.size} passed**.` : ''}`,
      end(group),
    ].join('\n');
  };
  return [
    '# The upstream conformance suites against statelet',
    '',
    'Written by `npm run conformance` (scripts/conformance/run.ts): the `e2e.test` of the pinned',
    'Kubernetes release, statelet (the built binary) as the only node, on a private containerd,',
    'with kube-scheduler and kube-controller-manager, beside what the upstream kubelet of the same',
    'release passed on the same machine kind (test/conformance/kubelet-baseline.txt). By focus group',
    '(scripts/conformance/groups.ts): a run replaces the sections of the groups it ran and keeps the',
    'others. `npm run conformance` runs both groups (what CI runs); `--groups=node` or `--groups=storage` one.',
    '',
    ...order.flatMap((group) => [sections.get(group) ?? sectionOf(previous, group) ?? notRun(group), '']),
  ].join('\n');
}
