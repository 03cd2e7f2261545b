/**
 * The syncLoop: the agent's root actor. It owns its children and the shared clock ticks:
 *   - `sources`: the config sources and their merge; sends CONFIG.*, SOURCE.SEEN and SOURCE.STATE;
 *   - `pods`: the pod workers and the kubelet's handlers and housekeeping (dispatch.ts);
 *   - `pleg`: the pod lifecycle event generator (CRI event stream and relisting); sends PLEG.*;
 *   - `probes`: the probe manager (src/prober/manager.ts); sends PROBE.RESULT when a result changes;
 *   - `facts`: the read model of what the syncLoop knows (nodeFacts.ts: runtime health, runtime
 *     network, sources ready), told as catalogue events; other parts read it, never this snapshot;
 *   - the node-level loops (nodeLoops.ts), spawned at start, each that starts on this node with
 *     the input composeNode gave it.
 * and routes between them: config, PLEG and probe events go to the pods, `TICK.SYNC` (every second)
 * lets due pods resync, `TICK.HOUSEKEEPING` (every two seconds) runs cleanups, but only once
 * every configured source has delivered its first snapshot — before that, a pod missing from
 * config may just not have been read yet. A node loop is passed the catalogue events it accepts:
 * those its siblings send here, and NODE.HEALTH_CHANGED when the runtime's health flips.
 *
 * Regions (parallel, all always active):
 *   `sources`  `waiting` → `ready` once every expected source has been seen (told: SOURCE.ALL_SEEN);
 *   `ticker`   emits TICK.SYNC each `syncTickMs`;
 *   `housekeeping` emits TICK.HOUSEKEEPING each `housekeepingMs`, in `ready` only;
 *   `runtime`  `healthy` ⇄ `unhealthy`, following the PLEG's relists (what /healthz reports; each
 *              relist is told to `facts`); back to healthy, it tells the pods (`TICK.RUNTIME_BACK`)
 *              so failed syncs are retried at once.
 *   `runtimeStatus`  `checking` ⇄ `waiting`: asks the runtime's Status at start and every
 *              `runtimeStatusPeriodMs` (5 s, the kubelet's updateRuntimeUp) and keeps its network
 *              state in `networkError` (null: ready), told to `facts` (NODE.RUNTIME_NETWORK), where
 *              each pod's sync reads it: a pod not on the host's network is not synced while it
 *              is set. A Status that fails leaves it as it was.
 *
 * Context holds only counters and small facts for health and the visualizer; the pods themselves
 * live in their own actors.
 */
import { type AnyStateMachine, type EventObject, assertEvent, assign, enqueueActions, fromCallback, fromPromise, raise, sendTo, setup } from 'xstate';
import type { SourceName } from '../api/types.ts';
import { runtimeNetworkError } from '../node/health.ts';
import type { RuntimeHandler, RuntimeStatusInfo } from '../runtime/types.ts';
import {
  type ConfigEvent,
  type NodeEvent,
  type PlegReport,
  type PodReport,
  type ProbeResultEvent,
  type SourceEvent,
  type StatusWriterEvent,
  type TickEvent,
  routedToPodWorkers,
} from '../events.ts';
import { type PlegInput, plegMachine } from '../pleg/pleg.ts';
import { type LoopInputs, type NodeLoopName, nodeLoops } from './nodeLoops.ts';
import type { PodsEvent } from './dispatch.ts';
import type { NodeFactEvent } from './nodeFacts.ts';

/**
 * Everything the syncLoop accepts: what its children report, and what the pods pass up for the
 * node loops (a pod's end of termination, a mirror pod created).
 */
type SyncLoopEvent = ConfigEvent | SourceEvent | PlegReport | ProbeResultEvent | StatusWriterEvent | NodeEvent | PodReport;

interface SyncLoopInput {
  expectedSources: SourceName[];
  syncTickMs: number;
  housekeepingMs: number;
  /** The PLEG's relist period and event stream settings. */
  pleg: PlegInput;
  /** The input of each node loop that starts on this node (src/nodeloop/nodeLoop.ts); the others do not run. */
  loops: LoopInputs;
  /**
   * The runtime's network state until the first poll answers (as the Status read at the agent's
   * start found it); absent: taken as ready. The kubelet starts from "network state unknown".
   */
  networkError?: string | null;
}

