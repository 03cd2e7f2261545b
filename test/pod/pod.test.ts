import { describe, expect, it, vi } from 'vitest';
import { waitFor } from 'xstate';
import type { Pod } from '../../src/api/types.ts';
import { container, makePod, podHarness, settled } from '../support/pods.ts';

describe('pod actor on the fake runtime', () => {
  it('creates the sandbox and starts the containers in one sync, then reports Running', async () => {
    const h = podHarness();
    const actor = h.start(makePod('web', { containers: [container('a'), container('b')] }));
    const snap = await settled(actor);
    expect(snap.matches({ syncing: { progress: 'running' } })).toBe(true);
    const running = await h.runtime.listContainers({ state: 'CONTAINER_RUNNING' });
    expect(running.map((c) => c.metadata.name).sort()).toEqual(['a', 'b']);
    expect(h.statuses.get('uid-web')?.phase).toBe('Running');
    expect(h.reports).toContainEqual(expect.objectContaining({ type: 'POD.SYNCED', uid: 'uid-web', ok: true }));
  });

  it('starts no sync for a PLEG event about what its last sync left in place, and one for news', async () => {
    const h = podHarness();
    const actor = h.start(makePod('quiet', { containers: [container('app')] }));
    let snap = await settled(actor);
    const syncs = snap.context.syncCount;
    const [app] = await h.runtime.listContainers();
    // Its own sandbox and container, running: told late by the PLEG, no news.
    actor.send({ type: 'PLEG.CONTAINER_STARTED', podUid: 'uid-quiet', containerId: app!.podSandboxId });
    actor.send({ type: 'PLEG.CONTAINER_STARTED', podUid: 'uid-quiet', containerId: app!.id });
    snap = actor.getSnapshot();
    expect(snap.matches({ syncing: { worker: 'idle' } })).toBe(true);
    expect(snap.context.syncCount).toBe(syncs);
    // The container died: news, a sync restarts it.
    h.runtime.exitContainer(app!.id, 1);
    actor.send({ type: 'PLEG.CONTAINER_DIED', podUid: 'uid-quiet', containerId: app!.id });
    snap = await waitFor(actor, (s) => s.context.syncCount === syncs + 1 && s.matches({ syncing: { worker: 'idle' } }));
    expect(snap.context.restarts).toBe(1);
  });

  it('runs init containers one at a time and regular containers only after them', async () => {
    const h = podHarness();
    const pod = makePod('init', { initContainers: [container('i1'), container('i2')], containers: [container('main')] });
    const actor = h.start(pod);
    let snap = await settled(actor);
    expect(snap.matches({ syncing: { progress: { initializing: 'running' } } })).toBe(true);
    expect(snap.context.progress).toMatchObject({ stage: 'initializing', index: 0 });
    const first = await h.runtime.listContainers();
    expect(first.map((c) => c.metadata.name)).toEqual(['i1']);
    expect(h.statuses.get('uid-init')?.phase).toBe('Pending');

    h.runtime.exitContainer(first[0]!.id, 0);
    actor.send({ type: 'PLEG.CONTAINER_DIED', podUid: 'uid-init', containerId: first[0]!.id });
    snap = await waitFor(actor, (s) => s.context.syncCount === 2 && s.matches({ syncing: { worker: 'idle' } }));
    expect(snap.context.progress).toMatchObject({ stage: 'initializing', index: 1 });
    const second = (await h.runtime.listContainers({ state: 'CONTAINER_RUNNING' })).map((c) => c.metadata.name);
    expect(second).toEqual(['i2']);

    const i2 = (await h.runtime.listContainers({ state: 'CONTAINER_RUNNING' }))[0]!;
    h.runtime.exitContainer(i2.id, 0);
    actor.send({ type: 'POD.SYNC' });
    snap = await waitFor(actor, (s) => s.context.syncCount === 3 && s.matches({ syncing: { worker: 'idle' } }));
    expect(snap.matches({ syncing: { progress: 'running' } })).toBe(true);
    expect(h.statuses.get('uid-init')?.phase).toBe('Running');
  });

  it('fails the pod when an init container fails under restartPolicy Never, without starting regular containers', async () => {
    const h = podHarness();
    const actor = h.start(makePod('bad', { restartPolicy: 'Never', initContainers: [container('i1')] }));
    await settled(actor);
    const [init] = await h.runtime.listContainers();
    h.runtime.exitContainer(init!.id, 1);
    actor.send({ type: 'POD.SYNC' });
    const snap = await waitFor(actor, (s) => s.matches({ terminated: 'finished' }));
    expect(snap.context.phase).toBe('Failed');
    expect((await h.runtime.listContainers()).map((c) => c.metadata.name)).toEqual(['i1']);
    expect(h.statuses.get('uid-bad')?.phase).toBe('Failed');
  });

  it('restarts an exited container under OnFailure and counts the restart', async () => {
    const h = podHarness();
    const actor = h.start(makePod('crash', { restartPolicy: 'OnFailure' }));
    await settled(actor);
    const [first] = await h.runtime.listContainers();
    h.runtime.exitContainer(first!.id, 1);
    actor.send({ type: 'POD.SYNC' });
    const synced = await waitFor(actor, (s) => s.context.syncCount === 2 && s.matches({ syncing: { worker: 'idle' } }));
    expect(synced.context.restarts).toBe(1);
    const status = h.statuses.get('uid-crash')!;
    expect(status.containerStatuses?.[0]?.restartCount).toBe(1);
    expect(status.containerStatuses?.[0]?.state.running).toBeDefined();
    expect(status.containerStatuses?.[0]?.lastState.terminated?.exitCode).toBe(1);
  });

  it('holds the second crash in CrashLoopBackOff and asks to be synced when the backoff ends', async () => {
    const h = podHarness();
    const actor = h.start(makePod('loop'));
    await settled(actor);
    for (let round = 2; round <= 3; round++) {
      const [running] = await h.runtime.listContainers({ state: 'CONTAINER_RUNNING' });
      h.runtime.exitContainer(running!.id, 2);
      actor.send({ type: 'POD.SYNC' });
      await waitFor(actor, (s) => s.context.syncCount === round && s.matches({ syncing: { worker: 'idle' } }));
    }
    const status = h.statuses.get('uid-loop')!.containerStatuses![0]!;
    expect(status.state.waiting?.reason).toBe('CrashLoopBackOff');
    expect(status.state.waiting?.message).toBe('back-off 10s restarting failed container=main pod=loop_default(uid-loop)');
    expect(status.restartCount).toBe(1);
    const last = h.reports.filter((r) => r.type === 'POD.SYNCED').at(-1);
    expect(last).toMatchObject({ retryAfterMs: 10_000 });

    h.clock.increment(10_000);
    actor.send({ type: 'POD.SYNC' });
    await waitFor(actor, (s) => s.context.syncCount === 4 && s.matches({ syncing: { worker: 'idle' } }));
    expect(h.statuses.get('uid-loop')!.containerStatuses![0]!.restartCount).toBe(2);
  });

  it('keeps only the newest update while a sync is in flight', async () => {
    const h = podHarness();
    const hold = h.runtime.holdCalls('runPodSandbox');
    const pod = makePod('p');
    const actor = h.start(pod);
    await hold.whenPending(1);
    const v2 = { ...pod, metadata: { ...pod.metadata, labels: { v: '2' } } };
    const v3 = { ...pod, metadata: { ...pod.metadata, labels: { v: '3' } } };
    actor.send({ type: 'POD.UPDATE', pod: v2, updateType: 'update' });
    actor.send({ type: 'POD.UPDATE', pod: v3, updateType: 'update' });
    expect(actor.getSnapshot().context.pendingPod?.metadata.labels).toEqual({ v: '3' });
    hold.releaseAll();
    const snap = await waitFor(actor, (s) => s.context.syncCount === 2 && s.matches({ syncing: { worker: 'idle' } }));
    expect(snap.context.pod.metadata.labels).toEqual({ v: '3' });
    expect(snap.context.pendingPod).toBeNull();
  });

  it('terminates on kill: stops containers with the grace period, then the sandbox; never syncs again', async () => {
    const h = podHarness();
    const actor = h.start(makePod('k', { terminationGracePeriodSeconds: 7 }));
    await settled(actor);
    h.runtime.clearCalls();
    actor.send({ type: 'POD.KILL', deleted: true });
    const snap = await waitFor(actor, (s) => s.matches({ terminated: 'finished' }));
    expect(snap.context.gracePeriodSeconds).toBe(7);
    const log = h.runtime.callLog();
    const stopIndex = log.findIndex((l) => l.startsWith('stopContainer'));
    const sandboxIndex = log.findIndex((l) => l.startsWith('stopPodSandbox'));
    expect(stopIndex).toBeGreaterThanOrEqual(0);
    expect(sandboxIndex).toBeGreaterThan(stopIndex);
    expect(await h.runtime.listContainers()).toEqual([]);
    expect(await h.runtime.listPodSandbox()).toEqual([]);

    actor.send({ type: 'POD.SYNC' });
    actor.send({ type: 'POD.UPDATE', pod: makePod('k'), updateType: 'create' });
    expect(actor.getSnapshot().matches({ terminated: 'finished' })).toBe(true);
    expect(actor.getSnapshot().context.restartRequested).toBe(true);
    expect(h.reports).toContainEqual({ type: 'POD.FINISHED', uid: 'uid-k', restartRequested: false });
  });

  it('reports a failed cleanup to its supervisor, retries it, and finishes once it succeeds', async () => {
    const h = podHarness();
    const actor = h.start(makePod('c'));
    await settled(actor);
    h.runtime.failNext('removePodSandbox', 'UNAVAILABLE', 'read-only file system');
    actor.send({ type: 'POD.KILL', deleted: true });
    await vi.waitFor(() => expect(h.reports).toContainEqual({ type: 'POD.FAILED', uid: 'uid-c', pod: 'default/c', work: 'cleanup', error: expect.stringContaining('read-only file system') }));
    expect(actor.getSnapshot().matches({ terminated: 'retrying' })).toBe(true);
    h.clock.increment(1_000);
    await waitFor(actor, (s) => s.matches({ terminated: 'finished' }));
    expect(await h.runtime.listPodSandbox()).toEqual([]);
  });

  it('only ever shortens the grace period of a terminating pod', async () => {
    const h = podHarness();
    const actor = h.start(makePod('g', { terminationGracePeriodSeconds: 30 }));
    await settled(actor);
    const hold = h.runtime.holdCalls('stopContainer');
    actor.send({ type: 'POD.KILL' });
    await hold.whenPending(1);
    expect(actor.getSnapshot().context.gracePeriodSeconds).toBe(30);
    actor.send({ type: 'POD.KILL', gracePeriodSeconds: 60 });
    expect(actor.getSnapshot().context.gracePeriodSeconds).toBe(30);
    actor.send({ type: 'POD.KILL', gracePeriodSeconds: 3 });
    expect(actor.getSnapshot().context.gracePeriodSeconds).toBe(3);
    // The kill restarts with the shorter grace period: a second StopContainer goes out.
    const stops = () => h.runtime.calls.filter((c) => c.method === 'stopContainer');
    await vi.waitFor(() => expect(stops().length).toBe(2));
    hold.releaseAll();
    await waitFor(actor, (s) => s.hasTag('terminated'));
  });

  it('reports a runtime error from a sync without failing the actor, and retries on the next sync', async () => {
    const h = podHarness();
    h.runtime.failNext('runPodSandbox', 'UNAVAILABLE', 'runtime down');
    const actor = h.start(makePod('e'));
    let snap = await settled(actor);
    expect(snap.context.lastError).toContain('RunPodSandbox');
    expect(h.reports.at(-1)).toMatchObject({ type: 'POD.SYNCED', ok: false });
    expect(h.reports.at(-2)).toEqual({ type: 'POD.FAILED', uid: 'uid-e', pod: 'default/e', work: 'sync', error: expect.stringContaining('runtime down') });
    actor.send({ type: 'POD.SYNC' });
    snap = await waitFor(actor, (s) => s.context.syncCount === 2 && s.matches({ syncing: { worker: 'idle' } }));
    expect(snap.context.lastError).toBeNull();
    expect(h.statuses.get('uid-e')?.phase).toBe('Running');
  });
});

