/**
 * The node's registration and status loop (pkg/kubelet/kubelet_node_status.go
 * registerWithAPIServer, syncNodeStatus):
 *
 *   `registering`   the `register` actor creates the Node (or reconciles the one that exists)
 *                   → `registered`; a failure → `registerBackoff` (100 ms doubling to 7 s) →
 *                   `registering`. Skipped when the node is not to be registered (--register-node=false).
 *   `registered`
 *     `updating`    the `update` actor computes the status and writes it when it changed or the
 *                   report period is up → `waiting`, recording whether it wrote and whether the
 *                   node is Ready; a failure is recorded and waited out the same way.
 *     `waiting`     one update period (--node-status-update-frequency, 10 s) → `updating`;
 *                   `NODE.HEALTH_CHANGED` (the runtime's health flipped) cuts the wait short, so
 *                   Ready follows the runtime at once rather than up to a period later.
 *
 * Never: writes anything but its own Node and `nodes/<name>/status`.
 */
import { assign, fromPromise, setup } from 'xstate';
import { notProvided } from '../notProvided.ts';
import type { NodePressureCondition } from '../api/types.ts';
import type { NodeEvent } from '../events.ts';

interface StatusUpdateOutcome {
  written: boolean;
  ready: boolean;
}

export interface NodeStatusEffects {
  /** When an update starts (its `at`), on the node's clock. */
  now(): number;
  register(signal: AbortSignal): Promise<void>;
  /** `lastWrittenAt`: when the status was last written (ms), null: not yet; `pressure`: the conditions the eviction manager reports True. */
  update(input: UpdateInput, signal: AbortSignal): Promise<StatusUpdateOutcome>;
}

interface UpdateInput {
  lastWrittenAt: number | null;
  pressure: readonly NodePressureCondition[];
}

interface NodeStatusInput {
  registerNode: boolean;
  updateFrequencyMs: number;
}

interface NodeStatusContext {
  registerNode: boolean;
  updateFrequencyMs: number;
  registerFailures: number;
  lastWrittenAt: number | null;
  writes: number;
  ready: boolean | null;
  lastError: string | null;
  /** The pressure conditions True, as the eviction manager last told (NODE.PRESSURE). */
  pressure: NodePressureCondition[];
}

const REGISTER_BACKOFF = { firstMs: 100, maxMs: 7_000 };

const message = (error: unknown) => (error instanceof Error ? error.message : String(error));

export const nodeStatusMachine = setup({
  types: {
    context: {} as NodeStatusContext,
    input: {} as NodeStatusInput,
    events: {} as NodeEvent,
  },
  actors: {
    register: fromPromise<void>(notProvided('nodeStatus', 'register')),
    update: fromPromise<StatusUpdateOutcome & { at: number }, UpdateInput>(notProvided('nodeStatus', 'update')),
  },
  delays: {
    updatePeriod: ({ context }) => context.updateFrequencyMs,
    registerBackoff: ({ context }) => Math.min(REGISTER_BACKOFF.firstMs * 2 ** Math.max(0, context.registerFailures - 1), REGISTER_BACKOFF.maxMs),
  },
  guards: {
    skipRegistration: ({ context }) => !context.registerNode,
  },
  actions: {
    recordPressure: assign({ pressure: ({ context, event }) => (event.type === 'NODE.PRESSURE' ? event.conditions : context.pressure) }),
  },
}).createMachine({
  id: 'nodeStatus',
  context: ({ input }) => ({
    registerNode: input.registerNode,
    updateFrequencyMs: input.updateFrequencyMs,
    registerFailures: 0,
    lastWrittenAt: null,
    writes: 0,
    ready: null,
    lastError: null,
    pressure: [],
  }),
  initial: 'registering',
  // The pressure is kept in every state; while waiting it also cuts the wait short (below).
  on: { 'NODE.PRESSURE': { actions: 'recordPressure' } },
  states: {
    registering: {
      always: { guard: 'skipRegistration', target: 'registered' },
      invoke: {
        src: 'register',
        onDone: { target: 'registered', actions: assign({ registerFailures: 0, lastError: null }) },
        onError: {
          target: 'registerBackoff',
          actions: assign(({ context, event }) => ({ registerFailures: context.registerFailures + 1, lastError: message(event.error) })),
        },
      },
    },
    registerBackoff: { after: { registerBackoff: 'registering' } },
    registered: {
      initial: 'updating',
      states: {
        updating: {
          invoke: {
            src: 'update',
            input: ({ context }) => ({ lastWrittenAt: context.lastWrittenAt, pressure: context.pressure }),
            onDone: {
              target: 'waiting',
              actions: assign(({ context, event }) => ({
                ready: event.output.ready,
                lastError: null,
                ...(event.output.written ? { lastWrittenAt: event.output.at, writes: context.writes + 1 } : {}),
              })),
            },
            onError: { target: 'waiting', actions: assign({ lastError: ({ event }) => message(event.error) }) },
          },
        },
        waiting: {
          after: { updatePeriod: 'updating' },
          on: { 'NODE.HEALTH_CHANGED': 'updating', 'NODE.PRESSURE': { target: 'updating', actions: 'recordPressure' } },
        },
      },
    },
  },
});

type NodeStatusMachine = typeof nodeStatusMachine;

export function nodeStatusMachineWith(effects: NodeStatusEffects): NodeStatusMachine {
  return nodeStatusMachine.provide({
    actors: {
      register: fromPromise<void>(({ signal }) => effects.register(signal)),
      update: fromPromise<StatusUpdateOutcome & { at: number }, UpdateInput>(async ({ input, signal }) => {
        const at = effects.now();
        return { ...(await effects.update(input, signal)), at };
      }),
    },
  });
}
