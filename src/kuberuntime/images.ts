/**
 * Making sure a container's image is present before it is created (the kubelet's image manager,
 * pkg/kubelet/images/image_manager.go EnsureImageExists): default tag, pull policy, image-pull backoff per (pod, image), and a
 * puller that serializes pulls by default so that a burst of new pods does not saturate the
 * runtime.
 */
import type { Container } from '../api/types.ts';
import type { ImagePulls } from '../runtime/callTrace.ts';
import type { CallOptions, ImageInfo, ImageService } from '../runtime/types.ts';
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

type EnsureImageResult =
  /** `info`: the image's ImageStatus (its user, its size), null when the runtime gave none after a pull. */
  | { ok: true; image: string; imageRef: string; info: ImageInfo | null; backoff: BackoffTable }
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

interface EnsureImageInput {
  images: ImageService;
  puller: ImagePulls;
  podUid: string;
  container: Container;
  backoff: BackoffTable;
  nowMs: number;
  /** The container's events (Pulling, Pulled, Failed, BackOff, ErrImageNeverPull, InspectFailed). */
  record?: (type: 'Normal' | 'Warning', reason: string, message: string) => void;
  /** Told when a pull starts and when it succeeds (image_manager.go RecordImageStartedPulling, RecordImageFinishedPulling). */
  pulling?: (stage: 'started' | 'finished') => void;
  /** Reads the clock again to time the pull (Pulled says how long it took). */
  now?: () => number;
  opts?: CallOptions;
}

/**
 * A CRI pull error whose text starts with `RegistryUnavailable` (cri-api's errors) means the
 * registry cannot be reached: reported under that reason (image_manager.go evalCRIPullErr).
 */
const REGISTRY_UNAVAILABLE = 'RegistryUnavailable';

/** Go's time.Duration String for a pull's duration: "850ms", "1.2s", "2m3.5s". */
function pullDuration(ms: number): string {
  if (ms < 1000) return `${Math.round(ms)}ms`;
  const seconds = ms / 1000;
  if (seconds < 60) return `${Number(seconds.toFixed(3))}s`;
  const minutes = Math.floor(seconds / 60);
  return `${minutes}m${Number((seconds - minutes * 60).toFixed(3))}s`;
}

/**
 * EnsureImageExists. Messages and events name the image as the spec writes it (`busybox`, not
 * `busybox:latest`); the runtime is asked for the normalized name.
 */
export async function ensureImage(input: EnsureImageInput): Promise<EnsureImageResult> {
  const { images, puller, container, nowMs } = input;
  const record = input.record ?? (() => {});
  const raw = container.image ?? '';
  const image = normalizeImage(raw);
  let backoff = input.backoff;
  if (!raw || !validImage.test(image)) {
    const message = `Failed to apply default image tag "${raw}": couldn't parse image name "${raw}": invalid reference format`;
    record('Warning', 'InspectFailed', message);
    return { ok: false, reason: 'InvalidImageName', message, backoff };
  }
  const policy = effectivePullPolicy(container);
  let present;
  try {
    present = await images.imageStatus(image, input.opts);
  } catch (err) {
    const message = `Failed to inspect image "${raw}": ${errorText(err)}`;
    record('Warning', 'InspectFailed', message);
    return { ok: false, reason: 'ImageInspectError', message, backoff };
  }
  if (present && policy !== 'Always') {
    record('Normal', 'Pulled', `Container image "${raw}" already present on machine`);
    return { ok: true, image, imageRef: present.id, info: present, backoff };
  }
  if (policy === 'Never') {
    const message = `Container image "${raw}" is not present with pull policy of Never`;
    record('Warning', 'ErrImageNeverPull', message);
    return { ok: false, reason: 'ErrImageNeverPull', message, backoff };
  }
  const key = `${input.podUid}_${raw}`;
  const waitMs = backoffRemainingMs(backoff, key, backoff[key]?.lastUpdateMs ?? nowMs, nowMs, imagePullPolicy);
  if (waitMs > 0) {
    const message = `Back-off pulling image "${raw}"`;
    record('Normal', 'BackOff', message);
    return { ok: false, reason: 'ImagePullBackOff', message, backoff, retryAfterMs: waitMs };
  }
  input.pulling?.('started');
  record('Normal', 'Pulling', `Pulling image "${raw}"`);
  const clock = input.now ?? (() => nowMs);
  const startedAt = clock();
  try {
    const imageRef = await puller.pull(image, input.opts);
    input.pulling?.('finished');
    const took = pullDuration(clock() - startedAt);
    const info = await images.imageStatus(image, input.opts).catch(() => null);
    const size = info?.size;
    record('Normal', 'Pulled', `Successfully pulled image "${raw}" in ${took} (${took} including waiting).${size ? ` Image size: ${size} bytes.` : ''}`);
    return { ok: true, image, imageRef, info, backoff };
  } catch (err) {
    const text = errorText(err);
    record('Warning', 'Failed', `Failed to pull image "${raw}": ${text}`);
    backoff = nextBackoff(backoff, key, nowMs, nowMs, imagePullPolicy);
    const retryAfterMs = backoff[key]?.delayMs ?? imagePullPolicy.initialMs;
    if (text.startsWith(REGISTRY_UNAVAILABLE)) {
      const detail = text.slice(REGISTRY_UNAVAILABLE.length);
      return { ok: false, reason: REGISTRY_UNAVAILABLE, message: `image pull failed for ${raw} because the registry is unavailable${detail}`, backoff, retryAfterMs };
    }
    // The waiting message is the runtime's error itself; the event above says which image.
    return { ok: false, reason: 'ErrImagePull', message: text, backoff, retryAfterMs };
  }
}

export function errorText(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
