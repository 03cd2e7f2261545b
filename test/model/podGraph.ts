/**
 * Walks the REAL pod machine (`podMachine`, as drawn, given effects that only record a call) as a graph, without running anything.
 *
 * The machine invokes actors (`syncPod`, `terminatePod`, `cleanupPod`) and has `after` delays, so
 * `createTestModel` refuses it. Instead the graph utilities (`getShortestPaths`, `getSimplePaths`,
 * `getAdjacencyMap`) explore it with an explicit event alphabet in which we play the runtime's part
 * ourselves: the invoked actors' results (`xstate.done.actor.<invokeId>` with a `SyncOutcome` we
 * construct, `xstate.error.actor.<invokeId>`), the delayed events of the retry states
 * (`xstate.after.<delay>.<stateId>`), and the supervisor's events (`POD.UPDATE`, `POD.SYNC`,
 * `PLEG.*`, `PROBE.RESULT`, `POD.KILL`, `POD.RELEASE`). Invoke ids and delayed event types are read from the machine
 * definition, not written down here.
 *
 * Every path is then replayed with the machine's own pure `transition(snapshot, event, scope)` on an
 * inert actor scope: invoked actors are created (they appear in `snapshot.children`) but never
 * started, actions are collected instead of executed, and the `@xstate.microstep` inspection records
 * tell which transition definitions were taken (eventless ones included). The effects handed to the
 * machine record any call: a call would mean the exploration ran real work.
 *
 * A state of the graph is the snapshot reduced to what the machine's behaviour depends on (state
 * value, which pod spec, the pending slot, the progress, the phase, the probe results, the grace
 * period, the deletion and restart flags); counters and error messages are left out so the graph is finite.
 */
import {
  type ActorLogic,
  type AnyActorRef,
  type AnyActorScope,
  type AnyEventObject,
  type AnyMachineSnapshot,
  type AnyStateMachine,
  type AnyStateNode,
  type AnyTransitionDefinition,
  type ExecutableActionObject,
  createActor,
  fromCallback,
  getStateNodes as activeStateNodes,
} from 'xstate';
import { getStateNodes as allStateNodes } from 'xstate/graph';
import type { Pod, PodPhase, ProbeKind, ProbeResult } from '../../src/api/types.ts';
import type { PodProgress } from '../../src/pod/progress.ts';
import type { PlegEventType } from '../../src/events.ts';
import {
  type PodContext,
  type PodEffects,
  type PodInput,
  type PodMachine,
  type SyncOutcome,
  podMachineWith,
} from '../../src/pod/pod.ts';
import { container, makePod } from '../support/pods.ts';

// ------------------------------------------------------------------------------------------------
// The machine under exploration

/** Effect calls made during exploration; must stay empty (nothing is ever started). */
export const effectCalls: string[] = [];

const inertEffects: PodEffects = {
  syncPod: () => {
    effectCalls.push('syncPod');
    return new Promise(() => {});
  },
  terminatePod: () => {
    effectCalls.push('terminatePod');
    return new Promise(() => {});
  },
  cleanupPod: () => {
    effectCalls.push('cleanupPod');
    return new Promise(() => {});
  },
};

export const podMachine = podMachineWith(inertEffects);
/** The pod machine seen through the untyped lens the graph utilities and the xstate.* events need. */
export const machine: AnyStateMachine = podMachine;

export function podContext(snapshot: AnyMachineSnapshot): PodContext {
  return snapshot.context;
}

// ------------------------------------------------------------------------------------------------
// What the definition says: state nodes, event descriptors, transitions, invoke ids, delays

export const stateNodes: AnyStateNode[] = [machine.root, ...allStateNodes(machine.root)];

/** Every transition definition of the machine: `on`, invoke `onDone`/`onError`, `after`, `always`. */
export const transitionDefinitions: AnyTransitionDefinition[] = stateNodes.flatMap((node) => [
  ...[...node.transitions.values()].flat(),
  ...(node.always ?? []),
]);

/** Every event descriptor the machine accepts somewhere (`PLEG.*` stays a wildcard). */
export const eventDescriptors: string[] = [
  ...new Set(stateNodes.flatMap((node) => [...node.transitions.keys()])),
].sort();

/** Invoke id of each invoked actor source, from the definition (`<index>.<stateNodeId>` when unnamed). */
export const invokeIds: Record<string, string> = Object.fromEntries(
  stateNodes.flatMap((node) => node.invoke.map((def) => [def.src, def.id] as const)),
);

/** The delayed event type of each state node with an `after`, from the definition. */
export const afterEvents: Record<string, string> = Object.fromEntries(
  stateNodes.flatMap((node) => node.after.map((t) => [node.id, t.eventType] as const)),
);

