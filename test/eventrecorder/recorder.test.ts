/** The API event recorder against the in-memory API: deduplication as patches, refusals logged once, a lost Event written anew. */
import { describe, expect, it } from 'vitest';
import { ApiError } from '../../src/client/api.ts';
import type { LogLevel } from '../../src/log.ts';
import { ApiEventRecorder, nodeReference, podReference } from '../../src/eventrecorder/recorder.ts';
import { ManualClock } from '../support/manualClock.ts';
import { MemoryApi } from '../support/memoryApi.ts';

const pod = { metadata: { name: 'web', namespace: 'ns', uid: 'u1' }, spec: { containers: [{ name: 'app' }], initContainers: [{ name: 'setup' }] } };

function harness() {
  const api = new MemoryApi();
  const clock = new ManualClock();
  const logs: { level: LogLevel; message: string }[] = [];
  const recorder = new ApiEventRecorder({ api, nodeName: 'node-a', clock, log: (level, message) => void logs.push({ level, message }) });
  return { api, clock, logs, recorder };
}

describe('ApiEventRecorder', () => {
  it('names the container by its field path, init containers included', () => {
    expect(podReference(pod, 'app').fieldPath).toBe('spec.containers{app}');
    expect(podReference(pod, 'setup').fieldPath).toBe('spec.initContainers{setup}');
    const debugged = { ...pod, spec: { ...pod.spec, ephemeralContainers: [{ name: 'debugger', image: 'busybox' }] } };
    expect(podReference(debugged, 'debugger').fieldPath).toBe('spec.ephemeralContainers{debugger}');
    expect(nodeReference('node-a')).toEqual({ kind: 'Node', name: 'node-a', uid: 'node-a' });
  });

  it('logs every event and writes a repeated one as a count on the first', async () => {
    const h = harness();
    for (let i = 0; i < 3; i++) {
      h.recorder.event(podReference(pod, 'app'), 'Warning', 'BackOff', 'Back-off restarting failed container app in pod web_ns(u1)');
      await h.clock.settle(1_000);
    }
    const events = [...h.api.events.values()];
    expect(events).toHaveLength(1);
    expect(events[0]).toMatchObject({ count: 3, reason: 'BackOff', involvedObject: { fieldPath: 'spec.containers{app}' } });
    expect(h.logs.filter((l) => l.message === 'BackOff' && l.level === 'warn')).toHaveLength(3);
    expect(h.recorder.stats).toMatchObject({ written: 3, dropped: 0 });
  });

  it('drops an event the API server refuses, saying so once per reason', async () => {
    const h = harness();
    const refused = new ApiError(403, 'Forbidden', 'events is forbidden', 'POST events');
    h.api.failNext('createEvent', refused, refused);
    h.recorder.event(podReference(pod), 'Normal', 'Scheduled', 'one');
    h.recorder.event(podReference(pod), 'Normal', 'Scheduled', 'two');
    await h.clock.settle(0);
    expect(h.logs.filter((l) => /refused an event/.test(l.message))).toHaveLength(1);
    expect(h.recorder.stats.dropped).toBe(2);
    expect(h.api.count('createEvent')).toBe(2);
  });

  it('retries an event the API server did not answer, after a wait', async () => {
    const h = harness();
    h.api.failNext('createEvent', new ApiError(0, '', 'connection refused', 'POST events'));
    h.recorder.event(podReference(pod, 'app'), 'Normal', 'Started', 'Started container app');
    await h.clock.settle(0);
    expect(h.api.events.size).toBe(0);
    await h.clock.settle(10_000);
    expect(h.api.events.size).toBe(1);
  });

  it('writes an event anew when the Event it would count on is gone', async () => {
    const h = harness();
    h.recorder.event(podReference(pod, 'app'), 'Normal', 'Pulled', 'already present');
    await h.clock.settle(0);
    h.api.events.clear();
    h.recorder.event(podReference(pod, 'app'), 'Normal', 'Pulled', 'already present');
    await h.clock.settle(0);
    expect([...h.api.events.values()]).toEqual([expect.objectContaining({ count: 1, reason: 'Pulled' })]);
  });
});
