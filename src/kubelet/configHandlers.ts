/**
 * The kubelet's config handlers (pkg/kubelet/kubelet.go HandlePodAdditions, HandlePodUpdates,
 * HandlePodRemoves, HandlePodReconcile): what a CONFIG.* event does to the pod manager, the
 * statuses and the pod workers.
 *
 * Additions are taken oldest first (by creation time) and admitted against the pods that are
 * active (admitted and not yet terminated), counted once per batch and grown as pods are admitted,
 * so a batch of N costs O(N). A rejected pod gets a `Failed` status with `Pod was rejected: …`
 * and no actor (pkg/kubelet/kubelet.go rejectPod). A pod that already has an actor gets the new
 * spec as a `create` (a UID coming back while terminating starts over once it has finished).
 * Removal kills the pod's actor as deleted; a pod that never got one is simply forgotten.
 */
import type { Pod } from '../api/types.ts';
import { podRef } from '../api/types.ts';
import type { ConfigEvent } from '../events.ts';
import { type NodeInfo, admitPod } from '../admission/admit.ts';
import { addAmounts, podRequests, sumRequests } from '../admission/resources.ts';
import type { Logger } from '../log.ts';
import { type EventRecorder, podReference } from '../eventrecorder/recorder.ts';
import type { PodManager } from '../pod/podManager.ts';
import type { PodWorkers } from '../podworkers/podWorkers.ts';
import type { StatusManager } from '../status/manager.ts';

interface PodHandlerDeps {
  workers: PodWorkers;
  podManager: PodManager;
  statuses: StatusManager;
  /** The node as admission sees it now (its labels, allocatable and taints once registered). */
  node: () => NodeInfo;
  recorder: EventRecorder;
  log: Logger;
}

interface PodHandlers {
  handle(event: ConfigEvent): void;
  /** HandlePodAdditions: admit and start the pods that have no actor, update those that have. */
  add(pods: readonly Pod[]): void;
}

export function podHandlers(deps: PodHandlerDeps): PodHandlers {
  const { workers, podManager, statuses, log } = deps;

  /** Pods that count against admission: admitted and not known to have terminated. */
  const activePods = (): Pod[] => {
    const active: Pod[] = [];
    for (const [uid, actor] of workers.entries()) {
      const snapshot = actor.getSnapshot();
      if (snapshot.hasTag('terminated')) continue;
      active.push(podManager.get(uid) ?? snapshot.context.pod);
    }
    return active;
  };

  const add = (pods: readonly Pod[]) => {
    const sorted = [...pods].sort((a, b) => (a.metadata.creationTimestamp ?? '').localeCompare(b.metadata.creationTimestamp ?? ''));
    const active = activePods();
    const used = sumRequests(active);
    const node = deps.node();
    for (const pod of sorted) {
      const uid = pod.metadata.uid;
      podManager.set(pod);
      if (workers.send(uid, { type: 'POD.UPDATE', pod, updateType: 'create' })) continue;
      const admission = admitPod(pod, active, node, used);
      if (!admission.admit) {
        log('warn', 'Pod rejected', { pod: podRef(pod), reason: admission.reason, message: admission.message });
        deps.recorder.event(podReference(pod), 'Warning', admission.reason, admission.message);
        statuses.set(uid, { phase: 'Failed', reason: admission.reason, message: `Pod was rejected: ${admission.message}` });
        continue;
      }
      if (!workers.start(pod)) {
        log('info', 'Static pod waits for the previous pod of its name to terminate', {
          pod: podRef(pod),
          podUID: uid,
          previousUID: workers.staticNameHolder(pod),
        });
        continue;
      }
      active.push(pod);
      addAmounts(used, podRequests(pod));
    }
  };

  const update = (pods: readonly Pod[]) => {
    for (const pod of pods) {
      podManager.set(pod);
      workers.send(pod.metadata.uid, { type: 'POD.UPDATE', pod, updateType: 'update' });
    }
  };

  const remove = (pods: readonly Pod[]) => {
    for (const pod of pods) {
      const uid = pod.metadata.uid;
      podManager.delete(uid);
      if (workers.send(uid, { type: 'POD.KILL', deleted: true, reason: 'removed from config' })) continue;
      workers.dropWaiting(pod);
      statuses.delete(uid);
    }
  };

  return {
    add,
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
              workers.send(pod.metadata.uid, { type: 'POD.UPDATE', pod, updateType: 'update' });
            }
          }
          return;
      }
    },
  };
}
