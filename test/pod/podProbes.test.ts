import { describe, expect, it } from 'vitest';
import { waitFor } from 'xstate';
import type { ProbeResultEvent } from '../../src/events.ts';
import { container, makePod, podHarness, settled } from '../support/pods.ts';

const probeEvent = (uid: string, containerId: string, kind: ProbeResultEvent['kind'], result: ProbeResultEvent['result'], containerName = 'main'): ProbeResultEvent => ({
  type: 'PROBE.RESULT',
  podUid: uid,
  containerId,
  containerName,
  kind,
  result,
});

describe('pod actor and probe results', () => {
  it('readiness Success makes the container ready and the pod Ready; Failure takes it back', async () => {
    const h = podHarness();
    const pod = makePod('ready', { containers: [container('main', { readinessProbe: { exec: { command: ['true'] } } })] });
    const actor = h.start(pod);
    await settled(actor);
    const conditions = () => Object.fromEntries((h.statuses.get('uid-ready')?.conditions ?? []).map((c) => [c.type, c.status]));
    expect(h.statuses.get('uid-ready')?.containerStatuses?.[0]?.ready).toBe(false);
    expect(conditions()).toMatchObject({ ContainersReady: 'False', Ready: 'False' });
    const [main] = await h.runtime.listContainers();

    actor.send(probeEvent('uid-ready', main!.id, 'readiness', 'Success'));
    await waitFor(actor, (s) => s.context.syncCount === 2 && s.matches({ syncing: { worker: 'idle' } }));
    expect(h.statuses.get('uid-ready')?.containerStatuses?.[0]?.ready).toBe(true);
    expect(conditions()).toMatchObject({ ContainersReady: 'True', Ready: 'True' });

    // The same result again changes nothing: no sync.
    actor.send(probeEvent('uid-ready', main!.id, 'readiness', 'Success'));
    expect(actor.getSnapshot().context.syncCount).toBe(2);
    expect(actor.getSnapshot().matches({ syncing: { worker: 'idle' } })).toBe(true);

    actor.send(probeEvent('uid-ready', main!.id, 'readiness', 'Failure'));
    await waitFor(actor, (s) => s.context.syncCount === 3 && s.matches({ syncing: { worker: 'idle' } }));
    expect(conditions()).toMatchObject({ ContainersReady: 'False', Ready: 'False' });
    actor.send({ type: 'POD.RELEASE' });
  });

  it('a startup probe holds started (and ready) until it succeeds', async () => {
    const h = podHarness();
    const pod = makePod('slow', { containers: [container('main', { startupProbe: { exec: { command: ['true'] } } })] });
    const actor = h.start(pod);
    await settled(actor);
    expect(h.statuses.get('uid-slow')?.containerStatuses?.[0]).toMatchObject({ started: false, ready: false });
    const [main] = await h.runtime.listContainers();
    actor.send(probeEvent('uid-slow', main!.id, 'startup', 'Success'));
    await waitFor(actor, (s) => s.context.syncCount === 2 && s.matches({ syncing: { worker: 'idle' } }));
    expect(h.statuses.get('uid-slow')?.containerStatuses?.[0]).toMatchObject({ started: true, ready: true });
    actor.send({ type: 'POD.RELEASE' });
  });

  it('liveness Failure kills the container with the probe grace period and restarts it', async () => {
    const h = podHarness();
    const pod = makePod('sick', {
      terminationGracePeriodSeconds: 30,
      containers: [container('main', { livenessProbe: { exec: { command: ['true'] }, terminationGracePeriodSeconds: 3 } })],
    });
    const actor = h.start(pod);
    await settled(actor);
    const [first] = await h.runtime.listContainers();
    actor.send(probeEvent('uid-sick', first!.id, 'liveness', 'Failure'));
    const snap = await waitFor(actor, (s) => s.context.syncCount === 2 && s.matches({ syncing: { worker: 'idle' } }));
    expect(snap.context.probes.liveness['main']).toEqual({ containerId: first!.id, result: 'Failure' });
    const stop = h.runtime.calls.find((c) => c.method === 'stopContainer' && c.target === first!.id);
    expect(stop?.timeoutSeconds).toBe(3);
    const containers = await h.runtime.listContainers();
    expect(containers.find((c) => c.id === first!.id)?.state).toBe('CONTAINER_EXITED');
    expect(containers.some((c) => c.id !== first!.id && c.state === 'CONTAINER_RUNNING')).toBe(true);
    // A result for the old container ID no longer matters once the new one has its own.
    actor.send({ type: 'POD.RELEASE' });
  });

  it('a result that arrives during a sync is kept and runs another sync after it', async () => {
    const h = podHarness();
    const pod = makePod('busy', { containers: [container('main', { readinessProbe: { exec: { command: ['true'] } } })] });
    const actor = h.start(pod);
    expect(actor.getSnapshot().matches({ syncing: { worker: 'working' } })).toBe(true);
    actor.send(probeEvent('uid-busy', 'not-yet-known', 'readiness', 'Success'));
    expect(actor.getSnapshot().context.syncRequested).toBe(true);
    await waitFor(actor, (s) => s.context.syncCount === 2 && s.matches({ syncing: { worker: 'idle' } }));
    actor.send({ type: 'POD.RELEASE' });
  });

  it('records readiness while terminating and ignores liveness there', async () => {
    const h = podHarness();
    const actor = h.start(makePod('bye', { containers: [container('main', { readinessProbe: { exec: { command: ['true'] } } })] }));
    await settled(actor);
    const held = h.runtime.holdCalls('stopContainer');
    actor.send({ type: 'POD.KILL' });
    expect(actor.getSnapshot().matches('terminating')).toBe(true);
    actor.send(probeEvent('uid-bye', 'c', 'readiness', 'Success'));
    actor.send(probeEvent('uid-bye', 'c', 'liveness', 'Failure'));
    held.releaseAll();
    expect(actor.getSnapshot().context.probes.readiness['main']).toEqual({ containerId: 'c', result: 'Success' });
    expect(actor.getSnapshot().context.probes.liveness).toEqual({});
    actor.send({ type: 'POD.RELEASE' });
  });
});
