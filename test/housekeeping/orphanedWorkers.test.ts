import { describe, expect, it } from 'vitest';
import { orphanedWorkers, type WorkerView } from '../../src/housekeeping/housekeeping.ts';

describe('orphanedWorkers (pod_workers.go SyncKnownPods: workers of pods no longer desired are terminated)', () => {
  const cases: { name: string; workers: WorkerView[]; expected: string[] }[] = [
    { name: 'no workers', workers: [], expected: [] },
    { name: 'a desired pod keeps running', workers: [{ uid: 'a', desired: true, terminationRequested: false }], expected: [] },
    {
      name: 'a pod gone from config that still runs (removed before every source was seen) is terminated',
      workers: [{ uid: 'a', desired: false, terminationRequested: false }],
      expected: ['a'],
    },
    { name: 'one already terminating or terminated is not told again', workers: [{ uid: 'a', desired: false, terminationRequested: true }], expected: [] },
    { name: 'a desired pod that terminates (it finished, or was evicted) is left alone', workers: [{ uid: 'a', desired: true, terminationRequested: true }], expected: [] },
    {
      name: 'several, in order',
      workers: [
        { uid: 'a', desired: false, terminationRequested: false },
        { uid: 'b', desired: true, terminationRequested: false },
        { uid: 'c', desired: false, terminationRequested: false },
      ],
      expected: ['a', 'c'],
    },
  ];
  it.each(cases)('$name', ({ workers, expected }) => {
    expect(orphanedWorkers(workers)).toEqual(expected);
  });
});
