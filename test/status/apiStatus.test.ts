/**
 * What the agent writes over a pod's API status (pkg/kubelet/status/status_manager.go
 * mergePodStatus, then its "unchanged" check): the kubelet's conditions replaced, the others kept;
 * a terminal phase never changed; a terminal phase held back (with the API's reason and message)
 * while the pod could still have running containers, and DisruptionTarget sent with that
 * transition only.
 */
import { describe, expect, it } from 'vitest';
import type { PodCondition, PodStatus } from '../../src/api/types.ts';
import { holdsTerminalPhase, statusPatch, statusToWrite } from '../../src/status/apiStatus.ts';
import { mergeStatus } from '../support/memoryApi.ts';

const ready = (status: 'True' | 'False', reason?: string): PodCondition => ({ type: 'Ready', status, ...(reason ? { reason } : {}) });
const disruption: PodCondition = { type: 'DisruptionTarget', status: 'True', reason: 'TerminationByKubelet', message: 'evicted' };
const lb: PodCondition = { type: 'example.com/lb', status: 'True' };

const running: PodStatus = { phase: 'Running', conditions: [ready('True'), lb], startTime: '2026-01-01T00:00:00Z' };
const deadline: PodStatus = {
  phase: 'Failed',
  reason: 'DeadlineExceeded',
  message: 'Pod was active on the node longer than the specified deadline',
  conditions: [ready('False', 'PodFailed')],
  startTime: '2026-01-01T00:00:00Z',
};
const evicted: PodStatus = { phase: 'Failed', reason: 'Evicted', message: 'The node was low on resource: memory.', conditions: [ready('False', 'PodFailed'), disruption] };

describe('statusToWrite', () => {
  type Row = [name: string, api: PodStatus | undefined, ours: PodStatus, couldHaveRunning: boolean, want: ReturnType<typeof statusToWrite>];
  const rows: Row[] = [
    [
      'a pod past its deadline, its container still being stopped: the API keeps Running (no reason), the rest is written',
      running,
      deadline,
      true,
      { write: true, status: { phase: 'Running', conditions: [ready('False', 'PodFailed'), lb], startTime: '2026-01-01T00:00:00Z' } },
    ],
    [
      'the same pod once its containers have stopped: Failed, DeadlineExceeded',
      running,
      deadline,
      false,
      { write: true, status: { ...deadline, conditions: [ready('False', 'PodFailed'), lb] } },
    ],
    [
      'a held phase keeps the reason and message the API has',
      { phase: 'Pending', reason: 'Waiting', message: 'for something' },
      deadline,
      true,
      { write: true, status: { phase: 'Pending', reason: 'Waiting', message: 'for something', conditions: [ready('False', 'PodFailed')], startTime: '2026-01-01T00:00:00Z' } },
    ],
    [
      'a phase not terminal is written at once',
      { phase: 'Pending' },
      { phase: 'Running', conditions: [ready('True')] },
      true,
      { write: true, status: { phase: 'Running', conditions: [ready('True')] } },
    ],
    [
      'an eviction while containers run: no DisruptionTarget yet, the phase held',
      running,
      evicted,
      true,
      { write: true, status: { phase: 'Running', conditions: [ready('False', 'PodFailed'), lb] } },
    ],
    [
      'an eviction once stopped: Failed, Evicted, DisruptionTarget with it',
      running,
      evicted,
      false,
      { write: true, status: { ...evicted, conditions: [ready('False', 'PodFailed'), lb, disruption] } },
    ],
    [
      'DisruptionTarget is not sent again once the API is terminal (the API keeps its own)',
      { ...evicted, conditions: [ready('False', 'PodFailed'), disruption] },
      { ...evicted, conditions: [ready('False', 'PodFailed'), { ...disruption, message: 'another' }] },
      false,
      { write: false, why: 'unchanged' },
    ],
    ['never takes a pod out of Succeeded', { phase: 'Succeeded' }, running, false, { write: false, why: 'terminal' }],
    [
      'never moves a Succeeded pod to Failed (a rejection after a restart of the agent)',
      { phase: 'Succeeded', reason: undefined },
      { phase: 'Failed', reason: 'OutOfpods', message: 'Pod was rejected: Node didn\'t have enough resource: pods' },
      false,
      { write: false, why: 'terminal' },
    ],
    ['never moves a Failed pod to Succeeded', { phase: 'Failed' }, { phase: 'Succeeded' }, false, { write: false, why: 'terminal' }],
    ['a terminal pod written again as it is: nothing to write', deadline, deadline, false, { write: false, why: 'unchanged' }],
    [
      'a new observedGeneration alone is a change',
      { ...running, observedGeneration: 1 },
      { ...running, observedGeneration: 2 },
      false,
      { write: true, status: { ...running, observedGeneration: 2, conditions: [ready('True'), lb] } },
    ],
  ];
  it.each(rows)('%s', (_name, api, ours, couldHaveRunning, want) => {
    expect(statusToWrite(api, ours, couldHaveRunning)).toEqual(want);
  });
});