export function transitionKey(t: AnyTransitionDefinition): string {
  const list = t.eventType === '' ? (t.source.always ?? []) : (t.source.transitions.get(t.eventType) ?? []);
  const targets = (t.target ?? []).map((n) => n.id).join(',') || '(none)';
  const event = t.eventType === '' ? 'always' : t.eventType;
  return `#${t.source.id} --${event}[${list.indexOf(t)}]--> ${targets}`;
}

function invokeId(src: string): string {
  const id = invokeIds[src];
  if (id === undefined) throw new Error(`no invoke of ${src} in the pod machine`);
  return id;
}

function afterEvent(stateId: string): string {
  const type = afterEvents[stateId];
  if (type === undefined) throw new Error(`no after in #${stateId}`);
  return type;
}

// ------------------------------------------------------------------------------------------------
// The event alphabet

const grace = { spec: 30, v2: 10, deletion: 20, deletionNow: 2, killShorter: 5, killLonger: 60 } as const;

function labelled(label: string, patch: (pod: Pod) => Pod = (p) => p): Pod {
  const base = makePod('model', {
    initContainers: [container('init-a'), container('init-b')],
    containers: [container('main')],
    terminationGracePeriodSeconds: grace.spec,
  });
  return patch({ ...base, metadata: { ...base.metadata, labels: { model: label } } });
}

export const pods = {
  v1: labelled('v1'),
  /** A newer spec, with a shorter spec grace period. */
  v2: labelled('v2', (p) => ({ ...p, spec: { ...p.spec, terminationGracePeriodSeconds: grace.v2 } })),
  /** Deleted from the API with a deletion grace period shorter than the spec's. */
  deleted: labelled('deleted', (p) => ({
    ...p,
    metadata: { ...p.metadata, deletionTimestamp: '2026-01-01T00:00:10Z', deletionGracePeriodSeconds: grace.deletion },
  })),
  /** Deleted again with an even shorter grace period. */
  deletedNow: labelled('deletedNow', (p) => ({
    ...p,
    metadata: { ...p.metadata, deletionTimestamp: '2026-01-01T00:00:10Z', deletionGracePeriodSeconds: grace.deletionNow },
  })),
};

export function podLabel(pod: Pod | null): string {
  return pod === null ? '-' : (pod.metadata.labels?.['model'] ?? '?');
}

const memory = { backoff: {}, reasons: {} };

function outcome(progress: PodProgress, phase: PodPhase, extra: Partial<SyncOutcome> = {}): SyncOutcome {
  return { memory, progress, phase, isTerminal: phase === 'Succeeded' || phase === 'Failed', errors: [], ...extra };
}

const init = (index: number, step: 'starting' | 'running' | 'failed'): PodProgress => ({
  stage: 'initializing',
  index,
  name: index === 0 ? 'init-a' : 'init-b',
  step,
});

/** The SyncOutcomes a `syncPod` run can end with, as the effect builds them. */
export const syncOutcomes: Record<string, SyncOutcome> = {
  'sandbox': outcome({ stage: 'sandbox' }, 'Pending', { errors: ['RunPodSandbox: runtime down'] }),
  'init#0 starting': outcome(init(0, 'starting'), 'Pending'),
  'init#0 running': outcome(init(0, 'running'), 'Pending'),
  'init#0 failed': outcome(init(0, 'failed'), 'Pending', { retryAfterMs: 10_000 }),
  'init#1 starting': outcome(init(1, 'starting'), 'Pending'),
  'init#1 running': outcome(init(1, 'running'), 'Pending'),
  'running': outcome({ stage: 'running' }, 'Running'),
  // Nothing more to do: the PLEG's word that its container runs is no news afterwards.
  'running, at rest': outcome({ stage: 'running' }, 'Running', { seen: { 'container-1': 'running' } }),
  'Succeeded': outcome({ stage: 'running' }, 'Succeeded'),
  'Failed (init)': outcome(init(0, 'failed'), 'Failed'),
};

export interface Letter {
  label: string;
  event: AnyEventObject;
}

const pleg = (type: PlegEventType): Letter => ({
  label: type,
  event: { type, podUid: pods.v1.metadata.uid, containerId: 'container-1' },
});

const probe = (kind: ProbeKind, result: ProbeResult): Letter => ({
  label: `PROBE.RESULT(${kind} ${result})`,
  event: { type: 'PROBE.RESULT', podUid: pods.v1.metadata.uid, containerId: 'container-1', containerName: 'main', kind, result },
});

