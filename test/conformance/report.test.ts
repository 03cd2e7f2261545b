import { describe, expect, it } from 'vitest';
import {
  baselineText,
  behindBaseline,
  compare,
  conformanceDoc,
  groupSection,
  groupsOf,
  parseBaseline,
  parseExpected,
  runFacts,
  sectionOf,
  specResults,
  tally,
  withRun,
} from '../../scripts/conformance/report.ts';

/** A ginkgo JSON report as `--json-report` writes it (the fields the runner reads). */
const report = JSON.stringify([
  {
    SuiteDescription: 'Kubernetes e2e suite',
    SpecReports: [
      { LeafNodeType: 'SynchronizedBeforeSuite', State: 'passed', RunTime: 1e9 },
      { ContainerHierarchyTexts: ['[sig-node] Pods'], LeafNodeText: 'should get a host IP [NodeConformance] [Conformance]', LeafNodeType: 'It', State: 'passed', RunTime: 2_340_000_000 },
      {
        ContainerHierarchyTexts: ['[sig-node] Container Runtime', 'blackbox test', 'on terminated container'],
        LeafNodeText: 'should report termination message from log output if TerminationMessagePolicy FallbackToLogsOnError is set [NodeConformance] [Conformance]',
        LeafNodeType: 'It',
        State: 'failed',
        RunTime: 31e9,
        Failure: {
          Message: 'Expected\n    <string>: \nto equal\n    <string>: DONE',
          Location: { FileName: '/root/go/pkg/mod/k8s.io/kubernetes@v1.37.2/test/e2e/common/node/runtime.go', LineNumber: 159 },
        },
      },
      { ContainerHierarchyTexts: ['[sig-node] Sysctls'], LeafNodeText: 'should skip', LeafNodeType: 'It', State: 'skipped', RunTime: 0, Failure: { Message: 'Only supported for node OS distro [gci ubuntu]' } },
      { ContainerHierarchyTexts: ['[sig-apps] Deployment'], LeafNodeText: 'not in the focus', LeafNodeType: 'It', State: 'skipped', RunTime: 0 },
      { ContainerHierarchyTexts: null, LeafNodeText: 'top-level spec', LeafNodeType: 'It', State: 'timedout', RunTime: 5e9, Failure: { Message: 'A suite timeout occurred' } },
    ],
  },
]);

