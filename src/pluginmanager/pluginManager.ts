/**
 * The node's plugin manager (pkg/kubelet/pluginmanager/plugin_manager.go): a node-level loop that
 * registers the plugins which announce themselves with a unix socket under
 * `<root-dir>/plugins_registry` — CSI drivers through their node-driver-registrar today, device
 * plugins and DRA drivers later — with the handler of their type.
 *
 *   `watcher`   (invoked) makes the directory and watches it and its subdirectories, after a walk
 *               of what is there: PLUGINS.SOCKET_CREATED for each socket created (again: a new
 *               generation), PLUGINS.SOCKET_REMOVED for each removal; together the desired state
 *               (desired_state_of_world.go), kept here.
 *   `executor`  (invoked) the operation executor: told PLUGINS.OPERATE, it runs each operation not
 *               already running on its socket and not backing off (500 ms doubling to 2 m 2 s per
 *               socket), over the registration protocol and the handlers; it tells PLUGINS.ADDED
 *               and PLUGINS.REMOVED as the actual state changes (actual_state_of_world.go, kept
 *               here) and PLUGINS.OPERATION_ENDED with each outcome.
 *   `handlers`  (invoked) the handlers' start-up work (the CSI handler initializes the CSINode);
 *               PLUGINS.HANDLER_STARTED as each is done.
 *   `settled`   the two states agree: nothing to do, no timer (an idle node does not wake up for it).
 *   `unsettled` they differ: every period (the kubelet's reconciler loops every second) the
 *               operations they call for (reconcile.ts) go to the executor, until they agree —
 *               a socket failing and backing off keeps it here, retried at the ticks its back-off
 *               allows.
 *
 * Never: dials a socket or calls a handler itself (the executor does), forgets a plugin it
 * registered while its socket is there.
 */
import { assign, enqueueActions, fromCallback, not, setup } from 'xstate';
import type { EventOf, PluginManagerEvent, PluginRecord } from '../events.ts';
import { reconcileOperations } from './reconcile.ts';

/** What the executor is told. */
export type ExecutorCommand = EventOf<'PLUGINS.OPERATE'>;

interface PluginManagerInput {
  reconcilePeriodMs: number;
  /** The plugin types whose handler has start-up work (not ready before it is done). */
  startingHandlers: string[];
}

interface PluginManagerContext {
  reconcilePeriodMs: number;
  /** Socket path → the generation of its last creation. */
  desired: Record<string, string>;
  generation: number;
  /** Socket path → the plugin in the actual state (registering or registered). */
  actual: Record<string, PluginRecord>;
  /** Sockets of the actual state whose registration succeeded (notified true). */
  registered: string[];
  startingHandlers: string[];
  lastFailure: string | null;
  watchError: string | null;
}

const hasOperations = ({ desired, actual }: Pick<PluginManagerContext, 'desired' | 'actual'>) => {
  const operations = reconcileOperations(desired, actual);
  return operations.unregister.length > 0 || operations.register.length > 0;
};

export const pluginManagerMachine = setup({
  types: {
    context: {} as PluginManagerContext,
    input: {} as PluginManagerInput,
    events: {} as PluginManagerEvent,
    children: {} as { watcher: 'watcher'; executor: 'executor'; handlers: 'handlers' },
  },
  actors: {
    /** Watches the registry directory; as drawn it cannot (pluginManagerMachineWith gives the real one). */
    watcher: fromCallback<PluginManagerEvent>(({ sendBack }) => {
      sendBack({ type: 'PLUGINS.WATCH_FAILED', error: 'watcher is not provided: give the pluginManager machine its effects with pluginManagerMachineWith(effects)' });
    }),
    /** Runs the operations it is told; as drawn it runs none. */
    executor: fromCallback<ExecutorCommand>(() => {}),
    /** The handlers' start-up work; as drawn there is none. */
    handlers: fromCallback<PluginManagerEvent>(() => {}),
  },
  delays: {
    reconcilePeriod: ({ context }) => context.reconcilePeriodMs,
  },
  guards: {
    statesDiffer: ({ context }) => hasOperations(context),
  },
  actions: {
    reconcile: enqueueActions(({ context, enqueue }) => {
      if (hasOperations(context)) enqueue.sendTo('executor', { type: 'PLUGINS.OPERATE', ...reconcileOperations(context.desired, context.actual) } satisfies ExecutorCommand);
    }),
  },
}).createMachine({
  id: 'pluginManager',
  context: ({ input }) => ({
    reconcilePeriodMs: input.reconcilePeriodMs,
    desired: {},
    generation: 0,
    actual: {},
    registered: [],
    startingHandlers: input.startingHandlers,
    lastFailure: null,
    watchError: null,
  }),
  invoke: [
    { id: 'watcher', src: 'watcher' },
    { id: 'executor', src: 'executor' },
    { id: 'handlers', src: 'handlers' },
  ],
  on: {
    'PLUGINS.SOCKET_CREATED': {
      actions: assign(({ context, event }) => ({ generation: context.generation + 1, desired: { ...context.desired, [event.path]: String(context.generation + 1) } })),
    },
    'PLUGINS.SOCKET_REMOVED': {
      actions: assign({ desired: ({ context, event }) => Object.fromEntries(Object.entries(context.desired).filter(([path]) => path !== event.path)) }),
    },
    'PLUGINS.WATCH_FAILED': { actions: assign({ watchError: ({ event }) => event.error }) },
    'PLUGINS.ADDED': {
      actions: assign(({ context, event }) => ({
        actual: { ...context.actual, [event.plugin.path]: event.plugin },
        registered: context.registered.filter((path) => path !== event.plugin.path),
      })),
    },
    'PLUGINS.REMOVED': {
      actions: assign(({ context, event }) => ({
        actual: Object.fromEntries(Object.entries(context.actual).filter(([path]) => path !== event.path)),
        registered: context.registered.filter((path) => path !== event.path),
      })),
    },
    'PLUGINS.OPERATION_ENDED': {
      actions: assign(({ context, event }) => {
        if (event.error !== null) return { lastFailure: event.error };
        const registered = event.operation === 'register' && event.path in context.actual && !context.registered.includes(event.path);
        return registered ? { registered: [...context.registered, event.path] } : {};
      }),
    },
    'PLUGINS.HANDLER_STARTED': {
      actions: assign({ startingHandlers: ({ context, event }) => context.startingHandlers.filter((type) => type !== event.pluginType) }),
    },
  },
  initial: 'settled',
  states: {
    settled: {
      always: { guard: 'statesDiffer', target: 'unsettled' },
    },
    unsettled: {
      always: { guard: not('statesDiffer'), target: 'settled' },
      after: { reconcilePeriod: { target: 'unsettled', reenter: true, actions: 'reconcile' } },
    },
  },
});

/** What the plugin manager runs: its three children, as callback actors' bodies (effects.ts). */
export interface PluginManagerEffects {
  watcher: Parameters<typeof fromCallback<PluginManagerEvent>>[0];
  executor: Parameters<typeof fromCallback<ExecutorCommand>>[0];
  handlers: Parameters<typeof fromCallback<PluginManagerEvent>>[0];
}

export function pluginManagerMachineWith(effects: PluginManagerEffects) {
  return pluginManagerMachine.provide({
    actors: {
      watcher: fromCallback<PluginManagerEvent>(effects.watcher),
      executor: fromCallback<ExecutorCommand>(effects.executor),
      handlers: fromCallback<PluginManagerEvent>(effects.handlers),
    },
  });
}
