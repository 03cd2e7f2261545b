/**
 * What becomes of an event before it is written, pure (client-go tools/record/events_cache.go
 * EventCorrelator: EventSourceObjectSpamFilter, EventAggregator, eventLogger):
 *
 * - spam filter: each involved object (with the event type) has a token bucket of 25 that refills
 *   one token every 5 minutes; an event finding the bucket empty is dropped;
 * - aggregation: once 10 events with the same object, type and reason but different messages
 *   arrived within 10 minutes, the next ones become one event "(combined from similar events): …";
 * - deduplication: an event equal to an earlier one (same object, type, reason and message) adds
 *   to that one's count and lastTimestamp, written as a patch, instead of a new Event object.
 *
 * The caches are bounded (least recently used evicted), as client-go's LRU caches are.
 */
import type { KubeEvent, ObjectReference } from '../api/cluster.ts';

export const SPAM_BURST = 25;
export const SPAM_REFILL_MS = 5 * 60_000;
const AGGREGATE_MAX_EVENTS = 10;
export const AGGREGATE_INTERVAL_MS = 10 * 60_000;
export const COMBINED_PREFIX = '(combined from similar events): ';
/** Entries each cache keeps (client-go's maxLruCacheEntries). */
const MAX_CACHE_ENTRIES = 4096;

export interface EventInput {
  object: ObjectReference;
  type: 'Normal' | 'Warning';
  reason: string;
  message: string;
}

/** What to write: a new Event, or a patch of an earlier one (count and lastTimestamp). */
export type Correlation =
  | { action: 'drop' }
  | { action: 'create'; event: KubeEvent }
  | { action: 'patch'; event: KubeEvent; patch: { count: number; lastTimestamp: string; message: string } };

interface Bucket {
  tokens: number;
  refilledAt: number;
}

interface Similar {
  /** The different messages seen, at most AGGREGATE_MAX_EVENTS - 1 (an array: most keys see one). */
  messages: string[];
  lastMs: number;
}

/**
 * What a later equal event needs of the one written: its name, count and first time; the rest is
 * the later event's own (client-go events_cache.go eventLogger keeps the same, its eventLog).
 */
interface Written {
  name: string;
  count: number;
  firstTimestamp: string;
}

/** A Map kept in recency order and cut to `max` entries. */
class Lru<V> {
  private readonly map = new Map<string, V>();
  constructor(private readonly max: number) {}

  get(key: string): V | undefined {
    const value = this.map.get(key);
    if (value !== undefined) {
      this.map.delete(key);
      this.map.set(key, value);
    }
    return value;
  }

  set(key: string, value: V): void {
    this.map.delete(key);
    this.map.set(key, value);
    if (this.map.size > this.max) this.map.delete(this.map.keys().next().value!);
  }

  delete(key: string): void {
    this.map.delete(key);
  }
}

const objectKey = (o: ObjectReference) => [o.kind, o.namespace ?? '', o.name, o.uid ?? '', o.apiVersion ?? '', o.fieldPath ?? ''].join('\u0000');

interface CorrelatorOptions {
  component: string;
  host: string;
  maxEntries?: number;
}

export class EventCorrelator {
  private readonly buckets: Lru<Bucket>;
  private readonly similar: Lru<Similar>;
  private readonly written: Lru<Written>;
  private sequence = 0;

  constructor(private readonly options: CorrelatorOptions) {
    const max = options.maxEntries ?? MAX_CACHE_ENTRIES;
    this.buckets = new Lru(max);
    this.similar = new Lru(max);
    this.written = new Lru(max);
  }

  correlate(input: EventInput, nowMs: number): Correlation {
    if (!this.takeToken(input, nowMs)) return { action: 'drop' };
    const { event, key } = this.aggregate(input, nowMs);
    const earlier = this.written.get(key);
    if (earlier) {
      earlier.count += 1;
      const next: KubeEvent = { ...event, metadata: { ...event.metadata, name: earlier.name }, count: earlier.count, firstTimestamp: earlier.firstTimestamp };
      return { action: 'patch', event: next, patch: { count: next.count, lastTimestamp: next.lastTimestamp, message: next.message } };
    }
    this.written.set(key, { name: event.metadata.name, count: 1, firstTimestamp: event.firstTimestamp });
    return { action: 'create', event };
  }

  /** The patch of an event failed for good (the Event is gone): the next one like it is created anew. */
  forget(event: KubeEvent): void {
    const base = [objectKey(event.involvedObject), event.type, event.reason].join('\u0000');
    this.written.delete(event.message.startsWith(COMBINED_PREFIX) ? base : `${base}\u0000${event.message}`);
  }

  private takeToken(input: EventInput, nowMs: number): boolean {
    const key = `${objectKey({ ...input.object, fieldPath: '' })}\u0000${input.type}`;
    const bucket = this.buckets.get(key) ?? { tokens: SPAM_BURST, refilledAt: nowMs };
    const refills = Math.floor((nowMs - bucket.refilledAt) / SPAM_REFILL_MS);
    if (refills > 0) {
      bucket.tokens = Math.min(SPAM_BURST, bucket.tokens + refills);
      bucket.refilledAt += refills * SPAM_REFILL_MS;
    }
    if (bucket.tokens === SPAM_BURST) bucket.refilledAt = nowMs;
    const allowed = bucket.tokens > 0;
    if (allowed) bucket.tokens -= 1;
    this.buckets.set(key, bucket);
    return allowed;
  }

  /** The event to write and its deduplication key: its message, or for a combined one none. */
  private aggregate(input: EventInput, nowMs: number): { event: KubeEvent; key: string } {
    const key = [objectKey(input.object), input.type, input.reason].join('\u0000');
    let similar = this.similar.get(key);
    if (!similar || nowMs - similar.lastMs > AGGREGATE_INTERVAL_MS) similar = { messages: [], lastMs: nowMs };
    similar.lastMs = nowMs;
    this.similar.set(key, similar);
    if (similar.messages.includes(input.message)) return { event: this.event(input, input.message, nowMs), key: `${key}\u0000${input.message}` };
    if (similar.messages.length < AGGREGATE_MAX_EVENTS - 1) {
      similar.messages.push(input.message);
      return { event: this.event(input, input.message, nowMs), key: `${key}\u0000${input.message}` };
    }
    // The set stays at its cap: the combined event stands for every further message.
    return { event: this.event(input, COMBINED_PREFIX + input.message, nowMs), key };
  }

  private event(input: EventInput, message: string, nowMs: number): KubeEvent {
    const at = new Date(nowMs).toISOString().replace(/\.\d{3}Z$/, 'Z');
    // Objects without a namespace (the Node) have their events in `default` (client-go recorder makeEvent).
    const namespace = input.object.namespace || 'default';
    // `<object name>.<hex nanoseconds>` as client-go names them; the sequence keeps events of the
    // same millisecond apart.
    const name = `${input.object.name}.${(BigInt(nowMs) * 1_000_000n + BigInt(this.sequence++ % 1_000_000)).toString(16)}`;
    return {
      apiVersion: 'v1',
      kind: 'Event',
      metadata: { name, namespace },
      involvedObject: input.object,
      reason: input.reason,
      message,
      type: input.type,
      source: { component: this.options.component, host: this.options.host },
      count: 1,
      firstTimestamp: at,
      lastTimestamp: at,
      reportingComponent: this.options.component,
      reportingInstance: this.options.host,
    };
  }
}
