/**
 * The HTTP pod source (`--manifest-url`, `staticPodURL`): static pods served at a URL, as the
 * kubelet's (pkg/kubelet/config/http.go NewSourceURL, extractFromURL).
 *
 * - The URL is fetched at start and then every `checkFrequencyMs` (`--http-check-frequency`, 20 s)
 *   after the previous fetch ended (wait.Until), with the `--manifest-url-header` headers, each
 *   request given 10 s (the kubelet's http.Client Timeout). Fetches never overlap.
 * - The body is one Pod or one `v1` PodList, YAML or JSON, of at most 10 MiB (common.go
 *   maxConfigLength), decoded by the file source's code (manifest.ts) and defaulted as a static pod
 *   of source `http` (static.ts: name `<name>-<node>`, UID hashed from the URL and the manifest,
 *   the config hash annotation; no NoExecute toleration, which file pods alone get).
 * - Every good body is handed over whole, as a snapshot (the PodConfig merge makes the changes of
 *   it); a body equal to the previous one is not decoded again and hands over nothing.
 * - An answer other than 200, a failed request, a body that does not decode, or a Pod (or any pod
 *   of a PodList) that fails validation is reported, naming the URL (and the item, pod and field),
 *   and keeps the last good set: one broken pod of a list holds back the whole list, as in the
 *   kubelet (tryDecodePodList).
 * - An empty body is an empty set, and is reported (the kubelet sends an empty update "to allow
 *   HTTPSource to be marked as seen" and returns "zero-length data received"). Unlike the kubelet,
 *   which keeps comparing against the last non-empty body (so the same pods served again after an
 *   empty answer are never read again), the empty body is what the next answer is compared with.
 * - A problem is reported when it appears (or changes), not again at every fetch while it
 *   persists; the first good answer after one is told through `onRecovered`.
 *
 * Until the URL has answered once, the source has delivered nothing, so it is not seen and the
 * kubelet's cleanups wait (config.go SeenAllSources), as they do in the kubelet.
 */
import type { Pod } from '../api/types.ts';
import { isRecord } from '../api/validate.ts';
import type { Clock, TimerHandle } from '../clock.ts';
import { type ManifestProblem, decodeManifest, describeProblem } from './manifest.ts';
import { SourcePods } from './sourcePods.ts';
import { defaultStaticPod } from './static.ts';

/** The largest body read (pkg/kubelet/config/common.go maxConfigLength). */
export const MAX_HTTP_BODY_BYTES = 10 * 1024 * 1024;
/** Each request's deadline (http.go: `&http.Client{Timeout: 10 * time.Second}`). */
const REQUEST_TIMEOUT_MS = 10_000;

export interface HttpSourceError {
  url: string;
  /** The offending field, e.g. `items[1].spec.containers[0].image`. */
  field?: string;
  /** The pod's name in the manifest, when a pod is invalid. */
  pod?: string;
  /** Complete text for a log line, starting with the URL. */
  message: string;
}

/** An answer of the URL. */
export interface HttpAnswer {
  status: number;
  statusText: string;
  /** The body's first `MAX_HTTP_BODY_BYTES + 1` bytes. */
  body: Uint8Array;
}

/** The body last read with status 200, and its problem if it had one. */
export interface LastBody {
  body: Uint8Array;
  problem?: HttpSourceError;
}

/** What one answer does: a snapshot to hand over, the problem now (none: all is well), the body to remember. */
export interface AnswerOutcome {
  snapshot?: Pod[];
  problem?: HttpSourceError;
  last?: LastBody;
}

function bytesEqual(a: Uint8Array, b: Uint8Array): boolean {
  return a.length === b.length && Buffer.from(a.buffer, a.byteOffset, a.length).equals(Buffer.from(b.buffer, b.byteOffset, b.length));
}

function podName(manifest: unknown): string | undefined {
  const metadata = isRecord(manifest) ? manifest['metadata'] : undefined;
  const name = isRecord(metadata) ? metadata['name'] : undefined;
  return typeof name === 'string' && name !== '' ? name : undefined;
}

