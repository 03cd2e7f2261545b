/**
 * The register of runtime calls under way (src/runtime/callsInFlight.ts): a call is named as
 * hanging once it has waited its own allowance plus the threshold, logged once then and once when
 * it returns; calls that return in time leave nothing behind.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { CallsInFlight, describeHanging, hangingCallThresholdMs } from '../../src/runtime/callsInFlight.ts';
import type { LogFields, LogLevel } from '../../src/log.ts';

describe('CallsInFlight', () => {
  beforeEach(() => vi.useFakeTimers({ now: 0 }));
  afterEach(() => vi.useRealTimers());

  const setup = () => {
    const lines: [LogLevel, string, LogFields | undefined][] = [];
    const calls = new CallsInFlight(Date.now, (level, message, fields) => lines.push([level, message, fields]), 30_000);
    return { calls, lines };
  };

  it('names a call that has waited past its allowance and the threshold, and forgets it when it returns', () => {
    const { calls, lines } = setup();
    const trace = calls.forPod('default/stuck');
    const stop = { id: 1, call: 'StopContainer', target: 'app', allowanceMs: 10_000 };
    const status = { id: 2, call: 'PodSandboxStatus', target: 'sandbox' };
    trace.started(stop);
    trace.started(status);
    vi.advanceTimersByTime(30_001);
    // The status read is past the threshold; the stop still within its 10 s grace period on top.
    expect(calls.hanging()).toEqual([{ pod: 'default/stuck', call: 'PodSandboxStatus', target: 'sandbox', since: 0 }]);
    vi.advanceTimersByTime(10_000);
    expect(calls.hanging().map((c) => c.call)).toEqual(['StopContainer', 'PodSandboxStatus']);
    expect(describeHanging(calls.hanging(), Date.now())).toEqual(['StopContainer (app) for pod default/stuck: no answer for 40s', 'PodSandboxStatus (sandbox) for pod default/stuck: no answer for 40s']);
    expect(lines.filter(([level]) => level === 'warn')).toHaveLength(2);

    trace.finished(stop, 45_000, new Error('CRI StopContainer failed (DEADLINE_EXCEEDED): deadline exceeded'));
    expect(calls.hanging().map((c) => c.call)).toEqual(['PodSandboxStatus']);
    expect(lines.at(-1)).toEqual(['info', 'runtime call returned after hanging', expect.objectContaining({ pod: 'default/stuck', call: 'StopContainer', seconds: 45, outcome: expect.stringContaining('DEADLINE_EXCEEDED') })]);
  });

  it('says nothing of calls that return in time', () => {
    const { calls, lines } = setup();
    const trace = calls.forPod('default/fine');
    for (let id = 1; id <= 1000; id++) {
      trace.started({ id, call: 'ContainerStatus', target: 'app' });
      trace.finished({ id, call: 'ContainerStatus', target: 'app' }, 1);
    }
    vi.advanceTimersByTime(60_000);
    expect(calls.hanging()).toEqual([]);
    expect(lines).toEqual([]);
    expect(vi.getTimerCount()).toBe(0);
  });

  it('calls a call hanging after a quarter of its deadline, 30 s at most', () => {
    expect([120_000, 600_000, 20_000, 1_000].map(hangingCallThresholdMs)).toEqual([30_000, 30_000, 5_000, 250]);
  });
});
