/**
 * The node's volume manager (pkg/kubelet/volumemanager, pkg/kubelet/token): the node-level part
 * of volumes. The per-pod part — setting a pod's volumes up before its containers start, again at
 * each sync, and tearing them down with it — runs in the pod's own sync (setUp.ts), as the
 * kubelet's SyncPod waits for its volumes; what is shared by all pods lives here:
 *
 *   `adopting`    reads the mount table once: the tmpfs mounts under `<root-dir>/pods` that an
 *                 earlier run of the agent made are known again (so they are not mounted twice,
 *                 and are unmounted at their pods' teardown) → `idle`.
 *   `idle`        one minute → `collecting`.
 *   `collecting`  drops expired service-account tokens (the token manager's cleanup each minute)
 *                 and counts what the node holds → `idle`.
 *
 * Context: mounts and tokens held, tokens dropped, the last error (for the visualizer). A failed
 * step is logged in the context and retried at the next minute; it never stops the node.
 */
import { assign, fromPromise, setup } from 'xstate';
import { notProvided } from '../notProvided.ts';

interface VolumeCounts {
  /** tmpfs mounts under the pods directory. */
  mounts: number;
  /** Service-account tokens kept. */
  tokens: number;
}

interface VolumeManagerEffects {
  /** Learns the mounts an earlier run left; returns what the node holds. */
  adopt(): Promise<VolumeCounts>;
  /** Drops expired tokens; returns how many, and what the node holds. */
  collect(): Promise<VolumeCounts & { dropped: number }>;
}

interface VolumeManagerContext extends VolumeCounts {
  dropped: number;
  lastError: string | null;
}

/** The token manager's cleanup period (pkg/kubelet/token/token_manager.go gcPeriod). */
export const COLLECT_PERIOD_MS = 60_000;

const errorText = (error: unknown) => (error instanceof Error ? error.message : String(error));

export const volumeManagerMachine = setup({
  types: {
    context: {} as VolumeManagerContext,
  },
  actors: {
    adopt: fromPromise<VolumeCounts>(notProvided('volumeManager', 'adopt')),
    collect: fromPromise<VolumeCounts & { dropped: number }>(notProvided('volumeManager', 'collect')),
  },
  delays: {
    collectPeriod: COLLECT_PERIOD_MS,
  },
}).createMachine({
  id: 'volumeManager',
  context: { mounts: 0, tokens: 0, dropped: 0, lastError: null },
  initial: 'adopting',
  states: {
    adopting: {
      invoke: {
        src: 'adopt',
        onDone: { target: 'idle', actions: assign(({ event }) => ({ ...event.output, lastError: null })) },
        onError: { target: 'idle', actions: assign({ lastError: ({ event }) => `reading the mount table: ${errorText(event.error)}` }) },
      },
    },
    idle: {
      after: { collectPeriod: 'collecting' },
    },
    collecting: {
      invoke: {
        src: 'collect',
        onDone: {
          target: 'idle',
          actions: assign(({ context, event }) => ({
            mounts: event.output.mounts,
            tokens: event.output.tokens,
            dropped: context.dropped + event.output.dropped,
            lastError: null,
          })),
        },
        onError: { target: 'idle', actions: assign({ lastError: ({ event }) => errorText(event.error) }) },
      },
    },
  },
});

export function volumeManagerMachineWith(effects: VolumeManagerEffects) {
  return volumeManagerMachine.provide({
    actors: {
      adopt: fromPromise(() => effects.adopt()),
      collect: fromPromise(() => effects.collect()),
    },
  });
}
