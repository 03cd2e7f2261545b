/**
 * The file pod source (`--pod-manifest-path`): static pods from a directory of manifests or from a
 * single manifest file.
 *
 * Every scan produces a FULL snapshot of the pods the path describes now; the PodConfig merge turns
 * snapshots into adds/updates/removes, so an unchanged snapshot costs the consumer nothing.
 *
 * - A directory is read flat: entries whose name does not start with `.`, sorted by name, regular
 *   files only (symlinks are followed; subdirectories are reported and not entered).
 * - Each file holds exactly one Pod, as YAML or JSON (JSON is YAML). A file that does not parse,
 *   holds several documents or fails validation is reported and left out; other files are
 *   unaffected. A single-file path behaves like a directory holding that one file.
 * - A missing path (or an empty directory) yields an empty snapshot, so the source still counts as
 *   seen; any other failure to read the path yields no snapshot (the previous pods stay).
 * - Scans run on `fs.watch` notifications, coalesced so a burst of events costs one scan
 *   `debounceMs` after its first event, and every `checkFrequencyMs` as a safety net for missed
 *   events (a recreated directory, network filesystems). Scans never overlap.
 * - Files whose identity, size and timestamps are unchanged since the last scan are not re-read.
 * - A problem is reported when it appears, not again on every scan while it persists.
 */
import { watch, type FSWatcher } from 'node:fs';
import { readdir, readFile, stat } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { isScalar, LineCounter, parseAllDocuments } from 'yaml';
import type { Pod } from '../api/types.ts';
import { type Clock, type TimerHandle, realClock } from '../clock.ts';
import { defaultStaticPod } from './static.ts';

export interface ManifestError {
  /** The manifest file, or the configured path when the problem is the path itself. */
  file: string;
  /** 1-based line, for YAML syntax errors. */
  line?: number;
  /** The offending field, for validation errors, e.g. `spec.containers[0].image`. */
  field?: string;
  /** Complete text for a log line, e.g. `examples/x.yaml: spec.containers[0].image: Required value`. */
  message: string;
}

export interface FileSourceOptions {
  path: string;
  nodeName: string;
  /** Period of the safety-net rescan; the kubelet's `fileCheckFrequency`, 20 s by default. */
  checkFrequencyMs?: number;
  /** Delay between the first change notification of a burst and the rescan it triggers. */
  debounceMs?: number;
  /** The clock of the debounce and the safety-net rescan; the wall clock by default. */
  clock?: Clock;
  /** The pods are shared with the source's cache: treat them as read-only. */
  onSnapshot: (pods: Pod[]) => void;
  onError: (err: ManifestError) => void;
}

export interface FileSource {
  /** Reads the path once and emits the first snapshot before resolving; then keeps watching. */
  start(): Promise<void>;
  /** Stops watching; no snapshot is emitted afterwards. */
  stop(): void;
  /** Scans now (after any scan in progress) and emits the snapshot. Concurrent calls share a scan. */
  rescan(): Promise<void>;
}

export const DEFAULT_FILE_CHECK_FREQUENCY_MS = 20_000;
/** Long enough to coalesce the burst of notifications one save makes, short enough not to show in pod start latency. */
const DEFAULT_DEBOUNCE_MS = 20;
/** Manifests read at once by a scan. */
const parallelReads = 16;

export interface ParsedManifest {
  pod?: Pod;
  errors: ManifestError[];
}

/** `at line 3, column 5:` and the source excerpt that follow the reason in `yaml`'s messages. */
const YAML_POSITION_SUFFIX = / at line \d+, column \d+:[\s\S]*$/;

