/** Whether a PLEG event is news after what a sync left the pod at in the runtime (runtimeSeen.ts). */
import { describe, expect, it } from 'vitest';
import type { RuntimePodStatus } from '../../src/api/runtimeView.ts';
import type { PlegEvent, PlegEventType } from '../../src/events.ts';
import { isSeen, runtimeSeen } from '../../src/pod/runtimeSeen.ts';

const status: RuntimePodStatus = {
  uid: 'u1',
  sandboxes: [
    { id: 'sb-new', state: 'SANDBOX_READY', attempt: 1, createdAt: 2, ip: '10.0.0.2', networkMode: undefined },
    { id: 'sb-old', state: 'SANDBOX_NOTREADY', attempt: 0, createdAt: 1, ip: '', networkMode: undefined },
  ],
  containers: [
    { id: 'c-run', name: 'app', sandboxId: 'sb-new', state: 'CONTAINER_RUNNING', createdAt: 3, startedAt: 3, finishedAt: 0, exitCode: 0, reason: '', message: '', image: 'i', imageRef: 'i', hash: '', restartCount: 1 },
    { id: 'c-exit', name: 'app', sandboxId: 'sb-old', state: 'CONTAINER_EXITED', createdAt: 1, startedAt: 1, finishedAt: 2, exitCode: 1, reason: 'Error', message: '', image: 'i', imageRef: 'i', hash: '', restartCount: 0 },
    { id: 'c-new', name: 'side', sandboxId: 'sb-new', state: 'CONTAINER_CREATED', createdAt: 4, startedAt: 0, finishedAt: 0, exitCode: 0, reason: '', message: '', image: 'i', imageRef: 'i', hash: '', restartCount: 0 },
  ],
};

const event = (type: PlegEventType, containerId: string): PlegEvent => ({ type, podUid: 'u1', containerId });

describe('runtimeSeen and isSeen', () => {
  const seen = runtimeSeen(status);
  it('names each sandbox and container as the PLEG does', () => {
    expect(seen).toEqual({ 'sb-new': 'running', 'sb-old': 'exited', 'c-run': 'running', 'c-exit': 'exited', 'c-new': 'unknown' });
  });

  it.each([
    ['a running container started', event('PLEG.CONTAINER_STARTED', 'c-run'), true],
    ['the ready sandbox started', event('PLEG.CONTAINER_STARTED', 'sb-new'), true],
    ['an exited container died', event('PLEG.CONTAINER_DIED', 'c-exit'), true],
    ['the old sandbox died', event('PLEG.CONTAINER_DIED', 'sb-old'), true],
    ['a container never seen is removed', event('PLEG.CONTAINER_REMOVED', 'c-gone'), true],
    ['a running container died: news', event('PLEG.CONTAINER_DIED', 'c-run'), false],
    ['a created one started: news', event('PLEG.CONTAINER_STARTED', 'c-new'), false],
    ['an exited one started again: news', event('PLEG.CONTAINER_STARTED', 'c-exit'), false],
    ['a container never seen started: news', event('PLEG.CONTAINER_STARTED', 'c-other'), false],
    ['a seen container removed: news', event('PLEG.CONTAINER_REMOVED', 'c-exit'), false],
    ['a running one removed: news', event('PLEG.CONTAINER_REMOVED', 'c-run'), false],
  ])('%s', (_name, e, expected) => {
    expect(isSeen(seen, e)).toBe(expected);
  });

  it('takes every event for news without a view (the last sync left work, or failed)', () => {
    expect(isSeen(undefined, event('PLEG.CONTAINER_REMOVED', 'c-gone'))).toBe(false);
  });
});
