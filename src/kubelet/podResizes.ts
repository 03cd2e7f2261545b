/**
 * In-place resize on the dispatcher's turn (pkg/kubelet/allocation/allocation_manager.go
 * handlePodResourcesResize, PushPendingResize, RetryPendingResizes; kubelet.go HandlePodUpdates,
 * HandlePodRemoves, HandlePodReconcile): when a pod's desired CPU or memory changes, whether the
 * node accepts the change now (its allocation checkpointed, `PodResizeInProgress` set, a
 * `ResizeStarted` event, the pod's worker given the new allocated pod), later (`PodResizePending`
 * `Deferred`, a `ResizeDeferred` event, the pod kept for a retry) or never (`Infeasible`,
 * `ResizeInfeasible`). Pending resizes are retried in sortPendingResizes' order when the pod
 * changes again, when pods leave or finish (their room is free), and every 3 minutes (the first
 * 30 s after start), once every source has been seen.
 */
import type { NodeInfo } from '../admission/admit.ts';
import { decideResize, pendingResizeOf, resizeRequested, sortPendingResizes } from '../allocation/allocation.ts';
import { type AllocationManager, INITIAL_RETRY_DELAY_MS, RETRY_DELAY_MS } from '../allocation/manager.ts';
import type { Pod } from '../api/types.ts';
import { podRef } from '../api/types.ts';
import { type EventRecorder, podReference } from '../eventrecorder/recorder.ts';
import type { Logger } from '../log.ts';
import type { PodManager } from '../pod/podManager.ts';
import type { PodWorkers } from '../podworkers/podWorkers.ts';
import { resizeEventMessage } from '../status/resize.ts';

interface PodResizesDeps {
  allocation: AllocationManager;
  workers: PodWorkers;
  podManager: PodManager;
  recorder: EventRecorder;
  node(): NodeInfo;
  /** The active pods (admitted, not terminated), as desired. */
  activePods(): Pod[];
  sourcesReady(): boolean;
  now(): number;
  log: Logger;
}

export type ResizeTrigger = 'pod_resized' | 'pod_updated' | 'pods_added' | 'pods_removed' | 'pod_terminated' | 'periodic_retry';

export interface PodResizes {
  /** HandlePodUpdates: `pod` replaces `old`; a changed resize is queued and tried at once, a reverted one's Pending cleared. */
  updated(old: Pod | undefined, pod: Pod): void;
  /** A pod admitted (or seen again after a restart) whose allocation differs from its spec: queued. */
  queue(uid: string): void;
  /** RetryPendingResizes. */
  retry(trigger: ResizeTrigger): void;
  /** The periodic retry, when it is due. */
  tick(): void;
}

export function podResizes(deps: PodResizesDeps): PodResizes {
  const { allocation, log } = deps;
  const generationOf = (pod: Pod) => pod.metadata.generation ?? 0;

  /** getAllocatedPods(getActivePods()): the other active pods with their allocated resources (those without an allocation left out). */
  const allocatedOthers = (uid: string) => deps.activePods().filter((p) => p.metadata.uid !== uid && allocation.has(p.metadata.uid)).map((p) => allocation.allocatedPod(p));

  /** handlePodResourcesResize: whether a new allocation was made. */
  const handle = (pod: Pod): boolean => {
    const uid = pod.metadata.uid;
    const decision = decideResize(pod, allocation.allocation(uid), allocatedOthers(uid), deps.node());
    switch (decision.kind) {
      case 'unchanged':
        allocation.clearPending(uid);
        return false;
      case 'allocate': {
        allocation.setAllocated(pod);
        allocation.clearPending(uid);
        // A previous resize's error goes, and the in-progress condition takes this generation.
        allocation.clearInProgress(uid);
        allocation.setInProgress(uid, '', '', generationOf(pod));
        deps.recorder.event(podReference(pod), 'Normal', 'ResizeStarted', resizeEventMessage('Pod resize started', pod, generationOf(pod)));
        return true;
      }
      case 'pending': {
        if (allocation.setPending(uid, decision.reason, decision.message, generationOf(pod))) {
          const type = decision.reason === 'Infeasible' ? 'ResizeInfeasible' : 'ResizeDeferred';
          deps.recorder.event(podReference(pod), 'Warning', type, resizeEventMessage(`Pod resize ${decision.reason}`, pod, generationOf(pod), decision.message));
        }
        log('info', 'Pod admission denied', { pod: podRef(pod), podUID: uid, reason: decision.reason, message: decision.message, operation: 'resize' });
        return false;
      }
    }
  };

  /** PushPendingResize: the pod joins the queue (once), which is kept sorted. */
  const queue = (uid: string) => {
    const uids = allocation.pending().includes(uid) ? [...allocation.pending()] : [...allocation.pending(), uid];
    const entries = uids.flatMap((u) => {
      const pod = deps.podManager.get(u);
      if (!pod) return [];
      return [pendingResizeOf(pod, allocation.allocation(u), allocation.conditionsOf(u).pending?.lastTransitionTime)];
    });
    allocation.setPendingResizes(sortPendingResizes(entries));
  };

  const retry = (trigger: ResizeTrigger) => {
    const now = deps.now();
    if (!deps.sourcesReady()) {
      // Nothing is decided before every pod is known; the periodic retry comes back soon.
      allocation.scheduleRetry(now, INITIAL_RETRY_DELAY_MS);
      return;
    }
    allocation.scheduleRetry(now, RETRY_DELAY_MS);
    const stillPending: string[] = [];
    for (const uid of allocation.pending()) {
      const pod = deps.podManager.get(uid);
      if (!pod) continue;
      const before = JSON.stringify(allocation.conditionsOf(uid));
      const allocated = handle(pod);
      const pending = allocation.conditionsOf(uid).pending;
      if (pending?.reason === 'Deferred') stillPending.push(uid);
      else if (allocated) log('info', 'Pod resize allocated', { pod: podRef(pod), podUID: uid, trigger });
      // The pod's worker syncs again to carry out the new allocation, or to show its new conditions.
      if (allocated || JSON.stringify(allocation.conditionsOf(uid)) !== before) {
        deps.workers.send(uid, { type: 'POD.UPDATE', pod: allocation.allocatedPod(pod), updateType: 'update' });
      }
    }
    allocation.setPendingResizes(stillPending);
  };

  return {
    updated(old, pod) {
      const uid = pod.metadata.uid;
      if (!allocation.has(uid) || !old || !resizeRequested(old, pod)) return;
      if (allocation.hasPendingChange(pod)) {
        queue(uid);
        retry('pod_updated');
      } else {
        // A pending resize reverted: nothing waits any more.
        allocation.clearPending(uid);
        allocation.setPendingResizes(allocation.pending().filter((u) => u !== uid));
      }
    },
    queue,
    retry,
    tick() {
      if (allocation.retryDue(deps.now())) retry('periodic_retry');
    },
  };
}
