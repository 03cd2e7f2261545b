/**
 * The syncLoop's `pods` child: one callback actor that owns the pod workers and dispatches what
 * the syncLoop routes to it, as the kubelet's syncLoopIteration dispatches to its handlers
 * (pkg/kubelet/kubelet.go syncLoopIteration):
 *
 *   CONFIG.*            → the config handlers (configHandlers.ts): pod manager, admission, workers;
 *                         in a cluster, a static pod's change reaches its mirror pod (mirrorClient.ts)
 *   SOURCE.MIRRORS      → the mirror pods the API shows, to keep them in step with the static pods
 *   PLEG.*, PROBE.*     → the pod actor they name
 *   TICK.SYNC           → the work queue: pods due for a resync get POD.SYNC
 *   TICK.HOUSEKEEPING   → a housekeeping pass (src/housekeeping)
 *   POD.SYNCED/TERMINATED (from pod actors) → the work queue; TERMINATED also to the API status
 *                         writer (a terminal phase it held back while containers ran goes out now)
 *   POD.FAILED (from a pod actor) → the log, once per pod and cause (pod_workers.go logs "Error
 *                         syncing pod, skipping" at every retry; a disk full for minutes would
 *                         print a line per pod every few seconds)
 *   POD.FINISHED (from a pod actor), POD.ENDED (a pod actor ended) → housekeeping
 *   NODE.PRESSURE       → admission: the conditions new pods are admitted under
 *   NODE.EVICT_POD      → the pod actor it names, as POD.KILL with the eviction's status
 *
 * Stopping it lets go of every pod actor; the pods' containers keep running.
 */
import { fromCallback } from 'xstate';
import type { NodePressureCondition, Pod } from '../api/types.ts';
import type { ConfigEvent, EventOf, PodEnded, PodReport, PlegEvent, ProbeResultEvent, TickEvent } from '../events.ts';
import { Housekeeping, type RuntimeCleanup } from '../housekeeping/housekeeping.ts';
import type { NodeInfo } from '../admission/admit.ts';
import type { EventRecorder } from '../eventrecorder/recorder.ts';
import { type Logger, RepeatedFailures } from '../log.ts';
import type { PodMachine } from '../pod/pod.ts';
import type { MirrorPodSync } from '../pod/mirrorClient.ts';
import type { PodManager } from '../pod/podManager.ts';
import { PodWorkers } from '../podworkers/podWorkers.ts';
import type { StatusManager } from '../status/manager.ts';
import { podHandlers } from './configHandlers.ts';
import type { AllocationManager } from '../allocation/manager.ts';

/** Everything the `pods` actor accepts. */
export type PodsEvent =
  | ConfigEvent
  | EventOf<'SOURCE.MIRRORS'>
  | PlegEvent
  | ProbeResultEvent
  | TickEvent
  | PodReport
  | PodEnded
  | EventOf<'NODE.PRESSURE'>
  | EventOf<'NODE.EVICT_POD'>;

interface PodsDeps {
  podMachine: PodMachine;
  podManager: PodManager;
  statuses: StatusManager;
  node: () => NodeInfo;
  recorder: EventRecorder;
  /** Every configured source has been seen: before that, a removed pod is not killed (configHandlers.ts); absent: always. */
  sourcesReady?(): boolean;
  runtime: RuntimeCleanup;
  syncFrequencyMs: number;
  /** In a cluster: keeps the static pods' mirror pods in the API. */
  mirrorPods?: MirrorPodSync;
  /** Told when a pod's actor finished (the API status writer deletes a deleted pod's object then). */
  podFinished?(uid: string): void;
  /** Told when a pod's actor has stopped every container of it (the API status writer writes its terminal phase then). */
  podTerminated?(uid: string): void;
  /** What the node allocated to each pod (in-place resize); absent: pods are never resized. */
  allocation?: AllocationManager;
  /** Told when a UID that came back starts afresh (the restarted-pods metric). */
  podRestarted?(pod: Pod): void;
  /** Delay before retrying a pod whose sync failed. */
  errorBackoffMs: number;
  containerGcPeriodMs: number;
  now(): number;
  random(): number;
  log: Logger;
}