function done(src: string, label: string, output?: SyncOutcome): Letter {
  return { label: `done:${src}${label ? `(${label})` : ''}`, event: { type: `xstate.done.actor.${invokeId(src)}`, output } };
}

function failed(src: string): Letter {
  return {
    label: `error:${src}`,
    event: { type: `xstate.error.actor.${invokeId(src)}`, error: new Error(`${src} failed`) },
  };
}

/** The full alphabet: everything the supervisor, the runtime and the clock can say to a pod actor. */
export function fullAlphabet(): Letter[] {
  return [
    { label: 'POD.UPDATE(v2)', event: { type: 'POD.UPDATE', pod: pods.v2, updateType: 'update' } },
    { label: 'POD.UPDATE(v1,sync)', event: { type: 'POD.UPDATE', pod: pods.v1, updateType: 'sync' } },
    { label: 'POD.UPDATE(v1,create)', event: { type: 'POD.UPDATE', pod: pods.v1, updateType: 'create' } },
    { label: 'POD.UPDATE(deleted,grace=20)', event: { type: 'POD.UPDATE', pod: pods.deleted, updateType: 'update' } },
    { label: 'POD.UPDATE(deleted,grace=2)', event: { type: 'POD.UPDATE', pod: pods.deletedNow, updateType: 'update' } },
    { label: 'POD.SYNC', event: { type: 'POD.SYNC' } },
    pleg('PLEG.CONTAINER_STARTED'),
    pleg('PLEG.CONTAINER_DIED'),
    pleg('PLEG.CONTAINER_REMOVED'),
    // A liveness Failure asks for a sync the first time and changes nothing when repeated; so does a
    // readiness Success (recorded while terminating too).
    probe('liveness', 'Failure'),
    probe('readiness', 'Success'),
    { label: 'POD.KILL', event: { type: 'POD.KILL' } },
    { label: 'POD.KILL(grace=5)', event: { type: 'POD.KILL', gracePeriodSeconds: grace.killShorter } },
    { label: 'POD.KILL(grace=60)', event: { type: 'POD.KILL', gracePeriodSeconds: grace.killLonger } },
    { label: 'POD.KILL(deleted)', event: { type: 'POD.KILL', deleted: true, reason: 'removed from config' } },
    { label: 'POD.RELEASE', event: { type: 'POD.RELEASE' } },
    ...Object.entries(syncOutcomes).map(([label, output]) => done('syncPod', label, output)),
    failed('syncPod'),
    done('terminatePod', ''),
    failed('terminatePod'),
    { label: 'after:killRetry(terminating)', event: { type: afterEvent('pod.terminating.retrying') } },
    done('cleanupPod', ''),
    failed('cleanupPod'),
    { label: 'after:killRetry(terminated)', event: { type: afterEvent('pod.terminated.retrying') } },
  ];
}

/**
 * The alphabet of the simple-path walk: a lifecycle without the duplicates of the full alphabet
 * (one newer spec, one deletion, one shorter kill, the outcomes that move the progress region
 * forward and the terminal ones). Simple paths over the full alphabet are too many to enumerate.
 */
export function lifecycleAlphabet(): Letter[] {
  const keep = new Set([
    'POD.UPDATE(v2)',
    'POD.UPDATE(deleted,grace=20)',
    'POD.SYNC',
    'POD.KILL(grace=5)',
    'POD.KILL(deleted)',
    'done:syncPod(init#0 running)',
    'done:syncPod(running)',
    'done:syncPod(Succeeded)',
    'done:syncPod(Failed (init))',
    'error:syncPod',
    'done:terminatePod',
    'error:terminatePod',
    'after:killRetry(terminating)',
    'done:cleanupPod',
  ]);
  return fullAlphabet().filter((l) => keep.has(l.label));
}

/**
 * The letters that can really arrive in `snapshot`: an invoked actor's result only while that actor
 * exists (an `xstate.error.actor.*` event nobody handles would put the machine in error, which no
 * running system can cause), a delayed event only while its state is active (leaving cancels it),
 * and nothing once the actor is done (an actor drops events after its final state).
 */
export function possibleLetters(snapshot: AnyMachineSnapshot, letters: readonly Letter[]): Letter[] {
  if (snapshot.status !== 'active') return [];
  const children = new Set(Object.keys(snapshot.children));
  const delayed = new Set(activeIds(snapshot).flatMap((id) => (afterEvents[id] === undefined ? [] : [afterEvents[id]])));
  return letters.filter(({ event: { type } }) => {
    const actor = /^xstate\.(?:done|error)\.actor\.(.*)$/.exec(type);
    if (actor) return children.has(actor[1] ?? '');
    if (type.startsWith('xstate.after.')) return delayed.has(type);
    return true;
  });
}

