/**
 * The status writer's effect: writes the agent's pod statuses to the API server
 * (pkg/kubelet/status/status_manager.go syncPod, syncBatch). Every change the StatusManager records
 * marks its pod dirty; a few writers drain the dirty set, so a pod that changes ten times while a
 * write is in flight is written once more, with its newest status (the newest wins). At every
 * resync (the loop's timer, `resync()`) all known pods are checked again, which catches a write
 * that failed, and a status in the API (as the watch shows it) that is not the one written: a write
 * made over a view the watch had not yet updated, or a change behind the agent.
 *
 * One pod's sync: take the pod's API object as the watch last showed it (a static pod's mirror is
 * read from the API); skip it when the UID differs (a new pod of the same name) or, for a static
 * pod, when the object is not its mirror; merge and decide (apiStatus.ts); send a strategic merge
 * patch of `pods/<name>/status` carrying the UID as a precondition (the kubelet reads the pod
 * first on every write; the precondition makes that read needed only when it fails: a conflict). Once a
 * pod being deleted has finished (its containers stopped, its resources released), delete the API
 * object with grace 0 and the UID precondition: that is what makes it disappear after
 * `kubectl delete` (canBeDeleted).
 *
 * A terminal phase waits for the pod's containers to stop (apiStatus.ts, mergePodStatus): while the
 * pod's actor could still have running containers, the write keeps the API's phase. Such a pod is
 * written again as soon as its actor has stopped them (`podTerminated`, the kubelet's forced
 * update of TerminatePod), and on the next resync if that was missed.
 */
import { ConfigAnnotation, type Pod, type PodStatus, isStaticPod, podRef } from '../api/types.ts';
import { isConflict, isForbidden, isNotFound, type KubeApi } from '../client/api.ts';
import type { Clock, TimerHandle } from '../clock.ts';
import type { StatusWriterEvent } from '../events.ts';
import type { Logger } from '../log.ts';
import type { PodWorkerStages } from '../podworkers/podStages.ts';
import { holdsTerminalPhase, statusPatch, statusToWrite } from '../status/apiStatus.ts';
import type { PodStatusReader } from '../status/manager.ts';
import type { StatusWriterEffects } from './statusWriter.ts';

/** What the writer has done: statuses waiting or being written, written, pods deleted, and the last failure. */
export interface StatusWriterProgress {
  queued: number;
  writes: number;
  deletes: number;
  error: string | null;
}

export interface StatusWriterDeps {
  api: KubeApi;
  statuses: PodStatusReader;
  /** The pod as the agent knows it (its sources' version), by UID. */
  pod(uid: string): Pod | undefined;
  /**
   * Where each pod's worker stands: a deleted pod's object goes once its worker has finished, and
   * a terminal phase waits while it could still have running containers (pod_workers.go
   * CouldHaveRunningContainers).
   */
  stages: Pick<PodWorkerStages, 'isFinished' | 'couldHaveRunningContainers'>;
  log: Logger;
  /** Told whenever the queue or the counts change. */
  onProgress?(progress: StatusWriterProgress): void;
  /** Writes in flight at once (the kubelet's client is limited to 50 QPS, burst 100). */
  concurrency?: number;
}

export class StatusWriter {
  private readonly dirty = new Set<string>();
  private readonly inFlight = new Set<string>();
  /** The version of each pod's status last written (or found equal), to skip what did not change. */
  private readonly written = new Map<string, number>();
  /** Pods whose last write kept the API's phase in place of their terminal one. */
  private readonly held = new Set<string>();
  /**
   * Each pod's last resync check and its answer. The check is a pure function of frozen objects
   * (the API's status as the watch last showed it, ours), so the same objects give the same answer:
   * a node at rest, where neither changes, compares nothing.
   */
  private readonly checked = new Map<string, { api: PodStatus | undefined; ours: PodStatus; running: boolean; differs: boolean }>();
  private readonly unsubscribe: () => void;
  private stopped = false;
  private writes = 0;
  private deletes = 0;
  private lastError: string | null = null;

  constructor(private readonly deps: StatusWriterDeps) {
    this.unsubscribe = deps.statuses.subscribe((uid, status) => {
      if (status) this.request(uid);
      else {
        this.written.delete(uid);
        this.held.delete(uid);
        this.checked.delete(uid);
      }
    });
  }

  /** Queues a sync of one pod (a status change, or its worker finished). */
  request(uid: string): void {
    if (this.stopped) return;
    this.dirty.add(uid);
    this.pump();
    this.reportProgress();
  }