/** How often the runtime's Status is asked (kubelet.go Run: `wait.Until(kl.updateRuntimeUp, 5*time.Second)`). */
export const runtimeStatusPeriodMs = 5_000;

/** What the `runtimeStatus` effect returns: the Status's conditions and its runtime handlers (src/node/runtimeStatus.ts). */
export type RuntimeConditions = { conditions: RuntimeStatusInfo['conditions']; handlers: readonly RuntimeHandler[] };



export interface SyncLoopContext {
  expectedSources: SourceName[];
  seenSources: SourceName[];
  syncTickMs: number;
  housekeepingMs: number;
  pleg: PlegInput;
  loops: LoopInputs;
  lastRelistAt: number | null;
  lastRelistDurationMs: number | null;
  lastRuntimeError: string | null;
  /** The runtime's network error as its Status last said (runtime.go networkErrors); null: ready. */
  networkError: string | null;
  /** How many events of each type were routed (for the visualizer and metrics). */
  routed: Record<string, number>;
  /** Each source's last reported state (SOURCE.STATE), e.g. the API source's `watching from 1234`. */
  sourceStates: Partial<Record<SourceName, string>>;
}

/** A child the composition did not provide: it does nothing, so the machine can be drawn and tested alone. */
const idle = <E extends EventObject>() => fromCallback<E>(() => {});

/** Each node loop as drawn (its effects placeholders), by name: composeNode provides the real ones. */
const loopMachines = Object.fromEntries(nodeLoops.map((loop) => [loop.name, loop.machine])) as Record<NodeLoopName, AnyStateMachine>;
/**
 * Every loop's placeholder has the same type (AnyStateMachine), but TypeScript cannot match a name
 * of the union to the union of spawn signatures: they are told one name, which stands for all.
 */
type AnyLoopName = (typeof nodeLoops)[0]['name'];

/** The node loops each catalogue event is passed to. */
const loopsAccepting = new Map<string, NodeLoopName[]>();
for (const loop of nodeLoops) for (const type of loop.accepts) loopsAccepting.set(type, [...(loopsAccepting.get(type) ?? []), loop.name]);

/**
 * The syncLoop as it is drawn; `composeNode` (composeNode.ts) provides its children: the config
 * sources, the pod workers, the PLEG with its effects, and the probe manager.
 */
