/**
 * The status writer against the in-memory API: writes only changes, the newest status wins while
 * a write is in flight, a terminal phase is never reverted, a re-created pod of the same name is
 * left alone, failed writes come back on the resync, and a finished pod being deleted is deleted.
 */
import { describe, expect, it, vi } from 'vitest';
import type { Pod, PodStatus } from '../../src/api/types.ts';
import * as apiStatus from '../../src/status/apiStatus.ts';
import { ApiError } from '../../src/client/api.ts';
import { silentLogger } from '../../src/log.ts';
import { StatusManager } from '../../src/status/manager.ts';
import { StatusWriter } from '../../src/statuswriter/effects.ts';
import { ManualClock } from '../support/manualClock.ts';
import { MemoryApi } from '../support/memoryApi.ts';
import { apiPod } from '../support/pods.ts';

// The writer's decision, watched (it still decides): a resync at rest should not make it again.
vi.mock('../../src/status/apiStatus.ts', async (original) => {
  const actual = await original<typeof import('../../src/status/apiStatus.ts')>();
  return { ...actual, statusToWrite: vi.fn(actual.statusToWrite) };
});

const running = (restarts = 0): PodStatus => ({
  phase: 'Running',
  // As the agent generates it; the API gives it back without the null.
  conditions: [{ type: 'Ready', status: 'True', lastProbeTime: null }],
  containerStatuses: [{ name: 'app', ready: true, restartCount: restarts, state: { running: {} }, lastState: {}, image: 'i', imageID: '' }],
});

function harness() {
  const api = new MemoryApi();
  const clock = new ManualClock();
  const statuses = new StatusManager();
  const finished = new Set<string>();
  const known = new Map<string, Pod>();
  const created = api.putPod(apiPod('web'));
  known.set('uid-web', created);
  // The agent's copy follows the API, as the watch keeps it.
  const refresh = () => {
    const current = api.pod('default', 'web');
    if (current && current.metadata.uid === 'uid-web') known.set('uid-web', current);
  };
  const stages = { isFinished: (uid: string) => finished.has(uid), couldHaveRunningContainers: () => false };
  const writer = new StatusWriter({ api, statuses, pod: (uid) => known.get(uid), stages, log: silentLogger });
  /** The loop's resync tick (statusWriter.ts), and the writes it starts. */
  const resync = async (times = 1) => {
    for (let i = 0; i < times; i++) {
      writer.resync();
      await clock.settle(0);
    }
  };
  return { api, clock, statuses, finished, known, writer, refresh, resync };
}

