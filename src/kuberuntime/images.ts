/**
 * Making sure a container's image is present before it is created (the kubelet's image manager,
 * pkg/kubelet/images/image_manager.go EnsureImageExists): default tag, pull policy, image-pull backoff per (pod, image), and a
 * puller that serializes pulls by default so that a burst of new pods does not saturate the
 * runtime.
 */
import type { Container } from '../api/types.ts';
import type { ImagePulls } from '../runtime/callTrace.ts';
import type { CallOptions, ImageService } from '../runtime/types.ts';
import { type BackoffPolicy, type BackoffTable, backoffRemainingMs, nextBackoff } from './backoff.ts';

export const imagePullPolicy: BackoffPolicy = { initialMs: 10_000, maxMs: 300_000 };

/** Appends `:latest` to an image named without a tag or digest. */
export function normalizeImage(image: string): string {
  if (image.includes('@')) return image;
  const lastSlash = image.lastIndexOf('/');
  return image.slice(lastSlash + 1).includes(':') ? image : `${image}:latest`;
}

const validImage = /^[a-z0-9]+(?:[._-][a-z0-9]+)*(?::[0-9]+)?(?:\/[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*)*(?::[\w][\w.-]{0,127})?(?:@[a-z0-9]+:[a-f0-9]{32,})?$/;

export function effectivePullPolicy(container: Container): 'Always' | 'IfNotPresent' | 'Never' {
  if (container.imagePullPolicy) return container.imagePullPolicy;
  const image = container.image ?? '';
  return image.endsWith(':latest') || normalizeImage(image) !== image ? 'Always' : 'IfNotPresent';
}

export type EnsureImageResult =
  | { ok: true; image: string; imageRef: string; backoff: BackoffTable }
  | { ok: false; reason: string; message: string; backoff: BackoffTable; retryAfterMs?: number };

/**
 * Runs image pulls one at a time (or up to a bound), in arrival order. Pods that need the same
 * image share one pull: a burst of new pods on a missing image makes one registry round trip, not
 * one per pod.
 */
export class ImagePuller implements ImagePulls {
  private running = 0;
  private readonly queue: (() => void)[] = [];
  private readonly inFlight = new Map<string, Promise<string>>();

  constructor(
    private readonly images: ImageService,
    /** 1 for the kubelet's default serialized pulls. */
    private readonly maxParallel: number,
  ) {}

  pull(image: string, opts?: CallOptions): Promise<string> {
    let pull = this.inFlight.get(image);
    if (!pull) {
      pull = this.pullInTurn(image, opts).finally(() => this.inFlight.delete(image));
      this.inFlight.set(image, pull);
    }
    return pull;
  }

  private async pullInTurn(image: string, opts?: CallOptions): Promise<string> {
    if (this.running >= this.maxParallel) {
      await new Promise<void>((resolve) => this.queue.push(resolve));
    }
    this.running++;
    try {
      return await this.images.pullImage(image, undefined, opts);
    } finally {
      this.running--;
      this.queue.shift()?.();
    }
  }
}

export interface EnsureImageInput {
  images: ImageService;
  puller: ImagePulls;
  podUid: string;
  container: Container;
  backoff: BackoffTable;
  nowMs: number;
  opts?: CallOptions;
}

export async function ensureImage(input: EnsureImageInput): Promise<EnsureImageResult> {
  const { images, puller, container, nowMs } = input;
  const raw = container.image ?? '';
  const image = normalizeImage(raw);
  let backoff = input.backoff;
  if (!raw || !validImage.test(image)) {
    return { ok: false, reason: 'InvalidImageName', message: `Failed to apply default image tag "${raw}": couldn't parse image name "${raw}": invalid reference format`, backoff };
  }
  const policy = effectivePullPolicy(container);
  let present;
  try {
    present = await images.imageStatus(image, input.opts);
  } catch (err) {
    return { ok: false, reason: 'ImageInspectError', message: `Failed to inspect image "${image}": ${errorText(err)}`, backoff };
  }
  if (present && policy !== 'Always') return { ok: true, image, imageRef: present.id, backoff };
  if (policy === 'Never') {
    return { ok: false, reason: 'ErrImageNeverPull', message: `Container image "${image}" is not present with pull policy of Never`, backoff };
  }
  const key = `${input.podUid}_${image}`;
  const waitMs = backoffRemainingMs(backoff, key, backoff[key]?.lastUpdateMs ?? nowMs, nowMs, imagePullPolicy);
  if (waitMs > 0) {
    return { ok: false, reason: 'ImagePullBackOff', message: `Back-off pulling image "${image}"`, backoff, retryAfterMs: waitMs };
  }
  try {
    const imageRef = await puller.pull(image, input.opts);
    return { ok: true, image, imageRef, backoff };
  } catch (err) {
    backoff = nextBackoff(backoff, key, nowMs, nowMs, imagePullPolicy);
    return {
      ok: false,
      reason: 'ErrImagePull',
      message: `Failed to pull image "${image}": ${errorText(err)}`,
      backoff,
      retryAfterMs: backoff[key]?.delayMs ?? imagePullPolicy.initialMs,
    };
  }
}

export function errorText(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
