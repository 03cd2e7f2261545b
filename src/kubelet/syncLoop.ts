/**
 * The syncLoop: the agent's root actor. It owns its children and the shared clock ticks:
 *   - `sources`: the config sources and their merge; sends CONFIG.*, SOURCE.SEEN and SOURCE.STATE;
 *   - `pods`: the pod workers and the kubelet's handlers and housekeeping (pods.ts);
 *   - `pleg`: the pod lifecycle event generator (CRI event stream and relisting); sends PLEG.*;
 *   - `probes`: the probe manager (src/prober/manager.ts); sends PROBE.RESULT when a result changes;
 *   - `nodeStatus`, `nodeLease`: in a cluster, the node's registration and status, and its Lease
 *     (src/node); told NODE.HEALTH_CHANGED when the runtime's health flips;
 *   - `volumes`: the node's volume manager (src/volumes/volumeManager.ts): mounts of an earlier
 *     run adopted at start, expired service-account tokens collected each minute;
 *   - `containerLogs`: the container log manager (src/kuberuntime/containerLogMachine.ts): the
 *     running containers' logs rotated by size.
 * and routes between them: config, PLEG and probe events go to the pods, `TICK.SYNC` (every second)
 * lets due pods resync, `TICK.HOUSEKEEPING` (every two seconds) runs cleanups, but only once
 * every configured source has delivered its first snapshot — before that, a pod missing from
 * config may just not have been read yet.
 *
 * Regions (parallel, all always active):
 *   `sources`  `waiting` → `ready` once every expected source has been seen;
 *   `ticker`   emits TICK.SYNC each `syncTickMs`;
 *   `housekeeping` emits TICK.HOUSEKEEPING each `housekeepingMs`, in `ready` only;
 *   `runtime`  `healthy` ⇄ `unhealthy`, following the PLEG's relists (what /healthz reports); back
 *              to healthy, it tells the pods (`TICK.RUNTIME_BACK`) so failed syncs are retried at once.
 *
 * Context holds only counters and small facts for health and the visualizer; the pods themselves
 * live in their own actors.
 */
import { type EventObject, assertEvent, assign, fromCallback, sendTo, setup } from 'xstate';
import type { SourceName } from '../api/types.ts';
import {
  type ConfigEvent,
  type NodeEvent,
  type PlegReport,
  type ProbeResultEvent,
  type SourceEvent,
  type StatusWritesEvent,
  type TickEvent,
  routedToPodWorkers,
} from '../events.ts';
import { type PlegInput, plegMachine } from '../pleg/pleg.ts';
import type { LeaseInput } from '../node/leaseMachine.ts';
import type { NodeStatusInput } from '../node/nodeStatusMachine.ts';
import { volumeManagerMachine } from '../volumes/volumeManager.ts';
import { containerLogMachine } from '../kuberuntime/containerLogMachine.ts';
import type { PodsEvent } from './pods.ts';

/** Everything the syncLoop accepts: what its children report. */
export type SyncLoopEvent = ConfigEvent | SourceEvent | PlegReport | ProbeResultEvent | StatusWritesEvent;

export interface SyncLoopInput {
  expectedSources: SourceName[];
  syncTickMs: number;
  housekeepingMs: number;
  /** The PLEG's relist period and event stream settings. */
  pleg: PlegInput;
  /** In a cluster: the settings of the node status loop and the Lease. */
  cluster?: ClusterInput;
  /** How often the container log manager looks at the logs (default 10 s). */
  containerLogMonitorIntervalMs?: number;
}

export interface ClusterInput {
  status: NodeStatusInput;
  lease: LeaseInput;
}

export interface SyncLoopContext {
  containerLogMonitorIntervalMs: number;
  expectedSources: SourceName[];
  seenSources: SourceName[];
  syncTickMs: number;
  housekeepingMs: number;
  pleg: PlegInput;
  cluster: ClusterInput | null;
  lastRelistAt: number | null;
  lastRelistDurationMs: number | null;
  lastRuntimeError: string | null;
  /** How many events of each type were routed (for the visualizer and metrics). */
  routed: Record<string, number>;
  /** Each source's last reported state (SOURCE.STATE), e.g. the API source's `watching from 1234`. */
  sourceStates: Partial<Record<SourceName, string>>;
  /** In a cluster: the pod status writer's last reported progress. */
  statusWrites: { queued: number; writes: number; deletes: number } | null;
}

/** A child the composition did not provide: it does nothing, so the machine can be drawn and tested alone. */
const idle = <E extends EventObject>() => fromCallback<E>(() => {});

/**
 * The syncLoop as it is drawn; `composeNode` (composeNode.ts) provides its children: the config
 * sources, the pod workers, the PLEG with its effects, and the probe manager.
 */
