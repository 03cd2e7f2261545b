/**
 * The pod lifecycle event generator: tells its parent what changed in the runtime, as PLEG.*
 * events, so that the pods concerned sync again. Level-triggered: a missed event only delays a
 * sync until the next relist or resync, it never wedges a pod, because every sync reads the
 * runtime afresh; for the same reason an occasional duplicate event costs one extra sync, no more.
 *
 * Two parallel regions:
 *
 *   `relist`  `relisting` (the `relist` actor lists sandboxes and containers and diffs them with
 *             the record) → `waiting` (one period) → `relisting`. The period is `periodMs`
 *             (--pleg-relist-period, 1 s) unless the event stream is `streaming`, then
 *             `eventedRelistPeriodMs` (--evented-pleg-relist-period, 10 s): a slower safety net
 *             for what the stream missed. A failed relist keeps the previous record, so its events
 *             come with the next successful one. `RELIST.NOW` (the stream ended, or named a
 *             container of an unknown pod) cuts a wait short, or queues one more relist right after
 *             the one in flight.
 *
 *   `events`  the CRI container event stream (the kubelet's evented PLEG, pkg/kubelet/pleg/evented.go):
 *     `disabled`      no stream was configured: the generic PLEG, relisting only.
 *     `watching`      the `containerEvents` actor holds the stream open; each event becomes its
 *                     PLEG events at once. Entering asks for a relist, so that nothing that
 *                     happened while no stream was open goes unseen.
 *       `connecting`  opened; relisting at the fast period until a relist that started after the
 *                     stream opened has completed (from then on, stream + record have no gap);
 *       `streaming`   healthy: relists slow down to the evented period.
 *     `reconnecting`  the stream ended (fewer than `maxFailures` times in a row): reopen soon.
 *     `backingOff`    it ended `maxFailures` (5) times in a row: relist at the fast period, try
 *                     the stream again every `backoffMs` (1 min). "In a row": the count restarts
 *                     when a stream delivers an event or is still open at a safety-net relist.
 *     `unsupported`   the runtime answered UNIMPLEMENTED (containerd 1.6): relisting only, for good.
 *   Every end of the stream asks for a relist at once (events may have been lost with it).
 *
 * No duplicates: the record (pod UID → container/sandbox ID → state, kept by the effects) is
 * updated by stream events too, and both the stream and the relist emit only the difference with
 * the record, from the same table (`relist.ts`). A change told by the stream is therefore
 * not told again by the next relist; the relist tells only what the stream missed.
 *
 * Health: after each relist the parent receives `PLEG.RELISTED` or `PLEG.RELIST_FAILED`, which
 * /healthz reads (unhealthy when no relist for 3 min). Relists go on while streaming, every
 * 10 s, so that signal stays as meaningful as without the stream (the CRI stream has no heartbeat
 * of its own: a quiet stream and a stuck one look the same). Stream events are not reported as
 * relists.
 *
 * Never: keeps the record itself in context (it lives in the effects); never sends the parent
 * anything but PlegReport.
 */
import {
  type ErrorActorEvent,
  assign,
  enqueueActions,
  fromCallback,
  fromPromise,
  not,
  raise,
  sendParent,
  setup,
  stateIn,
} from 'xstate';
import { notProvided } from '../notProvided.ts';
import type { PlegEvent, PlegInternalEvent, PlegReport, StreamEnd, StreamUpdate } from '../events.ts';

export interface RelistOutcome {
  events: PlegEvent[];
  /** When the relist started (ms since the epoch). */
  startedAt: number;
  durationMs: number;
}

export interface PlegEffects {
  relist(signal: AbortSignal): Promise<RelistOutcome>;
  /**
   * Holds the runtime's container event stream open until it ends or `signal` aborts, handing
   * each event's meaning to `onUpdate` as it arrives. Resolves with why it ended; never rejects.
   * Absent: the runtime offers no stream.
   */
  watchEvents?(signal: AbortSignal, onUpdate: (update: StreamUpdate) => void): Promise<StreamEnd>;
}

