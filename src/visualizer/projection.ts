/**
 * Pure functions projecting XState inspection records into the visualizer's wire format (wire.ts).
 *
 * Everything sent to a visualizer client goes through here, and nothing here copies an object it
 * does not know: events keep only whitelisted scalar fields per event type (pods are reduced to
 * namespace/name/uid and their containers' names and images — never env, annotations, volumes or
 * anything else of the spec), snapshots keep the state value, tags and, for pods, a small summary.
 * Every projection is O(1) per record (a CONFIG.* event's pod list is capped), except a machine's
 * definition, which the hub projects once per machine id.
 */
import type { AnyActorRef, AnyEventObject, AnyStateMachine, StateValue } from 'xstate';
import type {
  WireActor,
  WireContainer,
  WireDefinition,
  WireEvent,
  WirePayload,
  WirePodProgress,
  WirePodRef,
  WirePodSummary,
  WireSnapshot,
  WireStateNode,
  WireStep,
  WireSyncLoopState,
  WireTransition,
} from './wire.ts';
import { podLimitsLine, podQos } from '../api/qos.ts';
import type { Pod } from '../api/types.ts';
import type { AgentEventType, EventOf } from '../events.ts';
import { nodeLoops } from '../kubelet/nodeLoops.ts';
import { type PodVolumeContext, podVolumeMachine, podVolumeSummary } from '../volumemanager/podVolume.ts';
import type { NodeLoop } from '../nodeloop/nodeLoop.ts';

// ---------------------------------------------------------------------------------------------
// Projection
// ---------------------------------------------------------------------------------------------

const maxString = 300;
/** A CONFIG.* event lists at most this many pods (with `podCount` saying how many there were). */
export const maxPodsPerEvent = 50;
const maxContainersPerPod = 32;

function str(value: unknown): string {
  const s = typeof value === 'string' ? value : String(value);
  return s.length > maxString ? `${s.slice(0, maxString)}…` : s;
}

/** The machine behind an actor, when its logic is a state machine. */
export function machineOf(actorRef: AnyActorRef): AnyStateMachine | undefined {
  const logic = (actorRef as { logic?: unknown }).logic as Partial<AnyStateMachine> | undefined;
  return logic && typeof logic === 'object' && logic.root !== undefined && typeof logic.id === 'string'
    ? (logic as AnyStateMachine)
    : undefined;
}

function parentOf(actorRef: AnyActorRef): AnyActorRef | undefined {
  return (actorRef as { _parent?: AnyActorRef })._parent;
}

/** The readable name of an actor: its system id, else its id. */
function actorName(actorRef: AnyActorRef): string {
  const systemId = (actorRef as { options?: { systemId?: string } }).options?.systemId;
  return systemId ?? actorRef.id;
}

function podRefOf(pod: Pod | undefined): WirePodRef | undefined {
  const meta = pod?.metadata;
  if (!meta) return undefined;
  return { namespace: str(meta.namespace ?? ''), name: str(meta.name ?? ''), uid: str(meta.uid ?? '') };
}

function containersOf(list: unknown): WireContainer[] {
  if (!Array.isArray(list)) return [];
  const out: WireContainer[] = [];
  for (const c of list.slice(0, maxContainersPerPod) as { name?: unknown; image?: unknown }[]) {
    out.push({ name: str(c?.name ?? ''), image: str(c?.image ?? '') });
  }
  return out;
}

/** A pod reduced to its identity and its containers' names and images. */
function podSummary(pod: Pod): WirePodSummary {
  const summary: WirePodSummary = { ...podRefOf(pod)!, containers: containersOf(pod.spec?.containers) };
  if (pod.spec?.initContainers?.length) summary.initContainers = containersOf(pod.spec.initContainers);
  return summary;
}

interface PodLikeContext {
  pod?: Pod;
  phase?: string;
  progress?: { stage?: string; index?: number; name?: string; step?: string };
  syncCount?: number;
  restarts?: number;
  restartRequested?: boolean;
  gracePeriodSeconds?: number | null;
}

interface SyncLoopLikeContext {
  routed?: Record<string, number>;
  seenSources?: string[];
  sourceStates?: Record<string, string>;
  lastRelistAt?: number | null;
  lastRelistDurationMs?: number | null;
  lastRuntimeError?: string | null;
}

