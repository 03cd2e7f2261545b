/** The status-order invariant (test/chaos/statusOrder.ts), each check shown to catch what it is for. */
import { describe, expect, it } from 'vitest';
import type { ContainerState, PodStatus } from '../../src/api/types.ts';
import type { StatusWrite } from '../support/apiFaultProxy.ts';
import { statusOrderViolations } from './statusOrder.ts';

const running: ContainerState = { running: { startedAt: '2026-01-01T00:00:00Z' } };
const ended = (id: string): ContainerState => ({ terminated: { exitCode: 1, reason: 'Error', containerID: id } });

const status = (phase: PodStatus['phase'], restartCount: number, containerID: string, state: ContainerState, lastState: ContainerState = {}, readySince = '2026-01-01T00:00:00Z'): PodStatus => ({
  phase,
  conditions: [{ type: 'Ready', status: 'True', lastTransitionTime: readySince }],
  containerStatuses: [{ name: 'app', restartCount, containerID, state, lastState, ready: true, image: 'busybox', imageID: '' }],
});

/** Writes of one pod, one after the other, each applied at the next resourceVersion (in the order given, or `versions`). */
const writes = (statuses: PodStatus[], versions = statuses.map((_, i) => i + 1)): StatusWrite[] =>
  statuses.map((stored, i) => ({ requested: 2 * i, answered: 2 * i + 1, namespace: 'ns', name: 'web', code: 200, uid: 'u1', resourceVersion: String(versions[i]), sent: stored, stored }));

describe('statusOrderViolations', () => {
  it.each<[string, StatusWrite[], string[]]>([
    ['statuses moving forward', writes([status('Running', 0, 'c1', running), status('Running', 1, 'c1', { waiting: { reason: 'CrashLoopBackOff' } }, ended('c1')), status('Running', 1, 'c2', running, ended('c1'))]), []],
    // It stops restarting (the pod is deleted): its newest container is shown ended, the one before it, never shown, as the last state.
    ['a crash loop ending', writes([status('Running', 1, 'c2', { waiting: { reason: 'CrashLoopBackOff' } }, ended('c2')), status('Running', 1, 'c2', ended('c2'), ended('c1')), status('Failed', 1, 'c2', ended('c2'), ended('c1'))]), []],
    ['a restart count going down', writes([status('Running', 2, 'c3', running), status('Running', 1, 'c3', running)]), ['statuses written in order']],
    ['a phase leaving Succeeded', writes([status('Succeeded', 0, 'c1', ended('c1')), status('Running', 0, 'c1', ended('c1'))]), ['statuses written in order']],
    ['a container running again after it ended', writes([status('Running', 0, 'c1', ended('c1')), status('Running', 0, 'c1', running)]), ['statuses written in order']],
    ['an old container coming back', writes([status('Running', 0, 'c1', running), status('Running', 0, 'c2', running), status('Running', 0, 'c1', running)]), ['statuses written in order']],
    ['a condition going back in time', writes([status('Running', 0, 'c1', running, {}, '2026-01-01T00:00:05Z'), status('Running', 0, 'c1', running, {}, '2026-01-01T00:00:01Z')]), ['statuses written in order']],
    // Listed newest first, applied oldest first: judged by the order the API applied them (resourceVersion).
    ['writes listed out of order, applied in order', writes([status('Running', 1, 'c2', running, ended('c1')), status('Running', 0, 'c1', running)], [2, 1]), []],
  ])('%s', (_, given, expected) => {
    expect(statusOrderViolations(given).map((v) => v.invariant)).toEqual(expected);
  });

  it('orders by resourceVersion: the older status applied last is the violation', () => {
    const newer = status('Running', 1, 'c2', running, ended('c1'));
    const older = status('Running', 0, 'c1', running);
    expect(statusOrderViolations(writes([newer, older])).map((v) => v.detail)).toEqual([
      'pod ns/web (u1) at resourceVersion 2: container app restart count 1 → 0',
      'pod ns/web (u1) at resourceVersion 2: container app (c1) running again after it ended',
      'pod ns/web (u1) at resourceVersion 2: container app back to c1 after c2',
    ]);
  });

  it('catches two writes of one pod in flight at once', () => {
    const [first, second] = writes([status('Running', 0, 'c1', running), status('Running', 0, 'c1', running)]);
    const overlapping = [{ ...first!, requested: 1, answered: 4 }, { ...second!, requested: 2, answered: 3 }];
    expect(statusOrderViolations(overlapping).map((v) => v.invariant)).toEqual(['one status write at a time']);
  });
});
