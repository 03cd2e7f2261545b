/**
 * The eviction manager (pkg/kubelet/eviction/eviction_manager.go): a node-level loop that watches
 * the node's memory, disk and process figures against the eviction thresholds, reports the
 * pressure conditions, evicts the pods over their local ephemeral storage limits, and, when a
 * threshold is met past its grace period, reclaims what the node itself holds and then evicts
 * pods, one per round, until the signal is back above the threshold.
 *
 *   `waiting`       one monitoring interval (10 s) → `observing`.
 *   `observing`     the `observe` effect reads the node's signals; the round (synchronize.ts) updates
 *                   what is met, since when, and the pressure conditions, telling the syncLoop
 *                   NODE.PRESSURE when they change → `enforcingLimits`. A failed read is kept and
 *                   the next one waited for (`waiting`).
 *   `enforcingLimits` `localStorageEviction` names the pods over an emptyDir's sizeLimit or their
 *                   ephemeral-storage limits (localStorage.ts), reading the pods' usage when one
 *                   has such a limit, with their messages; the machine sends NODE.EVICT_POD for each, without a
 *                   DisruptionTarget condition, and the round ends there → `awaitingCleanup`.
 *                   None (or a failed check, kept in lastError) → `judging`.
 *   `judging`       → `reclaiming` when a threshold is to be reclaimed, else `waiting`.
 *   `reclaiming`    `reclaimNodeResources` records EvictionThresholdMet and, for a disk signal whose
 *                   disk holds them (diskSignals.ts), removes dead containers and unused images,
 *                   then reads the signals again → `waiting` when that was enough, else `evicting`.
 *   `evicting`      `selectPod` ranks the active pods and names the first that may be evicted (no
 *                   critical pod), with its message; the machine sends NODE.EVICT_POD for it, with
 *                   the DisruptionTarget condition (TerminationByKubelet) → `awaitingCleanup`;
 *                   none → `waiting`.
 *   `awaitingCleanup` polls `podCleanedUp` for each pod evicted each second, at most 30 s
 *                   (waitForPodsCleanup), so the next round, at once, measures a node that has let
 *                   go of them → `observing`.
 *
 * Never: evicts more than one pod a round for a threshold, evicts for a threshold in a round that
 * evicted for local storage, evicts a static, mirror or system-critical pod.
 */
import { type ErrorActorEvent, assign, enqueueActions, fromPromise, setup } from 'xstate';
import { notProvided } from '../notProvided.ts';
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
  /** The pods evicted this round, until they are cleaned up. */
  evicting: EvictionChoice[];
  evictions: number;
  lastEviction: EvictionChoice | null;
  lastError: string | null;
}

const CLEANUP = { pollMs: 1_000, timeoutMs: 30_000 };

const message = (error: unknown) => (error instanceof Error ? error.message : String(error));

export interface EvictionEffects {
  /** The node's signals now. */
  observe(): Promise<Reading>;
  /**
   * The pods over a local ephemeral storage limit (their usage read now, when a pod has one), each
   * with its message and 1 s grace, each told (its Evicted event); critical pods left out. Empty: none.
   */
  localStorageEviction(): Promise<EvictionChoice[]>;
  /**
   * Node-level reclaim for the threshold: its EvictionThresholdMet event, and for a disk signal the
   * removal of dead containers and unused images, then the signals again; null when the signal
   * has nothing of the node's to reclaim (memory, pids, nodefs beside a dedicated image filesystem).
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
    observe: fromPromise<Reading>(notProvided('evictionManager', 'observe')),
    localStorageEviction: fromPromise<EvictionChoice[]>(notProvided('evictionManager', 'localStorageEviction')),
    reclaimNodeResources: fromPromise<Observations | null, { threshold: Threshold }>(notProvided('evictionManager', 'reclaimNodeResources')),
    selectPod: fromPromise<EvictionChoice | null, { threshold: Threshold; observations: Observations; maxPodGracePeriodSeconds: number }>(notProvided('evictionManager', 'selectPod')),
    podCleanedUp: fromPromise<boolean, { uids: string[] }>(notProvided('evictionManager', 'podCleanedUp')),
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
    /** A failed local-storage check: said, and the round goes on to the thresholds. */
    recordLimitsError: assign({ lastError: (_, error: unknown) => message(error) }),
    recordEvictions: assign(({ context }, choices: EvictionChoice[]) => ({ evicting: choices, lastEviction: choices.at(-1) ?? null, evictions: context.evictions + choices.length })),
    /**
     * NODE.EVICT_POD for each pod evicted: Failed, reason Evicted, and the DisruptionTarget
     * condition when `disruptionReason` is given (a threshold's eviction; localStorageEviction
     * passes evictPod no condition).
     */
    evict: enqueueActions(({ context, enqueue }, params: { disruptionReason: string | null }) => {
      for (const choice of context.evicting) {
        enqueue.sendParent({
          type: 'NODE.EVICT_POD',
          uid: choice.uid,
          gracePeriodSeconds: choice.gracePeriodSeconds,
          status: { reason: 'Evicted', message: choice.message, ...(params.disruptionReason ? { disruptionReason: params.disruptionReason } : {}) },
        } satisfies NodeEvent);
      }
    }),
    forgetEvicting: assign({ evicting: [] }),
  },
}).createMachine({
  id: 'evictionManager',
  context: ({ input }) => ({
    ...input,
    memory: NO_MEMORY,
    observations: {},
    conditions: [],
    reclaiming: null,
    evicting: [],
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
        onDone: { target: 'enforcingLimits', actions: [{ type: 'recordRound', params: ({ event }) => event.output }] },
        onError: { target: 'waiting', actions: [{ type: 'recordError', params: ({ event }: { event: ErrorActorEvent }) => event.error }] },
      },
    },
    // Local storage first; a round that evicts for it stops there (synchronize).
    enforcingLimits: {
      invoke: {
        src: 'localStorageEviction',
        onDone: [
          {
            guard: ({ event }) => event.output.length > 0,
            target: 'awaitingCleanup',
            actions: [
              { type: 'recordEvictions', params: ({ event }) => event.output },
              { type: 'evict', params: { disruptionReason: null } },
            ],
          },
          { target: 'judging' },
        ],
        onError: { target: 'judging', actions: [{ type: 'recordLimitsError', params: ({ event }: { event: ErrorActorEvent }) => event.error }] },
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
            actions: [
              { type: 'recordEvictions', params: ({ event }) => [event.output!] },
              { type: 'evict', params: { disruptionReason: 'TerminationByKubelet' } },
            ],
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
            input: ({ context }) => ({ uids: context.evicting.map((c) => c.uid) }),
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

export function evictionManagerMachineWith(effects: EvictionEffects) {
  return evictionManagerMachine.provide({
    actors: {
      observe: fromPromise(() => effects.observe()),
      reclaimNodeResources: fromPromise(({ input }: { input: { threshold: Threshold } }) => effects.reclaimNodeResources(input.threshold)),
      selectPod: fromPromise(({ input }: { input: { threshold: Threshold; observations: Observations; maxPodGracePeriodSeconds: number } }) =>
        effects.selectPod(input.threshold, input.observations, input.maxPodGracePeriodSeconds),
      ),
      localStorageEviction: fromPromise(() => effects.localStorageEviction()),
      // All of them, in order, the first still there ending the check (waitForPodsCleanup).
      podCleanedUp: fromPromise(async ({ input }: { input: { uids: string[] } }) => {
        for (const uid of input.uids) if (!(await effects.podCleanedUp(uid))) return false;
        return true;
      }),
    },
  });
}
