import { describe, expect, it } from 'vitest';
import { ManualClock } from '../support/manualClock.ts';
import { type AnyEventObject, createActor, setup } from 'xstate';
import type { ContainerStatus, Pod, PodStatus, Probe, ProbeKind } from '../../src/api/types.ts';
import { silentLogger } from '../../src/log.ts';
import { RecordedEvents } from '../support/recordedEvents.ts';
import { PodManager } from '../../src/pod/podManager.ts';
import type { ProbeOutcome, ProbeTarget } from '../../src/prober/handlers.ts';
import { createProbeManagerLogic } from '../../src/prober/manager.ts';
import { TestRuntime } from '../support/testRuntime.ts';
import { StatusManager } from '../../src/status/manager.ts';
import { container, makePod } from '../support/pods.ts';

const fast: Probe = { exec: { command: ['check'] }, periodSeconds: 1, failureThreshold: 2 };

function harness(pod: Pod) {
  const fake = new ManualClock(Date.parse('2026-01-01T00:00:00Z'));
  const statuses = new StatusManager();
  const podManager = new PodManager();
  podManager.set(pod);
  const answers: Record<ProbeKind, ProbeOutcome['result']> = { liveness: 'Success', readiness: 'Success', startup: 'Success' };
  const calls: { kind: ProbeKind; containerId: string; podIP: string }[] = [];
  const kindOf = (probe: Probe, target: ProbeTarget): ProbeKind =>
    probe === target.container.livenessProbe ? 'liveness' : probe === target.container.readinessProbe ? 'readiness' : 'startup';
  const events: AnyEventObject[] = [];
  /** What the prober metrics were told: `<probe_type> <container> <result> <seconds>`, `removed <probe_type>`. */
  const counted: string[] = [];
  /** How long each probe takes on the manual clock. */
  const took = { ms: 0 };
  const logic = createProbeManagerLogic({
      statuses,
      podManager,
      runtime: new TestRuntime(),
      clock: fake,
      random: () => 0,
      log: silentLogger,
      recorder: new RecordedEvents(),
      metrics: {
        probed: (labels, result, seconds) => counted.push(`${labels.probe_type} ${labels.namespace}/${labels.pod}/${labels.container} ${labels.pod_uid} ${result} ${seconds}`),
        probeRemoved: (labels) => counted.push(`removed ${labels.probe_type}`),
      },
      runProbe: async (probe, target) => {
        const kind = kindOf(probe, target);
        calls.push({ kind, containerId: target.containerId, podIP: target.podIP });
        if (took.ms > 0) await new Promise((resolve) => fake.setTimeout(() => resolve(undefined), took.ms));
        return { result: answers[kind], output: `${kind} said ${answers[kind]}` };
      },
    });
  const parent = createActor(
    setup({ actors: { probes: logic } }).createMachine({
      invoke: { src: 'probes' },
      on: { 'PROBE.RESULT': { actions: ({ event }) => void events.push(event) } },
    }),
  ).start();
  const setContainer = (id: string, running = true, phase: PodStatus['phase'] = 'Running') => {
    const cs: ContainerStatus = {
      name: 'app',
      state: running ? { running: { startedAt: new Date(fake.now()).toISOString() } } : { terminated: { exitCode: 1 } },
      lastState: {},
      ready: false,
      restartCount: 0,
      image: 'i',
      imageID: 'i',
      containerID: `fake://${id}`,
    };
    statuses.setPodStatus(pod.metadata.uid, { phase, podIP: '10.1.2.3', containerStatuses: [cs] });
  };
  const results = () => events.map((e) => `${e['kind']}:${e['containerId']}:${e['result']}`);
  return { fake, statuses, podManager, answers, calls, events, counted, took, results, setContainer, stop: () => parent.stop() };
}

