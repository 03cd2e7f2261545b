/**
 * One volume of one pod, from its set-up to its teardown: the kubelet's reconciler and operation
 * executor for one volume (pkg/kubelet/volumemanager/reconciler reconciler_common.go mountOrAttachVolumes,
 * unmountVolumes; pkg/volume/util/nestedpendingoperations: one operation at a time per volume,
 * a failed one retried after an exponential back-off).
 *
 *   starting      → `unmounting` for a volume found set up on disk at the agent's start whose pod
 *                 no longer wants it (reconstruction: nothing of it is set up again), → `mounting`
 *                 otherwise.
 *   mounting      the plugin's set-up runs (`mount`) → `mounted`; a failure (its FailedMount
 *                 event recorded by the effect) → `backingOff`.
 *   backingOff    waits 500 ms, doubling with each failure up to 2 m 2 s (exponentialbackoff), → `mounting`.
 *   mounted       the pod's containers can use it. `VOLUME.REMOUNT` (its pod processed again, a
 *                 volume whose files are refreshed) → `remounting`; `VOLUME.EXPAND` (its
 *                 PersistentVolume grew past the size the node expanded it to) → `expanding`.
 *   remounting    the set-up again → `mounted`, whatever it gave (a failure is its event; the
 *                 volume stays as it was).
 *   expanding     the online expansion (`expand`: reconciler_common.go expandVolume,
 *                 GenerateExpandInUseVolumeFunc) → `mounted`; a failure (its VolumeResizeFailed
 *                 event recorded by the effect) → `expandBackingOff`, with the mount's back-off,
 *                 → `expanding` again. The volume stays mounted throughout.
 *   unmounting    the plugin's teardown (`unmount`) → `unmounted`; a failure → `unmountBackingOff`
 *                 → `unmounting` again.
 *   unmounted     final: nothing of it is left on the node.
 *
 * `VOLUME.UNMOUNT` (its pod no longer wants it) moves any state to `unmounting`, but an operation
 * under way finishes first (`unmountRequested`): a set-up is never cut off half done, so whatever
 * it made is what the teardown removes. Context: which volume, the failures in a row and the last
 * error, for the visualizer ("why not").
 */
import { assign, fromPromise, setup } from 'xstate';
import type { PodVolumeRef } from '../events.ts';
import { notProvided } from '../notProvided.ts';

/** exponential_backoff.go initialDurationBeforeRetry, maxDurationBeforeRetry. */
export const FIRST_RETRY_MS = 500;
export const MAX_RETRY_MS = 122_000;

/** The wait before the next try after `failures` failures in a row. */
export function retryDelayMs(failures: number): number {
  return Math.min(FIRST_RETRY_MS * 2 ** Math.max(0, failures - 1), MAX_RETRY_MS);
}

export interface PodVolumeContext extends PodVolumeRef {
  failures: number;
  lastError: string | null;
  unmountRequested: boolean;
}

type PodVolumeEvent = { type: 'VOLUME.REMOUNT' } | { type: 'VOLUME.EXPAND' } | { type: 'VOLUME.UNMOUNT' };

const errorText = (error: unknown) => (error instanceof Error ? error.message : String(error));

/** The context after one more failure in a row. */
const failure = (context: PodVolumeContext, error: unknown) => ({ failures: context.failures + 1, lastError: errorText(error) });