  /** Writes the pod's status again even if it did not change (its API object is new: a re-created mirror). */
  rewrite(uid: string): void {
    this.written.delete(uid);
    this.request(uid);
  }

  /** The pod's actor has stopped its containers: a terminal phase held back is written now. */
  podTerminated(uid: string): void {
    if (this.held.has(uid)) this.rewrite(uid);
  }

  progress(): StatusWriterProgress {
    return { queued: this.dirty.size + this.inFlight.size, writes: this.writes, deletes: this.deletes, error: this.lastError };
  }

  stop(): void {
    this.stopped = true;
    this.unsubscribe();
  }

  /** Checks every known pod again (status_manager.go syncBatch, every 10 s). */
  resync(): void {
    if (this.stopped) return;
    for (const uid of this.deps.statuses.uids()) {
      if (this.held.has(uid) && !this.couldHaveRunningContainers(uid)) this.written.delete(uid);
      if (this.written.has(uid) && this.differsInApi(uid)) {
        // The kubelet says so at V(3) (status_manager.go needsReconcile): a watch a little behind is enough.
        this.deps.log('debug', 'Pod status is inconsistent with the status written; writing it again', { pod: podRef(this.deps.pod(uid)!) });
        this.written.delete(uid);
      }
      if (this.deps.statuses.version(uid) !== this.written.get(uid) || this.deletable(uid)) this.dirty.add(uid);
    }
    this.pump();
    this.reportProgress();
  }

  private reportProgress(): void {
    this.deps.onProgress?.(this.progress());
  }

  private pump(): void {
    const limit = this.deps.concurrency ?? 16;
    for (const uid of this.dirty) {
      if (this.inFlight.size >= limit) return;
      if (this.inFlight.has(uid)) continue; // picked up again when its write ends
      this.dirty.delete(uid);
      this.inFlight.add(uid);
      this.sync(uid)
        .then(
          () => void (this.lastError = null),
          (err: unknown) => {
            const pod = this.deps.pod(uid);
            this.lastError = err instanceof Error ? err.message : String(err);
            this.deps.log(isConflict(err) ? 'info' : 'warn', 'Failed to update pod status in the API; will retry', { pod: pod ? podRef(pod) : uid, err: this.lastError });
          },
        )
        .finally(() => {
          this.inFlight.delete(uid);
          this.pump();
          this.reportProgress();
        });
    }
  }

  /**
   * The pod's status as the watch shows it now is not the one the agent wrote (status_manager.go
   * syncBatch, needsReconcile): a write made over a view the watch had not yet brought up to date,
   * or a status changed behind the agent. A static pod's mirror is not watched: not checked.
   */
  private differsInApi(uid: string): boolean {
    const pod = this.deps.pod(uid);
    const ours = this.deps.statuses.get(uid);
    if (!pod || !ours || isStaticPod(pod) || this.inFlight.has(uid)) return false;
    const running = this.couldHaveRunningContainers(uid);
    const last = this.checked.get(uid);
    if (last && last.api === pod.status && last.ours === ours && last.running === running) return last.differs;
    const differs = statusToWrite(pod.status, ours, running).write;
    this.checked.set(uid, { api: pod.status, ours, running, differs });
    return differs;
  }

  private couldHaveRunningContainers(uid: string): boolean {
    return this.deps.stages.couldHaveRunningContainers(uid);
  }

  private deletable(uid: string): boolean {
    const pod = this.deps.pod(uid);
    return !!pod && pod.metadata.deletionTimestamp !== undefined && !isStaticPod(pod) && this.deps.stages.isFinished(uid);
  }

  private async sync(uid: string): Promise<void> {
    const { statuses } = this.deps;
    const pod = this.deps.pod(uid);
    const ours = statuses.get(uid);
    if (!pod || !ours) return;
    // A pod from the API comes with its API status (the watch keeps it fresh): a write within the
    // phase the agent has seen needs no read first; the patch's UID precondition refuses it if the
    // object is another pod by now, and then the object is read. A new phase is written over a
    // fresh read, as status_manager.go syncPod reads before every patch: the watch may lag (an
    // agent restarted over a stale list, a cut watch), and a phase it has not shown yet may be a
    // terminal one that must never be left. A static pod's status goes to its mirror, which is read.
    if (!isStaticPod(pod) && ours.phase === pod.status?.phase) {
      try {
        return await this.write(uid, pod, pod);
      } catch (err) {
        if (isNotFound(err)) return; // gone from the API
        if (!isConflict(err)) throw err;
      }
    }
    const current = await this.read(pod);
    if (current) await this.write(uid, pod, current);
  }