const isPodMachine = (machineId: string | null) => machineId === 'pod';
/** The node loops by machine id: each says its own line from its own context (its `summary`). */
const loopsByMachineId = new Map<string, NodeLoop>(nodeLoops.map((loop) => [loop.name, loop as NodeLoop]));
const maxRoutedTypes = 64;

/** The `actor` record for a tracked actor; `snapshot` (its first) supplies a pod's identity. */
export function projectActor(actorRef: AnyActorRef, op: WireActor['op'], snapshot: unknown, at: number): WireActor {
  const machineId = machineOf(actorRef)?.id ?? null;
  const record: WireActor = {
    kind: 'actor',
    op,
    actorId: actorRef.sessionId,
    name: actorName(actorRef),
    machineId,
    parentId: parentOf(actorRef)?.sessionId ?? null,
    at,
  };
  if (isPodMachine(machineId)) {
    const pod = podRefOf((snapshot as { context?: PodLikeContext } | undefined)?.context?.pod);
    if (pod) record.pod = pod;
  }
  return record;
}

/** Each pod spec's QoS class and limits, worked out once per spec object (a pod's snapshots share it until it changes). */
const bounds = new WeakMap<Pod, { qos: string; limits: string }>();
function boundsOf(pod: Pod | undefined): { qos: string; limits: string } {
  if (!pod?.spec?.containers) return { qos: '', limits: '' };
  let known = bounds.get(pod);
  if (!known) bounds.set(pod, (known = { qos: podQos(pod), limits: str(podLimitsLine(pod)) }));
  return known;
}

function progressOf(progress: PodLikeContext['progress']): WirePodProgress {
  const stage = str(progress?.stage ?? 'unknown');
  if (stage !== 'initializing') return { stage };
  const out: { stage: 'initializing'; index?: number; name?: string; step?: string } = { stage };
  if (typeof progress?.index === 'number') out.index = progress.index;
  if (typeof progress?.name === 'string') out.name = str(progress.name);
  if (typeof progress?.step === 'string') out.step = str(progress.step);
  return out;
}

/** The `snapshot` record: status, state value and tags; for pods, a small summary of the context. */
export function projectSnapshot(actorRef: AnyActorRef, snapshot: unknown, at: number): WireSnapshot {
  const snap = snapshot as { status?: string; value?: StateValue; tags?: Set<string>; context?: unknown } | undefined;
  const record: WireSnapshot = { kind: 'snapshot', actorId: actorRef.sessionId, status: str(snap?.status ?? 'active'), at };
  const machine = machineOf(actorRef);
  if (!machine) return record;
  if (snap?.value !== undefined) record.value = snap.value;
  record.tags = snap?.tags ? [...snap.tags] : [];
  if (isPodMachine(machine.id)) {
    const c = (snap?.context ?? {}) as PodLikeContext;
    record.pod = {
      phase: str(c.phase ?? ''),
      progress: progressOf(c.progress),
      syncCount: typeof c.syncCount === 'number' ? c.syncCount : 0,
      restarts: typeof c.restarts === 'number' ? c.restarts : 0,
      restartRequested: c.restartRequested === true,
      gracePeriodSeconds: typeof c.gracePeriodSeconds === 'number' ? c.gracePeriodSeconds : null,
      ...boundsOf(c.pod),
    };
  } else if (machine.id === 'syncLoop') {
    record.syncLoop = syncLoopState((snap?.context ?? {}) as SyncLoopLikeContext);
  } else if (machine.id === podVolumeMachine.id) {
    if (snap?.context) record.summary = str(podVolumeSummary(snap.value, snap.context as PodVolumeContext));
  } else {
    const loop = loopsByMachineId.get(machine.id);
    if (loop && snap?.context) record.summary = str(loop.summary(snap.context));
  }
  return record;
}

const numberOrNull = (value: unknown) => (typeof value === 'number' ? value : null);