export function labelOf(alphabet: readonly Letter[], event: AnyEventObject): string {
  return alphabet.find((l) => l.event === event)?.label ?? event.type;
}

// ------------------------------------------------------------------------------------------------
// The abstraction of a snapshot

/**
 * The graph state of a snapshot: exactly what the machine's guards and actions depend on. The
 * progress and the phase only matter while syncing (no guard reads them afterwards, and nothing
 * writes them), so a terminating or terminated pod is not told apart by them: without that the
 * full alphabet reaches ~8,500 states instead of a few hundred, with the same behaviours.
 */
function plegSummary(events: readonly { type: string }[]): string {
  if (events.length === 0) return 'none';
  return events.every((e) => e.type === 'PLEG.CONTAINER_STARTED') ? 'started only' : 'other';
}

export function serializeSnapshot(snapshot: AnyMachineSnapshot): string {
  const c = podContext(snapshot);
  const syncing = snapshot.matches('syncing');
  return JSON.stringify({
    status: snapshot.status,
    value: snapshot.value,
    pod: podLabel(c.pod),
    pending: podLabel(c.pendingPod),
    syncRequested: c.syncRequested,
    // The end of a sync reads only whether the PLEG events that came during it tell more than a view
    // can show: with this alphabet's one container, and the one view an outcome leaves (it runs),
    // none, only STARTED, or some other event.
    plegWhileSyncing: syncing ? plegSummary(c.plegWhileSyncing) : undefined,
    seen: syncing ? c.seen : undefined,
    progress: syncing ? c.progress : undefined,
    phase: syncing ? c.phase : undefined,
    // Probe results decide whether a PROBE.RESULT starts a sync; nothing reads them after syncing.
    probes: syncing ? c.probes : undefined,
    grace: c.gracePeriodSeconds,
    deleted: c.deleted,
    restartRequested: c.restartRequested,
  });
}

/**
 * A coarser state for the simple-path walk (the bound of that walk): the state value, the pending
 * slot and the termination parameters. Simple paths over the exact graph are far too many.
 */
export function serializeCoarse(snapshot: AnyMachineSnapshot): string {
  const c = podContext(snapshot);
  return JSON.stringify({
    value: snapshot.value,
    pending: podLabel(c.pendingPod),
    syncRequested: c.syncRequested,
    grace: c.gracePeriodSeconds,
    deleted: c.deleted,
  });
}

// ------------------------------------------------------------------------------------------------
// Replaying with the pure transition function, recording what was taken

export interface Step {
  snapshot: AnyMachineSnapshot;
  /** Transition definitions taken in this macrostep (event-driven and eventless). */
  transitions: AnyTransitionDefinition[];
  /** Actions the step would execute (spawns, stops, sendParent, ...). */
  actions: ExecutableActionObject[];
}

export interface Stepper {
  /** The snapshot of an actor started with `pod` (by default `pods.v1`). */
  initial(pod?: Pod): Step;
  step(snapshot: AnyMachineSnapshot, event: AnyEventObject): Step;
  /**
   * The pod machine as plain actor logic whose `transition` runs in this stepper's scope, for the
   * graph utilities: their own mock scope has no parent, and the machine's `sendParent` reports
   * (`POD.SYNCED`, `POD.TERMINATED`, `POD.FINISHED`) cannot be resolved without one.
   */
  logic: ActorLogic<AnyMachineSnapshot, AnyEventObject, PodInput>;
}

/**
 * A pure stepper: an inert actor scope (its actor has a parent, as a pod actor under podWorkers
 * does) whose system reports microsteps; nothing is ever started and no action is executed.
 */
export function createStepper(subject: PodMachine = podMachine): Stepper {
  const supervisor = createActor(fromCallback(() => {}));
  const probe = createActor(subject, { parent: supervisor, input: { pod: pods.v1 } });
  let transitions: AnyTransitionDefinition[] = [];
  let actions: ExecutableActionObject[] = [];
  probe.system.inspect((event) => {
    if (event.type === '@xstate.microstep') transitions.push(...event._transitions);
  });
  const scope: AnyActorScope = {
    self: probe,
    id: 'model',
    sessionId: 'model',
    logger: () => {},
    defer: () => {},
    emit: () => {},
    system: probe.system,
    stopChild: () => {},
    actionExecutor: (action) => {
      actions.push(action);
    },
  };
  const logic: AnyStateMachine = subject;
  const run = (compute: () => AnyMachineSnapshot): Step => {
    transitions = [];
    actions = [];
    const snapshot = compute();
    return { snapshot, transitions, actions };
  };
  return {
    initial: (pod = pods.v1) => run(() => logic.getInitialSnapshot(scope, { pod })),
    step: (snapshot, event) => run(() => logic.transition(snapshot, event, scope)),
    logic: {
      transition: (snapshot, event) => logic.transition(snapshot, event, scope),
      getInitialSnapshot: (_scope, input) => logic.getInitialSnapshot(scope, input),
      getPersistedSnapshot: (snapshot) => logic.getPersistedSnapshot(snapshot),
    },
  };
}

