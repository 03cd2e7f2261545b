/** The event correlator: spam filter, aggregation of similar events, deduplication (client-go events_cache.go). */
import { describe, expect, it } from 'vitest';
import type { ObjectReference } from '../../src/api/cluster.ts';
import { AGGREGATE_INTERVAL_MS, COMBINED_PREFIX, EventCorrelator, SPAM_BURST, SPAM_REFILL_MS, type EventInput } from '../../src/eventrecorder/correlator.ts';

const T0 = Date.parse('2026-01-01T00:00:00Z');
const pod: ObjectReference = { kind: 'Pod', apiVersion: 'v1', namespace: 'ns', name: 'web', uid: 'u1', fieldPath: 'spec.containers{app}' };
const input = (message: string, extra: Partial<EventInput> = {}): EventInput => ({ object: pod, type: 'Warning', reason: 'BackOff', message, ...extra });
const correlator = () => new EventCorrelator({ component: 'kubelet', host: 'node-a' });

describe('EventCorrelator', () => {
  it('creates the first event with the kubelet as its source, in the object namespace', () => {
    const result = correlator().correlate(input('Back-off restarting failed container app in pod web_ns(u1)'), T0);
    expect(result.action).toBe('create');
    if (result.action !== 'create') return;
    expect(result.event).toMatchObject({
      metadata: { namespace: 'ns' },
      involvedObject: pod,
      type: 'Warning',
      reason: 'BackOff',
      count: 1,
      source: { component: 'kubelet', host: 'node-a' },
      firstTimestamp: '2026-01-01T00:00:00Z',
      reportingInstance: 'node-a',
    });
    expect(result.event.metadata.name).toMatch(/^web\.[0-9a-f]+$/);
  });

  it('puts events of objects without a namespace (the Node) in default', () => {
    const result = correlator().correlate({ object: { kind: 'Node', name: 'node-a', uid: 'node-a' }, type: 'Normal', reason: 'Starting', message: 'Starting kubelet.' }, T0);
    expect(result.action === 'create' && result.event.metadata.namespace).toBe('default');
  });

  it('turns a repeated event into a patch of the first one: count and lastTimestamp grow', () => {
    const c = correlator();
    const first = c.correlate(input('same'), T0);
    const second = c.correlate(input('same'), T0 + 5_000);
    const third = c.correlate(input('same'), T0 + 9_000);
    expect(second).toMatchObject({ action: 'patch', patch: { count: 2, lastTimestamp: '2026-01-01T00:00:05Z' } });
    expect(third).toMatchObject({ action: 'patch', patch: { count: 3 } });
    if (first.action !== 'create' || third.action !== 'patch') throw new Error('unexpected');
    expect(third.event.metadata.name).toBe(first.event.metadata.name);
    expect(third.event.firstTimestamp).toBe(first.event.firstTimestamp);
  });

  it('keeps events of other containers, reasons or types apart', () => {
    const c = correlator();
    c.correlate(input('same'), T0);
    expect(c.correlate(input('same', { object: { ...pod, fieldPath: 'spec.containers{other}' } }), T0).action).toBe('create');
    expect(c.correlate(input('same', { reason: 'Failed' }), T0).action).toBe('create');
    expect(c.correlate(input('same', { type: 'Normal' }), T0).action).toBe('create');
  });

  it('combines the tenth and later different messages of one reason into one event', () => {
    const c = correlator();
    const results = Array.from({ length: 14 }, (_, i) => c.correlate(input(`message ${i}`), T0 + i));
    expect(results.slice(0, 9).every((r) => r.action === 'create' && !r.event.message.startsWith(COMBINED_PREFIX))).toBe(true);
    expect(results[9]).toMatchObject({ action: 'create', event: { message: `${COMBINED_PREFIX}message 9` } });
    expect(results[13]).toMatchObject({ action: 'patch', patch: { count: 5, message: `${COMBINED_PREFIX}message 13` } });
  });

  it('stops combining once the similar events are older than the interval', () => {
    const c = correlator();
    for (let i = 0; i < 12; i++) c.correlate(input(`message ${i}`), T0 + i);
    const later = c.correlate(input('fresh'), T0 + 12 + AGGREGATE_INTERVAL_MS + 1);
    expect(later).toMatchObject({ action: 'create', event: { message: 'fresh' } });
  });

  it('drops events of an object beyond the burst, and lets one through per refill period', () => {
    const c = correlator();
    const at = (i: number) => c.correlate(input(`m${i % 3}`, { reason: `R${i}` }), T0 + i);
    const burst = Array.from({ length: SPAM_BURST + 5 }, (_, i) => at(i).action);
    expect(burst.filter((a) => a !== 'drop')).toHaveLength(SPAM_BURST);
    expect(burst.slice(SPAM_BURST)).toEqual(Array(5).fill('drop'));
    expect(c.correlate(input('x', { reason: 'Late' }), T0 + SPAM_REFILL_MS + 100).action).toBe('create');
    expect(c.correlate(input('y', { reason: 'Later' }), T0 + SPAM_REFILL_MS + 200).action).toBe('drop');
    // Another object has its own bucket.
    expect(c.correlate(input('z', { object: { ...pod, name: 'db', uid: 'u2' } }), T0 + 1).action).toBe('create');
  });

  it('creates an event anew after its Event was forgotten (deleted in the API)', () => {
    const c = correlator();
    const first = c.correlate(input('same'), T0);
    if (first.action !== 'create') throw new Error('unexpected');
    c.forget(first.event);
    expect(c.correlate(input('same'), T0 + 1).action).toBe('create');
  });

  it('keeps its caches bounded', () => {
    const c = new EventCorrelator({ component: 'kubelet', host: 'node-a', maxEntries: 2 });
    c.correlate(input('a'), T0);
    c.correlate(input('b'), T0);
    c.correlate(input('c'), T0);
    // "a" was evicted from the written cache: written again as a new event.
    expect(c.correlate(input('a'), T0 + 1).action).toBe('create');
  });
});
