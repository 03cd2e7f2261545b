/**
 * The node's Lease, pure (k8s.io/component-helpers/apimachinery/lease/controller.go newLease,
 * pkg/kubelet/util/nodelease.go setNodeOwnerFunc): named after the node in `kube-node-lease`,
 * held by the node, renewed every quarter of its duration, owned by the Node once the Node's UID
 * is known. A failed renewal is retried after 200 ms, doubling to 7 s (backoffEnsureLease).
 */
import type { Lease, OwnerReference } from '../api/cluster.ts';

export const LEASE_NAMESPACE = 'kube-node-lease';
/** The renew interval as a fraction of the lease duration (pkg/kubelet/kubelet.go renewIntervalFraction). */
const RENEW_INTERVAL_FRACTION = 0.25;
const LEASE_BACKOFF = { firstMs: 200, maxMs: 7_000 };

export function renewIntervalMs(leaseDurationSeconds: number): number {
  return leaseDurationSeconds * 1000 * RENEW_INTERVAL_FRACTION;
}

/** Delay before the next try after `failures` failed renewals in a row (1, 2, …). */
export function leaseBackoffMs(failures: number): number {
  return Math.min(LEASE_BACKOFF.firstMs * 2 ** Math.max(0, failures - 1), LEASE_BACKOFF.maxMs);
}

/** metav1.MicroTime: RFC 3339 with six fractional digits. */
export function microTime(ms: number): string {
  return new Date(ms).toISOString().replace(/\.(\d{3})Z$/, '.$1000Z');
}

export function nodeOwner(node: { name: string; uid: string }): OwnerReference {
  return { apiVersion: 'v1', kind: 'Node', name: node.name, uid: node.uid };
}

/**
 * The lease to write: `base` (the last one read or written) renewed now, or a new one; with the
 * Node as owner when it is known and not yet an owner.
 */
export function renewedLease(base: Lease | null, nodeName: string, leaseDurationSeconds: number, nowMs: number, owner: OwnerReference | null): Lease {
  const lease: Lease = base
    ? { ...base, metadata: { ...base.metadata }, spec: { ...base.spec } }
    : {
        apiVersion: 'coordination.k8s.io/v1',
        kind: 'Lease',
        metadata: { name: nodeName, namespace: LEASE_NAMESPACE },
        spec: { holderIdentity: nodeName, leaseDurationSeconds },
      };
  lease.spec.renewTime = microTime(nowMs);
  const owners = (lease.metadata.ownerReferences ?? []) as OwnerReference[];
  if (owner && !owners.some((o) => o.uid === owner.uid)) lease.metadata.ownerReferences = [...owners, owner];
  return lease;
}
