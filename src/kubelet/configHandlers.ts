/**
 * The kubelet's config handlers (pkg/kubelet/kubelet.go HandlePodAdditions, HandlePodUpdates,
 * HandlePodRemoves, HandlePodReconcile): what a CONFIG.* event does to the pod manager, the
 * statuses and the pod workers.
 *
 * Additions are taken oldest first (by creation time) and admitted against the pods that are
 * active (admitted and not yet terminated), counted once per batch and grown as pods are admitted,
 * so a batch of N costs O(N). A rejected pod gets a `Failed` status with `Pod was rejected: …`
 * and no actor (pkg/kubelet/kubelet.go rejectPod). A terminal pod (a completed pod coming back
 * after a restart of the agent) is not admitted again: it gets its actor, which runs nothing of
 * it, and keeps its status (admission/active.ts). A pod that already has an actor gets the new
 * spec as a `create` (a UID coming back while terminating starts over once it has finished).
 * Removal kills the pod's actor as deleted; a pod that never got one is simply forgotten. Until
 * every configured source has been seen, a removed pod only leaves the pod manager: its actor is
 * not killed (pkg/kubelet/kubelet.go deletePod: "skipping delete because sources aren't ready
 * yet"), and housekeeping, which starts once they all have been, stops it then
 * (src/housekeeping/housekeeping.ts, as HandlePodCleanups through SyncKnownPods).
 */
import type { Pod } from '../api/types.ts';
import { podRef } from '../api/types.ts';
import type { ConfigEvent } from '../events.ts';
import { type NodeInfo, admitPod } from '../admission/admit.ts';
import { needsAdmission } from '../admission/active.ts';
import { addAmounts, podRequests, sumRequests } from '../admission/resources.ts';
import type { Logger } from '../log.ts';
import { type EventRecorder, podReference } from '../eventrecorder/recorder.ts';
import type { PodManager } from '../pod/podManager.ts';
import type { PodWorkers } from '../podworkers/podWorkers.ts';
import type { PodRejecter, PodStatusReader, StatusForgetter } from '../status/manager.ts';
import type { AllocationManager } from '../allocation/manager.ts';
import { type PodResizes, podResizes } from './podResizes.ts';

interface PodHandlerDeps {
  workers: PodWorkers;
  podManager: PodManager;
  statuses: PodStatusReader & PodRejecter & StatusForgetter;
  /** The node as admission sees it now (its labels, allocatable and taints once registered). */
  node: () => NodeInfo;
  recorder: EventRecorder;
  /** Every configured source has been seen (config.go SeenAllSources, the syncLoop's `sources.ready`). */
  sourcesReady(): boolean;
  /** The pods that count against admission (podworkers/activePods.ts), as allocated. */
  activePods(): Pod[];
  /**
   * What the node allocated to each pod (in-place resize: src/allocation); absent: pods run as
   * their sources describe them and are never resized.
   */
  allocation?: AllocationManager;
  /** Wall-clock milliseconds, for the resize retries; Date.now by default. */
  now?(): number;
  log: Logger;
}

interface PodHandlers {
  handle(event: ConfigEvent): void;
  /** HandlePodAdditions: admit and start the pods that have no actor, update those that have. */
  add(pods: readonly Pod[]): void;
  /** In-place resizes (with an allocation manager): their retries are driven from here too. */
  resizes?: PodResizes;
}

