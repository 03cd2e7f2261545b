import { describe, expect, it } from 'vitest';
import type { ProbeKind } from '../../src/api/types.ts';
import {
  type TickObservation,
  type WorkerState,
  initialWorkerState,
  planTick,
  probeMetricResult,
  probeSettings,
  recordOutcome,
} from '../../src/prober/decide.ts';

const settings = probeSettings({ initialDelaySeconds: 5, failureThreshold: 3, successThreshold: 2 }, 'readiness');
const running = { id: 'c1', running: true, terminated: false, restarts: true, startedAtMs: 0 };
const base: TickObservation = {
  kind: 'readiness',
  hasStatus: true,
  podTerminal: false,
  podDeleting: false,
  container: running,
  started: true,
  nowMs: 10_000,
};
const known: WorkerState = { ...initialWorkerState, containerId: 'c1', published: 'Failure' };

describe('probeSettings', () => {
  it('applies the API defaults and forces successThreshold 1 for liveness and startup', () => {
    expect(probeSettings({}, 'readiness')).toEqual({ initialDelaySeconds: 0, periodSeconds: 10, timeoutSeconds: 1, successThreshold: 1, failureThreshold: 3 });
    expect(probeSettings({ successThreshold: 3 }, 'liveness').successThreshold).toBe(1);
    expect(probeSettings({ successThreshold: 3 }, 'readiness').successThreshold).toBe(3);
  });
});

describe('planTick', () => {
  const cases: { name: string; state?: WorkerState; o: Partial<TickObservation>; action: string; publish?: string }[] = [
    { name: 'no status yet', o: { hasStatus: false }, action: 'wait' },
    { name: 'pod terminal', state: known, o: { podTerminal: true }, action: 'stop' },
    { name: 'container not in status', o: { container: undefined }, action: 'wait' },
    { name: 'new container: readiness starts at Failure', o: {}, action: 'probe', publish: 'Failure' },
    { name: 'new container: liveness starts at Success', o: { kind: 'liveness' }, action: 'probe', publish: 'Success' },
    { name: 'new container: startup starts at Unknown', o: { kind: 'startup', started: false }, action: 'probe', publish: 'Unknown' },
    { name: 'on hold', state: { ...known, onHold: true }, o: {}, action: 'wait' },
    { name: 'on hold, new container ID clears the hold', state: { ...known, onHold: true }, o: { container: { ...running, id: 'c2' } }, action: 'probe', publish: 'Failure' },
    { name: 'not running ⇒ Failure, keeps going', state: known, o: { container: { ...running, running: false } }, action: 'wait', publish: 'Failure' },
    { name: 'terminated, not to run again ⇒ Failure and stop', state: known, o: { container: { ...running, running: false, terminated: true, restarts: false } }, action: 'stop', publish: 'Failure' },
    { name: 'terminated, to run again ⇒ Failure, keeps going', state: known, o: { container: { ...running, running: false, terminated: true, restarts: true } }, action: 'wait', publish: 'Failure' },
    { name: 'deleting: liveness ⇒ Success and stop', state: known, o: { kind: 'liveness', podDeleting: true }, action: 'stop', publish: 'Success' },
    { name: 'deleting: startup ⇒ Success and stop', state: known, o: { kind: 'startup', podDeleting: true, started: false }, action: 'stop', publish: 'Success' },
    { name: 'deleting: readiness keeps probing', state: known, o: { podDeleting: true }, action: 'probe' },
    { name: 'within initialDelaySeconds', state: known, o: { nowMs: 4_999 }, action: 'wait' },
    { name: 'startup done ⇒ startup waits', state: known, o: { kind: 'startup', started: true }, action: 'wait' },
    { name: 'not started ⇒ liveness waits', state: known, o: { kind: 'liveness', started: false }, action: 'wait' },
    { name: 'not started ⇒ readiness waits', state: known, o: { started: false }, action: 'wait' },
    { name: 'started ⇒ readiness probes', state: known, o: {}, action: 'probe' },
  ];
  it.each(cases)('$name', ({ state = initialWorkerState, o, action, publish }) => {
    const plan = planTick(state, settings, { ...base, ...o });
    expect(plan.action).toBe(action);
    expect(plan.publish).toBe(publish);
  });
});

describe('recordOutcome', () => {
  const run = (kind: ProbeKind, outcomes: ('Success' | 'Failure' | 'Warning' | 'Unknown')[], s = settings) => {
    let state = known;
    const published: (string | undefined)[] = [];
    for (const outcome of outcomes) {
      const recorded = recordOutcome(state, s, kind, outcome);
      state = recorded.state;
      published.push(recorded.publish);
    }
    return { state, published };
  };

  it('publishes Success after successThreshold consecutive successes (Warning counts as Success)', () => {
    expect(run('readiness', ['Success', 'Warning', 'Success']).published).toEqual([undefined, 'Success', 'Success']);
    expect(run('readiness', ['Success', 'Failure', 'Success']).published).toEqual([undefined, undefined, undefined]);
  });

  it('publishes Failure after failureThreshold consecutive failures; Unknown is discarded', () => {
    expect(run('readiness', ['Failure', 'Unknown', 'Failure', 'Failure']).published).toEqual([undefined, undefined, undefined, 'Failure']);
    expect(run('readiness', ['Failure', 'Failure', 'Success', 'Failure']).published).toEqual([undefined, undefined, undefined, undefined]);
  });

  it('a published liveness or startup Failure holds the worker and resets the run', () => {
    for (const kind of ['liveness', 'startup'] as const) {
      const { state, published } = run(kind, ['Failure', 'Failure', 'Failure'], probeSettings({}, kind));
      expect(published).toEqual([undefined, undefined, 'Failure']);
      expect(state).toMatchObject({ onHold: true, resultRun: 0, published: 'Failure' });
    }
    const readiness = run('readiness', ['Failure', 'Failure', 'Failure']).state;
    expect(readiness.onHold).toBe(false);
  });

  it('a held liveness worker waits until the container ID changes, then starts over from Success', () => {
    const held = run('liveness', ['Failure', 'Failure', 'Failure'], probeSettings({}, 'liveness')).state;
    const liveness = { ...base, kind: 'liveness' as const };
    expect(planTick(held, settings, liveness).action).toBe('wait');
    const plan = planTick(held, settings, { ...liveness, container: { ...running, id: 'c2', startedAtMs: 9_000 } });
    expect(plan).toMatchObject({ action: 'wait', publish: 'Success', state: { containerId: 'c2', onHold: false } });
  });
});

describe('probeMetricResult', () => {
  it.each([
    ['Success', 'successful'],
    ['Warning', 'successful'],
    ['Failure', 'failed'],
    ['Unknown', null],
  ] as const)('counts a %s outcome as %s', (outcome, label) => {
    expect(probeMetricResult(outcome)).toBe(label);
  });
});
