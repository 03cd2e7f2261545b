/** StatusManager: what `/pods` says of a pod before and after its first generated status, and its named mutations. */
import { describe, expect, it } from 'vitest';
import type { Pod, PodStatus } from '../../src/api/types.ts';
import { StatusManager } from '../../src/status/manager.ts';

const staticPod = { metadata: { name: 'web-node', namespace: 'default', uid: 's1', annotations: { 'kubernetes.io/config.source': 'file' } }, spec: { containers: [] }, status: { phase: 'Pending' } } as unknown as Pod;
const apiPod = { metadata: { name: 'job', namespace: 'default', uid: 'a1', annotations: { 'kubernetes.io/config.source': 'api' } }, spec: { containers: [] }, status: { phase: 'Succeeded' } } as unknown as Pod;

describe('StatusManager.reported', () => {
  it("reports no phase for a static pod not synced yet (its Pending is the source's default, not an observation)", () => {
    expect(new StatusManager().reported(staticPod)).toEqual({});
  });

  it("reports an API pod's own status (the API server's record) until the agent has one", () => {
    expect(new StatusManager().reported(apiPod)).toEqual({ phase: 'Succeeded' });
  });

  it('reports the generated status once there is one', () => {
    const statuses = new StatusManager();
    statuses.setPodStatus('s1', { phase: 'Succeeded' });
    statuses.setPodStatus('a1', { phase: 'Failed' });
    expect(statuses.reported(staticPod)).toEqual({ phase: 'Succeeded' });
    expect(statuses.reported(apiPod)).toEqual({ phase: 'Failed' });
  });
});

describe('StatusManager.setPodStatus', () => {
  const running = (startedAt: string, ip: string): PodStatus => ({
    phase: 'Running',
    podIP: ip,
    conditions: [{ type: 'Ready', status: 'True', lastTransitionTime: '2026-11-27T10:00:00Z' }],
    containerStatuses: [{ name: 'app', ready: true, restartCount: 0, image: 'busybox', imageID: 'sha256:1', state: { running: { startedAt } }, lastState: {} }],
  });

  it('bumps the version and tells its listeners only when the status changed', () => {
    const statuses = new StatusManager();
    const told: string[] = [];
    statuses.subscribe((uid, status) => void told.push(`${uid} ${status?.phase}`));
    statuses.setPodStatus('p', running('2026-11-27T10:00:00Z', '10.0.0.1'));
    expect(statuses.version('p')).toBe(1);
    statuses.setPodStatus('p', running('2026-11-27T10:00:00Z', '10.0.0.1'));
    expect(statuses.version('p')).toBe(1);
    statuses.setPodStatus('p', { ...running('2026-11-27T10:00:00Z', '10.0.0.1'), phase: 'Succeeded' });
    expect(statuses.version('p')).toBe(2);
    expect(told).toEqual(['p Running', 'p Succeeded']);
  });

  it('keeps statuses frozen, sharing what a new one has in common with the last stored', () => {
    const statuses = new StatusManager();
    statuses.setPodStatus('a', running('2026-11-27T10:00:00Z', '10.0.0.1'));
    statuses.setPodStatus('b', running('2026-11-27T10:00:01Z', '10.0.0.2'));
    const [a, b] = [statuses.get('a')!, statuses.get('b')!];
    expect(b.podIP).toBe('10.0.0.2');
    expect(b.containerStatuses![0]!.state).toEqual({ running: { startedAt: '2026-11-27T10:00:01Z' } });
    expect(b.conditions).toBe(a.conditions);
    expect(b.containerStatuses![0]!.lastState).toBe(a.containerStatuses![0]!.lastState);
    expect(() => {
      b.conditions![0]!.status = 'False';
    }).toThrow(TypeError);
  });
});

describe('the other named mutations', () => {
  const pod = { metadata: { name: 'web', namespace: 'default', uid: 'w1', generation: 3 }, spec: { containers: [{ name: 'app', image: 'busybox' }] } } as unknown as Pod;

  it('rejectPod: Failed with the reason, the message as the kubelet words it, and the generation', () => {
    const statuses = new StatusManager();
    statuses.rejectPod(pod, 'OutOfpods', 'Node didn\'t have enough resource: pods');
    expect(statuses.get('w1')).toEqual({ observedGeneration: 3, phase: 'Failed', reason: 'OutOfpods', message: "Pod was rejected: Node didn't have enough resource: pods" });
  });

  it('setContainerReadiness changes nothing for a pod without a status, and the container and Ready for one with it', () => {
    const statuses = new StatusManager();
    statuses.setContainerReadiness(pod, 'app', true, Date.parse('2026-11-27T10:00:00Z'));
    expect(statuses.get('w1')).toBeUndefined();
    statuses.setPodStatus('w1', {
      phase: 'Running',
      conditions: [{ type: 'Ready', status: 'False' }, { type: 'ContainersReady', status: 'False' }],
      containerStatuses: [{ name: 'app', ready: false, restartCount: 0, image: 'busybox', imageID: '', state: { running: { startedAt: '2026-11-27T09:59:00Z' } }, lastState: {} }],
    });
    statuses.setContainerReadiness(pod, 'app', true, Date.parse('2026-11-27T10:00:00Z'));
    const status = statuses.get('w1')!;
    expect(status.containerStatuses![0]!.ready).toBe(true);
    expect(status.conditions!.find((c) => c.type === 'Ready')).toMatchObject({ status: 'True', lastTransitionTime: '2026-11-27T10:00:00Z' });
  });

  it('terminatePod reports a container that never ran as terminated, ContainerStatusUnknown', () => {
    const statuses = new StatusManager();
    statuses.terminatePod(pod, {
      phase: 'Running',
      conditions: [{ type: 'Initialized', status: 'True' }],
      containerStatuses: [{ name: 'app', ready: false, restartCount: 0, image: 'busybox', imageID: '', state: { waiting: { reason: 'ContainerCreating' } }, lastState: {} }],
    });
    expect(statuses.get('w1')!.containerStatuses![0]!.state.terminated).toMatchObject({ exitCode: 137, reason: 'ContainerStatusUnknown' });
  });

  it('forgetPod tells its listeners the status is gone, once', () => {
    const statuses = new StatusManager();
    const told: (string | undefined)[] = [];
    statuses.subscribe((_uid, status) => void told.push(status?.phase));
    statuses.setPodStatus('w1', { phase: 'Running' });
    statuses.forgetPod('w1');
    statuses.forgetPod('w1');
    expect(told).toEqual(['Running', undefined]);
    expect(statuses.get('w1')).toBeUndefined();
    expect(statuses.version('w1')).toBe(0);
  });
});
