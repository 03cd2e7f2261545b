/**
 * Keeps a local copy of one kind of object by a list and then a watch, as client-go's reflector
 * does (tools/cache/reflector.go ListAndWatch):
 * - the first change is handed over after the first list;
 * - the watch resumes from the last resourceVersion it saw (bookmarks keep it fresh); a watch the
 *   server closed is reopened at once; a `410 Gone` (the version was compacted away) lists again;
 *   any other failure waits 800 ms, doubling to 30 s, before it lists or watches again;
 * - watch events arriving together are handed over as one change (one merge per burst);
 * - the store's objects are frozen, and a new version holds the parts that did not change from the
 *   one it replaces (a pod's spec across its status updates is one object), a new object the parts
 *   it has in common with the one stored before it; or, with `normalize`, what that gives (the pod
 *   source's normalization, which shares and freezes likewise), an object it refuses left out.
 */
import { type ApiError, isForbidden, isGone, type WatchHandlers } from './api.ts';
import type { Clock, TimerHandle } from '../clock.ts';
import { deepFreeze, sharedWith } from '../immutable.ts';
import type { Logger } from '../log.ts';

const WATCH_BACKOFF = { firstMs: 800, maxMs: 30_000 };
/** A gap of events smaller than this is handed over as one change. */
const COALESCE_MS = 10;

export type ReflectorState = { phase: 'listing' } | { phase: 'watching'; resourceVersion: string } | { phase: 'backingOff'; delayMs: number; error: string };

interface Versioned {
  metadata?: { uid?: unknown; name?: unknown; resourceVersion?: string };
}

interface ReflectorOptions<T extends Versioned> {
  /** The kind, for log lines: `Pod`, `Service`. */
  kind: string;
  list(): Promise<{ items: T[]; resourceVersion: string }>;
  watch(resourceVersion: string, handlers: WatchHandlers<T>): { stop(): void };
  clock: Clock;
  log: Logger;
  /** The store after the list and after each burst of watch events, by UID. */
  onChange(store: ReadonlyMap<string, T>): void;
  /**
   * The object as the store keeps it, from what the API sent and the version it replaces; null
   * leaves it out of the store (the normalizer reports why). Absent: shared and frozen as it came.
   */
  normalize?(item: T, previous: T | undefined): T | null;
  /** A watch event whose object has no name or UID (it is left out). */
  onMalformed?(message: string): void;
  onState?(state: ReflectorState): void;
}

interface Reflector {
  start(): void;
  stop(): void;
}

export function createReflector<T extends Versioned>(options: ReflectorOptions<T>): Reflector {
  const { clock, log, kind } = options;
  const store = new Map<string, T>();
  let resourceVersion = '';
  let stopped = false;
  let failures = 0;
  let timer: TimerHandle | undefined;
  let flushTimer: TimerHandle | undefined;
  let watch: { stop(): void } | undefined;

  const state = (s: ReflectorState) => options.onState?.(s);
  /** The object stored last: a new object's first version shares what it can with it. */
  let lastKept: T | undefined;
  /**
   * Stores `item`, frozen: consumers share the store's objects and none may change them. It holds
   * one copy of what did not change since `previous` (the version it replaces) or, being new, of
   * what it has in common with the object stored last (the pods of one ReplicaSet have one spec).
   */
  const keep = (item: T, previous: T | undefined) => {
    const uid = String(item.metadata?.uid);
    const kept = options.normalize ? options.normalize(item, previous) : deepFreeze(sharedWith(previous ?? lastKept, item));
    if (kept === null) store.delete(uid);
    else store.set(uid, (lastKept = kept));
  };
  const flush = () => {
    flushTimer = undefined;
    if (!stopped) options.onChange(store);
  };

  const retry = (err: unknown, what: () => void) => {
    failures += 1;
    const delayMs = Math.min(WATCH_BACKOFF.firstMs * 2 ** (failures - 1), WATCH_BACKOFF.maxMs);
    const message = err instanceof Error ? err.message : String(err);
    // A 403 is the node asking for what it may not: say so plainly; the backoff keeps it from running hot.
    log(isForbidden(err) ? 'error' : 'warn', isForbidden(err) ? 'The API server refused the node identity this request' : `${kind} watch failed; retrying`, {
      err: message,
      retryInMs: delayMs,
    });
    state({ phase: 'backingOff', delayMs, error: message });
    timer = clock.setTimeout(what, delayMs);
  };

  const list = () => {
    if (stopped) return;
    state({ phase: 'listing' });
    options.list().then(
      (result) => {
        if (stopped) return;
        const before = new Map(store);
        store.clear();
        for (const item of result.items) keep(item, before.get(String(item.metadata?.uid)));
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
    watch = options.watch(resourceVersion, {
      onEvent: (type, item) => {
        if (stopped) return;
        const uid = item?.metadata?.uid;
        if (typeof uid !== 'string' || typeof item.metadata?.name !== 'string') {
          options.onMalformed?.(`a ${type} watch event carried an object without metadata.name or metadata.uid`);
          return;
        }
        failures = 0;
        if (item.metadata.resourceVersion) resourceVersion = item.metadata.resourceVersion;
        if (type === 'DELETED') store.delete(uid);
        else keep(item, store.get(uid));
        flushTimer ??= clock.setTimeout(flush, COALESCE_MS);
      },
      // Only where the next watch resumes: the store and its consumers are not told (reflector.go watchHandler).
      onBookmark: (version) => {
        if (stopped) return;
        failures = 0;
        resourceVersion = version;
      },
      onEnd: (err?: ApiError) => {
        watch = undefined;
        if (stopped) return;
        if (!err) return startWatch(); // the server closed it (its timeout): resume
        if (isGone(err)) {
          log('info', `${kind} watch expired (410 Gone); listing again`, { resourceVersion });
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
