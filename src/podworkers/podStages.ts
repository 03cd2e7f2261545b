/**
 * Where each pod's worker stands, as the pod workers learn it (pkg/kubelet/pod_workers.go
 * podSyncStatus and the questions it answers: IsPodTerminationRequested, CouldHaveRunningContainers,
 * IsPodKnownTerminated, ShouldPodBeFinished). The pod workers are its one writer: a worker is
 * recorded when it starts, its pod when the workers send it a new spec, its termination when the
 * workers ask for it (POD.KILL) or the actor reports it began on its own (POD.TERMINATING: a pod
 * that reached a terminal phase), and its end from the actor's reports (POD.TERMINATED,
 * POD.FINISHED); the record goes when the worker is released.
 *
 * Everyone else reads it through `PodWorkerStages`: the status writer (may a deleted pod's object
 * go, may a terminal phase be written), the eviction manager, the node's cgroups and admission
 * (which pods are active), housekeeping and the metrics. Nobody reads the pod actors themselves.
 */
import type { Pod } from '../api/types.ts';
import type { WorkerStage } from '../admission/active.ts';

interface Entry {
  pod: Pod;
  stage: Exclude<WorkerStage, 'none'>;
  /** Cleaned up after termination: nothing of the pod is left but its record. */
  finished: boolean;
  /** The pod's UID came back (a `create`) while it was terminating: it starts afresh once finished. */
  restartRequested: boolean;
}

/** What the rest of the node may ask of the pod workers. */
export interface PodWorkerStages {
  /** The pod has a worker (an actor), in whatever stage. */
  has(uid: string): boolean;
  /** Where its worker stands; `none` without one. */
  stage(uid: string): WorkerStage;
  /** The pod as its worker last received it (its spec may have left config since). */
  pod(uid: string): Pod | undefined;
  /** Termination was asked for or has begun (IsPodTerminationRequested). */
  isTerminationRequested(uid: string): boolean;
  /** Its worker has not yet stopped every container (CouldHaveRunningContainers); false without a worker. */
  couldHaveRunningContainers(uid: string): boolean;
  /** Terminated and cleaned up, or no worker at all: nothing of it runs or is mounted. */
  isFinished(uid: string): boolean;
  /** Every worker's UID, pod and stage, for a pass over them all (housekeeping, metrics). */
  entries(): IterableIterator<[string, Readonly<Entry>]>;
}

export class PodStages implements PodWorkerStages {
  private readonly workers = new Map<string, Entry>();

  // ---- written by the pod workers only

  started(pod: Pod): void {
    this.workers.set(pod.metadata.uid, { pod, stage: 'syncing', finished: false, restartRequested: false });
  }

  /** The worker was sent `pod` (an update or a create). */
  received(pod: Pod): void {
    const entry = this.workers.get(pod.metadata.uid);
    if (entry) entry.pod = pod;
  }

  /** Termination asked for (POD.KILL) or reported begun (POD.TERMINATING). */
  terminating(uid: string): void {
    const entry = this.workers.get(uid);
    if (entry?.stage === 'syncing') entry.stage = 'terminating';
  }

  terminated(uid: string): void {
    const entry = this.workers.get(uid);
    if (entry) entry.stage = 'terminated';
  }

  finished(uid: string, restartRequested: boolean): void {
    const entry = this.workers.get(uid);
    if (!entry) return;
    entry.stage = 'terminated';
    entry.finished = true;
    entry.restartRequested = restartRequested;
  }

  released(uid: string): void {
    this.workers.delete(uid);
  }

  // ---- read by everyone

  has(uid: string): boolean {
    return this.workers.has(uid);
  }

  stage(uid: string): WorkerStage {
    return this.workers.get(uid)?.stage ?? 'none';
  }

  pod(uid: string): Pod | undefined {
    return this.workers.get(uid)?.pod;
  }

  isTerminationRequested(uid: string): boolean {
    const stage = this.stage(uid);
    return stage === 'terminating' || stage === 'terminated';
  }

  couldHaveRunningContainers(uid: string): boolean {
    const stage = this.stage(uid);
    return stage === 'syncing' || stage === 'terminating';
  }

  isFinished(uid: string): boolean {
    return this.workers.get(uid)?.finished ?? true;
  }

  entries(): IterableIterator<[string, Readonly<Entry>]> {
    return this.workers.entries();
  }
}
