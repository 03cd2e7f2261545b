/**
 * The agent's record of each pod's API status, as it would report it to the API server: the
 * latest generated status per UID, frozen, with a version that grows on every change. `/pods` serves it;
 * the status generator reads the previous entry so that start times, transition times and
 * terminal phases carry over.
 */
import { type Pod, type PodStatus, isStaticPod } from '../api/types.ts';
import { deepFreeze, sharedWith } from '../immutable.ts';

interface Entry {
  status: PodStatus;
  version: number;
}

type StatusListener = (uid: string, status: PodStatus | undefined) => void;

export class StatusManager {
  private readonly entries = new Map<string, Entry>();
  private readonly listeners = new Set<StatusListener>();
  private lastSet: PodStatus | undefined;

  /** Calls `listener` after every change (a new status, or `undefined` when one is deleted). */
  subscribe(listener: StatusListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  get(uid: string): PodStatus | undefined {
    return this.entries.get(uid)?.status;
  }

  /**
   * The status to report for `pod`: the latest one the agent generated. Before there is one, an
   * API pod's own status (the API server's record), while a static pod's own status is only the
   * source's default (Pending), not something the agent saw — after a restart of the agent the pod
   * may well have Succeeded long ago — so it is reported without a phase until its first sync.
   */
  reported(pod: Pod): PodStatus {
    return this.get(pod.metadata.uid) ?? (isStaticPod(pod) ? {} : (pod.status ?? {}));
  }

  version(uid: string): number {
    return this.entries.get(uid)?.version ?? 0;
  }

  /**
   * Stores `status`, frozen; returns false (and keeps the old version) when nothing changed. It
   * keeps the unchanged parts of the pod's last status or, for a pod's first, what it has in common
   * with the status stored last (the conditions of pods started in the same second, their image).
   */
  set(uid: string, status: PodStatus): boolean {
    const entry = this.entries.get(uid);
    const shared = sharedWith(entry?.status ?? this.lastSet, status);
    if (entry && shared === entry.status) return false;
    this.lastSet = deepFreeze(shared);
    this.entries.set(uid, { status: shared, version: (entry?.version ?? 0) + 1 });
    for (const listener of this.listeners) listener(uid, shared);
    return true;
  }

  delete(uid: string): void {
    if (!this.entries.delete(uid)) return;
    for (const listener of this.listeners) listener(uid, undefined);
  }

  uids(): IterableIterator<string> {
    return this.entries.keys();
  }
}