function syncLoopState(c: SyncLoopLikeContext): WireSyncLoopState {
  const routed: Record<string, number> = {};
  for (const [type, count] of Object.entries(c.routed ?? {}).slice(0, maxRoutedTypes)) {
    if (typeof count === 'number') routed[str(type)] = count;
  }
  return {
    routed,
    seenSources: Array.isArray(c.seenSources) ? c.seenSources.map(str) : [],
    lastRelistAt: numberOrNull(c.lastRelistAt),
    lastRelistDurationMs: numberOrNull(c.lastRelistDurationMs),
    lastRuntimeError: typeof c.lastRuntimeError === 'string' ? str(c.lastRuntimeError) : null,
    sourceStates: Object.fromEntries(Object.entries(c.sourceStates ?? {}).map(([k, v]) => [str(k), str(String(v))])),
  };
}

/**
 * The scalar fields each event type of the catalogue may carry onto the wire (anything else is
 * dropped). Checked against src/events.ts: every event type has an entry, and every field named
 * is a field of that event. Pods (POD.UPDATE, CONFIG.*) are summarized below, never sent whole.
 */
const scalarFieldsByType = {
  'CONFIG.ADD': [],
  'CONFIG.UPDATE': [],
  'CONFIG.REMOVE': [],
  'CONFIG.DELETE': [],
  'CONFIG.RECONCILE': [],
  'POD.SYNC': [],
  'POD.RELEASE': [],
  'NODE.HEALTH_CHANGED': [],
  'SOURCE.MIRRORS': [],
  'POD.ENDED': ['uid'],
  'TICK.SYNC': [],
  'TICK.HOUSEKEEPING': [],
  'TICK.RUNTIME_BACK': [],
  'RELIST.NOW': [],
  'RELIST.DONE': [],
  'STREAM.UPDATE': [],
  'STREAM.ENDED': [],
  'POD.UPDATE': ['updateType'],
  'POD.KILL': ['gracePeriodSeconds', 'deleted', 'reason'],
  'POD.SYNCED': ['uid', 'ok', 'retryAfterMs'],
  // Not `error`: a sync's error may name what the spec refers to (a Secret's name); the log has it.
  'POD.FAILED': ['uid', 'pod', 'work'],
  'POD.TERMINATING': ['uid'],
  'POD.TERMINATED': ['uid'],
  'POD.FINISHED': ['uid', 'restartRequested'],
  'PLEG.CONTAINER_STARTED': ['podUid', 'containerId'],
  'PLEG.CONTAINER_DIED': ['podUid', 'containerId'],
  'PLEG.CONTAINER_REMOVED': ['podUid', 'containerId'],
  'PLEG.RELISTED': ['at', 'durationMs'],
  'PLEG.RELIST_FAILED': ['error'],
  'PROBE.RESULT': ['podUid', 'containerId', 'containerName', 'kind', 'result'],
  'SOURCE.SEEN': ['source'],
  'CRI.STARTED': ['callId', 'call', 'target'],
  'CRI.FINISHED': ['callId', 'call', 'target', 'durationMs', 'error'],
  // Not `message`: a manifest's parse error may quote the manifest.
  'SOURCE.ERROR': ['source'],
  'SOURCE.STATE': ['source', 'phase', 'detail'],
  'STATUS.REWRITE': ['uid'],
  'STATUS.RESYNC': [],
  // Not `error`: an API server's refusal may quote the status.
  'STATUS.PROGRESS': ['queued', 'writes', 'deletes'],
  'SOURCE.ALL_SEEN': [],
  'NODE.RUNTIME_NETWORK': ['error'],
  'NODE.RUNTIME_HANDLERS': ['handlers'],
  'NODE.PRESSURE': [],
  'NODE.EVICT_POD': ['uid', 'gracePeriodSeconds'],
  'OOM.SYSTEM': ['process', 'pid'],
  'OOM.LOG_ENDED': ['error'],
  'PLUGINS.SOCKET_CREATED': ['path'],
  'PLUGINS.SOCKET_REMOVED': ['path'],
  'PLUGINS.WATCH_FAILED': ['error'],
  'PLUGINS.OPERATE': [],
  'PLUGINS.ADDED': [],
  'PLUGINS.REMOVED': ['path'],
  // Not `error` here either: a plugin's answer is the plugin's text.
  'PLUGINS.OPERATION_ENDED': ['path', 'operation', 'retryAfterMs'],
  'PLUGINS.HANDLER_STARTED': ['pluginType'],
  // The template's names are the node's own addresses; shown on the manager's line, not per event.
  'CERTIFICATE.TEMPLATE': [],
  // The volumes' ids name pods and volumes, no contents.
  'VOLUMES.CHANGED': [],
  'VOLUME.REMOUNT': [],
  'VOLUME.EXPAND': [],
  'VOLUME.UNMOUNT': [],
} as const satisfies { [T in AgentEventType]: readonly (keyof EventOf<T> & string)[] };

