/**
 * The garbage collector (pkg/kubelet/kubelet.go StartGarbageCollection): a node-level loop with
 * two regions, each running its first round as soon as the loop starts (wait.Until runs before it
 * waits) and the next one a period after the last ended (its sliding period), so rounds never
 * overlap and a slow round delays the next.
 *
 *   containers  `collecting` (`collectContainers`: one pass of the container GC, the dead
 *               containers and sandboxes the policy lets go) → `waiting` for `containerGcPeriodMs`
 *               (the kubelet's ContainerGCPeriod, 1 min) → `collecting`. A failed pass is kept.
 *   images      `collecting` (`collectImages`: one image GC round on the thresholds and the
 *               maximum age) → `waiting` 5 minutes (ImageGCPeriod) → `collecting`. A round
 *               resolves with what it removed and why it failed, if it did.
 *               Where image GC is off (high threshold 100, no maximum age: kubelet.go returns
 *               before starting it), `detecting` (`detectImages`: the image manager's own look
 *               every 5 minutes, its Start, which still dates the images for the eviction
 *               manager's reclaim) → `idle` 5 minutes → `detecting`.
 *
 * Context: the rounds run, the images removed and the bytes freed, the last image round and the
 * last failure of each region, for the visualizer. It accepts no event and sends none: the events
 * and logs of a failed round are its effects' (effects.ts), and it never stops of itself.
 */
import { assign, fromPromise, setup } from 'xstate';
import { notProvided } from '../notProvided.ts';
import type { GarbageCollectorEffects, TimedImageGcRound } from './effects.ts';

/** The kubelet's ImageGCPeriod. */
export const IMAGE_GC_PERIOD_MS = 5 * 60_000;

export interface GarbageCollectorInput {
  containerGcPeriodMs: number;
  /** False where image GC is off (imageGcOff). */
  imageGcOn: boolean;
  /** The thresholds, shown on its line. */
  highThresholdPercent: number;
  lowThresholdPercent: number;
}

interface GarbageCollectorContext extends GarbageCollectorInput {
  imageRounds: number;
  imagesRemoved: number;
  bytesFreed: number;
  /** When the last image round started and the usage it measured (null: not measured). */
  lastImageRound: { at: number; usagePercent: number | null } | null;
  /** Why the last image round (or look, where image GC is off) failed; null once one succeeds. */
  imageFailure: string | null;
  containerRounds: number;
  /** Why the last container pass failed; null once one succeeds. */
  containerFailure: string | null;
}


const failureText = (error: unknown) => (error instanceof Error ? error.message : String(error));

export const garbageCollectorMachine = setup({
  types: {
    context: {} as GarbageCollectorContext,
    input: {} as GarbageCollectorInput,
  },
  actors: {
    collectImages: fromPromise<TimedImageGcRound>(notProvided('garbageCollector', 'collectImages')),
    detectImages: fromPromise<void>(notProvided('garbageCollector', 'detectImages')),
    collectContainers: fromPromise<void>(notProvided('garbageCollector', 'collectContainers')),
  },
  delays: {
    imageGcPeriod: IMAGE_GC_PERIOD_MS,
    containerGcPeriod: ({ context }) => context.containerGcPeriodMs,
  },
  guards: {
    imageGcOn: ({ context }) => context.imageGcOn,
  },
}).createMachine({
  id: 'garbageCollector',
  context: ({ input }) => ({
    ...input,
    imageRounds: 0,
    imagesRemoved: 0,
    bytesFreed: 0,
    lastImageRound: null,
    imageFailure: null,
    containerRounds: 0,
    containerFailure: null,
  }),
  type: 'parallel',
  states: {
    containers: {
      initial: 'collecting',
      states: {
        collecting: {
          invoke: {
            src: 'collectContainers',
            onDone: { target: 'waiting', actions: assign(({ context }) => ({ containerRounds: context.containerRounds + 1, containerFailure: null })) },
            onError: { target: 'waiting', actions: assign(({ context, event }) => ({ containerRounds: context.containerRounds + 1, containerFailure: failureText(event.error) })) },
          },
        },
        waiting: { after: { containerGcPeriod: 'collecting' } },
      },
    },
    images: {
      initial: 'starting',
      states: {
        starting: { always: [{ guard: 'imageGcOn', target: 'collecting' }, { target: 'detecting' }] },
        collecting: {
          invoke: {
            src: 'collectImages',
            onDone: {
              target: 'waiting',
              actions: assign(({ context, event }) => ({
                imageRounds: context.imageRounds + 1,
                imagesRemoved: context.imagesRemoved + event.output.removed.length,
                bytesFreed: context.bytesFreed + event.output.removed.reduce((sum, image) => sum + image.size, 0),
                lastImageRound: { at: event.output.at, usagePercent: event.output.usagePercent },
                imageFailure: event.output.failure,
              })),
            },
            onError: { target: 'waiting', actions: assign(({ context, event }) => ({ imageRounds: context.imageRounds + 1, imageFailure: failureText(event.error) })) },
          },
        },
        waiting: { after: { imageGcPeriod: 'collecting' } },
        detecting: {
          invoke: {
            src: 'detectImages',
            onDone: { target: 'idle', actions: assign({ imageFailure: null }) },
            onError: { target: 'idle', actions: assign({ imageFailure: ({ event }) => failureText(event.error) }) },
          },
        },
        idle: { after: { imageGcPeriod: 'detecting' } },
      },
    },
  },
});

export function garbageCollectorMachineWith(effects: GarbageCollectorEffects) {
  return garbageCollectorMachine.provide({
    actors: {
      collectImages: fromPromise(() => effects.collectImages()),
      detectImages: fromPromise(() => effects.detectImages()),
      collectContainers: fromPromise(() => effects.collectContainers()),
    },
  });
}