/** The problem `problem` of the body of `url`, in the pod `pod` when one is named. */
function bodyError(url: string, problem: ManifestProblem, pod?: string): HttpSourceError {
  const message = describeProblem(url, problem);
  return { url, ...(problem.field ? { field: problem.field } : {}), ...(pod ? { pod, message: `${message} (pod ${JSON.stringify(pod)})` } : { message }) };
}

/** One pod of the body, defaulted as a static pod of `url` and validated; `at` prefixes its fields (`items[2].`). */
function staticPodAt(url: string, manifest: unknown, at: string, nodeName: string): { pod: Pod } | { error: HttpSourceError } {
  const checked = defaultStaticPod(manifest, { kind: 'url', url }, nodeName);
  if (checked.pod) return { pod: checked.pod };
  const [first] = checked.errors;
  const field = `${at}${first?.field ?? ''}`.replace(/\.$/, '');
  return { error: bodyError(url, { field, reason: first?.message ?? 'invalid pod' }, podName(manifest)) };
}

/**
 * The pods a body describes (common.go tryDecodeSinglePod, then tryDecodePodList), or the first
 * problem found. Pure apart from hashing.
 */
export function parsePodsBody(body: Uint8Array | string, url: string, nodeName: string): { pods: Pod[] } | { error: HttpSourceError } {
  const decoded = decodeManifest(body, { maxBytes: MAX_HTTP_BODY_BYTES, onlyOne: 'one Pod or PodList per answer', expected: 'Pod or PodList' });
  if ('problem' in decoded) return { error: bodyError(url, decoded.problem) };
  const { manifest } = decoded;
  if (!isRecord(manifest)) {
    const got = Array.isArray(manifest) ? 'a list' : typeof manifest === 'string' ? `the text ${JSON.stringify(manifest.slice(0, 80))}` : JSON.stringify(manifest);
    return { error: bodyError(url, { reason: `expected a Pod or a v1 PodList (YAML or JSON), got ${got}` }) };
  }
  const kind = manifest['kind'];
  if (kind !== 'PodList') {
    if (kind !== undefined && kind !== 'Pod') return { error: bodyError(url, { field: 'kind', reason: `Unsupported value: ${JSON.stringify(kind)}: supported values: "Pod", "PodList"` }) };
    const single = staticPodAt(url, manifest, '', nodeName);
    return 'pod' in single ? { pods: [single.pod] } : single;
  }
  const apiVersion = manifest['apiVersion'];
  if (apiVersion !== undefined && apiVersion !== 'v1') return { error: bodyError(url, { field: 'apiVersion', reason: `Unsupported value: ${JSON.stringify(apiVersion)}: supported values: "v1"` }) };
  const items = manifest['items'] ?? [];
  if (!Array.isArray(items)) return { error: bodyError(url, { field: 'items', reason: 'expected a list of pods' }) };
  const pods: Pod[] = [];
  for (const [i, item] of items.entries()) {
    const one = staticPodAt(url, item, `items[${i}].`, nodeName);
    if ('error' in one) return one;
    pods.push(one.pod);
  }
  return { pods };
}

/**
 * What an answer of the URL does (http.go extractFromURL), given the body last read with status
 * 200. Pure apart from hashing.
 */
export function readAnswer(answer: HttpAnswer, last: LastBody | undefined, url: string, nodeName: string): AnswerOutcome {
  if (answer.status !== 200) {
    return { problem: { url, message: `${url}: ${answer.status}${answer.statusText ? ` ${answer.statusText}` : ''}` } };
  }
  const { body } = answer;
  if (last && bytesEqual(body, last.body)) return last.problem ? { problem: last.problem } : {};
  if (body.length === 0) {
    const problem = { url, message: `${url}: zero-length data received; no pods from this URL` };
    return { snapshot: [], problem, last: { body, problem } };
  }
  const parsed = parsePodsBody(body, url, nodeName);
  if ('error' in parsed) return { problem: parsed.error, last: { body, problem: parsed.error } };
  return { snapshot: parsed.pods, last: { body } };
}