/** Parses, defaults and validates the text of one manifest file. Pure apart from hashing. */
export function parseManifest(text: string, file: string, nodeName: string): ParsedManifest {
  const lineCounter = new LineCounter();
  const documents = parseAllDocuments(text, { lineCounter });
  for (const doc of documents) {
    const [syntax] = doc.errors;
    if (syntax) {
      const line = syntax.linePos?.[0].line;
      const reason = syntax.message.replace(YAML_POSITION_SUFFIX, '');
      const message = line === undefined ? `${file}: ${reason}` : `${file}:${line}: ${reason}`;
      return { errors: [line === undefined ? { file, message } : { file, line, message }] };
    }
  }
  // A `---` with nothing after it makes an empty (null) document; only documents with content count.
  const pods = documents.filter((doc) => doc.contents !== null && !(isScalar(doc.contents) && doc.contents.value === null));
  const [first, second] = pods;
  if (!first) return { errors: [{ file, message: `${file}: no Pod in manifest` }] };
  if (second) {
    const line = lineCounter.linePos(second.range[0]).line;
    const message = `${file}:${line}: one Pod per file, found ${pods.length} YAML documents`;
    return { errors: [{ file, line, message }] };
  }

  let manifest: unknown;
  try {
    manifest = first.toJS();
  } catch (err) {
    return { errors: [{ file, message: `${file}: ${errorText(err)}` }] };
  }
  const result = defaultStaticPod(manifest, { kind: 'file', path: file }, nodeName);
  if (result.pod) return { pod: result.pod, errors: [] };
  return {
    errors: result.errors.map(({ field, message }) =>
      field === '' ? { file, message: `${file}: ${message}` } : { file, field, message: `${file}: ${field}: ${message}` },
    ),
  };
}