export function createPodsLogic(deps: PodsDeps) {
  return fromCallback<PodsEvent>(({ self, receive }) => {
    const { podManager, statuses, log } = deps;
    const workers = new PodWorkers({
      podMachine: deps.podMachine,
      parent: self,
      desired: (uid) => podManager.get(uid),
      // Told from inside the ending actor: handled on this actor's own turn.
      onEnded: (uid, error) => self.send(error === undefined ? { type: 'POD.ENDED', uid } : { type: 'POD.ENDED', uid, error }),
      syncFrequencyMs: deps.syncFrequencyMs,
      errorBackoffMs: deps.errorBackoffMs,
      now: deps.now,
      random: deps.random,
    });
    // What each pod's work last failed of, so that a failure retried again and again is logged once.
    const failures = new RepeatedFailures();
    // The node's pressure conditions as the eviction manager last told them: admission reads them.
    let pressure: NodePressureCondition[] = [];
    const node = () => ({ ...deps.node(), pressure });
    const handlers = podHandlers({
      workers,
      podManager,
      statuses,
      node,
      recorder: deps.recorder,
      sourcesReady: deps.sourcesReady ?? (() => true),
      ...(deps.allocation ? { allocation: deps.allocation, now: deps.now } : {}),
      log,
    });
    const housekeeping = new Housekeeping({
      workers,
      podManager,
      statuses,
      runtime: deps.runtime,
      readmit: handlers.add,
      containerGcPeriodMs: deps.containerGcPeriodMs,
      ...(deps.podRestarted ? { podRestarted: deps.podRestarted } : {}),
      now: deps.now,
      log,
    });

    receive((event) => {
      switch (event.type) {
        case 'CONFIG.ADD':
        case 'CONFIG.UPDATE':
        case 'CONFIG.REMOVE':
        case 'CONFIG.DELETE':
        case 'CONFIG.RECONCILE':
          handlers.handle(event);
          if (event.source !== 'api') deps.mirrorPods?.request();
          return;
        case 'SOURCE.MIRRORS':
          return deps.mirrorPods?.mirrorsSeen(event.pods);
        case 'PLEG.CONTAINER_STARTED':
        case 'PLEG.CONTAINER_DIED':
        case 'PLEG.CONTAINER_REMOVED':
        case 'PROBE.RESULT':
          workers.send(event.podUid, event);
          return;
        case 'TICK.SYNC':
          return workers.syncDue();
        case 'TICK.RUNTIME_BACK':
          return workers.syncFailed();
        case 'TICK.HOUSEKEEPING':
          deps.mirrorPods?.request();
          // The allocations of pods no source names any more go (HandlePodCleanups, RemoveOrphanedPods); pending resizes are retried when due.
          deps.allocation?.removeOrphans((uid) => podManager.get(uid) !== undefined);
          handlers.resizes?.tick();
          return housekeeping.tick();
        case 'POD.FAILED':
          if (failures.isNews(event.uid, `${event.work}: ${event.error}`)) {
            log('error', 'Error syncing pod, skipping', { pod: event.pod, podUID: event.uid, work: event.work, err: event.error });
          }
          return;
        case 'POD.SYNCED':
        case 'POD.TERMINATED':
          if (event.type === 'POD.TERMINATED' || event.ok) failures.resolved(event.uid);
          if (event.type === 'POD.TERMINATED') {
            deps.podTerminated?.(event.uid);
            // A pod that stopped frees its room for a pending resize (HandlePodReconcile).
            if (deps.allocation?.pending().length) handlers.resizes?.retry('pod_terminated');
          }
          return workers.schedule(event);
        case 'POD.FINISHED':
          failures.resolved(event.uid);
          deps.podFinished?.(event.uid);
          return housekeeping.podFinished(event.uid, event.restartRequested);
        case 'POD.ENDED':
          failures.resolved(event.uid);
          return housekeeping.podEnded(event.uid, event.error);
        case 'NODE.PRESSURE':
          pressure = event.conditions;
          return;
        case 'NODE.EVICT_POD':
          workers.send(event.uid, { type: 'POD.KILL', gracePeriodSeconds: event.gracePeriodSeconds, status: event.status, reason: 'evicted' });
          return;
      }
    });

    return () => workers.releaseAll();
  });
}