export function activeIds(snapshot: AnyMachineSnapshot): string[] {
  return activeStateNodes(snapshot.machine.root, snapshot.value).map((n) => n.id);
}

/** The `src` of each invoked actor present in the snapshot. */
export function childSources(snapshot: AnyMachineSnapshot): string[] {
  const children: Record<string, AnyActorRef | undefined> = snapshot.children;
  return Object.values(children).flatMap((child) =>
    child === undefined ? [] : [typeof child.src === 'string' ? child.src : 'inline'],
  );
}

// ------------------------------------------------------------------------------------------------
// Invariants, checked on every state of every path

export type InvariantId =
  | 'a:init-before-running'
  | 'b:nothing-after-terminated'
  | 'c:no-return-to-syncing'
  | 'd:grace-never-grows'
  | 'e:terminal-phase-sticks'
  | 'f:one-pending-kill-wins'
  | 'g:newest-spec-wins'
  | 'h:deletion-is-remembered'
  | 'i:released-is-final';

export const invariantIds: readonly InvariantId[] = [
  'a:init-before-running',
  'b:nothing-after-terminated',
  'c:no-return-to-syncing',
  'd:grace-never-grows',
  'e:terminal-phase-sticks',
  'f:one-pending-kill-wins',
  'g:newest-spec-wins',
  'h:deletion-is-remembered',
  'i:released-is-final',
];

/** What a path has seen so far (plain data, copied at each step). */
export interface History {
  enteredTerminated: boolean;
  leftSyncing: boolean;
  killed: boolean;
  grace: number | null;
  terminalPhase: PodPhase | null;
  lastProgress: PodProgress;
  newestPod: Pod;
  deletionRequested: boolean;
  released: boolean;
}

/** Before the first step of an actor started with `pod`: a pod born deleted has its deletion requested. */
export function initialHistory(pod: Pod = pods.v1): History {
  return {
    enteredTerminated: false,
    leftSyncing: false,
    killed: false,
    grace: null,
    terminalPhase: null,
    lastProgress: { stage: 'sandbox' },
    newestPod: pod,
    deletionRequested: pod.metadata.deletionTimestamp !== undefined,
    released: false,
  };
}

export interface Violation {
  invariant: InvariantId;
  message: string;
}

const syncDone = () => `xstate.done.actor.${invokeId('syncPod')}`;
const sameProgress = (a: PodProgress, b: PodProgress) => JSON.stringify(a) === JSON.stringify(b);
const isTerminalPhase = (phase: PodPhase) => phase === 'Succeeded' || phase === 'Failed';

function progressMatches(snapshot: AnyMachineSnapshot, progress: PodProgress): boolean {
  switch (progress.stage) {
    case 'sandbox':
      return snapshot.matches({ syncing: { progress: 'sandbox' } });
    case 'running':
      return snapshot.matches({ syncing: { progress: 'running' } });
    case 'initializing':
      return snapshot.matches({ syncing: { progress: { initializing: progress.step } } });
  }
}

/**
 * Checks one step (`before` --event--> `after`) against every invariant, given the path's history
 * up to `before`; returns the violations and the history up to `after`.
 */
