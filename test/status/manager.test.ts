/** StatusManager.reported: what `/pods` says of a pod before and after its first generated status. */
import { describe, expect, it } from 'vitest';
import type { Pod } from '../../src/api/types.ts';
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
