/**
 * The OOM watcher (pkg/kubelet/oom/oom_watcher_linux.go): a node-level loop that follows the
 * kernel's log and records a `SystemOOM` Warning event on the Node for each OOM of the whole
 * machine (a container's own OOM is told by its status, OOMKilled).
 *
 *   `watching`     the `followKernelLog` actor reads the log from now on, records the event of
 *                  each system OOM and tells OOM.SYSTEM (counted here, for the visualizer); when
 *                  the log cannot be read or ends it tells OOM.LOG_ENDED → `unavailable`.
 *   `unavailable`  final for this run, as the kubelet's watcher stops when its parser does
 *                  ("OOM events will not be reported"): the error is kept for the visualizer.
 */
import { assign, fromCallback, setup } from 'xstate';
import type { OomWatcherEvent } from '../events.ts';

interface OomWatcherContext {
  systemOoms: number;
  /** `dd (pid 4242)`, the last system OOM's victim. */
  lastVictim: string | null;
  lastError: string | null;
}

export const oomWatcherMachine = setup({
  types: {
    context: {} as OomWatcherContext,
    events: {} as OomWatcherEvent,
  },
  actors: {
    /** Follows the kernel log from now on; sends OOM.SYSTEM per system OOM (its event recorded), OOM.LOG_ENDED when it cannot go on. */
    followKernelLog: fromCallback<OomWatcherEvent>(({ sendBack }) => {
      sendBack({ type: 'OOM.LOG_ENDED', error: 'followKernelLog is not provided: give the oomWatcher machine its effects with oomWatcherMachineWith(effects)' });
    }),
  },
}).createMachine({
  id: 'oomWatcher',
  context: { systemOoms: 0, lastVictim: null, lastError: null },
  initial: 'watching',
  states: {
    watching: {
      invoke: { src: 'followKernelLog' },
      on: {
        'OOM.SYSTEM': {
          actions: assign(({ context, event }) => ({
            systemOoms: context.systemOoms + 1,
            lastVictim: event.process ? `${event.process} (pid ${event.pid})` : 'unknown process',
          })),
        },
        'OOM.LOG_ENDED': { target: 'unavailable', actions: assign({ lastError: ({ event }) => event.error }) },
      },
    },
    unavailable: {},
  },
});

/** What the OOM watcher does: follows the kernel log from now on, as a callback actor's body (effects.ts followKernelLog). */
export interface OomWatcherEffects {
  followKernelLog: Parameters<typeof fromCallback<OomWatcherEvent>>[0];
}

export function oomWatcherMachineWith(effects: OomWatcherEffects) {
  return oomWatcherMachine.provide({ actors: { followKernelLog: fromCallback<OomWatcherEvent>(effects.followKernelLog) } });
}
