/**
 * The pod lifecycle event generator: relists the runtime on a fixed period and tells its parent
 * what changed, as PLEG.* events, so that the pods concerned sync again. Level-triggered: a
 * missed event only delays a sync until the next relist or resync, it never wedges a pod,
 * because every sync reads the runtime afresh.
 *
 * States: `relisting` (the `relist` actor lists sandboxes and containers and diffs them against
 * the previous listing) → `waiting` (one period) → `relisting`. A failed relist keeps the previous
 * record, so its events come with the next successful one. After each relist the parent receives
 * `PLEG.RELISTED` or `PLEG.RELIST_FAILED`, which the health check reads.
 *
 * Never: keeps the listing itself in context (it lives in the relist actor's implementation).
 */
import { type ErrorActorEvent, assign, enqueueActions, fromPromise, sendParent, setup } from 'xstate';
import type { PlegEvent } from './decide/relist.ts';

export interface RelistOutcome {
  events: PlegEvent[];
  /** When the relist started (ms since the epoch). */
  startedAt: number;
  durationMs: number;
}

export interface PlegEffects {
  relist(signal: AbortSignal): Promise<RelistOutcome>;
}

export type PlegReport =
  | PlegEvent
  | { type: 'PLEG.RELISTED'; at: number; durationMs: number }
  | { type: 'PLEG.RELIST_FAILED'; error: string };

export interface PlegInput {
  periodMs: number;
}

export interface PlegContext {
  periodMs: number;
  lastRelistAt: number | null;
  relists: number;
  failures: number;
}

export function createPlegMachine(effects: PlegEffects) {
  return setup({
    types: {
      context: {} as PlegContext,
      input: {} as PlegInput,
    },
    actors: {
      relist: fromPromise<RelistOutcome>(({ signal }) => effects.relist(signal)),
    },
    delays: {
      period: ({ context }) => context.periodMs,
    },
    actions: {
      forwardEvents: enqueueActions(({ enqueue }, outcome: RelistOutcome) => {
        for (const event of outcome.events) enqueue.sendParent(event);
        enqueue.sendParent({ type: 'PLEG.RELISTED', at: outcome.startedAt, durationMs: outcome.durationMs } satisfies PlegReport);
      }),
      recordRelist: assign(({ context }, outcome: RelistOutcome) => ({
        lastRelistAt: outcome.startedAt,
        relists: context.relists + 1,
      })),
      recordFailure: assign(({ context }) => ({ failures: context.failures + 1 })),
      reportFailure: sendParent((_, error: unknown): PlegReport => ({
        type: 'PLEG.RELIST_FAILED',
        error: error instanceof Error ? error.message : String(error),
      })),
    },
  }).createMachine({
    id: 'pleg',
    context: ({ input }) => ({ periodMs: input.periodMs, lastRelistAt: null, relists: 0, failures: 0 }),
    initial: 'relisting',
    states: {
      relisting: {
        invoke: {
          src: 'relist',
          onDone: {
            target: 'waiting',
            actions: [
              { type: 'recordRelist', params: ({ event }) => event.output },
              { type: 'forwardEvents', params: ({ event }) => event.output },
            ],
          },
          onError: {
            target: 'waiting',
            actions: ['recordFailure', { type: 'reportFailure', params: ({ event }: { event: ErrorActorEvent }) => event.error }],
          },
        },
      },
      waiting: { after: { period: 'relisting' } },
    },
  });
}
