/**
 * `status.observedGeneration` and each condition's `observedGeneration`, as the kubelet writes them
 * since 1.34 (PodObservedGenerationTracking, GA in 1.35: status_manager.go SetPodStatus,
 * CalculatePodStatusObservedGeneration, CalculatePodConditionObservedGeneration, and
 * updateStatusInternal keeping the higher of the old and the new).
 */
import { describe, expect, it } from 'vitest';
import type { Pod, PodStatus } from '../../src/api/types.ts';
import { type StatusInput, generatePodStatus, withContainerReadiness } from '../../src/status/generate.ts';
import { T0, basePod, baseRuntime } from '../support/podFixtures.ts';

const NOW = T0 + 10_000;
const withGeneration = (pod: Pod, generation: number | undefined): Pod => {
  const metadata = { ...pod.metadata };
  if (generation === undefined) delete metadata.generation;
  else metadata.generation = generation;
  return { ...pod, metadata };
};
const input = (pod: Pod, extra: Partial<StatusInput> = {}): StatusInput => ({
  pod,
  runtime: baseRuntime(pod),
  reasons: {},
  podIsTerminal: false,
  nowMs: NOW,
  runtimeName: 'containerd',
  ...extra,
});

describe('observedGeneration', () => {
  type Row = [name: string, generation: number | undefined, previous: number | undefined, want: number | undefined];
  const rows: Row[] = [
    ['the pod generation', 3, undefined, 3],
    ['a newer generation than the one reported', 4, 3, 4],
    ['never lower than the one already reported (an older copy of the pod)', 2, 3, 3],
    ['a pod without a generation (a static pod from its file) reports none', undefined, undefined, undefined],
    ['nor takes one away once reported', undefined, 3, 3],
  ];
  it.each(rows)('status: %s', (_name, generation, previous, want) => {
    const previousStatus: PodStatus | undefined = previous === undefined ? undefined : { phase: 'Running', observedGeneration: previous };
    const status = generatePodStatus(input(withGeneration(basePod(), generation), previousStatus ? { previous: previousStatus } : {}));
    expect(status.observedGeneration).toBe(want);
    if (want === undefined) expect(status).not.toHaveProperty('observedGeneration');
  });

  it('every condition the agent sets carries the pod generation', () => {
    const status = generatePodStatus(input(withGeneration(basePod(), 7)));
    expect(status.conditions?.map((c) => [c.type, c.observedGeneration])).toEqual([
      ['PodReadyToStartContainers', 7],
      ['Initialized', 7],
      ['Ready', 7],
      ['ContainersReady', 7],
      ['PodScheduled', 7],
    ]);
  });

  it('conditions of a pod without a generation carry none', () => {
    const status = generatePodStatus(input(withGeneration(basePod(), undefined)));
    for (const c of status.conditions ?? []) expect(c).not.toHaveProperty('observedGeneration');
  });

  it('an eviction\'s DisruptionTarget carries the generation too', () => {
    const pod = withGeneration(basePod(), 2);
    const status = generatePodStatus(input(pod, { killStatus: { reason: 'Evicted', message: 'low on memory', disruptionReason: 'TerminationByKubelet' } }));
    expect(status.conditions?.find((c) => c.type === 'DisruptionTarget')?.observedGeneration).toBe(2);
  });

  it('a readiness change (SetContainerReadiness) sets Ready and ContainersReady with the generation of the pod it was made for', () => {
    const before = generatePodStatus(input(withGeneration(basePod(), 1)));
    const after = withContainerReadiness(withGeneration(basePod(), 5), before, 'foo1', true, NOW);
    const generations = Object.fromEntries((after.conditions ?? []).map((c) => [c.type, c.observedGeneration]));
    expect(generations).toMatchObject({ Ready: 5, ContainersReady: 5, Initialized: 1 });
  });
});
