import { describe, expect, it } from 'vitest';
import { type AnyActorRef, SimulatedClock, createActor, waitFor } from 'xstate';
import { containerLogManagerMachineWith } from '../../src/logs/containerLogManager.ts';
import { podMachineWith } from '../../src/pod/pod.ts';
import { syncLoopMachine } from '../../src/kubelet/syncLoop.ts';
import { fromCallback } from 'xstate';
import {
  guardName,
  maxPodsPerEvent,
  projectActor,
  projectDefinition,
  projectEvent,
  projectSnapshot,
  sanitizeEvent,
} from '../../src/visualizer/projection.ts';
import type { WireStateNode } from '../../src/visualizer/wire.ts';
import { fakeEffects, forbidden, secretPod } from './helpers.ts';

function find(node: WireStateNode, id: string): WireStateNode | undefined {
  if (node.id === id) return node;
  for (const child of node.states ?? []) {
    const found = find(child, id);
    if (found) return found;
  }
  return undefined;
}

describe('projectDefinition', () => {
  it("projects the pod machine's states tree with ids, types, tags and named transitions", () => {
    const def = projectDefinition(podMachineWith(fakeEffects()));
    expect(def.kind).toBe('definition');
    expect(def.machineId).toBe('pod');
    expect(def.root.initial).toEqual(['pod.starting']);
    expect(find(def.root, 'pod.starting')?.transitions).toEqual([
      { event: '', targets: ['pod.terminating'], guard: 'podDeleting', actions: ['requestTermination'] },
      { event: '', targets: ['pod.syncing'] },
    ]);
    expect(find(def.root, 'pod.syncing')?.type).toBe('parallel');
    expect(find(def.root, 'pod.released')?.type).toBe('final');
    expect(find(def.root, 'pod.terminating')?.tags).toEqual(['terminating']);
    expect(find(def.root, 'pod.terminated.finished')?.entry).toEqual(['reportFinished']);
    expect(find(def.root, 'pod.syncing.worker.working')?.invoke?.[0]?.src).toBe('syncPod');

    const working = find(def.root, 'pod.syncing.worker.working')!;
    expect(working.transitions).toContainEqual({ event: 'POD.UPDATE', targets: [], guard: '!updateDeletesPod', actions: ['keepPending'] });
    expect(working.transitions).toContainEqual({ event: 'PLEG.*', targets: [], actions: ['keepPlegEvent'] });
    const done = working.transitions.filter((t) => t.event.startsWith('xstate.done.actor.'));
    expect(done.map((t) => t.targets)).toEqual([['pod.terminating'], ['pod.syncing.worker.idle']]);
    expect(done[0]?.guard).toBe('inline');
    expect(done[1]?.actions).toEqual(['recordSync', 'reportSynced']);

    const idle = find(def.root, 'pod.syncing.worker.idle')!;
    expect(idle.transitions).toContainEqual({ event: '', targets: ['pod.syncing.worker.working'], guard: 'hasPendingWork', actions: ['takePending'] });

    const terminating = find(def.root, 'pod.terminating')!;
    expect(terminating.transitions).toContainEqual({
      event: 'POD.UPDATE',
      targets: ['pod.terminating.killing'],
      guard: '(updateDeletesPod && shortensGrace)',
      actions: ['requestTermination'],
      reenter: true,
    });
    const initRunning = find(def.root, 'pod.syncing.progress.initializing.running')!;
    expect(initRunning.transitions[0]?.guard).toBe('initStep');

    // Plain data: survives JSON unchanged (no functions, no cycles).
    expect(JSON.parse(JSON.stringify(def))).toEqual(def);
  });

  it('projects the syncLoop (invokes, delayed transitions, root-level transitions)', () => {
    const def = projectDefinition(syncLoopMachine);
    expect(def.machineId).toBe('syncLoop');
    expect(def.root.type).toBe('parallel');
    expect(def.root.invoke?.map((i) => i.id)).toEqual(['pods', 'sources', 'probes', 'facts', 'pleg']);
    expect(def.root.entry).toEqual(['startNodeLoops']);
    expect(def.root.transitions).toContainEqual({ event: 'CONFIG.ADD', targets: [], actions: ['routeToPods', 'countRouted'] });
    const waiting = find(def.root, 'syncLoop.ticker.waiting')!;
    expect(waiting.transitions[0]?.event).toMatch(/^xstate\.after\.syncTick\./);
    expect(waiting.transitions[0]?.actions).toEqual(['tickSync']);
    expect(JSON.parse(JSON.stringify(def))).toEqual(def);
  });

  it('names guards', () => {
    expect(guardName('x')).toBe('x');
    expect(guardName({ type: 'initStep', params: 'running' })).toBe('initStep');
    expect(guardName(() => true)).toBe('inline');
  });
});