export const syncLoopMachine = setup({
  types: {
    context: {} as SyncLoopContext,
    events: {} as SyncLoopEvent,
    input: {} as SyncLoopInput,
    children: {} as { sources: 'sources'; pods: 'pods'; pleg: 'pleg'; probes: 'probes'; facts: 'facts'; runtimeStatus: 'runtimeStatus' } & { [N in NodeLoopName]: N },
  },
  actors: {
    /** The config sources and their merge: sends CONFIG.*, SOURCE.SEEN, SOURCE.ERROR. */
    sources: idle<EventObject>(),
    /** The pod workers and the kubelet's handlers (dispatch.ts). */
    pods: idle<PodsEvent>(),
    pleg: plegMachine,
    /** The probe manager: sends PROBE.RESULT when a result changes. */
    probes: idle<EventObject>(),
    /** The read model of the node's facts (nodeFacts.ts); as drawn it keeps nothing. */
    facts: idle<NodeFactEvent>(),
    /** The runtime's Status, its conditions; as drawn it never answers (composeNode gives the runtime's). */
    runtimeStatus: fromPromise<RuntimeConditions>(() => new Promise<never>(() => {})),
    ...loopMachines,
  },
  delays: {
    syncTick: ({ context }) => context.syncTickMs,
    housekeeping: ({ context }) => context.housekeepingMs,
    runtimeStatusPeriod: runtimeStatusPeriodMs,
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
    startNodeLoops: enqueueActions(({ context, enqueue }) => {
      for (const { name } of nodeLoops) {
        const loop = name as AnyLoopName;
        if (name in context.loops) enqueue.spawnChild(loop, { id: loop, input: context.loops[name] });
      }
    }),
    passToLoops: enqueueActions(({ context, event, enqueue }) => {
      for (const name of loopsAccepting.get(event.type) ?? []) if (name in context.loops) enqueue.sendTo(name, event);
    }),
    // Raised, so it takes the way of any event a loop accepts (passToLoops).
    notifyNodeHealth: raise({ type: 'NODE.HEALTH_CHANGED' } satisfies NodeEvent),
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
    tellFacts: sendTo('facts', ({ event }): NodeFactEvent => {
      assertEvent(event, ['PLEG.RELISTED', 'PLEG.RELIST_FAILED']);
      return event;
    }),
    tellSourcesReady: sendTo('facts', { type: 'SOURCE.ALL_SEEN' } satisfies NodeFactEvent),
    recordNetwork: assign((_, status: RuntimeConditions) => ({ networkError: runtimeNetworkError(status.conditions) })),
    tellNetwork: sendTo('facts', ({ context }): NodeFactEvent => ({ type: 'NODE.RUNTIME_NETWORK', error: context.networkError })),
    tellHandlers: sendTo('facts', (_, status: RuntimeConditions): NodeFactEvent => ({ type: 'NODE.RUNTIME_HANDLERS', handlers: status.handlers })),
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
    pleg: input.pleg,
    loops: input.loops,
    lastRelistAt: null,
    lastRelistDurationMs: null,
    lastRuntimeError: null,
    networkError: input.networkError ?? null,
    routed: {},
    sourceStates: {},
  }),
  invoke: [
    { id: 'pods', src: 'pods' },
    { id: 'sources', src: 'sources' },
    { id: 'probes', src: 'probes' },
    { id: 'facts', src: 'facts' },
    { id: 'pleg', src: 'pleg', input: ({ context }: { context: SyncLoopContext }) => context.pleg },
  ],
  entry: 'startNodeLoops',
  on: {
    // What a node loop accepts, from whichever child sent it; config, container events, probe
    // results and the eviction manager's news go on to the pod workers as they are (some to both).
    ...Object.fromEntries(
      [...new Set<string>([...loopsAccepting.keys(), ...routedToPodWorkers])].map((type) => [
        type,
        {
          actions: [
            ...(loopsAccepting.has(type) ? (['passToLoops'] as const) : []),
            ...((routedToPodWorkers as readonly string[]).includes(type) ? (['routeToPods', 'countRouted'] as const) : []),
          ],
        },
      ]),
    ),
    'SOURCE.SEEN': { actions: 'markSourceSeen' },
    'SOURCE.STATE': { actions: 'recordSourceState' },
  },
  type: 'parallel',
  states: {
    sources: {
      initial: 'waiting',
      states: {
        waiting: { always: { guard: 'allSourcesSeen', target: 'ready' } },
        ready: { entry: 'tellSourcesReady' },
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
        // The node's Ready condition follows the runtime's health at once, not a status period later;
        // told on a flip only, not at every relist.
        healthy: {
          entry: 'notifyNodeHealth',
          on: { 'PLEG.RELISTED': { actions: ['recordRelist', 'tellFacts'] } },
        },
        unhealthy: {
          entry: 'notifyNodeHealth',
          on: {
            // Back: syncs that failed meanwhile are retried now, not after their error back-off.
            'PLEG.RELISTED': { target: 'healthy', actions: ['recordRelist', 'tellFacts', 'tickRuntimeBack'] },
            'PLEG.RELIST_FAILED': { actions: ['recordRuntimeError', 'tellFacts'] },
          },
        },
      },
      on: {
        'PLEG.RELISTED': { target: '.healthy', actions: ['recordRelist', 'tellFacts'] },
        'PLEG.RELIST_FAILED': { target: '.unhealthy', actions: ['recordRuntimeError', 'tellFacts'] },
      },
    },
    // The kubelet's updateRuntimeUp: the network state is what the last Status said; a Status that
    // fails changes nothing (the relists tell whether the runtime is down).
    runtimeStatus: {
      initial: 'checking',
      states: {
        checking: {
          invoke: {
            id: 'runtimeStatus',
            src: 'runtimeStatus',
            onDone: {
              target: 'waiting',
              actions: [{ type: 'recordNetwork', params: ({ event }) => event.output }, 'tellNetwork', { type: 'tellHandlers', params: ({ event }) => event.output }],
            },
            onError: { target: 'waiting' },
          },
        },
        waiting: { after: { runtimeStatusPeriod: 'checking' } },
      },
    },
  },
});

export type SyncLoopMachine = typeof syncLoopMachine;