const scalarFields: Readonly<Partial<Record<string, readonly string[]>>> = scalarFieldsByType;

function scalar(value: unknown): string | number | boolean | null | undefined {
  if (value === null) return null;
  switch (typeof value) {
    case 'string':
      return str(value);
    case 'number':
    case 'boolean':
      return value;
    default:
      return undefined;
  }
}

function errorMessage(error: unknown): string {
  if (error instanceof Error) return str(error.message);
  if (typeof error === 'string') return str(error);
  const message = (error as { message?: unknown } | null)?.message;
  return typeof message === 'string' ? str(message) : 'error';
}

/** The payload that may go on the wire for an event: whitelisted per type, pods summarized. */
export function sanitizeEvent(event: AnyEventObject): WirePayload | undefined {
  const type = event.type;
  if (type.startsWith('xstate.error.actor.')) return { message: errorMessage((event as { error?: unknown }).error) };
  if (type === 'xstate.init') {
    // A pod actor starts with its pod as input: say which (a summary, as for POD.UPDATE).
    const pod = (event as { input?: { pod?: Pod } }).input?.pod;
    return pod?.metadata ? { pod: podSummary(pod) } : undefined;
  }
  if (type.startsWith('xstate.')) return undefined; // done events, delays, stop: the type says it all
  const payload: WirePayload = {};
  let any = false;
  for (const field of scalarFields[type] ?? []) {
    const value = scalar((event as Record<string, unknown>)[field]);
    if (value !== undefined) {
      payload[field] = value;
      any = true;
    }
  }
  if (type === 'POD.UPDATE') {
    const pod = (event as { pod?: Pod }).pod;
    if (pod) {
      payload.pod = podSummary(pod);
      any = true;
    }
  } else if (type.startsWith('CONFIG.')) {
    const e = event as { source?: unknown; pods?: unknown };
    const source = scalar(e.source);
    if (source !== undefined) payload.source = source;
    const pods = Array.isArray(e.pods) ? (e.pods as Pod[]) : [];
    payload.podCount = pods.length;
    payload.pods = pods.slice(0, maxPodsPerEvent).map(podSummary);
    any = true;
  }
  return any ? payload : undefined;
}

/**
 * The `event` record. `via`: the event went to this effect actor of `actorRef` (named by its logic),
 * and is shown as the owner's.
 */
export function projectEvent(
  actorRef: AnyActorRef,
  sourceRef: AnyActorRef | undefined,
  event: AnyEventObject,
  at: number,
  seq: number,
  via?: AnyActorRef,
): WireEvent {
  const record: WireEvent = {
    kind: 'event',
    seq,
    actorId: actorRef.sessionId,
    sourceId: sourceRef?.sessionId ?? null,
    type: str(event.type),
    at,
  };
  const payload = sanitizeEvent(event);
  if (payload) record.payload = payload;
  if (via) record.via = effectName(via);
  return record;
}

/** An invoked actor's logic name (`syncPod`), else its id. */
function effectName(actorRef: AnyActorRef): string {
  const src = (actorRef as { src?: unknown }).src;
  return typeof src === 'string' ? src : actorRef.id;
}

/** A microstep's transition, as taken. */
export interface TakenTransition {
  source: { id: string };
  target?: readonly { id: string }[] | undefined;
}

/** Whether a microstep moved the actor (a transition with a target); action-only steps are not sent. */
export const movesState = (transitions: readonly TakenTransition[]): boolean => transitions.some((t) => (t.target?.length ?? 0) > 0);