function errorText(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

function errorCode(err: unknown): unknown {
  return err instanceof Error && 'code' in err ? err.code : undefined;
}

interface CachedFile {
  /** Identity, size and timestamps at the last read; any change means the file must be re-read. */
  stamp: string;
  parsed: ParsedManifest;
}

type Target = { kind: 'dir'; dir: string } | { kind: 'file'; dir: string; name: string };

export function createFileSource(options: FileSourceOptions): FileSource {
  const { path, nodeName, onSnapshot, onError } = options;
  const checkFrequencyMs = options.checkFrequencyMs ?? DEFAULT_FILE_CHECK_FREQUENCY_MS;
  const debounceMs = options.debounceMs ?? DEFAULT_DEBOUNCE_MS;

  const cache = new Map<string, CachedFile>();
  /**
   * Problems with paths (missing, unreadable, not a file) found by the last scan, so that ones that
   * persist are not reported again. Manifest errors need no such memory: they are reported when a
   * file is read, and an unchanged file is not read again.
   */
  let pathProblems = new Map<string, string>();
  let stopped = false;
  let watcher: FSWatcher | undefined;
  let watchedKey = '';
  const clock = options.clock ?? realClock;
  let debounce: TimerHandle | undefined;
  /** The next safety-net rescan. */
  let periodic: TimerHandle | undefined;
  let tail: Promise<void> = Promise.resolve();
  let queued: Promise<void> | undefined;

  function closeWatcher(): void {
    watcher?.close();
    watcher = undefined;
    watchedKey = '';
  }

  function scheduleRescan(): void {
    if (debounce || stopped) return;
    debounce = clock.setTimeout(() => {
      debounce = undefined;
      void rescanReportingFailures();
    }, debounceMs);
  }

  /**
   * Watches the directory (for a single file: its parent, since editors replace files, which ends
   * a watch on the file itself). `key` includes the inode so a recreated directory gets a new watch.
   */
  function ensureWatcher(target: Target, key: string): void {
    if (stopped || (watcher && watchedKey === key)) return;
    closeWatcher();
    try {
      watcher = watch(target.dir, { persistent: false }, (_event, filename) => {
        if (target.kind === 'file' && filename !== null && filename !== target.name) return;
        scheduleRescan();
      });
      watchedKey = key;
      watcher.on('error', () => {
        closeWatcher();
        scheduleRescan();
      });
    } catch {
      // Not watchable (e.g. removed meanwhile): the periodic rescan still notices changes.
      watcher = undefined;
    }
  }

  async function readManifest(file: string, problems: Map<string, string>): Promise<Pod | undefined> {
    let info;
    try {
      info = await stat(file, { bigint: true });
    } catch (err) {
      cache.delete(file);
      // Removed since the directory was listed, or a dangling symlink.
      if (errorCode(err) !== 'ENOENT') problems.set(file, `${file}: ${errorText(err)}`);
      return undefined;
    }
    if (!info.isFile()) cache.delete(file);
    if (info.isDirectory()) {
      problems.set(file, `${file}: is a directory; manifest directories are not read recursively`);
      return undefined;
    }
    if (!info.isFile()) {
      problems.set(file, `${file}: not a regular file`);
      return undefined;
    }
    const stamp = `${info.dev}:${info.ino}:${info.size}:${info.mtimeNs}:${info.ctimeNs}`;
    let cached = cache.get(file);
    if (cached?.stamp !== stamp) {
      let parsed: ParsedManifest;
      try {
        parsed = parseManifest(await readFile(file, 'utf8'), file, nodeName);
      } catch (err) {
        parsed = { errors: [{ file, message: `${file}: ${errorText(err)}` }] };
      }
      cached = { stamp, parsed };
      cache.set(file, cached);
      for (const error of parsed.errors) onError(error);
    }
    return cached.parsed.pod;
  }

  /** Reports the path problems that are new since the last scan. */
  function reportProblems(problems: Map<string, string>): void {
    for (const [file, message] of problems) {
      if (pathProblems.get(file) !== message) onError({ file, message });
    }
    pathProblems = problems;
  }

  async function scanOnce(): Promise<void> {
    if (stopped) return;
    const problems = new Map<string, string>();
    let info;
    try {
      info = await stat(path, { bigint: true });
    } catch (err) {
      if (errorCode(err) !== 'ENOENT') {
        problems.set(path, `${path}: ${errorText(err)}`);
        reportProblems(problems);
        return;
      }
      closeWatcher();
      cache.clear();
      problems.set(path, `${path}: path does not exist, ignoring`);
      reportProblems(problems);
      if (!stopped) onSnapshot([]);
      return;
    }

    let files: string[];
    if (info.isDirectory()) {
      ensureWatcher({ kind: 'dir', dir: path }, `${info.dev}:${info.ino}`);
      try {
        files = (await readdir(path)).filter((name) => !name.startsWith('.')).sort().map((name) => join(path, name));
      } catch (err) {
        problems.set(path, `${path}: ${errorText(err)}`);
        reportProblems(problems);
        return;
      }
    } else if (info.isFile()) {
      const dir = dirname(path);
      ensureWatcher({ kind: 'file', dir, name: basename(path) }, `file:${dir}`);
      files = [path];
    } else {
      problems.set(path, `${path}: not a directory or a regular file`);
      reportProblems(problems);
      return;
    }

    // Read a few files at a time: one by one, a directory of 1,000 manifests written at once took
    // seconds to read while the agent was busy starting the first ones (one event-loop turn per stat
    // and per read); the order of the snapshot stays the directory's.
    const read = new Array<Pod | undefined>(files.length);
    let next = 0;
    const reader = async () => {
      while (next < files.length) {
        const i = next++;
        read[i] = await readManifest(files[i]!, problems);
      }
    };
    await Promise.all(Array.from({ length: Math.min(parallelReads, files.length) }, reader));
    const pods = read.filter((pod): pod is Pod => pod !== undefined);
    const listed = new Set(files);
    for (const file of cache.keys()) {
      if (!listed.has(file)) cache.delete(file);
    }
    reportProblems(problems);
    if (!stopped) onSnapshot(pods);
  }

  function rescan(): Promise<void> {
    // A scan that has not started yet will see every change made so far: share it.
    if (queued) return queued;
    const scan = tail.then(() => {
      queued = undefined;
      return scanOnce();
    });
    queued = scan;
    tail = scan.catch(() => undefined);
    return scan;
  }

  /** Timer-driven scans have no caller to reject to; a failing consumer is reported instead. */
  function rescanReportingFailures(): Promise<void> {
    return rescan().catch((err: unknown) => onError({ file: path, message: `${path}: scan failed: ${errorText(err)}` }));
  }

  function scheduleSafetyNet(): void {
    periodic = clock.setTimeout(() => {
      scheduleSafetyNet();
      void rescanReportingFailures();
    }, checkFrequencyMs);
  }

  return {
    async start() {
      await rescan();
      if (stopped || periodic !== undefined) return;
      scheduleSafetyNet();
    },
    stop() {
      stopped = true;
      closeWatcher();
      if (debounce !== undefined) clock.clearTimeout(debounce);
      if (periodic !== undefined) clock.clearTimeout(periodic);
      debounce = undefined;
      periodic = undefined;
    },
    rescan,
  };
}