describe('holdsTerminalPhase', () => {
  it('holds only a terminal phase the API does not have yet, while containers could run', () => {
    expect(holdsTerminalPhase(running, deadline, true)).toBe(true);
    expect(holdsTerminalPhase(running, deadline, false)).toBe(false);
    expect(holdsTerminalPhase(deadline, deadline, true)).toBe(false);
    expect(holdsTerminalPhase(undefined, deadline, true)).toBe(true);
    expect(holdsTerminalPhase(running, running, true)).toBe(false);
  });
});

describe('statusPatch', () => {
  const resizing: PodCondition = { type: 'PodResizeInProgress', status: 'True' };
  const notReady = ready('False', 'ContainersNotReady');

  type Row = [name: string, inApi: PodStatus, seen: PodStatus | undefined, ours: PodStatus, want: PodStatus];
  const rows: Row[] = [
    [
      'Ready turning True loses its reason and message',
      { phase: 'Running', conditions: [{ ...notReady, message: 'containers with unready status: [app]' }] },
      { phase: 'Running', conditions: [{ ...notReady, message: 'containers with unready status: [app]' }] },
      { phase: 'Running', conditions: [ready('True')] },
      { phase: 'Running', conditions: [ready('True')] },
    ],
    [
      'the same when the view of the API is behind (the False not yet seen)',
      { phase: 'Running', conditions: [notReady] },
      { phase: 'Pending' },
      { phase: 'Running', conditions: [ready('True')] },
      { phase: 'Running', conditions: [ready('True')] },
    ],
    [
      'a resize condition cleared is deleted even when the view does not show it',
      { phase: 'Running', conditions: [resizing, ready('True')] },
      { phase: 'Running', conditions: [ready('True')] },
      { phase: 'Running', conditions: [ready('True')] },
      { phase: 'Running', conditions: [ready('True')] },
    ],
    [
      'a condition a controller changed since the view is left as it is now',
      { phase: 'Running', conditions: [ready('True'), { ...lb, status: 'False' }] },
      { phase: 'Running', conditions: [ready('True'), lb] },
      { phase: 'Running', conditions: [ready('True'), lb] },
      { phase: 'Running', conditions: [ready('True'), { ...lb, status: 'False' }] },
    ],
    [
      'a DisruptionTarget a controller set is left as it is now, not sent back from the older view',
      { phase: 'Running', conditions: [ready('True'), { ...disruption, message: 'newer' }] },
      { phase: 'Running', conditions: [ready('True'), disruption] },
      { phase: 'Running', conditions: [ready('True')], startTime: '2026-01-01T00:00:00Z' },
      { phase: 'Running', conditions: [ready('True'), { ...disruption, message: 'newer' }], startTime: '2026-01-01T00:00:00Z' },
    ],
    [
      'the node\'s own DisruptionTarget goes with its terminal phase',
      { phase: 'Running', conditions: [ready('True')] },
      { phase: 'Running', conditions: [ready('True')] },
      evicted,
      { ...evicted, conditions: [ready('False', 'PodFailed'), disruption] },
    ],
    [
      'the status\'s own reason and message the agent no longer gives are removed',
      { phase: 'Pending', reason: 'Waiting', message: 'for something' },
      { phase: 'Pending', reason: 'Waiting', message: 'for something' },
      { phase: 'Running', conditions: [ready('True')] },
      { phase: 'Running', conditions: [ready('True')] },
    ],
  ];
  it.each(rows)('%s', (_name, inApi, seen, ours, want) => {
    const decision = statusToWrite(seen, ours);
    const status = decision.write ? decision.status : ours;
    const patch = statusPatch('uid-1', status, seen) as { metadata: { uid: string }; status: PodStatus };
    expect(patch.metadata.uid).toBe('uid-1');
    // Applied as the API server merges it: conditions by type, their fields too, null removing one.
    expect(mergeStatus(inApi, patch.status)).toEqual(want);
  });
});