export function checkStep(
  history: History,
  before: AnyMachineSnapshot | null,
  event: AnyEventObject | null,
  after: Step,
): { violations: Violation[]; history: History } {
  const violations: Violation[] = [];
  const fail = (invariant: InvariantId, message: string) => violations.push({ invariant, message });
  const s = after.snapshot;
  const c = podContext(s);
  const inSyncing = s.matches('syncing');
  const inWorking = s.matches({ syncing: { worker: 'working' } });
  const children = childSources(s);
  const spawned = after.actions
    .filter((a) => a.type === 'xstate.spawnChild')
    .map((a) => JSON.stringify(a.params ?? {}));

  // --- update the history with what this event says
  const h: History = { ...history };
  if (event !== null && before !== null) {
    if (event.type === 'POD.UPDATE') {
      const pod: Pod = event['pod'];
      // A `create` once the pod left syncing is the UID coming back: its spec is for the next actor.
      const forNextActor = event['updateType'] === 'create' && !before.matches('syncing');
      if (!forNextActor) h.newestPod = pod;
      if (pod.metadata.deletionTimestamp !== undefined) h.deletionRequested = true;
    }
    if (event.type === 'POD.KILL' && event['deleted'] === true) h.deletionRequested = true;
    if (event.type === syncDone() && before.matches({ syncing: { worker: 'working' } })) {
      const output: SyncOutcome = event['output'];
      h.lastProgress = output.progress;
    }
  }

  // (i) released is final: nothing runs, nothing changes after it
  if (history.released) {
    if (s.status !== 'done') fail('i:released-is-final', `status ${s.status} after released`);
  }
  if (s.matches('released')) {
    h.released = true;
    if (s.status !== 'done') fail('i:released-is-final', `released with status ${s.status}`);
    if (children.length > 0) fail('i:released-is-final', `released with children ${children.join(',')}`);
  }

  // (a) the progress region is exactly what the last sync observed: never `running` while the last
  //     SyncOutcome said initializing, never past an init container that has not succeeded
  if (inSyncing) {
    if (!sameProgress(c.progress, h.lastProgress)) {
      fail('a:init-before-running', `context.progress ${JSON.stringify(c.progress)} is not the last outcome's ${JSON.stringify(h.lastProgress)}`);
    }
    if (!progressMatches(s, h.lastProgress)) {
      fail('a:init-before-running', `progress region ${JSON.stringify(s.value)} while the last outcome said ${JSON.stringify(h.lastProgress)}`);
    }
    if (h.lastProgress.stage === 'initializing' && s.matches({ syncing: { progress: 'running' } })) {
      fail('a:init-before-running', 'progress region is running while the last outcome said initializing');
    }
  }

  // (b) nothing runs after terminated; and no sync runs once termination was requested
  if (history.enteredTerminated) {
    if (inSyncing || s.matches('terminating')) fail('b:nothing-after-terminated', `state ${JSON.stringify(s.value)} after terminated`);
    if (children.some((src) => src === 'syncPod' || src === 'terminatePod')) {
      fail('b:nothing-after-terminated', `active ${children.join(',')} after terminated`);
    }
    if (spawned.some((p) => p.includes('syncPod') || p.includes('terminatePod'))) {
      fail('b:nothing-after-terminated', `spawns ${spawned.join(' ')} after terminated`);
    }
  }
  if (!inSyncing && children.includes('syncPod')) fail('b:nothing-after-terminated', `syncPod active in ${JSON.stringify(s.value)}`);
  if (inWorking !== children.includes('syncPod')) fail('b:nothing-after-terminated', `working=${inWorking} but children ${children.join(',')}`);
  if (s.hasTag('terminated')) h.enteredTerminated = true;

  // (c) a terminated (or terminating) UID never returns to syncing
  if (history.leftSyncing && inSyncing) fail('c:no-return-to-syncing', `back in ${JSON.stringify(s.value)}`);
  if (!inSyncing) h.leftSyncing = true;

  // (d) the grace period never grows once set, and is set whenever the pod is terminating
  if (history.grace !== null && (c.gracePeriodSeconds === null || c.gracePeriodSeconds > history.grace)) {
    fail('d:grace-never-grows', `grace ${history.grace} -> ${c.gracePeriodSeconds}`);
  }
  if (s.hasTag('terminating') && c.gracePeriodSeconds === null) fail('d:grace-never-grows', 'terminating without a grace period');
  h.grace = c.gracePeriodSeconds;

  // (e) a terminal phase never changes
  if (history.terminalPhase !== null && c.phase !== history.terminalPhase) {
    fail('e:terminal-phase-sticks', `phase ${history.terminalPhase} -> ${c.phase}`);
  }
  if (isTerminalPhase(c.phase)) {
    h.terminalPhase = c.phase;
    if (inSyncing) fail('e:terminal-phase-sticks', `phase ${c.phase} but still syncing`);
  }

  // (f) one pending slot (newest update wins, only while a sync runs); a kill is never overwritten
  const released = s.matches('released');
  if (c.pendingPod !== null && !inWorking && !released) fail('f:one-pending-kill-wins', `pending update in ${JSON.stringify(s.value)}`);
  if (c.pendingPod === null && c.syncRequested && !inWorking && !released) fail('f:one-pending-kill-wins', `sync requested in ${JSON.stringify(s.value)}`);
  if (
    event?.type === 'POD.UPDATE' &&
    before?.matches({ syncing: { worker: 'working' } }) &&
    inWorking &&
    c.pendingPod !== event['pod']
  ) {
    fail('f:one-pending-kill-wins', `pending slot holds ${podLabel(c.pendingPod)}, not the newest update ${podLabel(event['pod'])}`);
  }
  if (event?.type === 'POD.KILL') h.killed = true;
  if (h.killed && inSyncing) fail('f:one-pending-kill-wins', `syncing after a kill: ${JSON.stringify(s.value)}`);

  // (g) the pod the machine acts on (now, or after the pending slot is taken) is the newest spec
  if (!released) {
    const effective = inWorking ? (c.pendingPod ?? c.pod) : c.pod;
    if (effective !== h.newestPod) {
      fail('g:newest-spec-wins', `acts on ${podLabel(effective)} in ${JSON.stringify(s.value)}, newest spec is ${podLabel(h.newestPod)}`);
    }
  }

  // (h) once deletion was requested (kill `deleted`, or an update with deletionTimestamp), a
  //     terminating or terminated pod is marked deleted (its runtime objects are removed at the end)
  if (h.deletionRequested && (s.hasTag('terminating') || s.hasTag('terminated')) && !c.deleted) {
    fail('h:deletion-is-remembered', `deletion requested but deleted=false in ${JSON.stringify(s.value)}`);
  }

  return { violations, history: h };
}

