/**
 * Making sure a container's image is present before it is created (the kubelet's image manager,
 * pkg/kubelet/images/image_manager.go EnsureImageExists): default tag, pull policy, image-pull backoff per (pod, image), and a
 * puller that serializes pulls by default so that a burst of new pods does not saturate the
 * runtime. A pull tries the pod's credentials for the image in order (the keyring,
 * credentialprovider/keyring.ts); a present image is re-authorised for the pod against the
 * records of earlier pulls (pullRecords.ts, KubeletEnsureSecretPulledImages).
 */
import { createHash } from 'node:crypto';
import type { Container } from '../api/types.ts';
import { type Bucket, type RateLimit, tryTakeToken } from '../client/rateLimit.ts';
import type { PullCredential } from '../credentialprovider/keyring.ts';
import type { ImagePulls, PulledImage } from '../runtime/callTrace.ts';
import { type AuthConfig, type CallOptions, CriError, type ImageInfo, type ImageService, goStatusText } from '../runtime/types.ts';
import { type BackoffPolicy, type BackoffTable, backoffRemainingMs, nextBackoff } from './backoff.ts';
import type { RecordedCredentials } from './pullPolicy.ts';
import type { ImagePullRecords } from './pullRecords.ts';

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
 * The errors of a pull tried with each of several credentials, read as the kubelet's
 * utilerrors.NewAggregate reads (k8s.io/apimachinery pkg/util/errors aggregate.Error): one error
 * is its own text; more are `[a, b]`, a text met twice written once.
 */
export class PullAttemptsError extends Error {
  override readonly name = 'PullAttemptsError';
  constructor(readonly attempts: readonly unknown[]) {
    super(aggregateText(attempts.map(pullErrorText)));
  }
}

function aggregateText(texts: readonly string[]): string {
  const seen = [...new Set(texts)];
  return seen.length === 1 ? seen[0]! : `[${seen.join(', ')}]`;
}

/** Who shares a pull: the same image with the same credentials (hashed: no credential is kept as a key). */
function shareKey(image: string, auths: readonly AuthConfig[]): string {
  if (auths.length === 0) return image;
  return `${image}\u0000${createHash('sha256').update(JSON.stringify(auths)).digest('hex')}`;
}

/**
 * Runs image pulls one at a time (or up to a bound), in arrival order. Pods that need the same
 * image with the same credentials share one pull: a burst of new pods on a missing image makes one
 * registry round trip, not one per pod. A pod with other credentials (or none) never waits on
 * another's pull: its own credentials must be the ones that reach the registry.
 */
export class ImagePuller implements ImagePulls {
  private running = 0;
  private readonly queue: (() => void)[] = [];
  private readonly inFlight = new Map<string, { image: string; pull: Promise<PulledImage> }>();
  private bucket: Bucket | null = null;

  constructor(
    private readonly images: ImageService,
    /** 1 for the kubelet's default serialized pulls. */
    private readonly maxParallel: number,
    /**
     * --registry-qps and --registry-burst (images/helpers.go throttleImagePulling): each pull the
     * runtime is asked for takes a token, or fails at once with "pull QPS exceeded"; qps 0, none.
     */
    private readonly pullLimit: RateLimit & { now(): number } = { qps: 0, burst: 0, now: Date.now },
  ) {}

  /**
   * The images being pulled or waiting their turn, as the pods asked for them (`busybox:latest`):
   * image garbage collection keeps them (imageGC.ts).
   */
  pulling(): string[] {
    return [...new Set([...this.inFlight.values()].map((entry) => entry.image))];
  }

  pull(image: string, auths: readonly AuthConfig[], opts?: CallOptions): Promise<PulledImage> {
    const key = shareKey(image, auths);
    let entry = this.inFlight.get(key);
    if (!entry) {
      entry = { image, pull: this.pullInTurn(image, auths, opts).finally(() => this.inFlight.delete(key)) };
      this.inFlight.set(key, entry);
    }
    return entry.pull;
  }

  private async pullInTurn(image: string, auths: readonly AuthConfig[], opts?: CallOptions): Promise<PulledImage> {
    if (this.running >= this.maxParallel) {
      await new Promise<void>((resolve) => this.queue.push(resolve));
    }
    this.running++;
    try {
      return await this.pullWithEach(image, auths, opts);
    } finally {
      this.running--;
      this.queue.shift()?.();
    }
  }

  /**
   * kuberuntime_image.go PullImage: no credentials, one pull without; else one pull per
   * credential, in order, until one succeeds; all failing, their errors aggregated.
   */
  private async pullWithEach(image: string, auths: readonly AuthConfig[], opts?: CallOptions): Promise<PulledImage> {
    if (auths.length === 0) return { imageRef: await this.throttledPull(image, undefined, opts), authIndex: -1 };
    const failures: unknown[] = [];
    for (const [authIndex, auth] of auths.entries()) {
      try {
        return { imageRef: await this.throttledPull(image, auth, opts), authIndex };
      } catch (err) {
        failures.push(err);
      }
    }
    throw failures.length === 1 ? failures[0] : new PullAttemptsError(failures);
  }

