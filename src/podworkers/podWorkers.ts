/**
 * The pod workers (pkg/kubelet/pod_workers.go podWorkers): the registry of pod actors, one per
 * UID, and the work queue of pods due for a resync. Nothing else: admission, the pod manager and
 * statuses belong to the kubelet's handlers (src/kubelet/configHandlers.ts), cleanups to housekeeping
 * (src/housekeeping).
 *
 * Registry. A pod actor is created with `createActor(…, { parent })` rather than `spawnChild`:
 * XState copies a machine's children map on every spawn, so thousands of pods would cost
 * quadratic time; an actor with a parent joins the same system (clock, inspection, `sendParent`
 * reaches the parent) at O(1). Such an actor cannot be stopped from outside, so `release` asks it
 * to end itself (`POD.RELEASE` → final `released`), which frees its systemId at once. Its end is
 * observed by subscription, which knows the UID: `onEnded` says whether it was released or failed.
 *
 * Static pods that share a full name take turns (pod_workers.go allowStaticPodStart): `start`
 * holds back a static pod whose name another static pod still holds, and `finished` hands the
 * name to the next one waiting (`freeStaticName`).
 *
 * Work queue (pod_workers.go completeWork, pkg/kubelet/util/queue/work_queue.go): after each
 * sync a pod is due again after the sync frequency × [1, 1.5) (jittered), or the error backoff
 * when the sync failed (1 s when the network is not ready yet: requeue.ts), or sooner when a
 * backoff ends; `syncDue`, driven by one shared tick, sends `POD.SYNC` to the pods that are due.
 * No pod has a timer of its own.
 *
 * Stages (podStages.ts): what the workers send and what their actors report is recorded as each
 * pod's stage, which the rest of the node reads; nobody reads a pod actor's snapshot.
 *
 * Invariants: at most one live actor per UID; an actor stays registered until released, so a
 * terminated UID never syncs again in it.
 */
import { type ActorRefFrom, type AnyActorRef, createActor } from 'xstate';
import type { Pod } from '../api/types.ts';
import { isStaticPod, podFullName } from '../api/types.ts';
import type { EventOf, PodEvent, PodReport } from '../events.ts';
import type { PodMachine } from '../pod/pod.ts';
import type { PodStages } from './podStages.ts';
import { requeueDelayMs } from './requeue.ts';
import { StaticPodNames } from './staticPodNames.ts';

/** The id and systemId of the actor of a pod UID. */
export const actorId = (uid: string) => `pod/${uid}`;

export type PodActor = ActorRefFrom<PodMachine>;

interface PodWorkersOptions {
  podMachine: PodMachine;
  /** The actor that receives the pod actors' reports (POD.SYNCED, POD.TERMINATED, POD.FINISHED). */
  parent: AnyActorRef;
  /** Where each worker's stage is recorded for the rest of the node (written here only). */
  stages: PodStages;
  /** The desired pod of a UID (the pod manager), for a static pod whose turn has come. */
  desired(uid: string): Pod | undefined;
  /**
   * A pod actor ended: released (its systemId is free again) or failed (`error` set: a bug, not a
   * runtime error; those are handled inside the actor). Called from inside the ending actor's own
   * processing: send yourself an event rather than start another actor here.
   */
  onEnded(uid: string, error?: unknown): void;
  syncFrequencyMs: number;
  /** Delay before retrying a pod whose sync failed (but for a network not ready yet). */
  errorBackoffMs: number;
  now(): number;
  random(): number;
}

export class PodWorkers {
  private readonly actors = new Map<string, PodActor>();
  /** UID → when it is due for a resync (ms since the epoch). */
  private readonly due = new Map<string, number>();
  /** Pods whose last sync failed: waiting out the error back-off. */
  private readonly failed = new Set<string>();
  private readonly staticNames = new StaticPodNames();
  /** `releaseAll` was called: the parent is going away, and is told nothing more. */
  private closed = false;

  constructor(private readonly options: PodWorkersOptions) {}

  has(uid: string): boolean {
    return this.actors.has(uid);
  }

  /**
   * Starts an actor for `pod`, unless a static pod of the same full name still holds it (then the
   * pod waits its turn). Returns whether it started.
   */
  start(pod: Pod): boolean {
    const uid = pod.metadata.uid;
    if (isStaticPod(pod) && !this.staticNames.tryStart(podFullName(pod), uid)) return false;
    const actor = createActor(this.options.podMachine, {
      parent: this.options.parent,
      id: actorId(uid),
      systemId: actorId(uid),
      input: { pod },
    });
    this.actors.set(uid, actor);
    this.options.stages.started(pod);
    actor.subscribe({
      complete: () => this.ended(uid, actor),
      error: (error) => this.ended(uid, actor, error),
    });
    actor.start();
    return true;
  }

