/**
 * Housekeeping (pkg/kubelet/kubelet_pods.go HandlePodCleanups): the periodic cleanups that keep
 * the pod workers, the pod manager and the runtime in agreement. The syncLoop sends
 * `TICK.HOUSEKEEPING` every two seconds, but only once every config source has been seen
 * (pkg/kubelet/config/config.go SeenAllSources): before that, a pod missing from config may simply
 * not have been read yet.
 *
 * Each pass:
 *   - pods that left config while their actor still runs (removed before every source had been
 *     seen, when the config handlers do not kill) are terminated as deleted, as SyncKnownPods
 *     terminates the workers of pods no longer desired (pkg/kubelet/pod_workers.go
 *     removeTerminatedWorker: "Pod is orphaned and still running, began terminating");
 *   - finished pods: a pod whose actor finished and that left config is forgotten (actor
 *     released, status dropped); one whose UID came back while it terminated is released so that a
 *     fresh actor starts once the old one has ended (`podEnded`). The same happens at once when
 *     the actor reports POD.FINISHED (`podFinished`); the pass catches what that missed;
 *   - pods in config without an actor (a failed actor, a static pod whose turn came late) go
 *     through admission again, unless they were rejected;
 *   - runtime pods nobody owns (left by an earlier agent, whose manifest went away meanwhile) are
 *     stopped and removed, as HandlePodCleanups kills the running runtime pods no pod worker knows;
 *   - the directories of pods nobody owns and nothing runs for are removed (cleanupOrphanedPodDirs).
 *
 * A pass never overlaps the previous one; a failure is logged, and the next pass tries again.
 */
import type { Pod } from '../api/types.ts';
import { podRef } from '../api/types.ts';
import type { Logger } from '../log.ts';
import type { PodManager } from '../pod/podManager.ts';
import type { PodWorkers } from '../podworkers/podWorkers.ts';
import type { PodWorkerStages } from '../podworkers/podStages.ts';
import type { PodStatusReader, StatusForgetter } from '../status/manager.ts';

/** What housekeeping asks of the runtime (src/kuberuntime implements it). */
export interface RuntimeCleanup {
  /** UIDs of pods the runtime still has running containers or ready sandboxes for. */
  runningPodUids(): Promise<Set<string>> | Set<string>;
  /** Stops and removes every container and sandbox of a pod nobody owns. */
  killOrphanPod(uid: string): Promise<void>;
  /** Removes the directories of pods `isOrphan` says nobody owns (their files under <root-dir>/pods). */
  removeOrphanedPodDirs(isOrphan: (uid: string) => boolean): Promise<void>;
}

/** A pod actor as housekeeping looks at it. */
export interface WorkerView {
  uid: string;
  /** Its pod is in config (the pod manager has it). */
  desired: boolean;
  /** It is terminating or has terminated already. */
  terminationRequested: boolean;
}

/**
 * The actors to terminate now: those whose pod left config and that have not been told to stop
 * (pkg/kubelet/pod_workers.go SyncKnownPods, removeTerminatedWorker with `orphan`).
 */
export function orphanedWorkers(workers: Iterable<WorkerView>): string[] {
  const orphans: string[] = [];
  for (const worker of workers) if (!worker.desired && !worker.terminationRequested) orphans.push(worker.uid);
  return orphans;
}

interface HousekeepingDeps {
  workers: PodWorkers;
  /** Where each worker stands (the workers record it from their actors' reports). */
  stages: PodWorkerStages;
  podManager: PodManager;
  statuses: PodStatusReader & StatusForgetter;
  runtime: RuntimeCleanup;
  /** Admits and starts pods that are in config but have no actor. */
  readmit(pods: readonly Pod[]): void;
  /** Told when a UID that came back starts afresh (kubelet_pods.go HandlePodCleanups counts RestartedPodTotal). */
  podRestarted?(pod: Pod): void;
  log: Logger;
}

export class Housekeeping {
  private running = false;
  private readonly orphansInFlight = new Set<string>();
  /** UIDs whose old actor is being released so that a fresh one can start. */
  private readonly restartOnRelease = new Set<string>();

  constructor(private readonly deps: HousekeepingDeps) {}

  /** A pod actor finished (terminated and cleaned up). */
  podFinished(uid: string, restartRequested: boolean): void {
    const { workers, podManager, statuses } = this.deps;
    if (!restartRequested) workers.freeStaticName(uid);
    if (!podManager.has(uid)) {
      workers.release(uid);
      statuses.forgetPod(uid);
    } else if (restartRequested) {
      // The same UID came back while it was terminating: it starts over with a fresh actor, as
      // soon as the old one has released its systemId.
      this.restartOnRelease.add(uid);
      workers.release(uid);
    }
  }

  /** A pod actor ended: released (its systemId is free) or failed. */
  podEnded(uid: string, error?: unknown): void {
    const { workers, podManager, statuses, log } = this.deps;
    const pod = podManager.get(uid);
    if (error !== undefined) {
      // A crashed pod actor is dropped; the next pass starts a new one, which reads the runtime afresh.
      log('error', 'Pod worker failed; it will be recreated', { pod: pod ? podRef(pod) : uid, err: error });
      return;
    }
    if (this.restartOnRelease.delete(uid) && pod && !workers.has(uid)) {
      // A new life for the UID: the terminal status of the old one must not end it at once.
      statuses.forgetPod(uid);
      workers.start(pod);
      this.deps.podRestarted?.(pod);
    }
  }

  /** Runs a pass, unless one is under way. */
  tick(): void {
    if (this.running) return;
    this.running = true;
    this.pass()
      .catch((err: unknown) => this.deps.log('error', 'Housekeeping failed', { err }))
      .finally(() => (this.running = false));
  }

  private async pass(): Promise<void> {
    const { workers, stages, podManager, statuses, runtime, log } = this.deps;
    const views: WorkerView[] = [];
    const finished: [string, boolean][] = [];
    for (const [uid, worker] of stages.entries()) {
      if (worker.finished) finished.push([uid, worker.restartRequested]);
      views.push({ uid, desired: podManager.has(uid), terminationRequested: stages.isTerminationRequested(uid) });
    }
    for (const [uid, restartRequested] of finished) this.podFinished(uid, restartRequested);
    for (const uid of orphanedWorkers(views)) {
      log('info', 'Pod is no longer in config and still running: terminating it', { podUID: uid });
      workers.send(uid, { type: 'POD.KILL', deleted: true, reason: 'removed from config' });
    }
    const unowned = [...podManager.all()].filter((pod) => !workers.has(pod.metadata.uid) && statuses.get(pod.metadata.uid)?.phase !== 'Failed');
    for (const pod of unowned) this.deps.readmit([pod]);
    const running = await runtime.runningPodUids();
    for (const uid of running) {
      if (workers.has(uid) || this.orphansInFlight.has(uid)) continue;
      this.orphansInFlight.add(uid);
      log('info', 'Stopping runtime pod unknown to the agent', { podUID: uid });
      runtime
        .killOrphanPod(uid)
        .catch((err: unknown) => log('error', 'Failed to stop orphaned pod', { podUID: uid, err }))
        .finally(() => this.orphansInFlight.delete(uid));
    }
    const isOrphan = (uid: string) => !workers.has(uid) && !podManager.has(uid) && !this.orphansInFlight.has(uid) && !running.has(uid);
    await runtime.removeOrphanedPodDirs(isOrphan).catch((err: unknown) => log('error', 'Failed to remove orphaned pod directories', { err }));
  }
}
