/**
 * The pod workers: the registry of pod actors that the syncLoop invokes and feeds. It turns config
 * changes into POD.* events (admitting new pods first), routes PLEG events and probe results to
 * the pod they concern, keeps the work queue of pods due for a resync (one shared tick, no per-pod timers),
 * and does housekeeping: forgetting finished pods, restarting a UID whose config came back, the
 * container garbage collection (every `containerGcPeriodMs`), and
 * stopping runtime pods nobody owns.
 *
 * Why not `spawnChild` from the syncLoop machine: XState copies a machine's children map on every
 * spawn, so thousands of pods would cost quadratic time. Pod actors are created here with
 * `createActor(…, { parent })` instead: they belong to the same actor system (same clock, same
 * inspection stream, `sendParent` reaches this registry), and adding one is O(1).
 *
 * Invariants: at most one live actor per UID; a finished actor stays until its UID is gone from
 * config or restarted, so a terminated UID never syncs again; rejected pods get a Failed status
 * and no actor.
 */
import { type ActorRefFrom, createActor, fromCallback } from 'xstate';
import type { Pod, SourceName } from '../api/types.ts';
import { isStaticPod, podFullName, podRef } from '../api/types.ts';
import type { Logger } from '../log.ts';
import type { StatusManager } from '../status/manager.ts';
import { type NodeInfo, admitPod } from '../lifecycle/admit.ts';
import type { PlegEvent } from '../pleg/relist.ts';
import type { PodMachine, PodOutput, PodReport, ProbeResultEvent } from '../pod/pod.ts';
import type { PodManager } from '../pod/podManager.ts';
import { StaticPodNames } from './staticPodNames.ts';

export type ConfigOp = 'ADD' | 'UPDATE' | 'REMOVE' | 'DELETE' | 'RECONCILE';

export type ConfigEvent = {
  type: `CONFIG.${ConfigOp}`;
  source: SourceName;
  pods: Pod[];
};

export type TickEvent = { type: 'TICK.SYNC' } | { type: 'TICK.HOUSEKEEPING' };

/** A pod actor reached its final state (`released`); its systemId is free again. */
export type PodReleasedEvent = { type: `xstate.done.actor.${string}`; output: PodOutput };

/** A pod actor failed (a bug, not a runtime error: those are handled inside the actor). */
export type PodFailedEvent = { type: `xstate.error.actor.${string}`; error: unknown };

export type PodWorkersEvent =
  | ConfigEvent
  | PlegEvent
  | ProbeResultEvent
  | TickEvent
  | PodReport
  | PodReleasedEvent
  | PodFailedEvent;

const actorIdPrefix = 'pod/';
/** The id and systemId of the actor of a pod UID. */
export const actorId = (uid: string) => `${actorIdPrefix}${uid}`;

export interface PodWorkersDeps {
  podMachine: PodMachine;
  podManager: PodManager;
  statuses: StatusManager;
  node: NodeInfo;
  syncFrequencyMs: number;
  /** Delay before retrying a pod whose sync failed. */
  errorBackoffMs: number;
  now(): number;
  random(): number;
  log: Logger;
  /** UIDs of pods the runtime still has running containers or ready sandboxes for. */
  listRuntimePodUids(): Promise<Set<string>>;
  /** Stops and removes every container and sandbox of a pod nobody owns. */
  killOrphanPod(uid: string): Promise<void>;
  /** Removes dead containers and sandboxes the GC policy lets go (`isPodDeleted`: nobody owns the pod). */
  collectGarbage(isPodDeleted: (uid: string) => boolean): Promise<void>;
  /** How often housekeeping runs the container GC (the kubelet: every minute). */
  containerGcPeriodMs: number;
}

type PodActor = ActorRefFrom<PodMachine>;

const jitter = (random: () => number, ms: number) => ms * (1 + 0.5 * random());