describe('projectActor / projectSnapshot', () => {
  it('projects a pod actor with its identity and a small summary of its context', async () => {
    const pod = secretPod();
    const parent = createActor(fromCallback(() => {}));
    parent.start();
    const actor = createActor(podMachineWith(fakeEffects()), { parent: parent as unknown as AnyActorRef, id: 'pod/uid-1', systemId: 'pod/uid-1', input: { pod } });
    actor.start();
    const created = projectActor(actor, 'created', actor.getSnapshot(), 1);
    expect(created).toEqual({
      kind: 'actor',
      op: 'created',
      actorId: actor.sessionId,
      name: 'pod/uid-1',
      machineId: 'pod',
      parentId: parent.sessionId,
      pod: { namespace: 'default', name: 'web', uid: 'uid-1' },
      at: 1,
    });
    await new Promise((r) => setTimeout(r, 0));
    const snap = projectSnapshot(actor, actor.getSnapshot(), 2);
    expect(snap).toEqual({
      kind: 'snapshot',
      actorId: actor.sessionId,
      status: 'active',
      value: { syncing: { worker: 'idle', progress: 'running' } },
      tags: [],
      pod: { phase: 'Running', progress: { stage: 'running' }, syncCount: 1, restarts: 0, restartRequested: false, gracePeriodSeconds: null, qos: 'BestEffort', limits: '' },
      at: 2,
    });
    actor.send({ type: 'POD.KILL', gracePeriodSeconds: 5 });
    const terminating = projectSnapshot(actor, actor.getSnapshot(), 3);
    expect(terminating.tags).toEqual(['terminating']);
    expect(terminating.pod?.gracePeriodSeconds).toBe(5);
    actor.send({ type: 'POD.RELEASE' });
    expect(projectSnapshot(actor, actor.getSnapshot(), 4)).toMatchObject({ status: 'done', value: 'released' });
    parent.stop();
  });

  it("projects the syncLoop's routing counts and runtime health", () => {
    // The syncLoop as drawn: children that do nothing, a PLEG whose relist fails (no runtime).
    const actor = createActor(syncLoopMachine, {
      input: { expectedSources: ['file'], syncTickMs: 1000, housekeepingMs: 2000, pleg: { periodMs: 1000 }, loops: {} },
    });
    actor.start();
    actor.send({ type: 'CONFIG.ADD', source: 'file', pods: [secretPod()] });
    actor.send({ type: 'CONFIG.ADD', source: 'file', pods: [] });
    actor.send({ type: 'PLEG.CONTAINER_DIED', podUid: 'u', containerId: 'c' });
    actor.send({ type: 'SOURCE.SEEN', source: 'file' });
    actor.send({ type: 'PLEG.RELIST_FAILED', error: 'CRI ListContainers failed (UNAVAILABLE): connection refused' });
    actor.send({ type: 'SOURCE.STATE', source: 'api', phase: 'backingOff', detail: '800 ms: connection refused' });
    actor.send({ type: 'SOURCE.STATE', source: 'api', phase: 'watching', detail: 'from 1234' });
    const snap = projectSnapshot(actor, actor.getSnapshot(), 7);
    expect(snap.syncLoop).toEqual({
      routed: { 'CONFIG.ADD': 2, 'PLEG.CONTAINER_DIED': 1 },
      seenSources: ['file'],
      lastRelistAt: null,
      lastRelistDurationMs: null,
      lastRuntimeError: 'CRI ListContainers failed (UNAVAILABLE): connection refused',
      sourceStates: { api: 'watching from 1234' },
    });
    expect(snap.value).toMatchObject({ sources: 'ready', runtime: 'unhealthy' });
    expect(snap.pod).toBeUndefined();
    expect(JSON.stringify(snap)).not.toContain('hunter2');
    actor.stop();
  });

  it("projects a node loop's snapshot with the line its registration writes", async () => {
    const clock = new SimulatedClock();
    const failing = containerLogManagerMachineWith({ rotate: () => Promise.reject(new Error('ListContainers: UNAVAILABLE')) });
    const actor = createActor(failing, { clock, input: { monitorIntervalMs: 1_000 } }).start();
    clock.increment(1_000);
    await waitFor(actor, (s) => s.context.passes === 1 && s.matches('waiting'));
    expect(projectSnapshot(actor, actor.getSnapshot(), 1)).toMatchObject({ value: 'waiting', summary: '1 passes · 0 logs rotated · 1 failed: ListContainers: UNAVAILABLE' });
    actor.stop();
  });

  it('projects a non-machine actor without value or pod', () => {
    const actor = createActor(fromCallback(() => {}), { id: 'pods' });
    actor.start();
    expect(projectActor(actor, 'created', actor.getSnapshot(), 1)).toMatchObject({ machineId: null, name: 'pods', parentId: null });
    expect(projectSnapshot(actor, actor.getSnapshot(), 1)).toEqual({ kind: 'snapshot', actorId: actor.sessionId, status: 'active', at: 1 });
    actor.stop();
  });
});