interface HttpSourceOptions {
  url: string;
  /** Sent with every request; values of one name in order (`--manifest-url-header`). */
  headers: Record<string, string[]>;
  nodeName: string;
  /** Time between the end of a fetch and the next one: `--http-check-frequency`. */
  checkFrequencyMs: number;
  clock: Clock;
  /** The HTTP client; the global `fetch` by default. */
  fetch?: typeof fetch;
  onSnapshot(pods: Pod[]): void;
  onError(error: HttpSourceError): void;
  /** The first good answer after a problem. */
  onRecovered?(): void;
}

interface HttpSource {
  /** Fetches once and hands over what it read before resolving; then fetches every period. */
  start(): Promise<void>;
  /** Stops fetching (a fetch under way is aborted); nothing is handed over afterwards. */
  stop(): void;
}

function errorText(err: unknown): string {
  // fetch fails with "fetch failed" and the reason as its cause (ECONNREFUSED, a TLS error).
  const cause = err instanceof Error && err.cause instanceof Error ? err.cause : undefined;
  return cause ? cause.message : err instanceof Error ? err.message : String(err);
}

/** The first `limit` bytes of a body (all of it when shorter); the rest is not read. */
async function readAtMost(response: Response, limit: number): Promise<Uint8Array> {
  if (!response.body) return new Uint8Array();
  const reader = response.body.getReader();
  const chunks: Uint8Array[] = [];
  let length = 0;
  try {
    while (length < limit) {
      const { done, value } = await reader.read();
      if (done) break;
      chunks.push(value);
      length += value.length;
    }
  } finally {
    await reader.cancel().catch(() => undefined);
  }
  return Buffer.concat(chunks).subarray(0, limit);
}

export function createHttpSource(options: HttpSourceOptions): HttpSource {
  const { url, nodeName, clock } = options;
  // Each pod as the node keeps it, stamped, shared with its last version and frozen (sourcePods.ts).
  const kept = new SourcePods('http', () => clock.now());
  const fetchUrl = options.fetch ?? fetch;
  const headers = new Headers();
  for (const [name, values] of Object.entries(options.headers)) for (const value of values) headers.append(name, value);
  let last: LastBody | undefined;
  /** The problem reported last, until a good answer clears it. */
  let reported: string | undefined;
  let stopped = false;
  let next: TimerHandle | undefined;
  let inFlight: AbortController | undefined;

  async function answer(): Promise<HttpAnswer> {
    const controller = new AbortController();
    inFlight = controller;
    const deadline = clock.setTimeout(() => controller.abort(new Error(`no answer within ${REQUEST_TIMEOUT_MS / 1000}s`)), REQUEST_TIMEOUT_MS);
    try {
      const response = await fetchUrl(url, { headers, signal: controller.signal });
      return { status: response.status, statusText: response.statusText, body: await readAtMost(response, MAX_HTTP_BODY_BYTES + 1) };
    } finally {
      clock.clearTimeout(deadline);
      inFlight = undefined;
    }
  }

  function settle(problem: HttpSourceError | undefined): void {
    if (problem && problem.message !== reported) options.onError(problem);
    if (!problem && reported !== undefined) options.onRecovered?.();
    reported = problem?.message;
  }

  async function fetchOnce(): Promise<void> {
    let outcome: AnswerOutcome;
    try {
      outcome = readAnswer(await answer(), last, url, nodeName);
    } catch (err) {
      outcome = { problem: { url, message: `${url}: ${errorText(err)}` } };
    }
    if (stopped) return;
    if (outcome.last) last = outcome.last;
    if (outcome.snapshot) options.onSnapshot(kept.snapshot(outcome.snapshot));
    settle(outcome.problem);
  }

  async function run(): Promise<void> {
    try {
      await fetchOnce();
    } catch (err) {
      // A consumer that threw: reported, and the source keeps going.
      settle({ url, message: `${url}: ${errorText(err)}` });
    }
    if (!stopped) next = clock.setTimeout(() => void run(), options.checkFrequencyMs);
  }

  return {
    start: () => run(),
    stop() {
      stopped = true;
      if (next !== undefined) clock.clearTimeout(next);
      next = undefined;
      inFlight?.abort(new Error('stopped'));
    },
  };
}
