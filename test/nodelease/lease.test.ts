import { describe, expect, it } from 'vitest';
import { leaseBackoffMs, microTime, nodeOwner, renewIntervalMs, renewedLease } from '../../src/nodelease/lease.ts';

describe('the node Lease', () => {
  it('is renewed every quarter of its duration', () => {
    expect(renewIntervalMs(40)).toBe(10_000);
    expect(renewIntervalMs(20)).toBe(5_000);
  });

  it.each([
    [1, 200],
    [2, 400],
    [5, 3_200],
    [6, 6_400],
    [7, 7_000],
    [30, 7_000],
  ])('backs off after %i failures: %i ms', (failures, ms) => expect(leaseBackoffMs(failures)).toBe(ms));

  it('writes renewTime as a MicroTime', () => {
    expect(microTime(Date.UTC(2026, 10, 24, 10, 0, 0, 123))).toBe('2026-11-24T10:00:00.123000Z');
  });

  it('creates a lease held by the node, owned by the Node, and renews only renewTime', () => {
    const owner = nodeOwner({ name: 'n1', uid: 'u1' });
    const created = renewedLease(null, 'n1', 40, 0, owner);
    expect(created).toEqual({
      apiVersion: 'coordination.k8s.io/v1',
      kind: 'Lease',
      metadata: { name: 'n1', namespace: 'kube-node-lease', ownerReferences: [{ apiVersion: 'v1', kind: 'Node', name: 'n1', uid: 'u1' }] },
      spec: { holderIdentity: 'n1', leaseDurationSeconds: 40, renewTime: '1970-01-01T00:00:00.000000Z' },
    });
    const stored = { ...created, metadata: { ...created.metadata, resourceVersion: '7' } };
    const renewed = renewedLease(stored, 'n1', 40, 10_000, owner);
    expect(renewed.metadata).toEqual(stored.metadata);
    expect(renewed.spec.renewTime).toBe('1970-01-01T00:00:10.000000Z');
    expect(stored.spec.renewTime).toBe('1970-01-01T00:00:00.000000Z');
  });

  it('adds the Node as owner to a lease written before the Node was known', () => {
    const orphan = renewedLease(null, 'n1', 40, 0, null);
    expect(orphan.metadata.ownerReferences).toBeUndefined();
    expect(renewedLease(orphan, 'n1', 40, 1, nodeOwner({ name: 'n1', uid: 'u1' })).metadata.ownerReferences).toHaveLength(1);
  });
});