describe('probe manager', () => {
  it('counts every probe that ran by result, times it on the clock, and drops the series of a removed pod', async () => {
    const h = harness(makePod('p', { containers: [container('app', { livenessProbe: fast, readinessProbe: { ...fast } })] }));
    h.took.ms = 250;
    h.setContainer('c1');
    await h.fake.settle(1_000);
    h.answers.liveness = 'Failure';
    h.answers.readiness = 'Unknown';
    await h.fake.settle(1_000);
    expect([...h.counted].sort()).toEqual([
      'Liveness default/p/app uid-p failed 0.25',
      'Liveness default/p/app uid-p successful 0.25',
      'Readiness default/p/app uid-p successful 0.25',
    ]);
    h.statuses.forgetPod('uid-p');
    expect(h.counted.slice(3).sort()).toEqual(['removed Liveness', 'removed Readiness']);
    h.stop();
  });

  it('sends readiness changes only, with the pod IP and container ID', async () => {
    const h = harness(makePod('p', { containers: [container('app', { readinessProbe: fast })] }));
    h.setContainer('c1');
    await h.fake.settle(3_000);
    expect(h.results()).toEqual(['readiness:c1:Success']);
    expect(h.calls[0]).toEqual({ kind: 'readiness', containerId: 'c1', podIP: '10.1.2.3' });
    h.answers.readiness = 'Failure';
    await h.fake.settle(3_000);
    expect(h.results()).toEqual(['readiness:c1:Success', 'readiness:c1:Failure']);
    expect(h.events[0]).toEqual({ type: 'PROBE.RESULT', podUid: 'uid-p', containerId: 'c1', containerName: 'app', kind: 'readiness', result: 'Success' });
    h.stop();
  });

  it('liveness Failure after the threshold, then holds until the container ID changes', async () => {
    const h = harness(makePod('p', { containers: [container('app', { livenessProbe: fast })] }));
    h.setContainer('c1');
    h.answers.liveness = 'Failure';
    await h.fake.settle(5_000);
    expect(h.results()).toEqual(['liveness:c1:Failure']);
    expect(h.calls.length).toBe(2);
    h.answers.liveness = 'Success';
    h.setContainer('c2');
    await h.fake.settle(2_000);
    expect(h.calls.map((c) => c.containerId)).toEqual(['c1', 'c1', 'c2', 'c2']);
    // Success is the initial liveness result: nothing to tell.
    expect(h.results()).toEqual(['liveness:c1:Failure']);
    h.stop();
  });

  it('startup gates liveness and readiness', async () => {
    const h = harness(makePod('p', { containers: [container('app', { startupProbe: { ...fast, failureThreshold: 5 }, readinessProbe: { ...fast }, livenessProbe: { ...fast } })] }));
    h.answers.startup = 'Failure';
    h.setContainer('c1');
    await h.fake.settle(1_500);
    expect(new Set(h.calls.map((c) => c.kind))).toEqual(new Set(['startup']));
    h.answers.startup = 'Success';
    await h.fake.settle(3_000);
    expect(h.results()).toEqual(['startup:c1:Success', 'readiness:c1:Success']);
    expect(new Set(h.calls.map((c) => c.kind))).toEqual(new Set(['startup', 'liveness', 'readiness']));
    h.stop();
  });

  it('probes readiness as soon as the container runs, not a period later', async () => {
    const slow = { ...fast, periodSeconds: 20 };
    const h = harness(makePod('p', { containers: [container('app', { readinessProbe: slow })] }));
    // The pod's first status: no container yet. The worker's first tick finds nothing to probe.
    h.statuses.setPodStatus('uid-p', { phase: 'Pending', containerStatuses: [] });
    await h.fake.settle(20_000 + 1);
    const before = h.calls.length;
    h.setContainer('c1');
    await h.fake.settle(100);
    expect(h.calls.slice(before)).toEqual([{ kind: 'readiness', containerId: 'c1', podIP: '10.1.2.3' }]);
    expect(h.results()).toEqual(['readiness:c1:Success']);
    // Once it has a result, status updates do not probe again before the period.
    h.setContainer('c1');
    await h.fake.settle(100);
    expect(h.calls.length).toBe(before + 1);
    h.stop();
  });

  it('a container that is not running is not ready', async () => {
    const h = harness(makePod('p', { containers: [container('app', { readinessProbe: fast })] }));
    h.setContainer('c1');
    await h.fake.settle(1_000);
    h.setContainer('c1', false);
    await h.fake.settle(1_000);
    expect(h.results()).toEqual(['readiness:c1:Success', 'readiness:c1:Failure']);
    h.stop();
  });

  it('a deleting pod reports liveness Success and stops it; a terminal or deleted status removes the workers', async () => {
    const h = harness(makePod('p', { containers: [container('app', { livenessProbe: { ...fast }, readinessProbe: { ...fast } })] }));
    h.setContainer('c1');
    await h.fake.settle(1_000);
    const livenessCalls = h.calls.filter((c) => c.kind === 'liveness').length;
    h.podManager.delete('uid-p');
    h.answers.readiness = 'Failure';
    await h.fake.settle(3_000);
    // Liveness stopped; readiness goes on while the pod terminates.
    expect(h.calls.filter((c) => c.kind === 'liveness').length).toBe(livenessCalls);
    expect(h.results()).toEqual(['readiness:c1:Success', 'readiness:c1:Failure']);
    h.setContainer('c1', true, 'Succeeded');
    const before = h.calls.length;
    await h.fake.settle(5_000);
    expect(h.calls.length).toBe(before);
    h.stop();
  });

  it('removes the workers when the status is deleted', async () => {
    const h = harness(makePod('p', { containers: [container('app', { readinessProbe: fast })] }));
    h.setContainer('c1');
    await h.fake.settle(2_000);
    h.statuses.forgetPod('uid-p');
    const before = h.calls.length;
    await h.fake.settle(5_000);
    expect(h.calls.length).toBe(before);
    h.stop();
  });
});
