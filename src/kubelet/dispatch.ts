/**
 * The syncLoop's `pods` child: one callback actor that owns the pod workers and dispatches what
 * the syncLoop routes to it, as the kubelet's syncLoopIteration dispatches to its handlers
 * (pkg/kubelet/kubelet.go syncLoopIteration):
 *
 *   CONFIG.*            → the config handlers (configHandlers.ts): pod manager, admission, workers;
 *                         in a cluster, a static pod's change reaches its mirror pod (mirrorClient.ts;
 *                         a mirror created is passed up as STATUS.REWRITE, for the status writer)
 *   SOURCE.MIRRORS      → the mirror pods the API shows, to keep them in step with the static pods
 *   SOURCE.ERROR        → the event a source asks to record on a pod it left out
 *   PLEG.*, PROBE.*     → the pod actor they name
 *   TICK.SYNC           → the work queue: pods due for a resync get POD.SYNC
 *   TICK.HOUSEKEEPING   → a housekeeping pass (src/housekeeping)
 *   POD.TERMINATING/TERMINATED/FINISHED (from pod actors) → the workers' record of each pod's stage
 *   POD.SYNCED/TERMINATED (from pod actors) → the work queue; TERMINATED is also passed up, for the
 *                         status writer (a terminal phase it held back while containers ran goes out now)
 *   POD.FAILED (from a pod actor) → the log, once per pod and cause (pod_workers.go logs "Error
 *                         syncing pod, skipping" at every retry; a disk full for minutes would
 *                         print a line per pod every few seconds)
 *   POD.FINISHED (from a pod actor), POD.ENDED (a pod actor ended) → housekeeping; FINISHED is also
 *                         passed up, for the status writer (a deleted pod's object may go now)
 *   NODE.PRESSURE       → admission: the conditions new pods are admitted under
 *   NODE.EVICT_POD      → the pod actor it names, as POD.KILL with the eviction's status
 *
 * Stopping it lets go of every pod actor; the pods' containers keep running.
 */
import { type EventObject, fromCallback } from 'xstate';
import type { NodePressureCondition, Pod } from '../api/types.ts';
import { isStaticPod } from '../api/types.ts';
import { type ConfigEvent, type EventOf, type PodEnded, type PodReport, type PlegEvent, type ProbeResultEvent, type StatusWriterEvent, type TickEvent, routedToPodWorkers } from '../events.ts';
import { Housekeeping, type RuntimeCleanup } from '../housekeeping/housekeeping.ts';
import type { NodeInfo } from '../admission/admit.ts';
import { type EventRecorder, podReference } from '../eventrecorder/recorder.ts';
import { type Logger, RepeatedFailures } from '../log.ts';
import type { PodMachine } from '../pod/pod.ts';
import { type MirrorPodSettings, MirrorPodSync } from '../pod/mirrorClient.ts';
import type { PodManager } from '../pod/podManager.ts';
import { PodWorkers } from '../podworkers/podWorkers.ts';
import type { PodStages } from '../podworkers/podStages.ts';
import type { PodRejecter, PodStatusReader, StatusForgetter } from '../status/manager.ts';
import { podHandlers } from './configHandlers.ts';
import type { AllocationManager } from '../allocation/manager.ts';

/** Everything the `pods` actor accepts. */
export type PodsEvent =
  | ConfigEvent
  | EventOf<'SOURCE.MIRRORS'>
  | EventOf<'SOURCE.ERROR'>
  | PlegEvent
  | ProbeResultEvent
  | TickEvent
  | PodReport
  | PodEnded
  | EventOf<'NODE.PRESSURE'>
  | EventOf<'NODE.EVICT_POD'>;

/** What the syncLoop routes here, as opposed to what the pod actors report. */
const routed = new Set<string>(routedToPodWorkers);