export const podVolumeMachine = setup({
  types: {
    context: {} as PodVolumeContext,
    input: {} as PodVolumeRef,
    events: {} as PodVolumeEvent,
  },
  actors: {
    mount: fromPromise<void, PodVolumeRef>(notProvided('podVolume', 'mount')),
    unmount: fromPromise<void, PodVolumeRef>(notProvided('podVolume', 'unmount')),
    expand: fromPromise<void, PodVolumeRef>(notProvided('podVolume', 'expand')),
  },
  delays: {
    retry: ({ context }) => retryDelayMs(context.failures),
  },
  guards: {
    unmountRequested: ({ context }) => context.unmountRequested,
    foundOnDisk: ({ context }) => context.foundOnDisk === true,
  },
  actions: {
    requestUnmount: assign({ unmountRequested: true }),
    succeeded: assign({ failures: 0, lastError: null }),
  },
}).createMachine({
  id: 'podVolume',
  context: ({ input }) => ({ ...input, failures: 0, lastError: null, unmountRequested: false }),
  initial: 'starting',
  states: {
    starting: {
      always: [{ guard: 'foundOnDisk', target: 'unmounting' }, { target: 'mounting' }],
    },
    mounting: {
      on: { 'VOLUME.UNMOUNT': { actions: 'requestUnmount' } },
      invoke: {
        src: 'mount',
        input: ({ context }) => refOf(context),
        onDone: [{ guard: 'unmountRequested', target: 'unmounting', actions: 'succeeded' }, { target: 'mounted', actions: 'succeeded' }],
        onError: [{ guard: 'unmountRequested', target: 'unmounting', actions: assign(({ context, event }) => failure(context, event.error)) }, { target: 'backingOff', actions: assign(({ context, event }) => failure(context, event.error)) }],
      },
    },
    backingOff: {
      on: { 'VOLUME.UNMOUNT': 'unmounting' },
      after: { retry: 'mounting' },
    },
    mounted: {
      on: { 'VOLUME.REMOUNT': 'remounting', 'VOLUME.EXPAND': 'expanding', 'VOLUME.UNMOUNT': 'unmounting' },
    },
    expanding: {
      on: { 'VOLUME.UNMOUNT': { actions: 'requestUnmount' } },
      invoke: {
        src: 'expand',
        input: ({ context }) => refOf(context),
        onDone: [{ guard: 'unmountRequested', target: 'unmounting' }, { target: 'mounted', actions: 'succeeded' }],
        onError: [{ guard: 'unmountRequested', target: 'unmounting' }, { target: 'expandBackingOff', actions: assign(({ context, event }) => failure(context, event.error)) }],
      },
    },
    expandBackingOff: {
      on: { 'VOLUME.UNMOUNT': 'unmounting' },
      after: { retry: 'expanding' },
    },
    remounting: {
      on: { 'VOLUME.UNMOUNT': { actions: 'requestUnmount' } },
      invoke: {
        src: 'mount',
        input: ({ context }) => refOf(context),
        onDone: [{ guard: 'unmountRequested', target: 'unmounting' }, { target: 'mounted', actions: 'succeeded' }],
        onError: [{ guard: 'unmountRequested', target: 'unmounting' }, { target: 'mounted', actions: assign({ lastError: ({ event }) => errorText(event.error) }) }],
      },
    },
    unmounting: {
      invoke: {
        src: 'unmount',
        input: ({ context }) => refOf(context),
        onDone: 'unmounted',
        onError: { target: 'unmountBackingOff', actions: assign(({ context, event }) => failure(context, event.error)) },
      },
    },
    unmountBackingOff: {
      after: { retry: 'unmounting' },
    },
    unmounted: { type: 'final' },
  },
});

function refOf(context: PodVolumeContext): PodVolumeRef {
  const { id, uid, pod, outerName, uniqueName, specName, kind, map, foundOnDisk } = context;
  return { id, uid, pod, outerName, uniqueName, specName, kind, ...(map ? { map } : {}), ...(foundOnDisk ? { foundOnDisk } : {}) };
}

/**
 * Its line on the visualizer: the pod, the volume and what it is backed by, and why it is not
 * mounted when it is not (`shop/web-0 · data (pv-1) · backing off after 3 failures: MountVolume.SetUp failed …`).
 */
export function podVolumeSummary(state: unknown, c: PodVolumeContext): string {
  // A volume found at start whose pod is gone: the pod is known by its UID only.
  const volume = `${c.specName === c.outerName ? c.outerName : `${c.outerName} (${c.specName})`}${c.map ? ' [block]' : ''}${c.foundOnDisk ? ' · found set up at start, its pod gone' : ''}`;
  const trouble = c.lastError ? ` · ${c.failures > 0 ? `${state === 'backingOff' || state === 'unmountBackingOff' || state === 'expandBackingOff' ? 'backing off after ' : ''}${c.failures} failure${c.failures === 1 ? '' : 's'}: ` : ''}${c.lastError}` : '';
  return `${c.pod} · ${volume}${trouble}`;
}

export interface PodVolumeEffects {
  /** Sets the volume up and records it in the actual state; rejects with its FailedMount message (the event recorded). */
  mount(ref: PodVolumeRef): Promise<void>;
  /** Tears it down and takes it out of the actual state. */
  unmount(ref: PodVolumeRef): Promise<void>;
  /** Expands the mounted volume to its PersistentVolume's size; rejects with its VolumeResizeFailed message (the event recorded). */
  expand(ref: PodVolumeRef): Promise<void>;
}

export function podVolumeMachineWith(effects: PodVolumeEffects) {
  return podVolumeMachine.provide({
    actors: {
      mount: fromPromise(({ input }) => effects.mount(input)),
      unmount: fromPromise(({ input }) => effects.unmount(input)),
      expand: fromPromise(({ input }) => effects.expand(input)),
    },
  });
}
