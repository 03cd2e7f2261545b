/** StatusManager.reported: what `/pods` says of a pod before and after its first generated status. */
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
    statuses.set('s1', { phase: 'Succeeded' });
    statuses.set('a1', { phase: 'Failed' });
    expect(statuses.reported(staticPod)).toEqual({ phase: 'Succeeded' });
    expect(statuses.reported(apiPod)).toEqual({ phase: 'Failed' });
  });
});

describe('StatusManager.set', () => {
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
    expect(statuses.set('p', running('2026-11-27T10:00:00Z', '10.0.0.1'))).toBe(true);
    expect(statuses.set('p', running('2026-11-27T10:00:00Z', '10.0.0.1'))).toBe(false);
    expect(statuses.set('p', { ...running('2026-11-27T10:00:00Z', '10.0.0.1'), phase: 'Succeeded' })).toBe(true);
    expect(statuses.version('p')).toBe(2);
    expect(told).toEqual(['p Running', 'p Succeeded']);
  });

  it('keeps statuses frozen, sharing what a new one has in common with the last stored', () => {
    const statuses = new StatusManager();
    statuses.set('a', running('2026-11-27T10:00:00Z', '10.0.0.1'));
    statuses.set('b', running('2026-11-27T10:00:01Z', '10.0.0.2'));
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