export const syncLoopMachine = setup({
  types: {
    context: {} as SyncLoopContext,
    events: {} as SyncLoopEvent,
    input: {} as SyncLoopInput,
    children: {} as { sources: 'sources'; pods: 'pods'; pleg: 'pleg'; probes: 'probes'; nodeStatus: 'nodeStatus'; nodeLease: 'nodeLease'; volumes: 'volumes'; containerLogs: 'containerLogs' },
  },
  actors: {
    /** The config sources and their merge: sends CONFIG.*, SOURCE.SEEN, SOURCE.ERROR. */
    sources: idle<EventObject>(),
    /** The pod workers and the kubelet's handlers (pods.ts). */
    pods: idle<PodsEvent>(),
    pleg: plegMachine,
    /** The probe manager: sends PROBE.RESULT when a result changes. */
    probes: idle<EventObject>(),
    /** In a cluster: the node's registration and status (src/node/nodeStatusMachine.ts). */
    nodeStatus: idle<NodeEvent>(),
    /** In a cluster: the node's Lease (src/node/leaseMachine.ts). */
    nodeLease: idle<EventObject>(),
    /** The node's volume manager: mounts adopted at start, tokens collected (src/volumes/volumeManager.ts). */
    volumes: volumeManagerMachine,
    /** The container log manager: rotation of the running containers' logs (src/kuberuntime/containerLogMachine.ts). */
    containerLogs: containerLogMachine,
  },
  delays: {
    syncTick: ({ context }) => context.syncTickMs,
    housekeeping: ({ context }) => context.housekeepingMs,
  },
  guards: {
    allSourcesSeen: ({ context }) => context.expectedSources.every((s) => context.seenSources.includes(s)),
  },
  actions: {
    routeToPods: sendTo('pods', ({ event }): PodsEvent => {
      assertEvent(event, routedToPodWorkers);
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
    notifyNodeHealth: sendTo('nodeStatus', { type: 'NODE.HEALTH_CHANGED' } satisfies NodeEvent),
    tickSync: sendTo('pods', { type: 'TICK.SYNC' } satisfies TickEvent),
    tickHousekeeping: sendTo('pods', { type: 'TICK.HOUSEKEEPING' } satisfies TickEvent),
    tickRuntimeBack: sendTo('pods', { type: 'TICK.RUNTIME_BACK' } satisfies TickEvent),
    recordRelist: assign(({ event }) =>
      event.type === 'PLEG.RELISTED' ? { lastRelistAt: event.at, lastRelistDurationMs: event.durationMs, lastRuntimeError: null } : {},
    ),
    recordSourceState: assign({
      sourceStates: ({ context, event }) =>
        event.type === 'SOURCE.STATE' ? { ...context.sourceStates, [event.source]: event.detail ? `${event.phase} ${event.detail}` : event.phase } : context.sourceStates,
    }),
    recordStatusWrites: assign({
      statusWrites: ({ context, event }) =>
        event.type === 'STATUS.WRITES' ? { queued: event.queued, writes: event.writes, deletes: event.deletes } : context.statusWrites,
    }),
    recordRuntimeError: assign({
      lastRuntimeError: ({ event }) => (event.type === 'PLEG.RELIST_FAILED' ? event.error : null),
    }),
  },
}).createMachine({
  id: 'syncLoop',
  context: ({ input }) => ({
    containerLogMonitorIntervalMs: input.containerLogMonitorIntervalMs ?? 10_000,
    expectedSources: input.expectedSources,
    seenSources: [],
    syncTickMs: input.syncTickMs,
    housekeepingMs: input.housekeepingMs,
    pleg: input.pleg,
    cluster: input.cluster ?? null,
    lastRelistAt: null,
    lastRelistDurationMs: null,
    lastRuntimeError: null,
    routed: {},
    sourceStates: {},
    statusWrites: null,
  }),
  invoke: [
    { id: 'pods', src: 'pods' },
    { id: 'sources', src: 'sources' },
    { id: 'probes', src: 'probes' },
    { id: 'pleg', src: 'pleg', input: ({ context }: { context: SyncLoopContext }) => context.pleg },
    { id: 'nodeStatus', src: 'nodeStatus', input: ({ context }: { context: SyncLoopContext }) => context.cluster?.status },
    { id: 'nodeLease', src: 'nodeLease', input: ({ context }: { context: SyncLoopContext }) => context.cluster?.lease },
    { id: 'volumes', src: 'volumes' },
    { id: 'containerLogs', src: 'containerLogs', input: ({ context }: { context: SyncLoopContext }) => ({ monitorIntervalMs: context.containerLogMonitorIntervalMs }) },
  ],
  on: {
    // Config, container events and probe results go on to the pod workers as they are.
    ...Object.fromEntries(routedToPodWorkers.map((type) => [type, { actions: ['routeToPods', 'countRouted'] as const }])),
    'SOURCE.SEEN': { actions: 'markSourceSeen' },
    'SOURCE.STATE': { actions: 'recordSourceState' },
    'STATUS.WRITES': { actions: 'recordStatusWrites' },
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
        // The node's Ready condition follows the runtime's health at once, not a status period later.
        healthy: { entry: 'notifyNodeHealth' },
        unhealthy: {
          entry: 'notifyNodeHealth',
          // Back: syncs that failed meanwhile are retried now, not after their error back-off.
          on: { 'PLEG.RELISTED': { target: 'healthy', actions: ['recordRelist', 'tickRuntimeBack'] } },
        },
      },
      on: {
        'PLEG.RELISTED': { target: '.healthy', actions: 'recordRelist' },
        'PLEG.RELIST_FAILED': { target: '.unhealthy', actions: 'recordRuntimeError' },
      },
    },
  },
});

export type SyncLoopMachine = typeof syncLoopMachine;
