/**
 * The PLEG's relist effect: one ListPodSandbox and one ListContainers call, reduced to the
 * relist record (pod UID → container/sandbox ID → state), diffed against the previous record.
 * The previous record lives here, not in the PLEG machine's context: it is as large as the node.
 * A failed list leaves the previous record in place, so the events it would have produced come
 * with the next relist that succeeds.
 */
import { Label } from '../kuberuntime/labels.ts';
import { type RelistRecord, type RelistState, relistEvents } from '../machines/decide/relist.ts';
import type { PlegEffects, RelistOutcome } from '../machines/pleg.ts';
import type { ContainerState, RuntimeService } from '../runtime/types.ts';

const containerState: Record<ContainerState, RelistState> = {
  CONTAINER_RUNNING: 'running',
  CONTAINER_EXITED: 'exited',
  CONTAINER_CREATED: 'unknown',
  CONTAINER_UNKNOWN: 'unknown',
};

export interface Relister extends PlegEffects {
  /** UIDs of pods that have a running container or a ready sandbox, as of the last relist. */
  runningPodUids(): Set<string>;
}

export function createRelister(runtime: RuntimeService, now: () => number): Relister {
  let previous: RelistRecord = new Map();
  let running = new Set<string>();

  return {
    async relist(signal): Promise<RelistOutcome> {
      const startedAt = now();
      const [sandboxes, containers] = await Promise.all([
        runtime.listPodSandbox(undefined, { signal }),
        runtime.listContainers(undefined, { signal }),
      ]);
      const record = new Map<string, Map<string, RelistState>>();
      const nextRunning = new Set<string>();
      const entry = (uid: string) => {
        let pod = record.get(uid);
        if (!pod) record.set(uid, (pod = new Map()));
        return pod;
      };
      for (const sandbox of sandboxes) {
        const uid = sandbox.labels[Label.podUid] ?? sandbox.metadata.uid;
        const ready = sandbox.state === 'SANDBOX_READY';
        entry(uid).set(sandbox.id, ready ? 'running' : 'exited');
        if (ready) nextRunning.add(uid);
      }
      for (const container of containers) {
        const uid = container.labels[Label.podUid];
        if (uid === undefined) continue; // not one of ours
        const state = containerState[container.state];
        entry(uid).set(container.id, state);
        if (state === 'running') nextRunning.add(uid);
      }
      const events = relistEvents(previous, record);
      previous = record;
      running = nextRunning;
      return { events, startedAt, durationMs: now() - startedAt };
    },
    runningPodUids: () => running,
  };
}