  /** The static pod that holds `pod`'s full name, when `pod` waits for it. */
  staticNameHolder(pod: Pod): string | undefined {
    return isStaticPod(pod) ? this.staticNames.holder(podFullName(pod)) : undefined;
  }

  /** Sends `event` to the pod's actor, if it has one. Returns whether it has. */
  send(uid: string, event: PodEvent): boolean {
    const actor = this.actors.get(uid);
    if (!actor) return false;
    if (event.type === 'POD.UPDATE') this.options.stages.received(event.pod);
    else if (event.type === 'POD.KILL') this.options.stages.terminating(uid);
    actor.send(event);
    return true;
  }

  /** Takes a pod actor's report of where it stands into the stages. */
  reported(report: Extract<PodReport, { type: 'POD.TERMINATING' | 'POD.TERMINATED' | 'POD.FINISHED' }>): void {
    const { stages } = this.options;
    if (!this.actors.has(report.uid)) return;
    if (report.type === 'POD.TERMINATING') stages.terminating(report.uid);
    else if (report.type === 'POD.TERMINATED') stages.terminated(report.uid);
    else stages.finished(report.uid, report.restartRequested);
  }

  /** A pod that never got an actor left config: it stops waiting for its static name. */
  dropWaiting(pod: Pod): void {
    if (isStaticPod(pod)) this.staticNames.drop(podFullName(pod), pod.metadata.uid);
  }

  /**
   * The pod's actor finished for good (terminated, cleaned up, not coming back under its UID): a
   * static pod frees its full name, and the next pod waiting for it starts.
   */
  freeStaticName(uid: string): void {
    const pod = this.options.stages.pod(uid);
    if (!pod || !isStaticPod(pod)) return;
    const next = this.staticNames.release(podFullName(pod), uid, (u) => this.options.desired(u) !== undefined);
    const nextPod = next === undefined ? undefined : this.options.desired(next);
    if (nextPod && !this.actors.has(nextPod.metadata.uid)) this.start(nextPod);
  }

  /** Lets go of the pod's actor: it ends in `released`, and its UID may start afresh. */
  release(uid: string): void {
    const actor = this.actors.get(uid);
    this.actors.delete(uid);
    this.due.delete(uid);
    this.failed.delete(uid);
    this.options.stages.released(uid);
    actor?.send({ type: 'POD.RELEASE' });
  }

  /** Lets go of every actor (the agent stops; pods keep running). */
  releaseAll(): void {
    this.closed = true;
    for (const uid of [...this.actors.keys()]) this.release(uid);
  }

  /** Takes a pod actor's sync report into the work queue. */
  schedule(report: EventOf<'POD.SYNCED'> | EventOf<'POD.TERMINATED'>): void {
    switch (report.type) {
      case 'POD.SYNCED': {
        if (report.ok) this.failed.delete(report.uid);
        else this.failed.add(report.uid);
        this.due.set(report.uid, this.options.now() + requeueDelayMs(report, this.options, this.options.random()));
        return;
      }
      case 'POD.TERMINATED':
        this.due.delete(report.uid);
        this.failed.delete(report.uid);
        return;
    }
  }

  /** Sends `POD.SYNC` at once to every pod whose last sync failed (the runtime is back). */
  syncFailed(): void {
    for (const uid of this.failed) {
      this.failed.delete(uid);
      this.due.delete(uid);
      this.actors.get(uid)?.send({ type: 'POD.SYNC' });
    }
  }

  /** Sends `POD.SYNC` to every pod that is due. */
  syncDue(): void {
    const now = this.options.now();
    for (const [uid, at] of this.due) {
      if (at > now) continue;
      this.due.delete(uid);
      this.actors.get(uid)?.send({ type: 'POD.SYNC' });
    }
  }

  private ended(uid: string, actor: PodActor, error?: unknown): void {
    // A released actor was already let go of; a failed one is dropped here.
    if (this.actors.get(uid) === actor) {
      this.actors.delete(uid);
      this.due.delete(uid);
      this.failed.delete(uid);
      this.options.stages.released(uid);
    }
    if (!this.closed) this.options.onEnded(uid, error);
  }
}
