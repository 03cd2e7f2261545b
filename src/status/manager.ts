/**
 * The agent's record of each pod's API status, as it would report it to the API server (the
 * kubelet's status manager, pkg/kubelet/status/status_manager.go): the latest status per UID,
 * frozen, with a version that grows on every change. `/pods` serves it; the status generator reads
 * the previous entry so that start times, transition times and terminal phases carry over; the
 * status writer is told each change, in order.
 *
 * It changes only through its named mutations, each with its one kind of writer, which is given
 * that method alone (the narrow interfaces below):
 *   setPodStatus            a pod's sync publishes the status it generated (SetPodStatus)
 *   setContainerReadiness   the probe manager, on a readiness change (SetContainerReadiness)
 *   rejectPod               admission refused the pod: Failed with the reason (kubelet.go rejectPod)
 *   terminatePod            the pod's cleanup, its final status (TerminatePod)
 *   forgetPod               the pod is gone from the node (RemoveOrphanedStatuses)
 */
import { type Pod, type PodStatus, isStaticPod } from '../api/types.ts';
import { deepFreeze, sharedWith } from '../immutable.ts';
import { withContainerReadiness } from './generate.ts';
import { terminatedPodStatus } from './terminate.ts';

interface Entry {
  status: PodStatus;
  version: number;
}

type StatusListener = (uid: string, status: PodStatus | undefined) => void;

/** What anyone may read. */
export interface PodStatusReader {
  get(uid: string): PodStatus | undefined;
  /** The status to report for `pod` (`/pods`, the pod's own status until the agent has one). */
  reported(pod: Pod): PodStatus;
  /** Grows with every change of the pod's status; 0 before its first. */
  version(uid: string): number;
  uids(): IterableIterator<string>;
  /** Calls `listener` after every change (a new status, or `undefined` when one is forgotten). */
  subscribe(listener: StatusListener): () => void;
}

/** A pod's sync: it reads the status it generated last and publishes the next one. */
export interface PodStatusPublisher {
  get(uid: string): PodStatus | undefined;
  setPodStatus(uid: string, status: PodStatus): void;
  terminatePod(pod: Pod, generated: PodStatus): void;
}

/** The probe manager: readiness only. */
export interface ReadinessSetter {
  setContainerReadiness(pod: Pod, containerName: string, ready: boolean, nowMs: number): void;
}

/** Admission's refusal. */
export interface PodRejecter {
  rejectPod(pod: Pod, reason: string, message: string): void;
}

/** Who lets a pod go from the node. */
export interface StatusForgetter {
  forgetPod(uid: string): void;
}

export class StatusManager implements PodStatusReader, PodStatusPublisher, ReadinessSetter, PodRejecter, StatusForgetter {
  private readonly entries = new Map<string, Entry>();
  private readonly listeners = new Set<StatusListener>();
  private lastSet: PodStatus | undefined;

  subscribe(listener: StatusListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  get(uid: string): PodStatus | undefined {
    return this.entries.get(uid)?.status;
  }

  /**
   * The latest status the agent generated. Before there is one, an API pod's own status (the API
   * server's record), while a static pod's own status is only the source's default (Pending), not
   * something the agent saw — after a restart of the agent the pod may well have Succeeded long
   * ago — so it is reported without a phase until its first sync.
   */
  reported(pod: Pod): PodStatus {
    return this.get(pod.metadata.uid) ?? (isStaticPod(pod) ? {} : (pod.status ?? {}));
  }

  version(uid: string): number {
    return this.entries.get(uid)?.version ?? 0;
  }

  uids(): IterableIterator<string> {
    return this.entries.keys();
  }

  setPodStatus(uid: string, status: PodStatus): void {
    this.store(uid, status);
  }

  /** One container's readiness and the pod's Ready conditions, over the status the pod has; none yet: nothing to change. */
  setContainerReadiness(pod: Pod, containerName: string, ready: boolean, nowMs: number): void {
    const status = this.get(pod.metadata.uid);
    if (status) this.store(pod.metadata.uid, withContainerReadiness(pod, status, containerName, ready, nowMs));
  }

  rejectPod(pod: Pod, reason: string, message: string): void {
    this.store(pod.metadata.uid, {
      // SetPodStatus gives every status the pod's generation (status_manager.go).
      ...(pod.metadata.generation ? { observedGeneration: pod.metadata.generation } : {}),
      phase: 'Failed',
      reason,
      message: `Pod was rejected: ${message}`,
    });
  }

  /** The final status: `generated` (the last one the pod's cleanup made) with what never ran marked terminated (terminate.ts). */
  terminatePod(pod: Pod, generated: PodStatus): void {
    this.store(pod.metadata.uid, terminatedPodStatus(pod, generated));
  }

  forgetPod(uid: string): void {
    if (!this.entries.delete(uid)) return;
    for (const listener of this.listeners) listener(uid, undefined);
  }

  /**
   * Stores `status`, frozen, unless nothing changed. It keeps the unchanged parts of the pod's last
   * status or, for a pod's first, what it has in common with the status stored last (the conditions
   * of pods started in the same second, their image).
   */
  private store(uid: string, status: PodStatus): void {
    const entry = this.entries.get(uid);
    const shared = sharedWith(entry?.status ?? this.lastSet, status);
    if (entry && shared === entry.status) return;
    this.lastSet = deepFreeze(shared);
    this.entries.set(uid, { status: shared, version: (entry?.version ?? 0) + 1 });
    for (const listener of this.listeners) listener(uid, shared);
  }
}
