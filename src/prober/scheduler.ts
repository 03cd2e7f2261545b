/**
 * One timer for every probe worker on the node. Workers are kept in a min-heap keyed by when they
 * are next due; a single timer is armed for the earliest. When it fires, due workers start, at most
 * `maxConcurrent` at a time (the rest wait in due order for a slot), so thousands of probes sharing
 * a period cannot stampede the runtime or the network.
 *
 * A worker's first run comes after a random fraction of its period while the scheduler is younger
 * than that period (the agent just started and is adding every pod's workers at once), at once
 * otherwise (a container that just started), as the kubelet's workers do. After a run, the next is
 * due one period after the previous due time; periods missed while a run took long are skipped.
 * A run resolving `false` removes the worker. The clock is injected.
 */

import type { Clock } from '../clock.ts';

export interface SchedulerOptions {
  clock: Clock;
  random(): number;
  maxConcurrent: number;
  /** Called when a run throws (runs should not). */
  onError?(id: string, error: unknown): void;
}

/** One run of a worker; resolves whether the worker keeps going. */
type WorkerRun = () => Promise<boolean>;

interface Entry {
  id: string;
  periodMs: number;
  run: WorkerRun;
  due: number;
  /** Insertion order, to keep equal due times first-come first-served. */
  seq: number;
  running: boolean;
  removed: boolean;
}

interface ProbeScheduler {
  /** Adds a worker (replacing one with the same id). */
  add(id: string, periodMs: number, run: WorkerRun): void;
  remove(id: string): void;
  /** Runs the worker now rather than at its next due time (unless it is running); its period restarts from now. */
  trigger(id: string): void;
  has(id: string): boolean;
  readonly size: number;
  /** Runs in flight. */
  readonly running: number;
  stop(): void;
}

export function createProbeScheduler(options: SchedulerOptions): ProbeScheduler {
  const { clock } = options;
  const startedAt = clock.now();
  const entries = new Map<string, Entry>();
  const heap: Entry[] = [];
  /** Due entries waiting for a concurrency slot, in due order. */
  const ready: Entry[] = [];
  let seq = 0;
  let inFlight = 0;
  let timer: unknown = null;
  let timerDue = Infinity;
  let stopped = false;

  const before = (a: Entry, b: Entry) => a.due < b.due || (a.due === b.due && a.seq < b.seq);
  const push = (entry: Entry) => {
    heap.push(entry);
    let i = heap.length - 1;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      const p = heap[parent] as Entry;
      if (!before(entry, p)) break;
      heap[i] = p;
      i = parent;
    }
    heap[i] = entry;
  };
  const pop = (): Entry | undefined => {
    const top = heap[0];
    const last = heap.pop();
    if (heap.length === 0 || last === undefined) return top;
    let i = 0;
    for (;;) {
      const left = 2 * i + 1;
      const right = left + 1;
      let smallest = last;
      let at = -1;
      if (left < heap.length && before(heap[left] as Entry, smallest)) {
        smallest = heap[left] as Entry;
        at = left;
      }
      if (right < heap.length && before(heap[right] as Entry, smallest)) {
        smallest = heap[right] as Entry;
        at = right;
      }
      if (at < 0) break;
      heap[i] = smallest;
      i = at;
    }
    heap[i] = last;
    return top;
  };

  const arm = () => {
    // Removed entries stay in the heap until they surface; drop them here.
    while (heap.length > 0 && (heap[0] as Entry).removed) pop();
    const next = heap[0];
    if (stopped || next === undefined) {
      if (timer !== null) clock.clearTimeout(timer);
      timer = null;
      timerDue = Infinity;
      return;
    }
    if (timer !== null && timerDue <= next.due) return;
    if (timer !== null) clock.clearTimeout(timer);
    timerDue = next.due;
    timer = clock.setTimeout(fire, Math.max(0, next.due - clock.now()));
  };

  const fire = () => {
    timer = null;
    timerDue = Infinity;
    const now = clock.now();
    while (heap.length > 0 && (heap[0] as Entry).due <= now) {
      const entry = pop() as Entry;
      if (!entry.removed) ready.push(entry);
    }
    drain();
    arm();
  };

  const drain = () => {
    while (!stopped && inFlight < options.maxConcurrent && ready.length > 0) {
      const entry = ready.shift() as Entry;
      if (entry.removed) continue;
      start(entry);
    }
  };

  const start = (entry: Entry) => {
    inFlight++;
    entry.running = true;
    let keepGoing = true;
    entry
      .run()
      .then(
        (result) => (keepGoing = result),
        (err: unknown) => options.onError?.(entry.id, err),
      )
      .finally(() => {
        inFlight--;
        entry.running = false;
        if (!keepGoing) remove(entry.id, entry);
        else if (!entry.removed && !stopped) {
          const now = clock.now();
          let due = entry.due + entry.periodMs;
          if (due <= now) due += Math.ceil((now - due) / entry.periodMs) * entry.periodMs;
          if (due <= now) due += entry.periodMs;
          entry.due = due;
          entry.seq = seq++;
          push(entry);
        }
        drain();
        arm();
      });
  };

  const remove = (id: string, only?: Entry) => {
    const entry = entries.get(id);
    if (!entry || (only && entry !== only)) return;
    entry.removed = true;
    entries.delete(id);
  };

  return {
    add(id, periodMs, run) {
      remove(id);
      const now = clock.now();
      const young = now - startedAt < periodMs;
      const entry: Entry = { id, periodMs, run, due: now + (young ? Math.floor(options.random() * periodMs) : 0), seq: seq++, running: false, removed: false };
      entries.set(id, entry);
      push(entry);
      arm();
    },
    remove(id) {
      remove(id);
    },
    trigger(id) {
      const entry = entries.get(id);
      const now = clock.now();
      if (!entry || entry.running || entry.due <= now || stopped) return;
      // The heap cannot move an entry: the old one is retired and a due copy takes its place.
      entry.removed = true;
      const due: Entry = { ...entry, due: now, seq: seq++, removed: false };
      entries.set(id, due);
      push(due);
      arm();
    },
    has: (id) => entries.has(id),
    get size() {
      return entries.size;
    },
    get running() {
      return inFlight;
    },
    stop() {
      stopped = true;
      for (const entry of entries.values()) entry.removed = true;
      entries.clear();
      heap.length = 0;
      ready.length = 0;
      arm();
    },
  };
}
