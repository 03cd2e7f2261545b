/**
 * The Lease's registration: in a cluster only, the node's heartbeat in `kube-node-lease`
 * (kubelet.go starts the node lease controller beside the sync loop).
 */
import { defineNodeLoop } from '../nodeloop/nodeLoop.ts';
import { createLeaseEffects } from './effects.ts';
import { nodeLeaseMachine, nodeLeaseMachineWith } from './nodeLease.ts';

export const nodeLeaseLoop = defineNodeLoop({
  name: 'nodeLease',
  machine: nodeLeaseMachine,
  start: ({ config, cluster, nodeRecord, clock, log }) =>
    cluster
      ? {
          logic: nodeLeaseMachineWith(
            createLeaseEffects({ api: cluster.api, record: nodeRecord, nodeName: config.nodeName, leaseDurationSeconds: config.nodeLeaseDurationSeconds, now: () => clock.now(), log }),
          ),
          input: { leaseDurationSeconds: config.nodeLeaseDurationSeconds },
        }
      : null,
  accepts: [],
  /** `renewed 14:02:15 · 12 renewals`, or the failures. */
  summary: (c) => {
    const renewed = c.lastRenewTime ? `renewed ${c.lastRenewTime.slice(11, 19)}` : 'not renewed yet';
    const failing = c.failures ? ` · ${c.failures} failures: ${c.lastError ?? ''}` : '';
    return `${renewed} · ${c.renewals} renewals${failing}`;
  },
});
