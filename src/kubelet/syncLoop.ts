/**
 * The syncLoop: the agent's root actor. It owns four children and the shared clock ticks:
 *   - `sources`: the config sources and their merge; sends CONFIG.* and SOURCE.SEEN;
 *   - `pods`: the pod workers (the registry of pod actors, see podWorkers.ts);
 *   - `pleg`: the pod lifecycle event generator (CRI event stream and relisting); sends PLEG.*;
 *   - `probes`: the probe manager (src/prober/manager.ts); sends PROBE.RESULT when a result changes.
 * and routes between them: config, PLEG and probe events go to the pods, `TICK.SYNC` (every second)
 * lets due pods resync, `TICK.HOUSEKEEPING` (every two seconds) runs cleanups, but only once
 * every configured source has delivered its first snapshot — before that, a pod missing from
 * config may just not have been read yet.
 *
 * Regions (parallel, all always active):
 *   `sources`  `waiting` → `ready` once every expected source has been seen;
 *   `ticker`   emits TICK.SYNC each `syncTickMs`;
 *   `housekeeping` emits TICK.HOUSEKEEPING each `housekeepingMs`, in `ready` only;
 *   `runtime`  `healthy` ⇄ `unhealthy`, following the PLEG's relists (what /healthz reports).
 *
 * Context holds only counters and small facts for health and the visualizer; the pods themselves
 * live in their own actors.
 */
import { type AnyActorLogic, assertEvent, assign, fromCallback, sendTo, setup } from 'xstate';
import type { SourceName } from '../api/types.ts';
import type { PlegReport } from '../pleg/pleg.ts';
import type { ProbeResultEvent } from '../pod/pod.ts';
import type { ConfigEvent, PodWorkersEvent } from '../podworkers/podWorkers.ts';

export type SyncLoopEvent =
  | ConfigEvent
  | { type: 'SOURCE.SEEN'; source: SourceName }
  | PlegReport
  | ProbeResultEvent
  | { type: 'SOURCE.ERROR'; source: SourceName; message: string };

/** The events the syncLoop forwards to the pod workers as they are. */
const routedToPods = [
  'CONFIG.ADD',
  'CONFIG.UPDATE',
  'CONFIG.REMOVE',
  'CONFIG.DELETE',
  'CONFIG.RECONCILE',
  'PLEG.CONTAINER_STARTED',
  'PLEG.CONTAINER_DIED',
  'PLEG.CONTAINER_REMOVED',
  'PROBE.RESULT',
] as const;

export interface SyncLoopInput {
  expectedSources: SourceName[];
  syncTickMs: number;
  housekeepingMs: number;
  plegPeriodMs: number;
}

export interface SyncLoopContext {
  expectedSources: SourceName[];
  seenSources: SourceName[];
  syncTickMs: number;
  housekeepingMs: number;
  plegPeriodMs: number;
  lastRelistAt: number | null;
  lastRelistDurationMs: number | null;
  lastRuntimeError: string | null;
  /** How many events of each type were routed (for the visualizer and metrics). */
  routed: Record<string, number>;
}

export type SyncLoopChildren = {
  sources: AnyActorLogic;
  pods: AnyActorLogic;
  pleg: AnyActorLogic;
  /** The probe manager (sends PROBE.RESULT); none: nothing is probed. */
  probes?: AnyActorLogic;
};

const noProbes = fromCallback(() => {});

export function createSyncLoopMachine(children: SyncLoopChildren) {
  return setup({
    types: {
      context: {} as SyncLoopContext,
      events: {} as SyncLoopEvent,
      input: {} as SyncLoopInput,
    },
    actors: { ...children, probes: children.probes ?? noProbes },
    delays: {
      syncTick: ({ context }) => context.syncTickMs,
      housekeeping: ({ context }) => context.housekeepingMs,
    },
    guards: {
      allSourcesSeen: ({ context }) => context.expectedSources.every((s) => context.seenSources.includes(s)),
    },
    actions: {
      routeToPods: sendTo('pods', ({ event }): PodWorkersEvent => {
        assertEvent(event, routedToPods);
        return event;
      }),
      countRouted: assign({
        routed: ({ context, event }) => ({ ...context.routed, [event.type]: (context.routed[event.type] ?? 0) + 1 }),
      }),
      markSourceSeen: assign({
        seenSources: ({ context, event }) =>
          event.type === 'SOURCE.SEEN' && !context.seenSources.includes(event.source)
            ? [...context.seenSources, event.source]
            : context.seenSources,
      }),
      tickSync: sendTo('pods', { type: 'TICK.SYNC' } satisfies PodWorkersEvent),
      tickHousekeeping: sendTo('pods', { type: 'TICK.HOUSEKEEPING' } satisfies PodWorkersEvent),
      recordRelist: assign(({ event }) =>
        event.type === 'PLEG.RELISTED' ? { lastRelistAt: event.at, lastRelistDurationMs: event.durationMs, lastRuntimeError: null } : {},
      ),
      recordRuntimeError: assign({
        lastRuntimeError: ({ event }) => (event.type === 'PLEG.RELIST_FAILED' ? event.error : null),
      }),
    },
  }).createMachine({
    id: 'syncLoop',
    context: ({ input }) => ({
      expectedSources: input.expectedSources,
      seenSources: [],
      syncTickMs: input.syncTickMs,
      housekeepingMs: input.housekeepingMs,
      plegPeriodMs: input.plegPeriodMs,
      lastRelistAt: null,
      lastRelistDurationMs: null,
      lastRuntimeError: null,
      routed: {},
    }),
    invoke: [
      { id: 'pods', src: 'pods' },
      { id: 'sources', src: 'sources' },
      { id: 'probes', src: 'probes' },
      { id: 'pleg', src: 'pleg', input: ({ context }: { context: SyncLoopContext }) => ({ periodMs: context.plegPeriodMs }) },
    ],
    on: {
      'CONFIG.*': { actions: ['routeToPods', 'countRouted'] },
      'SOURCE.SEEN': { actions: 'markSourceSeen' },
      'PLEG.CONTAINER_STARTED': { actions: ['routeToPods', 'countRouted'] },
      'PLEG.CONTAINER_DIED': { actions: ['routeToPods', 'countRouted'] },
      'PLEG.CONTAINER_REMOVED': { actions: ['routeToPods', 'countRouted'] },
      'PROBE.RESULT': { actions: ['routeToPods', 'countRouted'] },
    },
    type: 'parallel',
    states: {
      sources: {
        initial: 'waiting',
        states: {
          waiting: { always: { guard: 'allSourcesSeen', target: 'ready' } },
          ready: {},
        },
      },
      ticker: {
        initial: 'waiting',
        states: {
          waiting: { after: { syncTick: { target: 'waiting', reenter: true, actions: 'tickSync' } } },
        },
      },
      housekeeping: {
        initial: 'blocked',
        states: {
          blocked: { always: { guard: 'allSourcesSeen', target: 'waiting' } },
          waiting: { after: { housekeeping: { target: 'waiting', reenter: true, actions: 'tickHousekeeping' } } },
        },
      },
      runtime: {
        initial: 'unknown',
        states: {
          unknown: {},
          healthy: {},
          unhealthy: {},
        },
        on: {
          'PLEG.RELISTED': { target: '.healthy', actions: 'recordRelist' },
          'PLEG.RELIST_FAILED': { target: '.unhealthy', actions: 'recordRuntimeError' },
        },
      },
    },
  });
}

export type SyncLoopMachine = ReturnType<typeof createSyncLoopMachine>;
