/**
 * The eviction manager (pkg/kubelet/eviction/eviction_manager.go): a node-level loop that watches
 * the node's memory, disk and process figures against the eviction thresholds, reports the
 * pressure conditions, and, when a threshold is met past its grace period, reclaims what the node
 * itself holds and then evicts pods, one per round, until the signal is back above the threshold.
 *
 *   `waiting`       one monitoring interval (10 s) → `observing`.
 *   `observing`     the `observe` effect reads the node's signals; the round (synchronize.ts) updates
 *                   what is met, since when, and the pressure conditions, telling the syncLoop
 *                   NODE.PRESSURE when they change → `reclaiming` when a threshold is to be
 *                   reclaimed, else `waiting`. A failed read is kept and the next one waited for.
 *   `reclaiming`    `reclaimNodeResources` records EvictionThresholdMet and, for disk signals, removes
 *                   dead containers and unused images, then reads the signals again → `waiting`
 *                   when that was enough, else `evicting`.
 *   `evicting`      `selectPod` ranks the active pods and names the first that may be evicted (no
 *                   critical pod), with its message; the machine sends NODE.EVICT_POD for it →
 *                   `awaitingCleanup`; none → `waiting`.
 *   `awaitingCleanup` polls `podCleanedUp` each second, at most 30 s (waitForPodsCleanup), so the
 *                   next round, at once, measures a node that has let go of the pod → `observing`.
 *
 * Never: evicts more than one pod a round, evicts a static, mirror or system-critical pod.
 */
import { type ErrorActorEvent, assign, enqueueActions, fromPromise, sendParent, setup } from 'xstate';
import type { NodeEvent } from '../events.ts';
import { type EvictionMemory, NO_MEMORY, type Observations, evaluate, metThresholds } from './synchronize.ts';
import type { PressureCondition, Threshold } from './thresholds.ts';

/** The pod chosen for eviction: what the syncLoop needs to kill it, and what the visualizer shows. */
export interface EvictionChoice {
  uid: string;
  /** `namespace/name`. */
  pod: string;
  gracePeriodSeconds: number;
  message: string;
}

/** The node's signals, and when they were read (the clock of the node). */
export interface Reading {
  observations: Observations;
  at: number;
}

export interface EvictionInput {
  thresholds: Threshold[];
  monitoringIntervalMs: number;
  transitionPeriodMs: number;
  maxPodGracePeriodSeconds: number;
}

interface EvictionContext extends EvictionInput {
  memory: EvictionMemory;
  observations: Observations;
  /** The node conditions reported True. */
  conditions: PressureCondition[];
  /** The threshold being reclaimed this round (index into `thresholds`). */
  reclaiming: number | null;
  evicting: EvictionChoice | null;
  evictions: number;
  lastEviction: EvictionChoice | null;
  lastError: string | null;
}

const CLEANUP = { pollMs: 1_000, timeoutMs: 30_000 };

const message = (error: unknown) => (error instanceof Error ? error.message : String(error));
const notProvided = () => Promise.reject(new Error('not provided: give the eviction manager its effects with evictionManagerWith(effects)'));

export interface EvictionEffects {
  /** The node's signals now. */
  observe(): Promise<Reading>;
  /**
   * Node-level reclaim for the threshold: its EvictionThresholdMet event, and for a disk signal the
   * removal of dead containers and unused images, then the signals again; null when the signal
   * has nothing of the node's to reclaim (memory, pids).
   */
  reclaimNodeResources(threshold: Threshold): Promise<Observations | null>;
  /** The first pod the kubelet would evict for the threshold, with its message and grace period; null: none may go. */
  selectPod(threshold: Threshold, observations: Observations, maxPodGracePeriodSeconds: number): Promise<EvictionChoice | null>;
  /** The evicted pod has stopped: its containers are stopped and its volumes torn down. */
  podCleanedUp(uid: string): Promise<boolean>;
}