// ------------------------------------------------------------------------------------------------
// The exploration: shortest paths, every edge, bounded simple paths; all replayed and checked

export interface Counterexample {
  invariant: InvariantId;
  message: string;
  path: string[];
}

export interface Exploration {
  /** State node ids active in some explored snapshot. */
  states: Set<string>;
  /** Keys of the transition definitions taken (see `transitionKey`). */
  transitions: Set<string>;
  /** Event descriptors of the transitions taken (`PLEG.*` as written in the machine). */
  eventTypes: Set<string>;
  /** Types of the events sent that took at least one event-driven transition. */
  acceptedEvents: Set<string>;
  /** Graph states (exact abstraction) reached by the full alphabet. */
  graphStates: number;
  paths: { shortest: number; edges: number; simple: number };
  /** Steps replayed in all. */
  steps: number;
  /** Violations by invariant, shortest path first. */
  violations: Map<InvariantId, Counterexample[]>;
  /** Snapshots whose replay did not land on the graph's state (the abstraction would be inexact). */
  mismatches: string[];
}

export interface ExploreOptions {
  shortestPaths: typeof import('xstate/graph').getShortestPaths;
  simplePaths: typeof import('xstate/graph').getSimplePaths;
  /** The machine to explore; the real pod machine unless a test checks the checker on a mutant. */
  subject?: PodMachine;
}

interface Replayed {
  step: Step;
  history: History;
  path: string[];
}

/** The simple-path walks: their alphabet (labels), where they start, where they stop. */
export const simpleWalks = [
  {
    name: 'syncing',
    /** Updates, syncs and kills interleaved with sync outcomes, until the pod leaves `syncing`. */
    prefix: [] as string[],
    letters: [
      'POD.UPDATE(v2)',
      'POD.UPDATE(deleted,grace=20)',
      'POD.SYNC',
      'POD.KILL(grace=5)',
      'done:syncPod(init#0 running)',
      'done:syncPod(running)',
      'done:syncPod(Succeeded)',
      'error:syncPod',
    ],
    stopWhenLeaving: 'syncing',
  },
  {
    name: 'terminating (killed)',
    /** Kills, deletions, restarts and the kill/cleanup results, from a pod killed in its first sync. */
    prefix: ['POD.KILL'],
    letters: [
      'POD.KILL(grace=5)',
      'POD.KILL(deleted)',
      'POD.UPDATE(deleted,grace=2)',
      'POD.UPDATE(v1,create)',
      'done:terminatePod',
      'error:terminatePod',
      'after:killRetry(terminating)',
      'done:cleanupPod',
      'error:cleanupPod',
      'after:killRetry(terminated)',
      'POD.RELEASE',
    ],
    stopWhenLeaving: undefined,
  },
  {
    name: 'terminating (Succeeded)',
    prefix: ['done:syncPod(Succeeded)'],
    letters: [
      'POD.KILL(deleted)',
      'POD.UPDATE(deleted,grace=20)',
      'POD.UPDATE(v2)',
      'done:terminatePod',
      'error:terminatePod',
      'after:killRetry(terminating)',
      'done:cleanupPod',
      'POD.RELEASE',
    ],
    stopWhenLeaving: undefined,
  },
] as const;

