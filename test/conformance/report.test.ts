import { describe, expect, it } from 'vitest';
import { baselineText, behindBaseline, compare, parseBaseline, parseExpected, runFacts, specResults, summary, tally } from '../../scripts/conformance/report.ts';

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
    expect(compare(results, parseExpected(expectedText))).toEqual({ regressions, newlyPassing });
  });

  it('tells what ran from the report: minutes, processes, focus and skip', () => {
    const suite = { RunTime: 669_086_229_068, SuiteConfig: { ParallelTotal: 4, FocusStrings: ['a|b'], SkipStrings: ['c'] }, SpecReports: [] };
    expect(runFacts(JSON.stringify([suite]))).toEqual({ minutes: 11.2, processes: 4, focus: 'a|b', skip: 'c' });
    expect(runFacts(report)).toEqual({ minutes: 0, processes: 1, focus: '', skip: '' });
  });

  describe('beside the upstream kubelet', () => {
    const hostIp = '[sig-node] Pods should get a host IP [NodeConformance] [Conformance]';
    const fallback = results.find((r) => r.outcome === 'failed')!.name;

    it('keeps what the kubelet passed, with a line about the run, and reads it back', () => {
      const text = baselineText([...results, { name: fallback.replace('should', 'also'), outcome: 'passed', seconds: 1 }], 'kubelet v1.37.2: 2 passed');
      expect(text.split('\n')[0]).toBe('# kubelet v1.37.2: 2 passed');
      const baseline = parseBaseline(text);
      expect(baseline.about).toBe('kubelet v1.37.2: 2 passed');
      expect([...baseline.passed].sort()).toEqual([fallback.replace('should', 'also'), hostIp].sort());
    });

    it.each([
      ['the kubelet passed only what statelet passed', [hostIp], []],
      ['the kubelet passed a spec statelet failed', [hostIp, fallback], [fallback]],
      ['the kubelet passed a spec this run did not select', ['elsewhere'], ['elsewhere']],
    ])('%s', (_name, passed, behind) => {
      expect(behindBaseline(results, { about: '', passed: new Set(passed) })).toEqual(behind);
    });

    it("marks in the summary which failures the kubelet passed, and says how many statelet owes", () => {
      const run = { minutes: 3, processes: 4, focus: 'f', skip: 's' };
      const text = summary(results, run, { about: 'kubelet, today', passed: new Set([hostIp, fallback]) });
      expect(text).toContain('The upstream kubelet on the same machine kind (kubelet, today): **2 passed**.');
      expect(text).toContain('Passed by the kubelet and not by statelet: 1');
      expect(text).toContain(`| ${fallback} | failed | Expected (test/e2e/common/node/runtime.go:159) | passed |`);
      expect(text).toContain('| top-level spec | timedout | A suite timeout occurred | did not pass |');
      expect(summary(results, run)).not.toContain('the kubelet');
    });
  });
});