describe('the conformance report', () => {
  const results = specResults(report);

  it('lists the specs that ran or skipped themselves, by full name, with the first line of each failure or skip and where', () => {
    expect(results).toEqual([
      {
        name: '[sig-node] Container Runtime blackbox test on terminated container should report termination message from log output if TerminationMessagePolicy FallbackToLogsOnError is set [NodeConformance] [Conformance]',
        outcome: 'failed',
        seconds: 31,
        reason: 'Expected (test/e2e/common/node/runtime.go:159)',
      },
      { name: '[sig-node] Pods should get a host IP [NodeConformance] [Conformance]', outcome: 'passed', seconds: 2.3 },
      { name: '[sig-node] Sysctls should skip', outcome: 'skipped', seconds: 0, reason: 'Only supported for node OS distro [gci ubuntu]' },
      { name: 'top-level spec', outcome: 'timedout', seconds: 5, reason: 'A suite timeout occurred' },
    ]);
    expect(tally(results)).toEqual({ passed: 1, failed: 2, other: 1 });
  });

  it.each([
    ['nothing expected: every passing spec is new', '', [], ['[sig-node] Pods should get a host IP [NodeConformance] [Conformance]']],
    ['the passing spec expected: nothing to say', '# comment\n[sig-node] Pods should get a host IP [NodeConformance] [Conformance]\n\n', [], []],
    [
      'a failed spec expected: a regression with its reason',
      'top-level spec',
      [{ name: 'top-level spec', outcome: 'timedout', reason: 'A suite timeout occurred' }],
      ['[sig-node] Pods should get a host IP [NodeConformance] [Conformance]'],
    ],
    ['an expected spec that did not run: a regression', 'gone spec', [{ name: 'gone spec', outcome: 'not run' }], ['[sig-node] Pods should get a host IP [NodeConformance] [Conformance]']],
  ])('%s', (_name, expectedText, regressions, newlyPassing) => {
    expect(compare(results, parseExpected(expectedText), ['node', 'other'])).toEqual({ regressions, newlyPassing });
  });

  it('does not look for an expected spec of a group the run did not run', () => {
    const storageSpec = '[sig-storage] PersistentVolumes-local [LocalVolumeType: dir] One pod requesting one prebound PVC should be able to mount volume and read from pod1';
    expect(compare(results, [storageSpec], ['node', 'other']).regressions).toEqual([]);
    expect(compare(results, [storageSpec], ['storage']).regressions).toEqual([{ name: storageSpec, outcome: 'not run' }]);
  });

  it('tells what ran from the report: minutes, processes, focus and skip', () => {
    const suite = { StartTime: '2026-12-07T14:50:01.5Z', RunTime: 669_086_229_068, SuiteConfig: { ParallelTotal: 4, FocusStrings: ['a|b'], SkipStrings: ['c'] }, SpecReports: [] };
    expect(runFacts(JSON.stringify([suite]))).toEqual({ date: '2026-12-07', minutes: 11.2, processes: 4, focus: 'a|b', skip: 'c' });
    expect(runFacts(report)).toEqual({ date: '', minutes: 0, processes: 1, focus: '', skip: '' });
  });

  describe('beside the upstream kubelet, by focus group', () => {
    const hostIp = '[sig-node] Pods should get a host IP [NodeConformance] [Conformance]';
    const fallback = results.find((r) => r.outcome === 'failed')!.name;
    const storageSpec = '[sig-storage] In-tree Volumes [Driver: emptydir] [Testpattern: Inline-volume (default fs)] volumes should store data';
    const storageRun = [{ name: storageSpec, outcome: 'passed' as const, seconds: 20 }];

    it('files each spec under the group whose focus selects it', () => {
      expect(groupsOf(results)).toEqual(['node', 'other']);
      expect(groupsOf([...results, ...storageRun])).toEqual(['node', 'storage', 'other']);
    });

    it("replaces the groups a kubelet run ran, keeps the others, and reads it back", () => {
      const before = parseBaseline(baselineText(withRun(new Map(), ['node'], results, (g, mine) => `${g}: ${mine.length} specs`)));
      expect([...before.keys()]).toEqual(['node']);
      expect(before.get('node')).toEqual({ about: 'node: 2 specs', passed: new Set([hostIp]) });
      const after = parseBaseline(baselineText(withRun(before, ['storage'], storageRun, (g) => `${g} today`)));
      expect([...after.keys()]).toEqual(['node', 'storage']);
      expect(after.get('node')).toEqual(before.get('node'));
      expect(after.get('storage')).toEqual({ about: 'storage today', passed: new Set([storageSpec]) });
      const rerun = withRun(after, ['node'], [{ name: hostIp, outcome: 'failed', seconds: 1 }], () => 'again');
      expect(rerun.get('node')).toEqual({ about: 'again', passed: new Set() });
      expect(rerun.get('storage')).toEqual(after.get('storage'));
    });

    it('refuses a spec line before any group line', () => {
      expect(() => parseBaseline(`# a comment\n${hostIp}\n`)).toThrow(/comes before any "# group/);
    });

    it.each([
      ['the kubelet passed only what statelet passed', [hostIp], []],
      ['the kubelet passed a spec statelet failed', [hostIp, fallback], [fallback]],
      ['the kubelet passed a spec this run did not select', ['elsewhere'], ['elsewhere']],
    ])('%s', (_name, passed, behind) => {
      const baseline = new Map([['node', { about: '', passed: new Set(passed) }], ['storage', { about: '', passed: new Set([storageSpec]) }]]);
      // The storage group did not run: what the kubelet passed there is not owed by this run.
      expect(behindBaseline(results, baseline, ['node'])).toEqual(behind);
    });

    const run = { date: '2026-12-07', minutes: 3, processes: 4, focus: 'f', skip: 's' };

    it("marks in a group's section which failures the kubelet passed, and says how many statelet owes", () => {
      const text = groupSection('node', results, run, { about: 'kubelet, today', passed: new Set([hostIp, fallback]) });
      expect(text).toContain('The upstream kubelet on the same machine kind (kubelet, today): **2 passed**.');
      expect(text).toContain('Passed by the kubelet and not by statelet: 1 (marked in the table below).');
      const wider = groupSection('node', results, run, { about: 'kubelet, today', passed: new Set([hostIp, fallback, 'elsewhere']) });
      expect(wider).toContain("Passed by the kubelet and not by statelet: 2, 1 of them failed here (marked in the table below), 1 not in this run's focus.");
      expect(text).toContain('**1 passed, 2 failed**, 1 skipped of 4 specs.');
      expect(text).toContain(`| ${fallback} | failed | Expected (test/e2e/common/node/runtime.go:159) | passed |`);
      expect(text).toContain('| top-level spec | timedout | A suite timeout occurred | did not pass |');
      expect(groupSection('node', results, run)).not.toContain('| the kubelet |');
    });

    it('writes the groups a run ran into docs/conformance.md, keeps the sections of the others, and says which never ran', () => {
      const baseline = new Map([['storage', { about: 'kubelet, today', passed: new Set([storageSpec]) }]]);
      const first = conformanceDoc('', new Map([['node', groupSection('node', results, run)]]), baseline);
      expect(sectionOf(first, 'node')).toContain('**1 passed, 2 failed**');
      expect(sectionOf(first, 'storage')).toContain('Not run against statelet yet (`npm run conformance -- --groups=storage`). The upstream kubelet (kubelet, today): **1 passed**.');
      const second = conformanceDoc(first, new Map([['storage', groupSection('storage', storageRun, run, baseline.get('storage'))]]), baseline);
      expect(sectionOf(second, 'node')).toBe(sectionOf(first, 'node'));
      expect(sectionOf(second, 'storage')).toContain('**1 passed, 0 failed** of 1 specs.');
      expect(sectionOf(second, 'storage')).toContain('statelet passes every spec the kubelet passed.');
      expect(second.indexOf('conformance-group: node')).toBeLessThan(second.indexOf('conformance-group: storage'));
    });
  });
});