export function explore({ shortestPaths, simplePaths, subject }: ExploreOptions): Exploration {
  const stepper = createStepper(subject);
  const alphabet = fullAlphabet();
  const letter = (label: string): Letter => {
    const found = alphabet.find((l) => l.label === label);
    if (found === undefined) throw new Error(`no letter ${label}`);
    return found;
  };
  const result: Exploration = {
    states: new Set(),
    transitions: new Set(),
    eventTypes: new Set(),
    acceptedEvents: new Set(),
    graphStates: 0,
    paths: { shortest: 0, edges: 0, simple: 0 },
    steps: 0,
    violations: new Map(),
    mismatches: [],
  };

  const record = (replayed: Replayed, violations: Violation[], event: AnyEventObject | null) => {
    result.steps += 1;
    if (event !== null && replayed.step.transitions.some((t) => t.eventType !== '')) result.acceptedEvents.add(event.type);
    for (const id of activeIds(replayed.step.snapshot)) result.states.add(id);
    for (const t of replayed.step.transitions) {
      // A transient state (`starting`) is never in a snapshot: it is covered when it is passed through.
      result.states.add(t.source.id);
      result.transitions.add(transitionKey(t));
      result.eventTypes.add(t.eventType);
    }
    for (const v of violations) {
      const list = result.violations.get(v.invariant) ?? [];
      list.push({ ...v, path: replayed.path });
      result.violations.set(v.invariant, list);
    }
  };

  const advance = (from: Replayed, l: Letter): Replayed => {
    const step = stepper.step(from.step.snapshot, l.event);
    const checked = checkStep(from.history, from.step.snapshot, l.event, step);
    const next = { step, history: checked.history, path: [...from.path, l.label] };
    record(next, checked.violations, l.event);
    return next;
  };

  const start = (pod?: Pod): Replayed => {
    const step = stepper.initial(pod);
    const checked = checkStep(initialHistory(pod), null, null, step);
    const first = { step, history: checked.history, path: [] };
    record(first, checked.violations, null);
    return first;
  };

  // 1. Shortest paths over the full alphabet: one per graph state. They form a tree, so each is
  //    replayed from its parent's replay.
  const root = start();
  // A pod first seen already being deleted starts terminating at once; from there on the graph is
  // the one a deletion of a running pod leads to, explored below.
  start(pods.deleted);
  const shortest = shortestPaths(stepper.logic, {
    fromState: root.step.snapshot,
    events: (snapshot) => possibleLetters(snapshot, alphabet).map((l) => l.event),
    serializeState: serializeSnapshot,
  }).sort((a, b) => a.steps.length - b.steps.length);
  const replayedByState = new Map<string, Replayed>();
  for (const path of shortest) {
    const key = serializeSnapshot(path.state);
    if (path.steps.length === 1) {
      replayedByState.set(key, root);
      continue;
    }
    const parentState = path.steps[path.steps.length - 2]?.state;
    const lastEvent = path.steps[path.steps.length - 1]?.event;
    const parent = parentState && replayedByState.get(serializeSnapshot(parentState));
    if (parent === undefined || lastEvent === undefined) throw new Error(`shortest path to ${key} has no replayed parent`);
    const next = advance(parent, { label: labelOf(alphabet, lastEvent), event: lastEvent });
    if (serializeSnapshot(next.step.snapshot) !== key) result.mismatches.push(`${next.path.join(' → ')}: ${key}`);
    replayedByState.set(key, next);
  }
  result.paths.shortest = shortest.length;
  result.graphStates = replayedByState.size;

  // 2. Every edge: each graph state (reached by its shortest path) followed by every letter.
  for (const replayed of replayedByState.values()) {
    for (const l of possibleLetters(replayed.step.snapshot, alphabet)) {
      advance(replayed, l);
      result.paths.edges += 1;
    }
  }

  // 3. Simple paths (no graph state twice) over small alphabets on the coarse abstraction, each
  //    replayed from the start.
  for (const walk of simpleWalks) {
    const letters = walk.letters.map(letter);
    const prefix = walk.prefix.map(letter);
    let from = root;
    for (const l of prefix) from = advance(from, l);
    const paths = simplePaths(stepper.logic, {
      fromState: from.step.snapshot,
      events: (snapshot) => possibleLetters(snapshot, letters).map((l) => l.event),
      serializeState: serializeCoarse,
      ...(walk.stopWhenLeaving === undefined ? {} : { stopWhen: (s: AnyMachineSnapshot) => !s.matches(walk.stopWhenLeaving) }),
    });
    for (const path of paths) {
      let current = from;
      for (const step of path.steps.slice(1)) current = advance(current, { label: labelOf(alphabet, step.event), event: step.event });
      result.paths.simple += 1;
    }
  }

  for (const list of result.violations.values()) list.sort((a, b) => a.path.length - b.path.length);
  return result;
}