/** How the PLEG follows the runtime's container event stream (absent: relisting only). */
interface EventedOptions {
  /** The relist period while the stream is healthy (the safety net). */
  relistPeriodMs: number;
  /** Delay before reopening a stream that ended. Default 1 s. */
  retryMs?: number;
  /** Consecutive failures before backing off. Default 5, as the kubelet. */
  maxFailures?: number;
  /** Delay before trying again after `maxFailures`. Default 1 min. */
  backoffMs?: number;
}

export interface PlegInput {
  periodMs: number;
  /** Follow the runtime's event stream; give it only when the effects can watch one. */
  evented?: EventedOptions;
}

interface PlegContext {
  periodMs: number;
  /** The event stream's settings, defaults filled in; null when no stream is configured. */
  evented: Required<EventedOptions> | null;
  lastRelistAt: number | null;
  relists: number;
  failures: number;
  /** A relist was asked for while one was in flight: run another right after it. */
  relistRequested: boolean;
  /** Stream ends since a stream last proved itself (delivered an event, or lasted a relist period). */
  streamFailures: number;
  lastStreamError: string | null;
  /** PLEG events delivered from the stream (for the visualizer and tests). */
  streamedEvents: number;
}

const defaultStreamRetryMs = 1_000;
const defaultMaxStreamFailures = 5;
const defaultStreamBackoffMs = 60_000;

const streaming = stateIn({ events: { watching: 'streaming' } });