  /** throttledImageService.PullImage: the runtime's pull, if the registry QPS allows one now. */
  private throttledPull(image: string, auth: AuthConfig | undefined, opts?: CallOptions): Promise<string> {
    const taken = tryTakeToken(this.bucket, this.pullLimit, this.pullLimit.now());
    if (!taken) return Promise.reject(new Error('pull QPS exceeded'));
    this.bucket = taken;
    return this.images.pullImage(image, auth, undefined, opts);
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
  /**
   * The pod's credentials for an image, in the order to try them (the keyring: its pull secrets',
   * then the node's); asked at most once, and only when needed. Throws when a pull secret cannot be
   * read (PullSecretError): the pull fails with its message. Absent: none.
   */
  credentials?: (image: string) => Promise<readonly PullCredential[]>;
  /**
   * The records of earlier pulls (KubeletEnsureSecretPulledImages): a present image is used only
   * when the verification policy and the records allow this pod. Absent: as with the feature off,
   * a present image is used as it is.
   */
  records?: ImagePullRecords;
}

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
  if (err instanceof PullAttemptsError) return err.message;
  if (err instanceof CriError) return err.code === 'UNKNOWN' ? err.detail : goStatusText(err.code, err.detail);
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
 * Who may use an image pulled with this credential (image_manager.go trackedToImagePullCreds): a
 * secret's pods, a service account's (a plugin in token mode gave it), or every pod.
 */
function recordedCredentials(used: PullCredential | null): RecordedCredentials {
  if (used?.serviceAccount) return { kubernetesServiceAccounts: [used.serviceAccount] };
  if (!used?.source) return { nodePodsAccessible: true };
  const { uid, namespace, name } = used.source;
  return { kubernetesSecrets: [{ uid, namespace, name, credentialHash: used.hash }] };
}

const authOf = (credential: PullCredential): AuthConfig => ({ username: credential.username, password: credential.password });

/**
 * EnsureImageExists. Messages and events name the image as the spec writes it (`busybox`, not
 * `busybox:latest`); the runtime is asked for the normalized name.
 */
export async function ensureImage(input: EnsureImageInput): Promise<EnsureImageResult> {
  const { images, container, records } = input;
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
  // The pod's credentials for the image, looked up once and no earlier than needed
  // (image_manager.go makeLookupPullCredentialsFunc).
  let lookedUp: Promise<readonly PullCredential[]> | undefined;
  const credentials = () => (lookedUp ??= input.credentials ? input.credentials(image) : Promise.resolve([]));
  // A credential that cannot be read fails the image as the kubelet returns the keyring's error:
  // its text is the waiting reason and message (kuberuntime_manager.go SyncPod's result).
  const unreadable = (err: unknown): EnsureImageResult => {
    const message = errorText(err);
    return { ok: false, reason: message, message, backoff };
  };
  if (present && policy !== 'Always') {
    if (!records) {
      record('Normal', 'Pulled', `Container image "${raw}" already present on machine`);
      return { ok: true, image, imageRef: present.id, info: present, backoff };
    }
    let podSecrets;
    let podServiceAccount;
    try {
      const found = await credentials();
      podSecrets = found.filter((c) => c.source !== null).map((c) => ({ ...c.source!, credentialHash: c.hash }));
      // The first credential a plugin gave for the pod's service account (image_manager.go getPodCredentials).
      podServiceAccount = found.find((c) => c.serviceAccount)?.serviceAccount ?? null;
    } catch (err) {
      return unreadable(err);
    }
    if (!(await records.mustAttemptPull(raw, present.id, () => podSecrets, () => podServiceAccount))) {
      record('Normal', 'Pulled', `Container image "${raw}" already present on machine and can be accessed by the pod`);
      return { ok: true, image, imageRef: present.id, info: present, backoff };
    }
  }
  // Under Never, a present image the pod may not use is reported as absent: its presence is not
  // revealed (image_manager.go imageNotPresentOnNeverPolicyError).
  if (policy === 'Never') {
    const message = `Container image "${raw}" is not present with pull policy of Never`;
    record('Warning', 'ErrImageNeverPull', message);
    return { ok: false, reason: 'ErrImageNeverPull', message, backoff };
  }
  let pullCredentials: readonly PullCredential[];
  try {
    pullCredentials = await credentials();
  } catch (err) {
    return unreadable(err);
  }
  if (records) {
    try {
      await records.recordPullIntent(raw);
    } catch (err) {
      const message = `Failed to record image pull intent for container image "${raw}": ${errorText(err)}`;
      return { ok: false, reason: message, message, backoff };
    }
  }
  const pulled = await pullImage(input, raw, image, pullCredentials, backoff);
  if (records) {
    if (pulled.ok) await records.recordImagePulled(raw, pulled.imageRef, recordedCredentials(pulled.used ?? null));
    else await records.recordPullFailed(raw);
  }
  return pulled;
}

/** image_manager.go pullImage: the back-off, the pull with each credential, its events. */
async function pullImage(
  input: EnsureImageInput,
  raw: string,
  image: string,
  credentials: readonly PullCredential[],
  initialBackoff: BackoffTable,
): Promise<EnsureImageResult & { used?: PullCredential | null }> {
  const { images, puller, nowMs } = input;
  const record = input.record ?? (() => {});
  let backoff = initialBackoff;
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
    const { imageRef, authIndex } = await puller.pull(image, credentials.map(authOf), input.opts);
    input.pulling?.('finished');
    const took = goDuration(clock() - startedAt);
    const info = await images.imageStatus(image, input.opts).catch(() => null);
    const size = info?.size;
    record('Normal', 'Pulled', `Successfully pulled image "${raw}" in ${took} (${took} including waiting).${size ? ` Image size: ${size} bytes.` : ''}`);
    return { ok: true, image, imageRef, info, backoff, used: credentials[authIndex] ?? null };
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