interface PodsDeps {
  podMachine: PodMachine;
  /** Where the workers record each pod's stage, for the rest of the node to read. */
  stages: PodStages;
  /** The pods that count against admission (podworkers/activePods.ts). */
  activePods(): Pod[];
  podManager: PodManager;
  statuses: PodStatusReader & PodRejecter & StatusForgetter;
  node: () => NodeInfo;
  recorder: EventRecorder;
  /** Every configured source has been seen: before that, a removed pod is not killed (configHandlers.ts). */
  sourcesReady(): boolean;
  runtime: RuntimeCleanup;
  syncFrequencyMs: number;
  /** In a cluster: where the static pods' mirror pods are kept in step (mirrorClient.ts). */
  mirrorPods?: MirrorPodSettings;
  /** What the node allocated to each pod (in-place resize); absent: pods are never resized. */
  allocation?: AllocationManager;
  /** Told of what the metrics count here: a UID that came back starts afresh, an event routed here. */
  metrics: { podRestarted?(isStatic: boolean): void; eventRouted?(type: string): void };
  /** Delay before retrying a pod whose sync failed. */
  errorBackoffMs: number;
  now(): number;
  random(): number;
  log: Logger;
}

export function createPodsLogic(deps: PodsDeps) {
  return fromCallback<PodsEvent>(({ self, receive, sendBack }) => {
    const { podManager, statuses, log, metrics } = deps;
    /** Passed up for the node loops (the status writer). */
    const passUp = (event: EventOf<'POD.TERMINATED'> | EventOf<'POD.FINISHED'> | Extract<StatusWriterEvent, { type: 'STATUS.REWRITE' }>) => sendBack(event satisfies EventObject);
    const mirrorPods =
      deps.mirrorPods &&
      new MirrorPodSync({
        ...deps.mirrorPods,
        staticPods: () => [...podManager.all()].filter(isStaticPod),
        onCreated: (pod) => passUp({ type: 'STATUS.REWRITE', uid: pod.metadata.uid }),
        log,
        now: deps.now,
      });
    const workers = new PodWorkers({
      podMachine: deps.podMachine,
      parent: self,
      stages: deps.stages,
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
      sourcesReady: deps.sourcesReady,
      activePods: deps.activePods,
      ...(deps.allocation ? { allocation: deps.allocation, now: deps.now } : {}),
      log,
    });
    const housekeeping = new Housekeeping({
      workers,
      stages: deps.stages,
      podManager,
      statuses,
      runtime: deps.runtime,
      readmit: handlers.add,
      ...(metrics.podRestarted ? { podRestarted: (pod: Pod) => metrics.podRestarted?.(isStaticPod(pod)) } : {}),
      log,
    });

    receive((event) => {
      if (routed.has(event.type)) metrics.eventRouted?.(event.type);
      switch (event.type) {
        case 'CONFIG.ADD':
        case 'CONFIG.UPDATE':
        case 'CONFIG.REMOVE':
        case 'CONFIG.DELETE':
        case 'CONFIG.RECONCILE':
          handlers.handle(event);
          if (event.source !== 'api') mirrorPods?.request();
          return;
        case 'SOURCE.MIRRORS':
          return mirrorPods?.mirrorsSeen(event.pods);
        case 'SOURCE.ERROR':
          if (event.warning) deps.recorder.event(podReference(event.warning.pod), 'Warning', event.warning.reason, event.warning.message);
          return;
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
          mirrorPods?.request();
          // The allocations of pods no source names any more go (HandlePodCleanups, RemoveOrphanedPods); pending resizes are retried when due.
          deps.allocation?.removeOrphans((uid) => podManager.get(uid) !== undefined);
          handlers.resizes?.tick();
          return housekeeping.tick();
        case 'POD.FAILED':
          if (failures.isNews(event.uid, `${event.work}: ${event.error}`)) {
            log('error', 'Error syncing pod, skipping', { pod: event.pod, podUID: event.uid, work: event.work, err: event.error });
          }
          return;
        case 'POD.TERMINATING':
          return workers.reported(event);
        case 'POD.SYNCED':
        case 'POD.TERMINATED':
          if (event.type === 'POD.TERMINATED' || event.ok) failures.resolved(event.uid);
          if (event.type === 'POD.TERMINATED') {
            workers.reported(event);
            passUp(event);
            // A pod that stopped frees its room for a pending resize (HandlePodReconcile).
            if (deps.allocation?.pending().length) handlers.resizes?.retry('pod_terminated');
          }
          return workers.schedule(event);
        case 'POD.FINISHED':
          failures.resolved(event.uid);
          workers.reported(event);
          passUp(event);
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