  /** The pod's API object now, or null when there is none to write to (yet). */
  private async read(pod: Pod): Promise<Pod | null> {
    try {
      return await this.deps.api.getPod(pod.metadata.namespace, pod.metadata.name);
    } catch (err) {
      // Gone from the API; or a static pod whose mirror does not exist yet, which the node may
      // not even read (403): its status is written once the mirror is created.
      if (isNotFound(err) || (isForbidden(err) && isStaticPod(pod))) return null;
      throw err;
    }
  }

  /** Writes the status (if it changed) to `current`, the pod's API object as last seen, and deletes a finished pod. */
  private async write(uid: string, pod: Pod, current: Pod): Promise<void> {
    const { api, statuses } = this.deps;
    const ours = statuses.get(uid);
    const target = this.apiObjectUid(pod, current);
    if (!ours || !target) return;
    const version = statuses.version(uid);
    const { namespace, name } = pod.metadata;
    if (version !== this.written.get(uid)) {
      const couldHaveRunning = this.couldHaveRunningContainers(uid);
      const decision = statusToWrite(current.status, ours, couldHaveRunning);
      if (decision.write) {
        await api.patchPodStatus(namespace, name, statusPatch(target, decision.status, current.status));
        this.writes += 1;
      } else if (decision.why === 'terminal') {
        this.deps.log('warn', 'Not writing a status that would take the pod out of its terminal phase', { pod: podRef(pod), phase: current.status?.phase });
      }
      this.written.set(uid, version);
      if (!holdsTerminalPhase(current.status, ours, couldHaveRunning)) this.held.delete(uid);
      else if (this.couldHaveRunningContainers(uid)) this.held.add(uid);
      else {
        // The containers stopped while this write was on its way: once more, with the phase.
        this.held.delete(uid);
        this.written.delete(uid);
        this.dirty.add(uid);
        // Not deleted before that write: the terminal status goes first (status_manager.go syncPod
        // deletes only a pod whose terminal status it has written).
        return;
      }
    }
    if (this.deletable(uid)) {
      await api.deletePod(namespace, name, { gracePeriodSeconds: 0, uid: target });
      this.deletes += 1;
      this.deps.log('info', 'Deleted the pod from the API: it has terminated', { pod: podRef(pod) });
    }
  }

  /** The UID of the API object this pod's status goes to: the pod itself, or a static pod's mirror. */
  private apiObjectUid(pod: Pod, current: Pod): string | null {
    if (!isStaticPod(pod)) return current.metadata.uid === pod.metadata.uid ? pod.metadata.uid : null;
    const mirrorOf = current.metadata.annotations?.[ConfigAnnotation.mirror];
    return mirrorOf !== undefined && mirrorOf === pod.metadata.annotations?.[ConfigAnnotation.hash] ? current.metadata.uid : null;
  }
}

/** How often the writer's progress reaches its loop (and so the visualizer) at most. */
const PROGRESS_REPORT_MS = 1_000;

/**
 * The status writer loop's `writer` child, as its callback actor's body: the writer over the node's parts, told the pods' news
 * (POD.TERMINATED: a terminal phase held back goes out now; POD.FINISHED: a deleted pod's object
 * may go; STATUS.REWRITE: a re-created mirror) and the loop's resync tick; it reports its progress
 * to the loop at most once a second, and each change to `metrics` at once.
 */
export function statusWriter(deps: Omit<StatusWriterDeps, 'onProgress'> & { clock: Clock; metrics?: (progress: StatusWriterProgress) => void }): StatusWriterEffects['writer'] {
  return ({ sendBack, receive }) => {
    let due: TimerHandle | undefined;
    const writer = new StatusWriter({
      ...deps,
      onProgress: (progress) => {
        deps.metrics?.(progress);
        due ??= deps.clock.setTimeout(() => {
          due = undefined;
          sendBack({ type: 'STATUS.PROGRESS', ...writer.progress() } satisfies StatusWriterEvent);
        }, PROGRESS_REPORT_MS);
      },
    });
    receive((event) => {
      switch (event.type) {
        case 'POD.TERMINATED':
          return writer.podTerminated(event.uid);
        case 'POD.FINISHED':
          return writer.request(event.uid);
        case 'STATUS.REWRITE':
          return writer.rewrite(event.uid);
        case 'STATUS.RESYNC':
          return writer.resync();
      }
    });
    return () => {
      writer.stop();
      if (due !== undefined) deps.clock.clearTimeout(due);
    };
  };
}