describe('projectEvent / sanitizeEvent', () => {
  const pod = secretPod();
  const target = { sessionId: 'x:1' } as AnyActorRef;
  const source = { sessionId: 'x:0' } as AnyActorRef;

  it('reduces POD.UPDATE to the pod identity and container names/images', () => {
    const e = projectEvent(target, source, { type: 'POD.UPDATE', pod, updateType: 'create' }, 5, 11);
    expect(e).toEqual({
      kind: 'event',
      seq: 11,
      actorId: 'x:1',
      sourceId: 'x:0',
      type: 'POD.UPDATE',
      payload: {
        updateType: 'create',
        pod: {
          namespace: 'default',
          name: 'web',
          uid: 'uid-1',
          containers: [{ name: 'app', image: 'statelet.local/busybox:1' }],
          initContainers: [{ name: 'init', image: 'statelet.local/busybox:1' }],
        },
      },
      at: 5,
    });
  });

  it('reduces CONFIG.* to the source and pod summaries, capped', () => {
    const pods = Array.from({ length: maxPodsPerEvent + 10 }, (_, i) => secretPod(`uid-${i}`));
    const payload = sanitizeEvent({ type: 'CONFIG.ADD', source: 'file', pods })!;
    expect(payload.source).toBe('file');
    expect(payload.podCount).toBe(maxPodsPerEvent + 10);
    expect((payload.pods as unknown[]).length).toBe(maxPodsPerEvent);
    const text = JSON.stringify(payload);
    for (const word of forbidden) expect(text).not.toContain(word);
  });

  it('keeps PLEG and PROBE events as they are', () => {
    expect(sanitizeEvent({ type: 'PLEG.CONTAINER_DIED', podUid: 'u', containerId: 'c' })).toEqual({ podUid: 'u', containerId: 'c' });
    const probe = { type: 'PROBE.RESULT', podUid: 'u', containerId: 'c', containerName: 'app', kind: 'readiness', result: 'Success' };
    const { type: _type, ...rest } = probe;
    expect(sanitizeEvent(probe)).toEqual(rest);
    expect(sanitizeEvent({ type: 'PLEG.RELISTED', at: 1, durationMs: 2 })).toEqual({ at: 1, durationMs: 2 });
  });

  it('reduces done events to their type and error events to the message', () => {
    expect(projectEvent(target, undefined, { type: 'xstate.done.actor.0.pod.syncing', output: { pod } }, 1, 12)).toEqual({
      kind: 'event',
      seq: 12,
      actorId: 'x:1',
      sourceId: null,
      type: 'xstate.done.actor.0.pod.syncing',
      at: 1,
    });
    expect(sanitizeEvent({ type: 'xstate.error.actor.x', error: new Error('boom') })).toEqual({ message: 'boom' });
    // A pod actor's init event names the pod it starts with (summarized), other inits carry nothing.
    const init = sanitizeEvent({ type: 'xstate.init', input: { pod } })!;
    expect(init).toEqual({ pod: expect.objectContaining({ name: 'web', uid: 'uid-1', containers: [{ name: 'app', image: 'statelet.local/busybox:1' }] }) });
    for (const word of forbidden) expect(JSON.stringify(init)).not.toContain(word);
    expect(sanitizeEvent({ type: 'xstate.init', input: { periodMs: 1000 } })).toBeUndefined();
    expect(sanitizeEvent({ type: 'xstate.error.actor.x', error: { message: 'plain' } })).toEqual({ message: 'plain' });
  });

  it('keeps a runtime call\'s method, target, duration and error, and names the effect actor it went to', () => {
    const effect = { sessionId: 'x:2', id: '0.pod.syncing.worker.working', src: 'syncPod' } as unknown as AnyActorRef;
    const finished = { type: 'CRI.FINISHED', callId: 7, call: 'StopContainer', target: 'app', durationMs: 2003.1, error: 'CRI StopContainer failed (DEADLINE_EXCEEDED): timeout', extra: 'x' };
    expect(projectEvent(target, effect, finished, 9, 13, effect)).toEqual({
      kind: 'event',
      seq: 13,
      actorId: 'x:1',
      sourceId: 'x:2',
      type: 'CRI.FINISHED',
      payload: { callId: 7, call: 'StopContainer', target: 'app', durationMs: 2003.1, error: 'CRI StopContainer failed (DEADLINE_EXCEEDED): timeout' },
      via: 'syncPod',
      at: 9,
    });
    expect(sanitizeEvent({ type: 'CRI.STARTED', call: 'ExecSync', target: 'app', cmd: ['echo', 'hunter2'] })).toEqual({ call: 'ExecSync', target: 'app' });
  });

  it('drops unknown fields and unknown events\' payloads', () => {
    expect(sanitizeEvent({ type: 'SOURCE.ERROR', source: 'file', message: 'value: hunter2' })).toEqual({ source: 'file' });
    expect(sanitizeEvent({ type: 'STREAM.UPDATE', events: [], relist: true, secret: 'hunter2' })).toBeUndefined();
    expect(sanitizeEvent({ type: 'POD.KILL', gracePeriodSeconds: 3, deleted: true, extra: { pod } })).toEqual({ gracePeriodSeconds: 3, deleted: true });
  });
});
