/**
 * The visualizer hub: fed every inspection record of the agent's actor system, it keeps the
 * current picture (machine definitions, live actors and the latest snapshot of each) and streams
 * what changes to subscribers in batches, at most one every `flushMs`.
 *
 * Which actors: state machine actors (syncLoop, pleg, pods) and the root's other children (the
 * `pods`, `sources`, `probes` callback actors). Short-lived helpers — the promise actors a pod
 * invokes for each sync, the PLEG's relists — are not tracked: their parent's state shows them.
 * The runtime calls a pod's effect actor records (`CRI.STARTED` / `CRI.FINISHED`, sent to itself)
 * are streamed as the pod's events, with `via` naming the effect.
 *
 * A batch holds, in order: new definitions, created actors, the latest snapshot of each actor that
 * changed (intermediate ones are dropped), events and steps (microsteps that moved an actor, with
 * the value after each) as they happened — only the newest `maxEventsPerBatch`, with a `dropped`
 * record counting the rest — and stopped actors. Records are idempotent upserts keyed by actor id,
 * so a client that got the picture may see some of it again in the next batch.
 *
 * Each actor also keeps its newest `historyPerActor` events and steps (raw, projected on request),
 * so a page that selects an actor later can show what led up to its state (`history`).
 *
 * Cost to the agent: O(1) per record, no serialization on the agent's path (batches are
 * serialized once per flush, on a timer); while no client is connected, only the per-actor history
 * is kept (a fixed-size ring each, the records unprojected).
 */
import { randomUUID } from 'node:crypto';
import { type Clock, realClock } from '../clock.ts';
import type { AnyActorRef, AnyEventObject, InspectionEvent, Observer, StateValue } from 'xstate';
import type { WireActor, WireActorView, WireDefinition, WirePicture, WireRecord, WireSnapshot } from './wire.ts';
import {
  type TakenTransition,
  machineOf,
  movesState,
  projectActor,
  projectDefinition,
  projectEvent,
  projectSnapshot,
  projectStep,
} from './projection.ts';

interface HubOptions {
  /** The shortest time between two batches. Default 100 ms. */
  flushMs?: number;
  /** Events kept per batch (the newest). Default 500. */
  maxEventsPerBatch?: number;
  /** Events and steps kept per actor for `history` (the newest). Default 100; 0 keeps none. */
  historyPerActor?: number;
  /** The clock of record times and flushes (tests pass xstate's SimulatedClock); the wall clock by default. */
  clock?: Clock;
}

type BatchListener = (batch: WireRecord[]) => void;

/** An event or a microstep, kept raw until the flush: records dropped from a batch cost no projection. */
type Pending =
  | { kind: 'event'; seq: number; ref: AnyActorRef; source: AnyActorRef | undefined; event: AnyEventObject; via: AnyActorRef | undefined; at: number }
  | { kind: 'step'; seq: number; ref: AnyActorRef; event: AnyEventObject; transitions: readonly TakenTransition[]; value: StateValue; at: number };

const project = (p: Pending) =>
  p.kind === 'event' ? projectEvent(p.ref, p.source, p.event, p.at, p.seq, p.via) : projectStep(p.ref, p.event, p.transitions, p.value, p.at, p.seq);

/** The newest records of one actor, overwritten in place once full. */
class History {
  private readonly records: Pending[] = [];
  private next = 0;

  constructor(private readonly size: number) {}

  add(record: Pending): void {
    if (this.records.length < this.size) this.records.push(record);
    else this.records[this.next] = record;
    this.next = (this.next + 1) % this.size;
  }

  /** Oldest first. */
  list(): Pending[] {
    return this.records.length < this.size ? [...this.records] : [...this.records.slice(this.next), ...this.records.slice(0, this.next)];
  }
}

interface Tracked {
  ref: AnyActorRef;
  /** Null until the actor's first snapshot (which gives a pod actor its identity). */
  actor: WireActor | null;
  snapshot?: WireSnapshot;
  history?: History;
  /**
   * The steps of its initial state (the pod machine's out of `starting`), recorded while the actor
   * is made: held until its creation event (`xstate.init`), so that its log tells the creation first.
   */
  initialSteps?: Extract<Pending, { kind: 'step' }>[];
}

export class VisualizerHub {
  private readonly flushMs: number;
  private readonly maxEvents: number;
  private readonly historyPerActor: number;
  private readonly now: () => number;
  private seq = 0;
  private readonly id = randomUUID();

