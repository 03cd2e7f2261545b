/** The grace period a terminating pod is killed with (pkg/kubelet/pod_workers.go calculateEffectiveGracePeriod). */
import { describe, expect, it } from 'vitest';
import type { Pod } from '../../src/api/types.ts';
import { defaultTerminationGracePeriodSeconds, nextGracePeriod } from '../../src/pod/gracePeriod.ts';
import { basePod } from '../support/podFixtures.ts';

function pod(spec?: number, deletion?: number): Pod {
  const p = basePod(spec === undefined ? {} : { terminationGracePeriodSeconds: spec });
  if (deletion !== undefined) {
    p.metadata.deletionTimestamp = '2026-01-01T00:00:00Z';
    p.metadata.deletionGracePeriodSeconds = deletion;
  }
  return p;
}

describe('nextGracePeriod', () => {
  type Row = [name: string, stored: number | undefined, pod: Pod, override: number | undefined, want: number];
  const rows: Row[] = [
    ['nothing stored, no override: the spec value', undefined, pod(45), undefined, 45],
    ['no spec value: the API default', undefined, pod(), undefined, defaultTerminationGracePeriodSeconds],
    ['stored 0 means none: the spec value', 0, pod(45), undefined, 45],
    ['deletionGracePeriodSeconds replaces the spec value', undefined, pod(45, 10), undefined, 10],
    ['deletionGracePeriodSeconds larger than the spec still applies when nothing is stored', undefined, pod(5, 20), undefined, 20],
    ['override shortens the deletion grace', undefined, pod(45, 10), 3, 3],
    ['override shortens the stored value', 30, pod(45), 5, 5],
    ['override larger than the stored value: never grows', 5, pod(45), 20, 5],
    ['deletion grace larger than the stored value: never grows', 5, pod(45, 20), undefined, 5],
    ['stored value kept without overrides, even when the spec is larger', 8, pod(45), undefined, 8],
    ['deletion grace 0 (force delete) clamps to 1', undefined, pod(45, 0), undefined, 1],
    ['override 0 clamps to 1', 30, pod(45), 0, 1],
    ['spec 0 clamps to 1', undefined, pod(0), undefined, 1],
  ];
  it.each(rows)('%s', (_name, stored, p, override, want) => {
    expect(nextGracePeriod(stored, p, override)).toBe(want);
  });

  it('successive calls only ever shrink', () => {
    const p = pod(60, 40);
    const first = nextGracePeriod(undefined, p);
    const second = nextGracePeriod(first, p, 50);
    const third = nextGracePeriod(second, p, 12);
    const fourth = nextGracePeriod(third, pod(60, 30));
    expect([first, second, third, fourth]).toEqual([40, 40, 12, 12]);
  });
});