/** The PLEG as it is drawn; `plegMachineWith` gives it the relist and the event stream. */
export const plegMachine = setup({
  types: {
    context: {} as PlegContext,
    input: {} as PlegInput,
    events: {} as PlegInternalEvent,
  },
  actors: {
    relist: fromPromise<RelistOutcome>(notProvided('pleg', 'relist')),
    containerEvents: fromCallback<PlegInternalEvent>(() => {}),
  },
  delays: {
    period: ({ context }) => context.periodMs,
    eventedPeriod: ({ context }) => context.evented?.relistPeriodMs ?? context.periodMs,
    streamRetry: ({ context }) => context.evented?.retryMs ?? defaultStreamRetryMs,
    streamBackoff: ({ context }) => context.evented?.backoffMs ?? defaultStreamBackoffMs,
  },
  guards: {
    relistRequested: ({ context }) => context.relistRequested,
    streaming,
    unimplemented: ({ event }) => event.type === 'STREAM.ENDED' && event.unimplemented,
    failedTooOften: ({ context }) => context.streamFailures + 1 >= (context.evented?.maxFailures ?? defaultMaxStreamFailures),
    evented: ({ context }) => context.evented !== null,
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
    requestRelist: assign({ relistRequested: true }),
    clearRelistRequest: assign({ relistRequested: false }),
    relistNow: raise({ type: 'RELIST.NOW' }),
    relistDone: raise({ type: 'RELIST.DONE' }),
    forwardStreamed: enqueueActions(({ enqueue, context }, update: StreamUpdate) => {
      for (const event of update.events) enqueue.sendParent(event);
      if (update.events.length > 0) enqueue.assign({ streamedEvents: context.streamedEvents + update.events.length });
      if (update.relist) enqueue.raise({ type: 'RELIST.NOW' });
    }),
    recordStreamEnd: assign(({ context }, end: StreamEnd) => ({
      streamFailures: context.streamFailures + 1,
      lastStreamError: end.error,
    })),
    resetStreamFailures: assign({ streamFailures: 0 }),
  },
}).createMachine({
  id: 'pleg',
  type: 'parallel',
  context: ({ input }) => ({
    periodMs: input.periodMs,
    evented: input.evented
      ? {
          relistPeriodMs: input.evented.relistPeriodMs,
          retryMs: input.evented.retryMs ?? defaultStreamRetryMs,
          maxFailures: input.evented.maxFailures ?? defaultMaxStreamFailures,
          backoffMs: input.evented.backoffMs ?? defaultStreamBackoffMs,
        }
      : null,
    lastRelistAt: null,
    relists: 0,
    failures: 0,
    relistRequested: false,
    streamFailures: 0,
    lastStreamError: null,
    streamedEvents: 0,
  }),
  states: {
    relist: {
      initial: 'relisting',
      states: {
        relisting: {
          entry: 'clearRelistRequest',
          invoke: {
            src: 'relist',
            onDone: [
              {
                // Superseded: a relist must start after whatever asked for it.
                guard: 'relistRequested',
                target: 'relisting',
                reenter: true,
                actions: [
                  { type: 'recordRelist', params: ({ event }) => event.output },
                  { type: 'forwardEvents', params: ({ event }) => event.output },
                ],
              },
              {
                target: 'waiting',
                actions: [
                  { type: 'recordRelist', params: ({ event }) => event.output },
                  { type: 'forwardEvents', params: ({ event }) => event.output },
                  'relistDone',
                ],
              },
            ],
            onError: [
              {
                guard: 'relistRequested',
                target: 'relisting',
                reenter: true,
                actions: ['recordFailure', { type: 'reportFailure', params: ({ event }: { event: ErrorActorEvent }) => event.error }],
              },
              {
                target: 'waiting',
                actions: ['recordFailure', { type: 'reportFailure', params: ({ event }: { event: ErrorActorEvent }) => event.error }],
              },
            ],
          },
          on: { 'RELIST.NOW': { actions: 'requestRelist' } },
        },
        waiting: {
          after: {
            // Both timers run; the mode at the time each fires decides which one counts.
            period: { guard: not('streaming'), target: 'relisting' },
            eventedPeriod: { guard: 'streaming', target: 'relisting' },
          },
          on: { 'RELIST.NOW': 'relisting' },
        },
      },
    },
    events: {
      initial: 'disabled',
      states: {
        disabled: { always: { guard: 'evented', target: 'watching' } },
        watching: {
          entry: 'relistNow',
          invoke: { id: 'containerEvents', src: 'containerEvents' },
          initial: 'connecting',
          states: {
            connecting: { on: { 'RELIST.DONE': 'streaming' } },
            // Failures stop counting as "in a row" once the stream has proved itself: it
            // delivered an event, or it was still open at a safety-net relist.
            streaming: { on: { 'RELIST.DONE': { actions: 'resetStreamFailures' } } },
          },
          on: {
            'STREAM.UPDATE': { actions: [{ type: 'forwardStreamed', params: ({ event }) => event }, 'resetStreamFailures'] },
            'STREAM.ENDED': [
              {
                guard: 'unimplemented',
                target: 'unsupported',
                actions: [{ type: 'recordStreamEnd', params: ({ event }) => event }, 'relistNow'],
              },
              {
                guard: 'failedTooOften',
                target: 'backingOff',
                actions: [{ type: 'recordStreamEnd', params: ({ event }) => event }, 'relistNow'],
              },
              {
                target: 'reconnecting',
                actions: [{ type: 'recordStreamEnd', params: ({ event }) => event }, 'relistNow'],
              },
            ],
          },
        },
        reconnecting: { after: { streamRetry: 'watching' } },
        backingOff: { after: { streamBackoff: 'watching' } },
        unsupported: {},
      },
    },
  },
});

type PlegMachine = typeof plegMachine;

/** The PLEG running `effects`: relisting, and following the event stream where the effects have one. */
export function plegMachineWith(effects: PlegEffects): PlegMachine {
  const { watchEvents } = effects;
  return plegMachine.provide({
    actors: {
      relist: fromPromise<RelistOutcome>(({ signal }) => effects.relist(signal)),
      containerEvents: fromCallback<PlegInternalEvent>(({ sendBack }) => {
        const controller = new AbortController();
        const { signal } = controller;
        if (watchEvents) {
          void watchEvents(signal, (update) => {
            if (!signal.aborted) sendBack({ type: 'STREAM.UPDATE', ...update });
          }).then((end) => {
            if (!signal.aborted) sendBack({ type: 'STREAM.ENDED', ...end });
          });
        }
        return () => controller.abort();
      }),
    },
  });
}
