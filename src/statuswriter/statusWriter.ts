/**
 * The pod status writer (pkg/kubelet/status/status_manager.go Start: syncPod on each change,
 * syncBatch every 10 s): a node-level loop, in a cluster only, that writes the agent's pod
 * statuses to the API server and deletes the objects of deleted pods once they have finished.
 *
 *   `writing`  its `writer` child (effects.ts) keeps the queue: each status change marks its pod
 *              dirty (it follows the status manager itself), and the pods' news the syncLoop
 *              passes on reach it from here — POD.TERMINATED (a terminal phase held back while
 *              containers ran goes out now), POD.FINISHED (a deleted pod's object may go),
 *              STATUS.REWRITE (a static pod's mirror was created: its status is written again).
 *              Every `resyncMs` it is told STATUS.RESYNC to check every pod again. It reports its
 *              progress (STATUS.PROGRESS, at most once a second), kept here for the visualizer.
 *
 * Never: writes anything itself (the writer does), reads a pod actor (the pod workers' stages tell
 * it where each pod stands).
 */
import { assign, fromCallback, sendTo, setup } from 'xstate';
import type { EventOf } from '../events.ts';

/** What the writer is told: the pods' news, passed on by its loop, and the loop's resync tick. */
export type WriterNews = EventOf<'POD.TERMINATED'> | EventOf<'POD.FINISHED'> | EventOf<'STATUS.REWRITE'> | EventOf<'STATUS.RESYNC'>;

interface StatusWriterContext {
  resyncMs: number;
  queued: number;
  writes: number;
  deletes: number;
  lastError: string | null;
}

type StatusWriterEvent = WriterNews | EventOf<'STATUS.PROGRESS'>;

export const statusWriterMachine = setup({
  types: {
    context: {} as StatusWriterContext,
    events: {} as StatusWriterEvent,
    input: {} as { resyncMs: number },
    children: {} as { writer: 'writer' },
  },
  actors: {
    /** Writes the statuses; as drawn it writes nothing (statusWriterMachineWith gives the real one). */
    writer: fromCallback<WriterNews>(() => {}),
  },
  delays: {
    resync: ({ context }) => context.resyncMs,
  },
  actions: {
    pass: sendTo('writer', ({ event }) => event),
    resync: sendTo('writer', { type: 'STATUS.RESYNC' } satisfies WriterNews),
    recordProgress: assign(({ event }) => (event.type === 'STATUS.PROGRESS' ? { queued: event.queued, writes: event.writes, deletes: event.deletes, lastError: event.error } : {})),
  },
}).createMachine({
  id: 'statusWriter',
  context: ({ input }) => ({ resyncMs: input.resyncMs, queued: 0, writes: 0, deletes: 0, lastError: null }),
  invoke: { id: 'writer', src: 'writer' },
  on: {
    'POD.TERMINATED': { actions: 'pass' },
    'POD.FINISHED': { actions: 'pass' },
    'STATUS.REWRITE': { actions: 'pass' },
    'STATUS.PROGRESS': { actions: 'recordProgress' },
  },
  initial: 'writing',
  states: {
    writing: {
      after: { resync: { target: 'writing', reenter: true, actions: 'resync' } },
    },
  },
});

/** What the status writer loop runs: its writer, a callback actor's body (effects.ts statusWriter). */
export interface StatusWriterEffects {
  writer: Parameters<typeof fromCallback<WriterNews>>[0];
}

export function statusWriterMachineWith(effects: StatusWriterEffects) {
  return statusWriterMachine.provide({ actors: { writer: fromCallback<WriterNews>(effects.writer) } });
}