  private readonly definitions = new Map<string, WireDefinition>();
  private readonly actors = new Map<string, Tracked>();
  private readonly listeners = new Set<BatchListener>();

  // The batch being gathered (only while someone listens).
  private newDefinitions: WireDefinition[] = [];
  private created: WireActor[] = [];
  private snapshots = new Map<string, WireSnapshot>();
  private events: Pending[] = [];
  private eventsSeen = 0;
  private stopped: WireActor[] = [];
  private readonly clock: Clock;
  private timer: unknown = null;
  private closed = false;

  /** Inspection records in (pass as, or call from, the actor system's `inspect` observer). */
  readonly inspect: Observer<InspectionEvent> = { next: (record) => this.record(record) };

  constructor(options: HubOptions = {}) {
    this.flushMs = options.flushMs ?? 100;
    this.maxEvents = options.maxEventsPerBatch ?? 500;
    this.historyPerActor = options.historyPerActor ?? 100;
    this.clock = options.clock ?? realClock;
    this.now = () => this.clock.now();
  }

  /** Takes one inspection record. Never throws into the actor system. */
  record(record: InspectionEvent): void {
    if (this.closed) return;
    try {
      switch (record.type) {
        case '@xstate.actor':
          this.onActor(record.actorRef as AnyActorRef);
          break;
        case '@xstate.snapshot':
          this.onSnapshot(record.actorRef as AnyActorRef, record.snapshot);
          break;
        case '@xstate.event':
          this.onEvent(record.actorRef as AnyActorRef, record.sourceRef as AnyActorRef | undefined, record.event);
          break;
        case '@xstate.microstep':
          this.onMicrostep(record.actorRef as AnyActorRef, record.event, record.snapshot, record._transitions);
          break;
        default:
          break;
      }
    } catch {
      // The visualizer must never break the agent.
    }
  }

  /** The current picture (definitions, live actors, their latest snapshots). */
  picture(): WirePicture {
    const actors: WireActorView[] = [];
    for (const tracked of this.actors.values()) {
      if (!tracked.actor) continue;
      const view: WireActorView = { actor: tracked.actor };
      if (tracked.snapshot) view.snapshot = tracked.snapshot;
      actors.push(view);
    }
    return { hubId: this.id, at: this.now(), definitions: [...this.definitions.values()], actors };
  }

  /** The newest events and steps of a live actor, oldest first; empty for an actor not tracked. */
  history(actorId: string): WireRecord[] {
    return this.actors.get(actorId)?.history?.list().map(project) ?? [];
  }

  /** Batches from now on; returns the unsubscribe function. */
  subscribe(listener: BatchListener): () => void {
    this.listeners.add(listener);
    return () => {
      this.listeners.delete(listener);
      if (this.listeners.size === 0) this.clearBatch();
    };
  }

  get subscribers(): number {
    return this.listeners.size;
  }

  /** Sends the gathered batch now (also what the timer does). */
  flush(): void {
    if (this.timer !== null) this.clock.clearTimeout(this.timer);
    this.timer = null;
    const batch: WireRecord[] = [...this.newDefinitions, ...this.created, ...this.snapshots.values()];
    const kept = this.events.length > this.maxEvents ? this.events.slice(-this.maxEvents) : this.events;
    for (const e of kept) batch.push(project(e));
    const dropped = this.eventsSeen - kept.length;
    if (dropped > 0) batch.push({ kind: 'dropped', events: dropped });
    batch.push(...this.stopped);
    this.clearBatch();
    if (batch.length === 0) return;
    for (const listener of this.listeners) {
      try {
        listener(batch);
      } catch {
        // A failing client does not stop the others.
      }
    }
  }

  close(): void {
    this.closed = true;
    if (this.timer !== null) this.clock.clearTimeout(this.timer);
    this.timer = null;
    this.listeners.clear();
    this.clearBatch();
  }

  private clearBatch(): void {
    this.newDefinitions = [];
    this.created = [];
    this.snapshots = new Map();
    this.events = [];
    this.eventsSeen = 0;
    this.stopped = [];
  }

  private get batching(): boolean {
    return this.listeners.size > 0;
  }

  private schedule(): void {
    if (this.timer !== null || !this.batching) return;
    this.timer = this.clock.setTimeout(() => this.flush(), this.flushMs);
  }

