/**
 * The API server pod source (pkg/kubelet/config/apiserver.go NewSourceApiserver): the pods bound
 * to this node, by a list and then a watch of `spec.nodeName=<node>` across namespaces, kept as a
 * set and handed over whole after each change, as the file source does; the merge (podConfig.ts)
 * turns the sets into CONFIG.* events.
 *
 * As client-go's reflector does (tools/cache/reflector.go ListAndWatch):
 * - the first snapshot comes after the first list, so the source counts as seen only then;
 * - the watch resumes from the last resourceVersion it saw (bookmarks keep it fresh); a watch that
 *   the server closed is reopened at once; a `410 Gone` (the version was compacted away) lists
 *   again; any other failure waits 800 ms, doubling to 30 s, before it lists or watches again;
 * - events arriving together are handed over as one snapshot (one merge per burst, not per pod).
 *
 * Mirror pods (annotation `kubernetes.io/config.mirror`) are never run: they go to
 * `onMirrorPods`, for the agent to match against its static pods. A pod the agent cannot run
 * (it fails validation) is reported once per version through `onError`, naming the pod and the
 * field, and left out; the others are unaffected.
 */
import { ConfigAnnotation, type Pod } from '../api/types.ts';
import { applyPodDefaults, validatePod } from '../api/validate.ts';
import { type ApiError, isForbidden, isGone, type KubeApi } from '../client/api.ts';
import type { Clock, TimerHandle } from '../clock.ts';
import type { Logger } from '../log.ts';

export interface ApiSourceOptions {
  api: KubeApi;
  nodeName: string;
  clock: Clock;
  log: Logger;
  onSnapshot(pods: Pod[]): void;
  onMirrorPods?(pods: Pod[]): void;
  /** A pod the agent cannot run: `pod` names it (`namespace/name`), `object` is what the API sent, if it had a name. */
  onError(pod: string, message: string, object?: Pod): void;
  /** Reports how the source is doing, for the visualizer: listing, watching, backing off. */
  onState?(state: ApiSourceState): void;
}

export type ApiSourceState =
  | { phase: 'listing' }
  | { phase: 'watching'; resourceVersion: string }
  | { phase: 'backingOff'; delayMs: number; error: string };

export const WATCH_BACKOFF = { firstMs: 800, maxMs: 30_000 };
/** A gap of events smaller than this is handed over as one snapshot. */
const COALESCE_MS = 10;

export interface ApiSource {
  start(): void;
  stop(): void;
}

export function createApiSource(options: ApiSourceOptions): ApiSource {
  const { api, clock, log } = options;
  const fieldSelector = `spec.nodeName=${options.nodeName}`;
  const pods = new Map<string, Pod>();
  /** Each pod version as the agent runs it (null: rejected, and reported once), by UID. */
  const accepted = new Map<string, { version: string; pod: Pod | null }>();
  let resourceVersion = '';
  let stopped = false;
  let failures = 0;
  let timer: TimerHandle | undefined;
  let flushTimer: TimerHandle | undefined;
  let watch: { stop(): void } | undefined;

  const state = (s: ApiSourceState) => options.onState?.(s);

  /** The pod as the agent runs it, or null (reported) when it cannot; computed once per version. */
  const accept = (raw: Pod): Pod | null => {
    const uid = raw.metadata.uid;
    const version = raw.metadata.resourceVersion ?? '';
    const known = accepted.get(uid);
    if (known && known.version === version && version !== '') return known.pod;
    const checked = validatePod(raw);
    let pod: Pod | null = null;
    if (checked.pod) {
      pod = applyPodDefaults(checked.pod);
      pod.metadata.annotations = { ...pod.metadata.annotations, [ConfigAnnotation.source]: 'api' };
    } else {
      const first = checked.errors[0]!;
      options.onError(`${raw.metadata.namespace}/${raw.metadata.name}`, `${first.field ? `${first.field}: ` : ''}${first.message}`, raw);
    }
    accepted.set(uid, { version, pod });
    return pod;
  };

  const flush = () => {
    flushTimer = undefined;
    if (stopped) return;
    const all = [...pods.values()];
    const isMirror = (pod: Pod) => pod.metadata.annotations?.[ConfigAnnotation.mirror] !== undefined;
    options.onMirrorPods?.(all.filter(isMirror));
    for (const uid of accepted.keys()) if (!pods.has(uid)) accepted.delete(uid);
    options.onSnapshot(all.filter((pod) => !isMirror(pod)).map(accept).filter((pod): pod is Pod => pod !== null));
  };
  const scheduleFlush = () => {
    flushTimer ??= clock.setTimeout(flush, COALESCE_MS);
  };

  const retry = (err: unknown, what: () => void) => {
    failures += 1;
    const delayMs = Math.min(WATCH_BACKOFF.firstMs * 2 ** (failures - 1), WATCH_BACKOFF.maxMs);
    const message = err instanceof Error ? err.message : String(err);
    // A 403 is the node asking for what it may not: say so plainly; the backoff keeps it from running hot.
    log(isForbidden(err) ? 'error' : 'warn', isForbidden(err) ? 'The API server refused the node identity this request' : 'Pod watch failed; retrying', {
      err: message,
      retryInMs: delayMs,
    });
    state({ phase: 'backingOff', delayMs, error: message });
    timer = clock.setTimeout(what, delayMs);
  };

  const list = () => {
    if (stopped) return;
    state({ phase: 'listing' });
    api.listPods(fieldSelector).then(
      (result) => {
        if (stopped) return;
        pods.clear();
        for (const pod of result.items) pods.set(pod.metadata.uid, pod);
        resourceVersion = result.resourceVersion;
        if (flushTimer !== undefined) clock.clearTimeout(flushTimer);
        flush();
        startWatch();
      },
      (err: unknown) => retry(err, list),
    );
  };

  const startWatch = () => {
    if (stopped) return;
    state({ phase: 'watching', resourceVersion });
    watch = api.watchPods(fieldSelector, resourceVersion, {
      onEvent: (type, pod) => {
        if (stopped) return;
        if (typeof pod?.metadata?.uid !== 'string' || typeof pod.metadata.name !== 'string') {
          options.onError('(unnamed)', `a ${type} watch event carried an object without metadata.name or metadata.uid`);
          return;
        }
        failures = 0;
        if (pod.metadata?.resourceVersion) resourceVersion = pod.metadata.resourceVersion;
        if (type === 'BOOKMARK') return;
        if (type === 'DELETED') pods.delete(pod.metadata.uid);
        else pods.set(pod.metadata.uid, pod);
        scheduleFlush();
      },
      onEnd: (err?: ApiError) => {
        watch = undefined;
        if (stopped) return;
        if (!err) return startWatch(); // the server closed it (its timeout): resume
        if (isGone(err)) {
          log('info', 'Pod watch expired (410 Gone); listing again', { resourceVersion });
          return list();
        }
        retry(err, startWatch);
      },
    });
  };

  return {
    start: list,
    stop: () => {
      stopped = true;
      watch?.stop();
      if (timer !== undefined) clock.clearTimeout(timer);
      if (flushTimer !== undefined) clock.clearTimeout(flushTimer);
    },
  };
}
