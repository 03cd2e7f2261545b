/**
 * The node's volume manager (pkg/kubelet/volumemanager, pkg/kubelet/token), two regions side by side:
 *
 *   upkeep       what is shared by all pods:
 *     `adopting`    reads the mount table once: the mounts under `<root-dir>/pods` that an earlier
 *                   run of the agent made are known again (so they are not mounted twice, and are
 *                   unmounted at their pods' teardown); and reconstructs the volumes that run left
 *                   set up (reconstruct.go: CSI publishes and stages, local volumes) into the volume
 *                   world as uncertain → `idle`.
 *     `idle`        one minute → `collecting`.
 *     `collecting`  drops expired service-account tokens (the token manager's cleanup each minute)
 *                   and counts what the node holds → `idle`.
 *   podVolumes   the reconciler: the volume world (src/volumes/world.ts: the desired state the pods'
 *                syncs write, the actual state the operations write) tells it, through the
 *                `desiredChanges` callback, which pod volumes to set up, refresh, expand and tear
 *                down (`VOLUMES.CHANGED`); it runs one child actor per pod volume (podVolume.ts, id
 *                `<pod uid>/<volume name>`), which the visualizer draws, so each pod's volumes
 *                show as waiting, mounting, mounted or backing off, with the last error.
 *
 * Context: mounts and tokens held, tokens dropped, the pod volumes it runs, the last error (for the
 * visualizer). A failed upkeep step is logged in the context and retried at the next minute; a
 * failed volume operation is its own actor's, retried with back-off; nothing here stops the node.
 */
import { assign, enqueueActions, fromCallback, fromPromise, setup } from 'xstate';
import type { EventOf } from '../events.ts';
import { notProvided } from '../notProvided.ts';
import { type PodVolumeEffects, podVolumeMachine, podVolumeMachineWith } from './podVolume.ts';

interface VolumeCounts {
  /** tmpfs mounts under the pods directory. */
  mounts: number;
  /** Service-account tokens kept. */
  tokens: number;
}

export interface VolumeManagerEffects {
  /** Learns the mounts an earlier run left and reconstructs its volumes; returns what the node holds and how many volumes were reconstructed. */
  adopt(): Promise<VolumeCounts & { reconstructed: number }>;
  /** Drops expired tokens; returns how many, and what the node holds. */
  collect(): Promise<VolumeCounts & { dropped: number }>;
  /** Calls `changed` with each change of the pods' desired volumes; returns the unsubscription. */
  listen(changed: (changes: Omit<EventOf<'VOLUMES.CHANGED'>, 'type'>) => void): () => void;
}

interface VolumeManagerContext extends VolumeCounts {
  dropped: number;
  /** The volumes found set up at start (reconstruction). */
  reconstructed: number;
  /** The pod volume actors running. */
  podVolumes: number;
  lastError: string | null;
}

/** The token manager's cleanup period (pkg/kubelet/token/token_manager.go gcPeriod). */
export const COLLECT_PERIOD_MS = 60_000;

const DONE_PREFIX = 'xstate.done.actor.';

const errorText = (error: unknown) => (error instanceof Error ? error.message : String(error));

export const volumeManagerMachine = setup({
  types: {
    context: {} as VolumeManagerContext,
    events: {} as EventOf<'VOLUMES.CHANGED'> | { type: `xstate.done.actor.${string}` },
  },
  actors: {
    adopt: fromPromise<VolumeCounts & { reconstructed: number }>(notProvided('volumeManager', 'adopt')),
    collect: fromPromise<VolumeCounts & { dropped: number }>(notProvided('volumeManager', 'collect')),
    // As drawn, no pod wants a volume: nothing tells it of one.
    desiredChanges: fromCallback<EventOf<'VOLUMES.CHANGED'>>(() => {}),
    podVolume: podVolumeMachine,
  },
  delays: {
    collectPeriod: COLLECT_PERIOD_MS,
  },
  guards: {
    // Its own invocations end too; a pod volume actor's id is `<pod uid>/<volume name>`.
    isPodVolume: ({ event }) => event.type.slice(DONE_PREFIX.length).includes('/'),
  },
}).createMachine({
  id: 'volumeManager',
  context: { mounts: 0, tokens: 0, dropped: 0, reconstructed: 0, podVolumes: 0, lastError: null },
  type: 'parallel',
  states: {
    upkeep: {
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
    },
    podVolumes: {
      invoke: { src: 'desiredChanges' },
      on: {
        'VOLUMES.CHANGED': {
          actions: enqueueActions(({ enqueue, event }) => {
            for (const volume of event.mount) enqueue.spawnChild('podVolume', { id: volume.id, input: volume });
            for (const id of event.remount) enqueue.sendTo(id, { type: 'VOLUME.REMOUNT' });
            for (const id of event.expand) enqueue.sendTo(id, { type: 'VOLUME.EXPAND' });
            for (const id of event.unmount) enqueue.sendTo(id, { type: 'VOLUME.UNMOUNT' });
            enqueue.assign({ podVolumes: ({ context }) => context.podVolumes + event.mount.length });
          }),
        },
        // A pod volume actor ends once its volume is torn down.
        'xstate.done.actor.*': { guard: 'isPodVolume', actions: assign({ podVolumes: ({ context }) => Math.max(0, context.podVolumes - 1) }) },
      },
    },
  },
});

export function volumeManagerMachineWith(effects: VolumeManagerEffects, podVolumeEffects: PodVolumeEffects) {
  return volumeManagerMachine.provide({
    actors: {
      adopt: fromPromise(() => effects.adopt()),
      collect: fromPromise(() => effects.collect()),
      desiredChanges: fromCallback<EventOf<'VOLUMES.CHANGED'>>(({ sendBack }) => effects.listen((changes) => sendBack({ type: 'VOLUMES.CHANGED', ...changes }))),
      podVolume: podVolumeMachineWith(podVolumeEffects),
    },
  });
}
