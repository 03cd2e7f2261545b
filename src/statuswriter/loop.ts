/**
 * The pod status writer's registration: in a cluster only (kubelet.go starts the status manager
 * with the node), it writes pod statuses to the API server; the syncLoop passes it the pods' news.
 */
import { defineNodeLoop } from '../nodeloop/nodeLoop.ts';
import { statusWriter } from './effects.ts';
import { statusWriterMachine, statusWriterMachineWith } from './statusWriter.ts';

/** status_manager.go syncPeriod. */
export const STATUS_RESYNC_MS = 10_000;

export const statusWriterLoop = defineNodeLoop({
  name: 'statusWriter',
  machine: statusWriterMachine,
  start: ({ cluster, statuses, pods, clock, log, observe }) =>
    cluster
      ? {
          logic: statusWriterMachineWith({
            writer: statusWriter({
              api: cluster.api,
              statuses,
              pod: pods.desired,
              stages: pods.stages,
              clock,
              log,
              ...(observe.statusWrites ? { metrics: (progress) => observe.statusWrites?.(progress) } : {}),
            }),
          }),
          input: { resyncMs: STATUS_RESYNC_MS },
        }
      : null,
  accepts: ['POD.TERMINATED', 'POD.FINISHED', 'STATUS.REWRITE'],
  /** `120 written · 3 deleted · 2 queued`, and the last failure. */
  summary: (c) => `${c.writes} written · ${c.deletes} deleted · ${c.queued} queued${c.lastError ? ` · ${c.lastError}` : ''}`,
});