export function createPodWorkersLogic(deps: PodWorkersDeps) {
  return fromCallback<PodWorkersEvent>(({ self, receive }) => {
    const workers = new Map<string, PodActor>();
    /** UID → when it is due for a resync (ms since the epoch). */
    const due = new Map<string, number>();
    const orphansInFlight = new Set<string>();
    const staticNames = new StaticPodNames();
    /** UIDs whose old actor is being released so that a fresh one can start. */
    const restartOnRelease = new Set<string>();
    let housekeeping = false;
    let collecting = false;
    let lastGcAt = -Infinity;

    const start = (pod: Pod) => {
      const actor = createActor(deps.podMachine, {
        parent: self,
        // The id names the UID so that the actor's done and error events say which pod they are.
        id: actorId(pod.metadata.uid),
        systemId: actorId(pod.metadata.uid),
        input: { pod },
      });
      workers.set(pod.metadata.uid, actor);
      actor.start();
    };

    // A pod actor has a parent, so it cannot be stopped from outside: it is asked to release
    // itself, which ends it in a final state and frees its systemId at once.
    const forget = (uid: string) => {
      workers.get(uid)?.send({ type: 'POD.RELEASE' });
      workers.delete(uid);
      due.delete(uid);
    };

    /** Pods that count against admission: admitted and not known to have terminated. */
    const activePods = (): Pod[] => {
      const active: Pod[] = [];
      for (const [uid, actor] of workers) {
        const snapshot = actor.getSnapshot();
        if (snapshot.hasTag('terminated')) continue;
        const pod = deps.podManager.get(uid) ?? snapshot.context.pod;
        active.push(pod);
      }
      return active;
    };

    const add = (pods: Pod[]) => {
      const sorted = [...pods].sort((a, b) =>
        (a.metadata.creationTimestamp ?? '').localeCompare(b.metadata.creationTimestamp ?? ''),
      );
      // Computed once per batch and grown as pods are admitted, so a batch of N costs O(N).
      const active = activePods();
      for (const pod of sorted) {
        const uid = pod.metadata.uid;
        deps.podManager.set(pod);
        const existing = workers.get(uid);
        if (existing) {
          existing.send({ type: 'POD.UPDATE', pod, updateType: 'create' });
          continue;
        }
        const admission = admitPod(pod, active, deps.node);
        if (!admission.admit) {
          deps.log('warn', 'Pod rejected', { pod: podRef(pod), reason: admission.reason, message: admission.message });
          deps.statuses.set(uid, {
            phase: 'Failed',
            reason: admission.reason,
            message: `Pod was rejected: ${admission.message}`,
          });
          continue;
        }
        if (isStaticPod(pod) && !staticNames.tryStart(podFullName(pod), uid)) {
          deps.log('info', 'Static pod waits for the previous pod of its name to terminate', {
            pod: podRef(pod),
            podUID: uid,
            previousUID: staticNames.holder(podFullName(pod)),
          });
          continue;
        }
        active.push(pod);
        start(pod);
      }
    };

    const update = (pods: Pod[]) => {
      for (const pod of pods) {
        deps.podManager.set(pod);
        workers.get(pod.metadata.uid)?.send({ type: 'POD.UPDATE', pod, updateType: 'update' });
      }
    };

    const remove = (pods: Pod[]) => {
      for (const pod of pods) {
        const uid = pod.metadata.uid;
        deps.podManager.delete(uid);
        const worker = workers.get(uid);
        if (worker) worker.send({ type: 'POD.KILL', deleted: true, reason: 'removed from config' });
        else {
          staticNames.drop(podFullName(pod), uid);
          deps.statuses.delete(uid);
        }
      }
    };

    const syncDue = () => {
      const now = deps.now();
      for (const [uid, at] of due) {
        if (at > now) continue;
        due.delete(uid);
        workers.get(uid)?.send({ type: 'POD.SYNC' });
      }
    };

    const onFinished = (uid: string, restartRequested: boolean) => {
      const pod = deps.podManager.get(uid);
      if (!restartRequested) releaseStaticName(uid);
      if (!pod) {
        forget(uid);
        deps.statuses.delete(uid);
      } else if (restartRequested) {
        // The same UID came back while it was terminating: it starts over with a fresh actor, as
        // soon as the old one has released its systemId.
        restartOnRelease.add(uid);
        forget(uid);
      }
    };

    /** A finished static pod frees its full name; the next pod waiting for it starts. */
    const releaseStaticName = (uid: string) => {
      const pod = workers.get(uid)?.getSnapshot().context.pod;
      if (!pod || !isStaticPod(pod)) return;
      const next = staticNames.release(podFullName(pod), uid, (u) => deps.podManager.has(u));
      const nextPod = next === undefined ? undefined : deps.podManager.get(next);
      if (nextPod && !workers.has(nextPod.metadata.uid)) start(nextPod);
    };

    const onReleased = (uid: string) => {
      const pod = deps.podManager.get(uid);
      if (restartOnRelease.delete(uid) && pod && !workers.has(uid)) {
        // A new life for the UID: the terminal status of the old one must not end it at once.
        deps.statuses.delete(uid);
        start(pod);
      }
    };

    /** A crashed pod actor is dropped; housekeeping starts a new one, which reads the runtime afresh. */
    const onFailed = (uid: string, error: unknown) => {
      const pod = deps.podManager.get(uid);
      deps.log('error', 'Pod worker failed; it will be recreated', { pod: pod ? podRef(pod) : uid, err: error });
      workers.delete(uid);
      due.delete(uid);
    };

    const runHousekeeping = async () => {
      for (const [uid, actor] of workers) {
        const finished = actor.getSnapshot().hasTag('finished');
        if (finished) onFinished(uid, actor.getSnapshot().context.restartRequested);
      }
      for (const pod of deps.podManager.all()) {
        if (!workers.has(pod.metadata.uid) && deps.statuses.get(pod.metadata.uid)?.phase !== 'Failed') add([pod]);
      }
      if (!collecting && deps.now() - lastGcAt >= deps.containerGcPeriodMs) {
        collecting = true;
        lastGcAt = deps.now();
        // A pod is deleted once nothing owns it: not in config, no worker, not being stopped as an orphan.
        const isPodDeleted = (uid: string) => !workers.has(uid) && deps.podManager.get(uid) === undefined && !orphansInFlight.has(uid);
        deps
          .collectGarbage(isPodDeleted)
          .catch((err: unknown) => deps.log('error', 'Container garbage collection failed', { err }))
          .finally(() => (collecting = false));
      }
      const running = await deps.listRuntimePodUids();
      for (const uid of running) {
        if (workers.has(uid) || orphansInFlight.has(uid)) continue;
        orphansInFlight.add(uid);
        deps.log('info', 'Stopping runtime pod unknown to the agent', { podUID: uid });
        deps
          .killOrphanPod(uid)
          .catch((err: unknown) => deps.log('error', 'Failed to stop orphaned pod', { podUID: uid, err }))
          .finally(() => orphansInFlight.delete(uid));
      }
    };

    receive((event) => {
      switch (event.type) {
        case 'CONFIG.ADD':
          return add(event.pods);
        case 'CONFIG.UPDATE':
        case 'CONFIG.DELETE':
          return update(event.pods);
        case 'CONFIG.REMOVE':
          return remove(event.pods);
        case 'CONFIG.RECONCILE':
          for (const pod of event.pods) deps.podManager.set(pod);
          return;
        case 'PLEG.CONTAINER_STARTED':
        case 'PLEG.CONTAINER_DIED':
        case 'PLEG.CONTAINER_REMOVED':
        case 'PROBE.RESULT':
          workers.get(event.podUid)?.send(event);
          return;
        case 'TICK.SYNC':
          return syncDue();
        case 'TICK.HOUSEKEEPING':
          if (housekeeping) return;
          housekeeping = true;
          runHousekeeping()
            .catch((err: unknown) => deps.log('error', 'Housekeeping failed', { err }))
            .finally(() => (housekeeping = false));
          return;
        case 'POD.SYNCED': {
          const base = event.ok ? deps.syncFrequencyMs : deps.errorBackoffMs;
          const delay = Math.min(jitter(deps.random, base), event.retryAfterMs ?? Infinity);
          due.set(event.uid, deps.now() + delay);
          return;
        }
        case 'POD.TERMINATED':
          due.delete(event.uid);
          return;
        case 'POD.FINISHED':
          return onFinished(event.uid, event.restartRequested);
        default:
          if ('output' in event) return onReleased(event.output.uid);
          return onFailed(event.type.slice(`xstate.error.actor.${actorIdPrefix}`.length), event.error);
      }
    });

    return () => {
      for (const actor of workers.values()) actor.send({ type: 'POD.RELEASE' });
      workers.clear();
    };
  });
}