/** The `step` record of a microstep: the transitions that have targets, and the value after. */
export function projectStep(
  actorRef: AnyActorRef,
  event: AnyEventObject,
  transitions: readonly TakenTransition[],
  value: StateValue,
  at: number,
  seq: number,
): WireStep {
  const taken: WireStep['transitions'] = [];
  for (const t of transitions) {
    if (t.target?.length) taken.push({ source: t.source.id, targets: t.target.map((n) => n.id) });
  }
  return { kind: 'step', seq, actorId: actorRef.sessionId, event: str(event.type), transitions: taken, value, at };
}

// --- definitions ---

interface StateNodeLike {
  id: string;
  key: string;
  type: WireStateNode['type'];
  tags: string[];
  states: Record<string, StateNodeLike>;
  initial?: { target: readonly StateNodeLike[] } | undefined;
  entry: readonly unknown[];
  exit: readonly unknown[];
  invoke: readonly { id: string; src: unknown }[];
  transitions: Map<string, readonly TransitionLike[]>;
  always?: readonly TransitionLike[];
}

interface TransitionLike {
  eventType: string;
  target?: readonly StateNodeLike[] | undefined;
  guard?: unknown;
  actions: readonly unknown[];
  reenter?: boolean;
}

/** A guard's name: `isCreate`, `!updateDeletesPod`, `(a && b)`, `in(#pod.x)`, `inline`. */
export function guardName(guard: unknown): string {
  if (typeof guard === 'string') return guard;
  if (typeof guard === 'function') {
    const g = guard as { name?: string; guards?: unknown[]; stateValue?: unknown };
    if (g.name === 'not' && g.guards) return `!${guardName(g.guards[0])}`;
    if ((g.name === 'and' || g.name === 'or') && g.guards) return `(${g.guards.map(guardName).join(g.name === 'and' ? ' && ' : ' || ')})`;
    if (g.name === 'stateIn') return `in(${typeof g.stateValue === 'string' ? g.stateValue : JSON.stringify(g.stateValue)})`;
    return 'inline';
  }
  if (guard && typeof guard === 'object' && typeof (guard as { type?: unknown }).type === 'string') return (guard as { type: string }).type;
  return 'inline';
}

/** An action's name: its type (`recordSync`, `xstate.assign`, `xstate.sendTo`), else `inline`. */
function actionName(action: unknown): string {
  if (typeof action === 'string') return action;
  if (action && (typeof action === 'object' || typeof action === 'function')) {
    const type = (action as { type?: unknown }).type;
    if (typeof type === 'string') return type;
  }
  return 'inline';
}

function logicName(src: unknown): string {
  if (typeof src === 'string') return src;
  const id = (src as { id?: unknown } | null)?.id;
  return typeof id === 'string' ? id : 'inline';
}

function projectTransition(t: TransitionLike): WireTransition {
  const out: WireTransition = { event: t.eventType, targets: (t.target ?? []).map((n) => n.id) };
  if (t.guard !== undefined) out.guard = guardName(t.guard);
  if (t.actions.length) out.actions = t.actions.map(actionName);
  if (t.reenter) out.reenter = true;
  return out;
}

function projectStateNode(node: StateNodeLike): WireStateNode {
  const out: WireStateNode = { id: node.id, key: node.key, type: node.type, transitions: [] };
  if (node.initial?.target.length) out.initial = node.initial.target.map((n) => n.id);
  if (node.tags.length) out.tags = [...node.tags];
  if (node.entry.length) out.entry = node.entry.map(actionName);
  if (node.exit.length) out.exit = node.exit.map(actionName);
  if (node.invoke.length) out.invoke = node.invoke.map((i) => ({ id: i.id, src: logicName(i.src) }));
  for (const list of node.transitions.values()) for (const t of list) out.transitions.push(projectTransition(t));
  for (const t of node.always ?? []) out.transitions.push(projectTransition(t));
  const children = Object.values(node.states ?? {});
  if (children.length) out.states = children.map(projectStateNode);
  return out;
}

/** A machine's definition: its states tree, with transitions, guards and actions by name. */
export function projectDefinition(machine: AnyStateMachine): WireDefinition {
  return { kind: 'definition', machineId: machine.id, root: projectStateNode(machine.root as unknown as StateNodeLike) };
}
