/**
 * The visualizer's wire format: what the agent sends to a page (src/visualizer/projection.ts makes
 * it from inspection records; the page, visualizer/, reads it). Types only, so the page's build
 * and type check take nothing of the node with them.
 */
import type { StateValue } from 'xstate';

/** A pod as it may appear on the wire. */
export interface WirePodRef {
  namespace: string;
  name: string;
  uid: string;
}

/** A pod in an event payload: its identity and its containers' names and images, nothing else. */
export interface WirePodSummary extends WirePodRef {
  containers: WireContainer[];
  initContainers?: WireContainer[];
}

export interface WireContainer {
  name: string;
  image: string;
}

/** A transition of a machine definition; guards and actions by name only. */
export interface WireTransition {
  /** The event descriptor (`POD.UPDATE`, `PLEG.*`, `xstate.after.…`, `xstate.done.actor.…`); `''` for eventless (`always`). */
  event: string;
  /** Target state node ids (none: a targetless transition, actions only). */
  targets: string[];
  guard?: string;
  actions?: string[];
  reenter?: boolean;
}

export interface WireStateNode {
  /** The state node id (`pod.syncing.worker`, or an explicit `#id`). */
  id: string;
  key: string;
  type: 'atomic' | 'compound' | 'parallel' | 'final' | 'history';
  /** Initial child state node ids (compound states). */
  initial?: string[];
  tags?: string[];
  entry?: string[];
  exit?: string[];
  /** Invoked actors: invoke id and logic name (`src`). */
  invoke?: { id: string; src: string }[];
  transitions: WireTransition[];
  /** Children in document order. */
  states?: WireStateNode[];
}

/** Sent once per machine id, before the first actor of that machine. */
export interface WireDefinition {
  kind: 'definition';
  machineId: string;
  root: WireStateNode;
}

export interface WireActor {
  kind: 'actor';
  op: 'created' | 'stopped';
  /** Unique within the agent for the actor's whole life (XState's session id, `x:12`). */
  actorId: string;
  /** A readable name: the system id (`syncLoop`, `pod/<uid>`) or the invoke id (`pods`, `pleg`). */
  name: string;
  /** The machine id (`pod`, `syncLoop`, `pleg`) of machine actors; null for other logic (callbacks). */
  machineId: string | null;
  parentId: string | null;
  /** Pod actors only. */
  pod?: WirePodRef;
  at: number;
}

export type WirePodProgress =
  | { stage: 'sandbox' }
  | { stage: 'initializing'; index?: number; name?: string; step?: string }
  | { stage: 'running' }
  | { stage: string };

interface WirePodState {
  phase: string;
  progress: WirePodProgress;
  syncCount: number;
  /** Container restarts summed over the pod. */
  restarts: number;
  restartRequested: boolean;
  gracePeriodSeconds: number | null;
  /** The pod's QoS class (Guaranteed, Burstable, BestEffort). */
  qos: string;
  /** Its CPU and memory limits in a line (`cpu 100m · memory 64Mi`); `` when unbounded. */
  limits: string;
}

/** The syncLoop's counters: what it routed, and the runtime's health as the PLEG last saw it. */
export interface WireSyncLoopState {
  /** Events routed to the pod workers, by type. */
  routed: Record<string, number>;
  seenSources: string[];
  lastRelistAt: number | null;
  lastRelistDurationMs: number | null;
  lastRuntimeError: string | null;
  /** Each source's last reported state: the API source `watching from 1234`, `backingOff …`. */
  sourceStates: Record<string, string>;
}

export interface WireSnapshot {
  kind: 'snapshot';
  actorId: string;
  /** `active`, or `done` / `stopped` / `error` as the actor ends. */
  status: string;
  /** Machine actors only. */
  value?: StateValue;
  tags?: string[];
  pod?: WirePodState;
  syncLoop?: WireSyncLoopState;
  /** The node-level loops (node status, Lease, …): what they last did, in a line, from the loop's own `summary`. */
  summary?: string;
  at: number;
}

/** Payload values are scalars, or (for config events) pod summaries. */
export type WirePayload = Record<string, string | number | boolean | null | WirePodSummary | WirePodSummary[]>;

export interface WireEvent {
  kind: 'event';
  /** The hub's sequence number of this record (events and steps share it): tells history from stream. */
  seq: number;
  /** The receiving actor. */
  actorId: string;
  /** The sending actor's session id, when an actor sent it. */
  sourceId: string | null;
  type: string;
  payload?: WirePayload;
  /**
   * Set when the event went to one of the actor's invoked effect actors rather than to the actor
   * itself: the effect's logic name (`syncPod`, `terminatePod`, `cleanupPod`). These are the
   * `CRI.STARTED` / `CRI.FINISHED` records of its runtime calls.
   */
  via?: string;
  at: number;
}

/** One microstep of a machine actor: the transitions taken (with targets) and the state value after. */
export interface WireStep {
  kind: 'step';
  seq: number;
  actorId: string;
  /** The event that caused it (`xstate.done.actor.…` and eventless `always` steps included). */
  event: string;
  transitions: { source: string; targets: string[] }[];
  value: StateValue;
  at: number;
}

/** Events and steps left out of a batch (only the newest `maxEventsPerBatch` are sent). */
interface WireDropped {
  kind: 'dropped';
  events: number;
}

export type WireRecord = WireDefinition | WireActor | WireSnapshot | WireEvent | WireStep | WireDropped;

/** The current picture: what a newly connected client gets first, and what `/api/snapshot` returns. */
export interface WirePicture {
  /** Which hub (so which agent run) this is: actor ids and sequence numbers restart with each. */
  hubId: string;
  at: number;
  definitions: WireDefinition[];
  actors: WireActorView[];
}

export interface WireActorView {
  actor: WireActor;
  snapshot?: WireSnapshot;
}

