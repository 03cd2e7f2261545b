/**
 * The Lease's effect over the API client: renew the node's Lease from the one last written, or
 * read it afresh (created, owned by the Node, when missing). How the Lease is renewed is decided
 * in src/node/lease.ts; here are the calls.
 */
import type { Lease } from '../api/cluster.ts';
import { isConflict, isNotFound, type KubeApi } from '../client/api.ts';
import type { Logger } from '../log.ts';
import { LEASE_NAMESPACE, nodeOwner, renewedLease } from './lease.ts';
import type { NodeRecord } from '../node/record.ts';
import type { LeaseEffects } from './nodeLease.ts';

interface LeaseEffectsDeps {
  api: KubeApi;
  /** Whose UID owns the Lease. */
  record: NodeRecord;
  nodeName: string;
  leaseDurationSeconds: number;
  now: () => number;
  log: Logger;
}

export function createLeaseEffects(deps: LeaseEffectsDeps): LeaseEffects {
  const { api, nodeName, leaseDurationSeconds, record } = deps;
  const owner = () => (record.uid ? nodeOwner({ name: nodeName, uid: record.uid }) : null);
  const renewed = (base: Lease | null) => renewedLease(base, nodeName, leaseDurationSeconds, deps.now(), owner());
  return {
    async renew(latest) {
      if (latest) return api.updateLease(renewed(latest));
      let current: Lease;
      try {
        current = await api.getLease(LEASE_NAMESPACE, nodeName);
      } catch (err) {
        if (!isNotFound(err)) throw err;
        // The kubelet creates its Lease only with the Node as owner (nodelease.go setNodeOwnerFunc).
        if (!owner()) throw new Error(`the Lease ${LEASE_NAMESPACE}/${nodeName} is created once the Node is registered`);
        return api.createLease(renewed(null));
      }
      try {
        return await api.updateLease(renewed(current));
      } catch (err) {
        if (isConflict(err)) deps.log('warn', 'The Lease changed under the agent; reading it again', { lease: `${LEASE_NAMESPACE}/${nodeName}` });
        throw err;
      }
    },
  };
}
