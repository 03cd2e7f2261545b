/** How probe results fill in `started`, `ready` and the pod's readiness conditions (pkg/kubelet/prober/prober_manager.go UpdatePodStatus; pkg/kubelet/status/generate.go). */
import { describe, expect, it } from 'vitest';
import type { Container } from '../../src/api/types.ts';
import { generatePodStatus } from '../../src/status/generate.ts';
import { T0, basePod, baseRuntime, ctr } from '../support/podFixtures.ts';

const probe = { exec: { command: ['true'] } };

function statusOf(container: Container, results: { readiness?: Record<string, boolean>; started?: Record<string, boolean> } = {}) {
  const pod = basePod({ containers: [container] });
  const runtime = baseRuntime(pod);
  const id = runtime.containers[0]!.id;
  const resolve = (r?: Record<string, boolean>) => (r ? Object.fromEntries(Object.entries(r).map(([k, v]) => [k === 'ID' ? id : k, v])) : undefined);
  const readiness = resolve(results.readiness);
  const started = resolve(results.started);
  const status = generatePodStatus({
    pod,
    runtime,
    reasons: {},
    podIsTerminal: false,
    nowMs: T0 + 10_000,
    runtimeName: 'containerd',
    ...(readiness ? { readiness } : {}),
    ...(started ? { started } : {}),
  });
  const conditions = Object.fromEntries((status.conditions ?? []).map((c) => [c.type, c.status]));
  const { started: s, ready } = status.containerStatuses![0]!;
  return { started: s, ready, containersReady: conditions['ContainersReady'], podReady: conditions['Ready'] };
}

interface Case {
  name: string;
  c: Container;
  r: { readiness?: Record<string, boolean>; started?: Record<string, boolean> };
  want: Partial<ReturnType<typeof statusOf>>;
}

describe('status fill-in from probe results', () => {
  it.each<Case>([
    { name: 'no probes: started and ready when running', c: ctr('a'), r: {}, want: { started: true, ready: true, containersReady: 'True', podReady: 'True' } },
    { name: 'readiness probe without a result: not ready', c: ctr('a', { readinessProbe: probe }), r: {}, want: { started: true, ready: false, containersReady: 'False', podReady: 'False' } },
    { name: 'readiness Success', c: ctr('a', { readinessProbe: probe }), r: { readiness: { ID: true } }, want: { started: true, ready: true, containersReady: 'True', podReady: 'True' } },
    { name: 'readiness Failure', c: ctr('a', { readinessProbe: probe }), r: { readiness: { ID: false } }, want: { started: true, ready: false, podReady: 'False' } },
    { name: 'readiness of another container ID does not count', c: ctr('a', { readinessProbe: probe }), r: { readiness: { other: true } }, want: { ready: false } },
    { name: 'startup probe without a result: neither started nor ready', c: ctr('a', { startupProbe: probe }), r: {}, want: { started: false, ready: false, podReady: 'False' } },
    { name: 'startup Success: started, and ready without a readiness probe', c: ctr('a', { startupProbe: probe }), r: { started: { ID: true } }, want: { started: true, ready: true } },
    { name: 'not started: readiness Success does not make it ready', c: ctr('a', { startupProbe: probe, readinessProbe: probe }), r: { readiness: { ID: true } }, want: { started: false, ready: false } },
  ])('$name', ({ c, r, want }) => {
    expect(statusOf(c, r)).toMatchObject(want);
  });
});