export const evictionManagerMachine = setup({
  types: {
    context: {} as EvictionContext,
    input: {} as EvictionInput,
    events: {} as NodeEvent,
  },
  actors: {
    observe: fromPromise<Reading>(notProvided),
    reclaimNodeResources: fromPromise<Observations | null, { threshold: Threshold }>(notProvided),
    selectPod: fromPromise<EvictionChoice | null, { threshold: Threshold; observations: Observations; maxPodGracePeriodSeconds: number }>(notProvided),
    podCleanedUp: fromPromise<boolean, { uid: string }>(notProvided),
  },
  delays: {
    monitoringInterval: ({ context }) => context.monitoringIntervalMs,
    cleanupPoll: CLEANUP.pollMs,
    cleanupTimeout: CLEANUP.timeoutMs,
  },
  guards: {
    toReclaim: ({ context }) => context.reclaiming !== null,
  },
  actions: {
    /** One round: what is met, since when, and the conditions; NODE.PRESSURE to the syncLoop when they changed. */
    recordRound: enqueueActions(({ context, enqueue }, reading: Reading) => {
      const round = evaluate(context.thresholds, context.memory, reading.observations, reading.at, context.transitionPeriodMs);
      enqueue.assign({ memory: round.memory, observations: reading.observations, conditions: round.conditions, reclaiming: round.reclaim, lastError: null });
      if (!sameConditions(context.conditions, round.conditions)) enqueue.sendParent({ type: 'NODE.PRESSURE', conditions: [...round.conditions] } satisfies NodeEvent);
    }),
    recordError: assign({ lastError: (_, error: unknown) => message(error), reclaiming: null }),
    recordEviction: assign(({ context }, choice: EvictionChoice) => ({ evicting: choice, lastEviction: choice, evictions: context.evictions + 1 })),
    evict: sendParent(({ context }): NodeEvent => {
      const choice = context.evicting!;
      return {
        type: 'NODE.EVICT_POD',
        uid: choice.uid,
        gracePeriodSeconds: choice.gracePeriodSeconds,
        status: { reason: 'Evicted', message: choice.message, disruptionReason: 'TerminationByKubelet' },
      };
    }),
    forgetEvicting: assign({ evicting: null }),
  },
}).createMachine({
  id: 'evictionManager',
  context: ({ input }) => ({
    ...input,
    memory: NO_MEMORY,
    observations: {},
    conditions: [],
    reclaiming: null,
    evicting: null,
    evictions: 0,
    lastEviction: null,
    lastError: null,
  }),
  initial: 'waiting',
  states: {
    waiting: { after: { monitoringInterval: 'observing' } },
    observing: {
      invoke: {
        src: 'observe',
        onDone: { target: 'judging', actions: [{ type: 'recordRound', params: ({ event }) => event.output }] },
        onError: { target: 'waiting', actions: [{ type: 'recordError', params: ({ event }: { event: ErrorActorEvent }) => event.error }] },
      },
    },
    judging: {
      always: [{ guard: 'toReclaim', target: 'reclaiming' }, { target: 'waiting' }],
    },
    reclaiming: {
      invoke: {
        src: 'reclaimNodeResources',
        input: ({ context }) => ({ threshold: context.thresholds[context.reclaiming!]! }),
        // Enough when no threshold is met any more, minimum reclaim counted (reclaimNodeLevelResources).
        onDone: [{ guard: ({ context, event }) => event.output !== null && metThresholds(context.thresholds, event.output, true).length === 0, target: 'waiting' }, { target: 'evicting' }],
        onError: { target: 'waiting', actions: [{ type: 'recordError', params: ({ event }: { event: ErrorActorEvent }) => event.error }] },
      },
    },
    evicting: {
      invoke: {
        src: 'selectPod',
        input: ({ context }) => ({
          threshold: context.thresholds[context.reclaiming!]!,
          observations: context.observations,
          maxPodGracePeriodSeconds: context.maxPodGracePeriodSeconds,
        }),
        onDone: [
          {
            guard: ({ event }) => event.output !== null,
            target: 'awaitingCleanup',
            actions: [{ type: 'recordEviction', params: ({ event }) => event.output! }, 'evict'],
          },
          { target: 'waiting' },
        ],
        onError: { target: 'waiting', actions: [{ type: 'recordError', params: ({ event }: { event: ErrorActorEvent }) => event.error }] },
      },
    },
    awaitingCleanup: {
      initial: 'checking',
      exit: 'forgetEvicting',
      // The next round follows at once, on a node that has let go of the pod (eviction_manager.go start).
      after: { cleanupTimeout: 'observing' },
      states: {
        checking: {
          invoke: {
            src: 'podCleanedUp',
            input: ({ context }) => ({ uid: context.evicting!.uid }),
            onDone: [{ guard: ({ event }) => event.output, target: '#evictionManager.observing' }, { target: 'pausing' }],
            onError: { target: 'pausing' },
          },
        },
        pausing: { after: { cleanupPoll: 'checking' } },
      },
    },
  },
});

function sameConditions(a: readonly PressureCondition[], b: readonly PressureCondition[]): boolean {
  return a.length === b.length && a.every((c, i) => c === b[i]);
}

export function evictionManagerWith(effects: EvictionEffects) {
  return evictionManagerMachine.provide({
    actors: {
      observe: fromPromise(() => effects.observe()),
      reclaimNodeResources: fromPromise(({ input }: { input: { threshold: Threshold } }) => effects.reclaimNodeResources(input.threshold)),
      selectPod: fromPromise(({ input }: { input: { threshold: Threshold; observations: Observations; maxPodGracePeriodSeconds: number } }) =>
        effects.selectPod(input.threshold, input.observations, input.maxPodGracePeriodSeconds),
      ),
      podCleanedUp: fromPromise(({ input }: { input: { uid: string } }) => effects.podCleanedUp(input.uid)),
    },
  });
}
