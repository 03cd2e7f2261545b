/**
 * The PLEG's effects: the relist (one ListPodSandbox and one ListContainers call, reduced to the
 * relist record — pod UID → container/sandbox ID → state — and diffed against the record) and the
 * runtime's container event stream (each event applied to the record, its difference told).
 *
 * The record lives here, not in the PLEG machine's context: it is as large as the node. A failed
 * list leaves it in place, so the events it would have produced come with the next relist that
 * succeeds. Stream events update it as they arrive, so the next relist does not tell them again.
 *
 * A relist's listing may be older than stream events that arrive while it is in flight (the
 * runtime answered the list, then the container died and the event came before the answer was
 * read). Those changes are laid over the listing before the diff, so that the relist neither
 * undoes nor repeats them; the stream is ordered, so its newest word on a container stands until
 * a later event or a later relist.
 */
import { Label } from '../kuberuntime/labels.ts';
import type { Logger } from '../log.ts';
import { type RelistState, entryEvents, relistEvents, stateAfterEvent } from './relist.ts';
import type { StreamUpdate } from '../events.ts';
import type { PlegEffects, RelistOutcome } from './pleg.ts';
import type { ContainerEvent, ContainerState, RuntimeService } from '../runtime/types.ts';
import { watchContainerEvents } from './containerEvents.ts';

const containerState: Record<ContainerState, RelistState> = {
  CONTAINER_RUNNING: 'running',
  CONTAINER_EXITED: 'exited',
  CONTAINER_CREATED: 'unknown',
  CONTAINER_UNKNOWN: 'unknown',
};

interface Relister extends Required<PlegEffects> {
  /** UIDs of pods that have a running container or a ready sandbox, as last seen. */
  runningPodUids(): Set<string>;
}

type MutableRecord = Map<string, Map<string, RelistState>>;

/** A change the stream told while a relist was in flight: pod UID and new state (undefined: gone). */
type StreamedChange = { podUid: string; state: RelistState | undefined };

export function createRelister(runtime: RuntimeService, now: () => number, log?: Logger, onRelist?: (durationMs: number, intervalMs: number | null) => void): Relister {
  let lastRelistAt: number | null = null;
  let record: MutableRecord = new Map();
  /** Container/sandbox ID → pod UID, for events that carry no sandbox metadata. */
  let owners = new Map<string, string>();
  /** One map per relist in flight: the stream's changes since it started. */
  const inFlight = new Set<Map<string, StreamedChange>>();

  const set = (target: MutableRecord, podUid: string, id: string, state: RelistState | undefined) => {
    let pod = target.get(podUid);
    if (state === undefined) {
      pod?.delete(id);
      if (pod?.size === 0) target.delete(podUid);
      return;
    }
    if (!pod) target.set(podUid, (pod = new Map()));
    pod.set(id, state);
  };

  const applyEvent = (event: ContainerEvent): StreamUpdate => {
    const id = event.containerId;
    const podUid = owners.get(id) ?? event.podSandboxMetadata?.uid;
    if (podUid === undefined || podUid === '') return { events: [], relist: true };
    const was = record.get(podUid)?.get(id);
    const state = stateAfterEvent(event.type);
    set(record, podUid, id, state);
    if (state === undefined) owners.delete(id);
    else owners.set(id, podUid);
    for (const changes of inFlight) changes.set(id, { podUid, state });
    return { events: entryEvents(podUid, id, was, state), relist: false };
  };

  return {
    async relist(signal): Promise<RelistOutcome> {
      const startedAt = now();
      const changes = new Map<string, StreamedChange>();
      inFlight.add(changes);
      try {
        const [sandboxes, containers] = await Promise.all([
          runtime.listPodSandbox(undefined, { signal }),
          runtime.listContainers(undefined, { signal }),
        ]);
        const listed: MutableRecord = new Map();
        const listedOwners = new Map<string, string>();
        for (const sandbox of sandboxes) {
          const uid = sandbox.labels[Label.podUid] ?? sandbox.metadata.uid;
          set(listed, uid, sandbox.id, sandbox.state === 'SANDBOX_READY' ? 'running' : 'exited');
          listedOwners.set(sandbox.id, uid);
        }
        for (const container of containers) {
          const uid = container.labels[Label.podUid];
          if (uid === undefined) continue; // not one of ours
          set(listed, uid, container.id, containerState[container.state]);
          listedOwners.set(container.id, uid);
        }
        for (const [id, change] of changes) {
          // The listing's pod for this id, if it differs (it cannot for our own containers).
          const listedUid = listedOwners.get(id);
          if (listedUid !== undefined && listedUid !== change.podUid) set(listed, listedUid, id, undefined);
          set(listed, change.podUid, id, change.state);
          if (change.state === undefined) listedOwners.delete(id);
          else listedOwners.set(id, change.podUid);
        }
        const events = relistEvents(record, listed);
        record = listed;
        owners = listedOwners;
        const durationMs = now() - startedAt;
        // The kubelet's PLEG relist duration, and the interval between the starts of relists.
        onRelist?.(durationMs, lastRelistAt === null ? null : startedAt - lastRelistAt);
        lastRelistAt = startedAt;
        return { events, startedAt, durationMs };
      } finally {
        inFlight.delete(changes);
      }
    },

    async watchEvents(signal, onUpdate) {
      const end = await watchContainerEvents(runtime, signal, (event) => onUpdate(applyEvent(event)));
      if (!signal.aborted) {
        if (end.unimplemented) log?.('info', 'The runtime has no container event stream; the PLEG relists only', { err: end.error });
        else log?.('warn', 'Container event stream ended; the PLEG relists at its normal period until it is back', { err: end.error });
      }
      return end;
    },

    runningPodUids() {
      const running = new Set<string>();
      for (const [uid, pod] of record) {
        for (const state of pod.values()) {
          if (state === 'running') {
            running.add(uid);
            break;
          }
        }
      }
      return running;
    },
  };
}
