import { afterEach, describe, expect, it } from 'vitest';
import { type AnyActorRef, type InspectionEvent, SimulatedClock, createActor } from 'xstate';
import { podMachineWith } from '../../src/pod/pod.ts';
import type { WireActor, WireEvent, WireRecord, WireSnapshot } from '../../src/visualizer/wire.ts';
import { VisualizerHub } from '../../src/visualizer/stream.ts';
import { fakeEffects, forbidden, runningOutcome, secretPod, startPodSystem, tick } from './helpers.ts';

const hubs: VisualizerHub[] = [];
function newHub(options: ConstructorParameters<typeof VisualizerHub>[0] = {}): VisualizerHub {
  const hub = new VisualizerHub(options);
  hubs.push(hub);
  return hub;
}
afterEach(() => {
  for (const hub of hubs.splice(0)) hub.close();
});

const ofKind = <K extends WireRecord['kind']>(batch: WireRecord[], kind: K) =>
  batch.filter((r): r is Extract<WireRecord, { kind: K }> => r.kind === kind);

describe('VisualizerHub', () => {
  it('keeps the current picture: definitions, live actors, their latest snapshots', async () => {
    const hub = newHub();
    const { actor } = startPodSystem(hub, secretPod());
    await tick();
    const picture = hub.picture();
    expect(picture.definitions.map((d) => d.machineId)).toEqual(['pod']);
    expect(picture.actors).toHaveLength(1);
    const [view] = picture.actors;
    expect(view?.actor).toMatchObject({ kind: 'actor', op: 'created', name: 'pod/uid-1', machineId: 'pod', pod: { uid: 'uid-1' } });
    expect(view?.snapshot).toMatchObject({ value: { syncing: { worker: 'idle', progress: 'running' } }, pod: { syncCount: 1 } });

    actor.send({ type: 'POD.RELEASE' });
    expect(hub.picture().actors).toEqual([]);
  });

  it("names a pod actor whose first record is a microstep of its initial state, before it has a snapshot to read", () => {
    // As the agent's own build records a new pod actor: the eventless step out of `starting` comes
    // while the actor is being made, when its getSnapshot() has nothing to return yet.
    const hub = newHub();
    const pod = secretPod();
    const actor = createActor(podMachineWith(fakeEffects()), { id: 'pod/uid-1', systemId: 'pod/uid-1', input: { pod } });
    const initial = actor.getSnapshot();
    const beingMade = Object.create(actor, { getSnapshot: { value: () => undefined } }) as AnyActorRef;
    hub.inspect.next!({ type: '@xstate.actor', actorRef: beingMade, rootId: beingMade.sessionId });
    hub.inspect.next!({
      type: '@xstate.microstep',
      actorRef: beingMade,
      rootId: beingMade.sessionId,
      event: { type: 'xstate.init' },
      snapshot: initial,
      _transitions: [{ source: { id: 'pod.starting' }, target: [{ id: 'pod.syncing' }] }],
    } as unknown as InspectionEvent);
    expect(hub.picture().actors.map((a) => a.actor)).toEqual([
      expect.objectContaining({ name: 'pod/uid-1', machineId: 'pod', pod: { namespace: 'default', name: 'web', uid: 'uid-1' } }),
    ]);
    // Its log tells its creation first, then the step it took while being made.
    hub.inspect.next!({ type: '@xstate.event', actorRef: beingMade, rootId: beingMade.sessionId, sourceRef: undefined, event: { type: 'xstate.init', input: { pod } } });
    const history = hub.history(beingMade.sessionId);
    expect(history.map((r) => (r.kind === 'event' ? r.type : r.kind === 'step' ? `step ${r.event}` : r.kind))).toEqual(['xstate.init', 'step xstate.init']);
    expect(history.map((r) => (r.kind === 'event' || r.kind === 'step' ? r.seq : 0))).toEqual([1, 2]);
  });

  it('batches at most every flushMs and sends only the latest snapshot per actor', async () => {
    const clock = new SimulatedClock();
    const hub = newHub({ flushMs: 50, clock });
    const batches: WireRecord[][] = [];
    hub.subscribe((b) => batches.push(b));
    let syncs = 0;
    const { actor } = startPodSystem(
      hub,
      secretPod(),
      fakeEffects({ syncPod: async () => ({ ...runningOutcome(), phase: ++syncs > 2 ? 'Running' : 'Pending' }) }),
    );
    for (let i = 0; i < 3; i++) {
      await tick();
      actor.send({ type: 'POD.SYNC' });
    }
    await tick();
    clock.increment(49);
    expect(batches).toEqual([]); // nothing before the timer
    clock.increment(1);
    expect(batches).toHaveLength(1);
    const [batch] = batches as [WireRecord[]];
    // Order: definitions, created actors, snapshots, then events and steps as they happened.
    const sections = batch.map((r) => (r.kind === 'step' ? 'event' : r.kind));
    expect(sections.filter((k, i, all) => all.indexOf(k) === i)).toEqual(['definition', 'actor', 'snapshot', 'event']);
    expect(sections.filter((k, i) => k !== sections[i - 1])).toEqual(['definition', 'actor', 'snapshot', 'event']);
    const snapshots = ofKind(batch, 'snapshot');
    expect(snapshots).toHaveLength(1);
    expect(snapshots[0]?.pod?.syncCount).toBe(syncs);
    expect(snapshots[0]?.pod?.phase).toBe('Running');
    expect(ofKind(batch, 'event').map((e) => e.type).filter((t) => t === 'POD.SYNC')).toHaveLength(3);

    actor.send({ type: 'POD.RELEASE' });
    clock.increment(50);
    expect(batches).toHaveLength(2);
    const last = batches[1]!;
    expect(ofKind(last, 'snapshot')[0]).toMatchObject({ status: 'done', value: 'released' });
    expect(last.at(-1)).toMatchObject({ kind: 'actor', op: 'stopped', name: 'pod/uid-1' } satisfies Partial<WireActor>);
    expect(ofKind(last, 'definition')).toEqual([]); // a definition goes out once
  });

  it('caps the events of a batch, keeping the newest and counting the dropped', async () => {
    const hub = newHub({ maxEventsPerBatch: 5 });
    const batches: WireRecord[][] = [];
    hub.subscribe((b) => batches.push(b));
    const { actor } = startPodSystem(hub, secretPod());
    await tick();
    hub.flush();
    batches.length = 0;
    for (let i = 0; i < 23; i++) actor.send({ type: 'PROBE.RESULT', podUid: 'uid-1', containerId: `c${i}`, containerName: 'app', kind: 'readiness', result: 'Failure' });
    hub.flush();
    const [batch] = batches as [WireRecord[]];
    const events = ofKind(batch, 'event') as WireEvent[];
    expect(events.map((e) => e.payload?.containerId)).toEqual(['c18', 'c19', 'c20', 'c21', 'c22']);
    expect(ofKind(batch, 'dropped')).toEqual([{ kind: 'dropped', events: 18 }]);
  });

  it('buffers nothing while no client listens, and a late client gets the current picture', async () => {
    const hub = newHub();
    const { actor } = startPodSystem(hub, secretPod());
    await tick();
    actor.send({ type: 'POD.KILL', gracePeriodSeconds: 7 });
    await tick();
    // A client connecting now: the picture, then batches from here on.
    const batches: WireRecord[][] = [];
    const picture = hub.picture();
    hub.subscribe((b) => batches.push(b));
    hub.flush();
    expect(batches).toEqual([]);
    expect(picture.definitions).toHaveLength(1);
    const snapshot = picture.actors[0]?.snapshot as WireSnapshot;
    expect(snapshot.tags).toEqual(['terminated', 'finished']);
    expect(snapshot.pod?.gracePeriodSeconds).toBe(7);
    expect(snapshot.value).toEqual({ terminated: 'finished' });
  });

  it('never puts env values, secret refs or annotations on the wire', async () => {
    const hub = newHub();
    const sent: unknown[] = [];
    hub.subscribe((b) => sent.push(b));
    const pod = secretPod();
    const { actor } = startPodSystem(hub, pod);
    actor.send({ type: 'POD.UPDATE', pod: secretPod(), updateType: 'update' });
    await tick();
    actor.send({ type: 'POD.UPDATE', pod: { ...secretPod(), metadata: { ...pod.metadata, deletionTimestamp: 'now' } }, updateType: 'update' });
    await tick();
    hub.flush();
    sent.push(hub.picture());
    const text = JSON.stringify(sent);
    expect(text).toContain('POD.UPDATE');
    expect(text).toContain('statelet.local/busybox:1');
    for (const word of forbidden) expect(text).not.toContain(word);
  });

  it('streams each microstep that moves an actor, in order with its events, with the value after it', async () => {
    const hub = newHub();
    const batches: WireRecord[][] = [];
    hub.subscribe((b) => batches.push(b));
    const { actor } = startPodSystem(hub, secretPod());
    await tick();
    actor.send({ type: 'POD.KILL' });
    await tick();
    hub.flush();
    const records = batches.flat().filter((r) => r.kind === 'step' || r.kind === 'event');
    const steps = ofKind(records, 'step');
    // working → idle when the sync is done; progress sandbox → running; then the kill's way down.
    expect(steps).toContainEqual(expect.objectContaining({
      event: expect.stringMatching(/^xstate\.done\.actor\./),
      transitions: [{ source: 'pod.syncing.worker.working', targets: ['pod.syncing.worker.idle'] }],
    }));
    expect(steps).toContainEqual(expect.objectContaining({ event: 'POD.KILL', transitions: [{ source: 'pod.syncing', targets: ['pod.terminating'] }], value: { terminating: 'killing' } }));
    const finalValues = steps.map((s) => JSON.stringify(s.value));
    expect(finalValues.indexOf('{"terminating":"killing"}')).toBeLessThan(finalValues.indexOf('{"terminated":"cleaning"}'));
    expect(finalValues.indexOf('{"terminated":"cleaning"}')).toBeLessThan(finalValues.indexOf('{"terminated":"finished"}'));
    // The step comes right after the event that caused it.
    const kill = records.findIndex((r) => r.kind === 'event' && r.type === 'POD.KILL');
    expect(records[kill + 1]).toMatchObject({ kind: 'step', event: 'POD.KILL' });
    // Action-only steps (a readiness result that changes nothing) are not sent.
    expect(steps.every((s) => s.transitions.length > 0)).toBe(true);
  });

  it("shows the runtime calls an effect actor records as its pod's events, with the effect's name", async () => {
    const hub = newHub();
    const batches: WireRecord[][] = [];
    hub.subscribe((b) => batches.push(b));
    const { actor } = startPodSystem(
      hub,
      secretPod(),
      fakeEffects({
        syncPod: async (_request, _signal, calls) => {
          const create = { id: 41, call: 'CreateContainer', target: 'app' };
          const start = { id: 42, call: 'StartContainer', target: 'app' };
          calls.started(create);
          calls.finished(create, 12.34);
          calls.started(start);
          calls.finished(start, 3, new Error('CRI StartContainer failed (INTERNAL): no such file'));
          return runningOutcome();
        },
      }),
    );
    await tick();
    hub.flush();
    const cri = ofKind(batches.flat(), 'event').filter((e) => e.type.startsWith('CRI.'));
    expect(cri).toEqual([
      expect.objectContaining({ actorId: actor.sessionId, type: 'CRI.STARTED', via: 'syncPod', payload: { callId: 41, call: 'CreateContainer', target: 'app' } }),
      expect.objectContaining({ type: 'CRI.FINISHED', via: 'syncPod', payload: { callId: 41, call: 'CreateContainer', target: 'app', durationMs: 12.3 } }),
      expect.objectContaining({ type: 'CRI.STARTED', payload: { callId: 42, call: 'StartContainer', target: 'app' } }),
      expect.objectContaining({
        type: 'CRI.FINISHED',
        payload: { callId: 42, call: 'StartContainer', target: 'app', durationMs: 3, error: 'CRI StartContainer failed (INTERNAL): no such file' },
      }),
    ]);
    // The effect actor's own machinery (its promise resolving) is not shown.
    expect(ofKind(batches.flat(), 'event').some((e) => e.type.startsWith('xstate.promise'))).toBe(false);
    // Nor is the effect actor itself.
    expect(ofKind(batches.flat(), 'actor').map((a) => a.name)).toEqual(['pod/uid-1']);
  });

  it("keeps each actor's newest events and steps, even with no client, and projects them on request", async () => {
    const hub = newHub({ historyPerActor: 6 });
    const { actor } = startPodSystem(hub, secretPod());
    await tick();
    for (let i = 0; i < 10; i++) actor.send({ type: 'PROBE.RESULT', podUid: 'uid-1', containerId: `c${i}`, containerName: 'app', kind: 'readiness', result: 'Failure' });
    const history = hub.history(actor.sessionId);
    // Action-only results make no step: the last six records are the last six results, oldest first.
    expect(history.map((r) => (r.kind === 'event' ? r.payload?.containerId : r.kind))).toEqual(['c4', 'c5', 'c6', 'c7', 'c8', 'c9']);
    const seqs = history.map((r) => (r.kind === 'event' ? r.seq : 0));
    expect(seqs).toEqual(seqs.map((_, i) => seqs[0]! + i));
    // A batch a client gets later continues the sequence.
    const batches: WireRecord[][] = [];
    hub.subscribe((b) => batches.push(b));
    actor.send({ type: 'POD.SYNC' });
    await tick();
    hub.flush();
    const first = ofKind(batches.flat(), 'event')[0]!;
    expect(first).toMatchObject({ type: 'POD.SYNC', seq: seqs.at(-1)! + 1 });
    actor.send({ type: 'POD.RELEASE' });
    expect(hub.history(actor.sessionId)).toEqual([]); // gone with the actor
  });

  it('survives a failing listener and never throws into the actor system', async () => {
    const hub = newHub();
    const good: WireRecord[][] = [];
    hub.subscribe(() => {
      throw new Error('bad client');
    });
    hub.subscribe((b) => good.push(b));
    startPodSystem(hub, secretPod());
    await tick();
    hub.flush();
    expect(good).toHaveLength(1);
    expect(() => hub.record({ type: '@xstate.snapshot' } as never)).not.toThrow();
  });
});