describe('a pod first seen already being deleted', () => {
  // Deleted while the agent was not watching (its watch cut, its 410 relist, its restart): the
  // first version the agent gets carries a deletionTimestamp. Found by the API-faults episode
  // (test/chaos/apiFaults.ts, seed 6): the pod was synced instead, and its sandbox re-created
  // again and again, never terminated.
  const deleted = (pod: Pod): Pod => ({ ...pod, metadata: { ...pod.metadata, deletionTimestamp: '2026-01-01T00:00:00Z', deletionGracePeriodSeconds: 3 } });

  it('is killed with its deletion grace period and never started: no sandbox, no container', async () => {
    const h = podHarness();
    const actor = h.start(deleted(makePod('gone')));
    const snap = await waitFor(actor, (s) => s.matches({ terminated: 'finished' }));
    expect(snap.context).toMatchObject({ deleted: true, gracePeriodSeconds: 3, syncCount: 0 });
    expect(h.runtime.callLog().filter((call) => /^(runPodSandbox|createContainer|startContainer)/.test(call))).toEqual([]);
  });

  it('stops the containers an earlier life of the agent left running (stuck Terminating otherwise)', async () => {
    const h = podHarness();
    const pod = makePod('adopted');
    const first = h.start(pod);
    await settled(first);
    // The agent goes away; its pods run on, and come back deleted.
    first.send({ type: 'POD.RELEASE' });
    expect(await h.runtime.listContainers({ state: 'CONTAINER_RUNNING' })).toHaveLength(1);
    const second = h.start(deleted(pod));
    await waitFor(second, (s) => s.matches({ terminated: 'finished' }));
    expect(await h.runtime.listContainers({ state: 'CONTAINER_RUNNING' })).toEqual([]);
    expect(await h.runtime.listPodSandbox({ state: 'SANDBOX_READY' })).toEqual([]);
  });
});