export function podHandlers(deps: PodHandlerDeps): PodHandlers {
  const { workers, podManager, statuses, allocation, log } = deps;
  /** The pod as its worker runs it: with the resources the node allocated (UpdatePodFromAllocation). */
  const allocatedPod = (pod: Pod) => (allocation ? allocation.allocatedPod(pod) : pod);

  const { activePods } = deps;
  const resizes = allocation
    ? podResizes({
        allocation,
        workers,
        podManager,
        recorder: deps.recorder,
        node: deps.node,
        activePods,
        sourcesReady: deps.sourcesReady,
        now: deps.now ?? Date.now,
        log,
      })
    : undefined;

  const add = (pods: readonly Pod[]) => {
    const sorted = [...pods].sort((a, b) => (a.metadata.creationTimestamp ?? '').localeCompare(b.metadata.creationTimestamp ?? ''));
    const active = activePods();
    const used = sumRequests(active);
    const node = deps.node();
    const pendingResizes: string[] = [];
    for (const requested of sorted) {
      const uid = requested.metadata.uid;
      podManager.set(requested);
      // After a restart of the agent, the checkpointed allocation is what the pod was admitted with (AddPod).
      const pod = allocatedPod(requested);
      allocation?.backfill(requested);
      if (workers.send(uid, { type: 'POD.UPDATE', pod, updateType: 'create' })) {
        // Seen again with other resources than it has (a resize while the source was away): queued as HandlePodAdditions does.
        if (allocation?.has(uid) && allocation.hasPendingChange(requested)) pendingResizes.push(uid);
        continue;
      }
      const admit = needsAdmission(pod, statuses.get(uid), 'none');
      const admission = admit ? admitPod(pod, active, node, used) : null;
      if (admission && !admission.admit) {
        log('warn', 'Pod rejected', { pod: podRef(pod), reason: admission.reason, message: admission.message });
        deps.recorder.event(podReference(pod), 'Warning', admission.reason, admission.message);
        statuses.rejectPod(pod, admission.reason, admission.message);
        continue;
      }
      if (admit && allocation) {
        // Checkpoint the resources the pod is admitted with; a resize left pending before a restart is tried again.
        allocation.setAllocated(pod);
        if (allocation.hasPendingChange(requested)) pendingResizes.push(uid);
      }
      if (!workers.start(pod)) {
        log('info', 'Static pod waits for the previous pod of its name to terminate', {
          pod: podRef(pod),
          podUID: uid,
          previousUID: workers.staticNameHolder(pod),
        });
        continue;
      }
      // A terminal pod holds nothing: its actor only makes sure none of it runs.
      if (!admit) continue;
      active.push(pod);
      addAmounts(used, podRequests(pod));
    }
    if (resizes && pendingResizes.length) {
      for (const uid of pendingResizes) resizes.queue(uid);
      resizes.retry('pods_added');
    }
  };

  const update = (pods: readonly Pod[]) => {
    for (const pod of pods) {
      const old = podManager.get(pod.metadata.uid);
      podManager.set(pod);
      // A changed CPU or memory is a resize: accepted, pending or refused before the worker sees the pod (HandlePodUpdates).
      resizes?.updated(old, pod);
      workers.send(pod.metadata.uid, { type: 'POD.UPDATE', pod: allocatedPod(pod), updateType: 'update' });
    }
  };

  const remove = (pods: readonly Pod[]) => {
    const ready = deps.sourcesReady();
    for (const pod of pods) {
      const uid = pod.metadata.uid;
      podManager.delete(uid);
      allocation?.removePod(uid);
      if (!ready && workers.has(uid)) {
        // A source not yet seen may still name it: housekeeping stops it once all have been.
        log('info', "Pod removed from config; it is stopped once every source has been seen (skipping delete because sources aren't ready yet)", { pod: podRef(pod), podUID: uid });
        continue;
      }
      if (workers.send(uid, { type: 'POD.KILL', deleted: true, reason: 'removed from config' })) continue;
      workers.dropWaiting(pod);
      statuses.forgetPod(uid);
    }
    // Their room may let a pending resize through.
    resizes?.retry('pods_removed');
  };

  return {
    add,
    ...(resizes ? { resizes } : {}),
    handle(event) {
      switch (event.type) {
        case 'CONFIG.ADD':
          return add(event.pods);
        case 'CONFIG.UPDATE':
        case 'CONFIG.DELETE':
          return update(event.pods);
        case 'CONFIG.REMOVE':
          return remove(event.pods);
        case 'CONFIG.RECONCILE':
          for (const pod of event.pods) {
            podManager.set(pod);
            // A controller set a readiness gate's condition: Ready is generated again by a sync
            // (pkg/kubelet/kubelet.go HandlePodReconcile, NeedToReconcilePodReadiness).
            if (Array.isArray(pod.spec.readinessGates) && pod.spec.readinessGates.length > 0) {
              workers.send(pod.metadata.uid, { type: 'POD.UPDATE', pod: allocatedPod(pod), updateType: 'update' });
            }
          }
          return;
      }
    },
  };
}
