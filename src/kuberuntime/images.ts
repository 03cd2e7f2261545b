/**
 * Making sure a container's image is present before it is created (the kubelet's image manager,
 * pkg/kubelet/images/image_manager.go EnsureImageExists): default tag, pull policy, image-pull backoff per (pod, image), and a
 * puller that serializes pulls by default so that a burst of new pods does not saturate the
 * runtime.
 */
import type { Container } from '../api/types.ts';
import type { ImagePulls } from '../runtime/callTrace.ts';
import { type CallOptions, CriError, type CriErrorCode, type ImageInfo, type ImageService } from '../runtime/types.ts';
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

  /**
   * The images being pulled or waiting their turn, as the pods asked for them (`busybox:latest`):
   * image garbage collection keeps them (imageGC.ts).
   */
  pulling(): string[] {
    return [...this.inFlight.keys()];
  }

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
 * The gRPC status codes by the names Go gives them (google.golang.org/grpc/codes, Code.String):
 * a runtime's error reads in the kubelet as `rpc error: code = NotFound desc = …`.
 */
const GO_CODE_NAMES = {
  CANCELLED: 'Canceled',
  UNKNOWN: 'Unknown',
  INVALID_ARGUMENT: 'InvalidArgument',
  DEADLINE_EXCEEDED: 'DeadlineExceeded',
  NOT_FOUND: 'NotFound',
  ALREADY_EXISTS: 'AlreadyExists',
  PERMISSION_DENIED: 'PermissionDenied',
  RESOURCE_EXHAUSTED: 'ResourceExhausted',
  FAILED_PRECONDITION: 'FailedPrecondition',
  ABORTED: 'Aborted',
  OUT_OF_RANGE: 'OutOfRange',
  UNIMPLEMENTED: 'Unimplemented',
  INTERNAL: 'Internal',
  UNAVAILABLE: 'Unavailable',
  DATA_LOSS: 'DataLoss',
  UNAUTHENTICATED: 'Unauthenticated',
} satisfies Record<CriErrorCode, string>;

const GO_STATUS_PREFIX = /^rpc error: code = (\w+) desc = /s;

/**
 * A failed PullImage's error as the kubelet's CRI client hands it to the image manager
 * (k8s.io/cri-client pkg/remote_image.go pullImageV1): a status with code Unknown is stripped to
 * its description, so that the runtime's own words (`RegistryUnavailable: …`) come first; any other
 * code keeps gRPC's `rpc error: code = <Code> desc = <description>`. Our gRPC client's `CriError`
 * carries the code and the description apart; a plain error may carry Go's text itself (a runtime
 * behind a proxy written in Go), which is read the same way.
 */
export function pullErrorText(err: unknown): string {
  if (err instanceof CriError) return err.code === 'UNKNOWN' ? err.detail : `rpc error: code = ${GO_CODE_NAMES[err.code]} desc = ${err.detail}`;
  const text = errorText(err);
  const status = GO_STATUS_PREFIX.exec(text);
  return status?.[1] === 'Unknown' ? text.slice(status[0].length) : text;
}

/**
 * The errors a runtime names at the start of a failed pull's text (k8s.io/cri-api pkg/errors:
 * ErrRegistryUnavailable, ErrSignatureValidationFailed), with how the kubelet words them.
 */
const NAMED_PULL_ERRORS = [
  { reason: 'RegistryUnavailable', because: 'the registry is unavailable' },
  { reason: 'SignatureValidationFailed', because: 'the signature validation failed' },
] as const;

/**
 * The waiting reason and message of a failed pull (image_manager.go evalCRIPullErr): a text that
 * starts with a named error is reported under that name, the name trimmed from the message
 * (`RegistryUnavailable: dial tcp …` ⇒ `… because the registry is unavailable: dial tcp …`); any
 * other is `ErrImagePull` with the text as it is. Only that prefix counts: the kubelet does not read
 * the rest of the text, so a containerd `no such host` or `connection refused` is `ErrImagePull`.
 */
export function classifyPullError(image: string, text: string): { reason: string; message: string } {
  for (const named of NAMED_PULL_ERRORS) {
    if (text.startsWith(named.reason)) {
      return { reason: named.reason, message: `image pull failed for ${image} because ${named.because}${text.slice(named.reason.length)}` };
    }
  }
  return { reason: 'ErrImagePull', message: text };
}

/** Go's time.Duration String, to the millisecond: "850ms", "1.2s", "2m3.5s", "1h0m0s". */
export function goDuration(ms: number): string {
  if (ms < 1000) return `${Math.round(ms)}ms`;
  const seconds = ms / 1000;
  if (seconds < 60) return `${Number(seconds.toFixed(3))}s`;
  const hours = Math.floor(seconds / 3600);
  const minutes = Math.floor((seconds - hours * 3600) / 60);
  return `${hours > 0 ? `${hours}h` : ''}${minutes}m${Number((seconds - hours * 3600 - minutes * 60).toFixed(3))}s`;
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
    const previous = backoff[key]?.lastError;
    return { ok: false, reason: 'ImagePullBackOff', message: previous ? `${message}: ${previous}` : message, backoff, retryAfterMs: waitMs };
  }
  input.pulling?.('started');
  record('Normal', 'Pulling', `Pulling image "${raw}"`);
  const clock = input.now ?? (() => nowMs);
  const startedAt = clock();
  try {
    const imageRef = await puller.pull(image, input.opts);
    input.pulling?.('finished');
    const took = goDuration(clock() - startedAt);
    const info = await images.imageStatus(image, input.opts).catch(() => null);
    const size = info?.size;
    record('Normal', 'Pulled', `Successfully pulled image "${raw}" in ${took} (${took} including waiting).${size ? ` Image size: ${size} bytes.` : ''}`);
    return { ok: true, image, imageRef, info, backoff };
  } catch (err) {
    const text = pullErrorText(err);
    record('Warning', 'Failed', `Failed to pull image "${raw}": ${text}`);
    const failed = classifyPullError(raw, text);
    // The back-off that follows repeats this failure in its message (image_manager.go prevPullErrMsg).
    backoff = withPullError(nextBackoff(backoff, key, nowMs, nowMs, imagePullPolicy), key, `${failed.reason}: ${failed.message}`);
    const retryAfterMs = backoff[key]?.delayMs ?? imagePullPolicy.initialMs;
    return { ok: false, ...failed, backoff, retryAfterMs };
  }
}

/** The table with the failure `key` last met noted on its entry. */
function withPullError(table: BackoffTable, key: string, lastError: string): BackoffTable {
  const entry = table[key];
  return entry ? { ...table, [key]: { ...entry, lastError } } : table;
}

export function errorText(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
