/**
 * The garbage collector's effects over the node's parts (pkg/kubelet/kubelet.go
 * StartGarbageCollection): a container GC pass and an image GC round, with the logs and events
 * kubelet.go gives their outcomes, and the image manager's own look where image GC is off.
 *
 * What kubelet.go keeps in its closures is kept here: when the collector began (beganGC, from
 * which the maximum age counts), and whether the last image round failed, since the kubelet
 * records ImageGCFailed only for a round that fails after one that failed ("Stats initialization
 * may not have completed yet" the first time), and logs the success that ends a run of failures
 * at a higher level than the others.
 */
import { type EventRecorder, nodeReference } from '../eventrecorder/recorder.ts';
import type { ImageGcManager, ImageGcRound } from '../kuberuntime/imageGC.ts';
import type { Logger } from '../log.ts';

/** An image GC round, and when it started. */
export type TimedImageGcRound = ImageGcRound & { at: number };

/** What the garbage collector's machine invokes (garbageCollector.ts). */
export interface GarbageCollectorEffects {
  /** One image GC round (GarbageCollect); resolves with it, failed or not. */
  collectImages(): Promise<TimedImageGcRound>;
  /** One look at the images, where image GC is off (the image manager's Start); rejects with why it failed. */
  detectImages(): Promise<void>;
  /** One container GC pass; rejects with why it failed. */
  collectContainers(): Promise<void>;
}

interface GarbageCollectorDeps {
  imageGc: Pick<ImageGcManager, 'garbageCollect' | 'detectImages'>;
  containerGc: { collect(): Promise<unknown> };
  nodeName: string;
  recorder: EventRecorder;
  now(): number;
  log: Logger;
}

export function createGarbageCollectorEffects(deps: GarbageCollectorDeps): GarbageCollectorEffects {
  const { imageGc, containerGc, recorder, now, log } = deps;
  const node = nodeReference(deps.nodeName);
  const beganGc = now();
  let imageGcFailed = false;
  let containerGcFailed = false;
  return {
    async collectImages() {
      const at = now();
      const round = await imageGc.garbageCollect(beganGc);
      if (round.failure !== null) {
        if (imageGcFailed) {
          log('error', 'Image garbage collection failed multiple times in a row', { err: round.failure });
          recorder.event(node, 'Warning', 'ImageGCFailed', round.failure);
        } else {
          log('error', 'Image garbage collection failed once. Stats initialization may not have completed yet', { err: round.failure });
        }
        imageGcFailed = true;
      } else {
        log(imageGcFailed ? 'info' : 'debug', 'Image garbage collection succeeded');
        imageGcFailed = false;
      }
      return { ...round, at };
    },

    async detectImages() {
      try {
        await imageGc.detectImages();
      } catch (err) {
        log('info', 'Failed to monitor images', { err });
        throw err;
      }
    },

    async collectContainers() {
      try {
        await containerGc.collect();
      } catch (err) {
        log('error', 'Container garbage collection failed', { err });
        recorder.event(node, 'Warning', 'ContainerGCFailed', err instanceof Error ? err.message : String(err));
        containerGcFailed = true;
        throw err;
      }
      log(containerGcFailed ? 'info' : 'debug', 'Container garbage collection succeeded');
      containerGcFailed = false;
    },
  };
}