  private isTracked(ref: AnyActorRef): boolean {
    if (machineOf(ref)) return true;
    const parent = (ref as { _parent?: AnyActorRef })._parent;
    return parent !== undefined && (parent as { _parent?: AnyActorRef })._parent === undefined;
  }

  private onActor(ref: AnyActorRef): void {
    if (!this.isTracked(ref)) return;
    this.actors.set(ref.sessionId, { ref, actor: null });
  }

  /**
   * Announces a tracked actor (its definition first, once per machine) on its first snapshot, or on
   * the first event that needs it: an actor's children can record events before its first snapshot
   * record (they start while it starts), and its snapshot is readable by then.
   */
  private announce(tracked: Tracked, snapshot: unknown, at: number): WireActor {
    if (tracked.actor) return tracked.actor;
    const machine = machineOf(tracked.ref);
    if (machine && !this.definitions.has(machine.id)) {
      const definition = projectDefinition(machine);
      this.definitions.set(machine.id, definition);
      if (this.batching) this.newDefinitions.push(definition);
    }
    tracked.actor = projectActor(tracked.ref, 'created', snapshot, at);
    if (this.batching) this.created.push(tracked.actor);
    return tracked.actor;
  }

  private onSnapshot(ref: AnyActorRef, snapshot: unknown): void {
    const tracked = this.actors.get(ref.sessionId);
    if (!tracked || tracked.ref !== ref) return;
    const at = this.now();
    this.announce(tracked, snapshot, at);
    const projected = projectSnapshot(ref, snapshot, at);
    tracked.snapshot = projected;
    if (this.batching) this.snapshots.set(ref.sessionId, projected);
    if (projected.status !== 'active') {
      this.actors.delete(ref.sessionId);
      if (this.batching) this.stopped.push({ ...tracked.actor!, op: 'stopped', at });
    }
    this.schedule();
  }

  /**
   * The tracked entry of `ref` (announcing it if need be), with the snapshot the record carries when
   * it carries one: a microstep of the initial state (the pod machine's eventless `starting`) is
   * recorded while the actor is being made, before `getSnapshot()` has anything to return, and a pod
   * announced without its context would be listed by its actor id instead of its name.
   */
  private announced(ref: AnyActorRef, snapshot?: unknown): Tracked | undefined {
    const tracked = this.actors.get(ref.sessionId);
    if (!tracked || tracked.ref !== ref) return undefined;
    if (!tracked.actor) this.announce(tracked, snapshot ?? ref.getSnapshot(), this.now());
    return tracked;
  }

  private onEvent(ref: AnyActorRef, source: AnyActorRef | undefined, event: AnyEventObject): void {
    let owner = this.announced(ref);
    let via: AnyActorRef | undefined;
    if (!owner) {
      // A runtime call recorded by an untracked effect actor is shown as its owner's.
      if (!event.type.startsWith('CRI.')) return;
      const parent = (ref as { _parent?: AnyActorRef })._parent;
      owner = parent && this.announced(parent);
      if (!owner) return;
      via = ref;
    }
    this.keep(owner, { kind: 'event', seq: ++this.seq, ref: owner.ref, source, event, via, at: this.now() });
    if (event.type === 'xstate.init' && owner.initialSteps) {
      for (const step of owner.initialSteps) this.keep(owner, { ...step, seq: ++this.seq });
      delete owner.initialSteps;
    }
  }

  private onMicrostep(ref: AnyActorRef, event: AnyEventObject, snapshot: unknown, transitions: readonly TakenTransition[]): void {
    if (!movesState(transitions)) return;
    const owner = this.announced(ref, snapshot);
    const value = (snapshot as { value?: StateValue }).value;
    if (!owner || value === undefined) return;
    const step = { kind: 'step' as const, seq: 0, ref, event, transitions, value, at: this.now() };
    if (event.type === 'xstate.init') (owner.initialSteps ??= []).push(step);
    else this.keep(owner, { ...step, seq: ++this.seq });
  }

  /** Into the actor's history, and into the batch if anyone listens. */
  private keep(owner: Tracked, pending: Pending): void {
    if (this.historyPerActor > 0) (owner.history ??= new History(this.historyPerActor)).add(pending);
    if (!this.batching) return;
    this.eventsSeen++;
    this.events.push(pending);
    // Amortized O(1): trim to the newest maxEvents once twice as many have gathered.
    if (this.events.length >= 2 * this.maxEvents) this.events = this.events.slice(-this.maxEvents);
    this.schedule();
  }
}