describe('StatusWriter', () => {
  it('writes a changed status with the UID as precondition, and nothing when it did not change; reads the object first only for a new phase', async () => {
    const h = harness();
    h.statuses.setPodStatus('uid-web', running());
    await h.clock.settle(0);
    expect(h.api.pod('default', 'web')?.status?.phase).toBe('Running');
    expect(h.api.count('patchPodStatus')).toBe(1);
    expect(h.api.count('getPod')).toBe(1);
    h.refresh();
    await h.resync();
    expect(h.api.count('patchPodStatus')).toBe(1);
    // A change within the phase the agent has seen: written without a read.
    h.statuses.setPodStatus('uid-web', running(1));
    await h.clock.settle(0);
    expect(h.api.count('patchPodStatus')).toBe(2);
    expect(h.api.count('getPod')).toBe(1);
    h.writer.stop();
  });

  it('writes once more with the newest status when it changed while a write was in flight', async () => {
    const h = harness();
    const held = h.api.hold('patchPodStatus');
    h.statuses.setPodStatus('uid-web', running(0));
    await h.clock.settle(0);
    for (let i = 1; i <= 10; i++) h.statuses.setPodStatus('uid-web', running(i));
    held.release();
    await h.clock.settle(0);
    await h.clock.settle(0);
    expect(h.api.count('patchPodStatus')).toBe(2);
    expect(h.api.pod('default', 'web')?.status?.containerStatuses?.[0]?.restartCount).toBe(10);
    h.writer.stop();
  });

  it('never takes a pod out of a terminal phase', async () => {
    const h = harness();
    await h.api.patchPodStatus('default', 'web', { status: { phase: 'Failed', reason: 'DeadlineExceeded' } });
    h.refresh();
    h.statuses.setPodStatus('uid-web', running());
    await h.clock.settle(0);
    expect(h.api.pod('default', 'web')?.status).toMatchObject({ phase: 'Failed', reason: 'DeadlineExceeded' });
    h.writer.stop();
  });

  it('never takes a pod out of a terminal phase its agent has not seen yet (its copy behind the API)', async () => {
    const h = harness();
    // The API shows Succeeded; the agent's copy still shows the pod Pending (a lagging watch, a stale list after a restart).
    await h.api.patchPodStatus('default', 'web', { status: { phase: 'Succeeded' } });
    h.statuses.setPodStatus('uid-web', running());
    await h.clock.settle(0);
    expect(h.api.pod('default', 'web')?.status?.phase).toBe('Succeeded');
    expect(h.api.count('patchPodStatus')).toBe(1);
    h.writer.stop();
  });

  it('leaves a new pod of the same name alone: the precondition fails, the object is read, nothing is written', async () => {
    const h = harness();
    h.api.removePod('default', 'web');
    h.api.putPod({ ...h.known.get('uid-web')!, metadata: { ...h.known.get('uid-web')!.metadata, uid: 'uid-other' }, status: { phase: 'Pending' } });
    h.statuses.setPodStatus('uid-web', running());
    await h.clock.settle(0);
    expect(h.api.count('getPod')).toBe(1);
    expect(h.api.pod('default', 'web')?.status?.phase).toBe('Pending');
    h.writer.stop();
  });

  it('writes again on the resync after a failed write', async () => {
    const h = harness();
    h.api.failNext('patchPodStatus', new ApiError(0, '', 'connection refused', 'PATCH pods/status default/web'));
    h.statuses.setPodStatus('uid-web', running());
    await h.clock.settle(0);
    expect(h.api.pod('default', 'web')?.status?.phase).toBe('Pending');
    await h.resync();
    expect(h.api.pod('default', 'web')?.status?.phase).toBe('Running');
    h.writer.stop();
  });

  it('decides again on a resync only for a pod whose status changed, in the API or in the agent', async () => {
    const h = harness();
    h.statuses.setPodStatus('uid-web', running());
    await h.clock.settle(0);
    h.refresh();
    await h.resync();
    const decisions = vi.mocked(apiStatus.statusToWrite);
    decisions.mockClear();
    await h.resync(3);
    expect(decisions).not.toHaveBeenCalled();
    h.statuses.setPodStatus('uid-web', running(1));
    await h.clock.settle(0);
    h.refresh();
    decisions.mockClear();
    await h.resync();
    expect(decisions).toHaveBeenCalledTimes(1);
    await h.resync();
    expect(decisions).toHaveBeenCalledTimes(1);
    expect(h.api.count('patchPodStatus')).toBe(2);
    h.writer.stop();
  });

  it('writes again on the resync when the API shows another status than the one written, and not while it shows that one', async () => {
    const h = harness();
    h.statuses.setPodStatus('uid-web', running());
    await h.clock.settle(0);
    h.refresh();
    // Changed behind the agent (or a write made over a view the watch had not yet updated).
    await h.api.patchPodStatus('default', 'web', { status: { conditions: [{ type: 'Ready', status: 'False', reason: 'Other' }] } });
    h.refresh();
    expect(h.api.count('patchPodStatus')).toBe(2);
    await h.resync();
    expect(h.api.count('patchPodStatus')).toBe(3);
    expect(h.api.pod('default', 'web')?.status?.conditions).toEqual([{ type: 'Ready', status: 'True' }]);
    h.refresh();
    await h.resync();
    expect(h.api.count('patchPodStatus')).toBe(3);
    h.writer.stop();
  });

  // Found by the API-faults episode (test/chaos/apiFaults.ts, seed 6): podIPs is merged by ip in a
  // strategic merge patch, so the new IP was added beside the old one, the API server refused the
  // two (422: one IP per family) and the pod's status was never written again.
  it('replaces the pod IPs when its sandbox was re-created with a new IP, and its host IPs alike', async () => {
    const h = harness();
    const ips = (pod: string, host: string): PodStatus => ({ ...running(), podIP: pod, podIPs: [{ ip: pod }], hostIP: host, hostIPs: [{ ip: host }] });
    h.statuses.setPodStatus('uid-web', ips('10.0.0.5', '192.168.0.1'));
    await h.clock.settle(0);
    h.refresh();
    h.statuses.setPodStatus('uid-web', { ...ips('10.0.0.9', '192.168.0.2'), containerStatuses: running(1).containerStatuses });
    await h.clock.settle(0);
    expect(h.api.pod('default', 'web')?.status).toMatchObject({ podIP: '10.0.0.9', podIPs: [{ ip: '10.0.0.9' }], hostIPs: [{ ip: '192.168.0.2' }], containerStatuses: [{ restartCount: 1 }] });
    h.writer.stop();
  });

  it('deletes a pod being deleted once it has finished, with grace 0 and the UID', async () => {
    const h = harness();
    h.statuses.setPodStatus('uid-web', running());
    await h.clock.settle(0);
    h.refresh();
    const marked = { ...h.known.get('uid-web')!, metadata: { ...h.known.get('uid-web')!.metadata, deletionTimestamp: new Date().toISOString(), deletionGracePeriodSeconds: 30 } };
    h.known.set('uid-web', marked);
    h.statuses.setPodStatus('uid-web', { ...running(), phase: 'Succeeded' });
    await h.clock.settle(0);
    expect(h.api.pod('default', 'web')).toBeDefined();
    h.finished.add('uid-web');
    h.writer.request('uid-web');
    await h.clock.settle(0);
    expect(h.api.pod('default', 'web')).toBeUndefined();
    expect(h.writer.progress()).toMatchObject({ deletes: 1, queued: 0 });
    h.writer.stop();
  });
});
