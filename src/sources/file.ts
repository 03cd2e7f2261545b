/**
 * The file pod source (`--pod-manifest-path`): static pods from a directory of manifests or from a
 * single manifest file.
 *
 * Every scan produces a FULL snapshot of the pods the path describes now; the PodConfig merge turns
 * snapshots into adds/updates/removes, so an unchanged snapshot costs the consumer nothing.
 *
 * - A directory is read flat: entries whose name does not start with `.`, sorted by name, regular
 *   files only (symlinks are followed; subdirectories, other kinds of files, symlinks to nothing
 *   and names that are not UTF-8 are reported and not read).
 * - Each file holds exactly one Pod, as YAML or JSON (JSON is YAML), in UTF-8, of at most
 *   `MAX_MANIFEST_BYTES` and `MAX_MANIFEST_DEPTH` levels of nesting. A file that does not parse,
 *   holds several documents or fails validation is reported and left out; other files are
 *   unaffected. A single-file path behaves like a directory holding that one file.
 * - A pod whose name (in its namespace) or UID another file's pod has is reported with both files
 *   and left out, as the kubelet drops the later of two pods of one name (pkg/kubelet/config/config.go
 *   filterInvalidPods): later in name order, except that a file whose pod held the name at the last
 *   scan keeps it, so that a new file never displaces a running pod (the kubelet's name order would
 *   stop a running pod for a newcomer whose file name sorts first).
 * - A missing path (or an empty directory) yields an empty snapshot, so the source still counts as
 *   seen; any other failure to read the path yields no snapshot (the previous pods stay).
 * - Scans run on `fs.watch` notifications, coalesced so a burst of events costs one scan
 *   `debounceMs` after its first event, and every `checkFrequencyMs` as a safety net for missed
 *   events (a recreated directory, network filesystems). Scans never overlap.
 * - Files whose identity, size and timestamps are unchanged since the last scan are not re-read.
 * - A problem is reported when it appears, not again on every scan while it persists.
 */
import { constants, watch, type FSWatcher } from 'node:fs';
import { type FileHandle, open, readdir, readlink, stat } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { podFullName, type Pod } from '../api/types.ts';
import { type Clock, type TimerHandle, realClock } from '../clock.ts';
import { MAX_MANIFEST_BYTES, MAX_MANIFEST_DEPTH, type ManifestProblem, decodeManifest, describeProblem } from './manifest.ts';
import { SourcePods } from './sourcePods.ts';
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
  /**
   * The pod left out because another file's pod has its name: the kubelet records an event on it
   * (pkg/kubelet/config/config.go filterInvalidPods).
   */
  duplicate?: Pod;
}

interface FileSourceOptions {
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

const DEFAULT_FILE_CHECK_FREQUENCY_MS = 20_000;
/** Long enough to coalesce the burst of notifications one save makes, short enough not to show in pod start latency. */
const DEFAULT_DEBOUNCE_MS = 20;
/** Manifests read at once by a scan. */
const parallelReads = 16;

export interface ParsedManifest {
  pod?: Pod;
  errors: ManifestError[];
}

export { MAX_MANIFEST_BYTES, MAX_MANIFEST_DEPTH };

/** A problem of `file` as the file source reports it. */
function manifestError(file: string, problem: ManifestProblem): ManifestError {
  return {
    file,
    ...(problem.line !== undefined ? { line: problem.line } : {}),
    ...(problem.field ? { field: problem.field } : {}),
    message: describeProblem(file, problem),
  };
}

/**
 * Decodes, parses, defaults and validates the content of one manifest file (its first
 * `MAX_MANIFEST_BYTES + 1` bytes, or its text). Pure apart from hashing.
 */
export function parseManifest(content: Uint8Array | string, file: string, nodeName: string): ParsedManifest {
  const decoded = decodeManifest(content, { maxBytes: MAX_MANIFEST_BYTES, onlyOne: 'one Pod per file', expected: 'Pod' });
  if ('problem' in decoded) return { errors: [manifestError(file, decoded.problem)] };
  const result = defaultStaticPod(decoded.manifest, { kind: 'file', path: file }, nodeName);
  if (result.pod) return { pod: result.pod, errors: [] };
  return { errors: result.errors.map(({ field, message }) => manifestError(file, { field, reason: message })) };
}

function errorText(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

function errorCode(err: unknown): unknown {
  return err instanceof Error && 'code' in err ? err.code : undefined;
}

/** Problems found by a scan, by file. */
type Problems = Map<string, ManifestError>;

/** Identity, size and timestamps of a file. */
function stampOf(info: { dev: bigint; ino: bigint; size: bigint; mtimeNs: bigint; ctimeNs: bigint }): string {
  return `${info.dev}:${info.ino}:${info.size}:${info.mtimeNs}:${info.ctimeNs}`;
}

/** The file's first `limit` bytes (all of it if shorter), read to its end even if it grew since `size`. */
async function readAtMost(handle: FileHandle, limit: number, size: number): Promise<Uint8Array> {
  let buffer = Buffer.alloc(Math.min(limit, size + 1));
  let length = 0;
  for (;;) {
    if (length === buffer.length) {
      if (length === limit) return buffer;
      const grown = Buffer.alloc(Math.min(limit, length * 2));
      buffer.copy(grown);
      buffer = grown;
    }
    const { bytesRead } = await handle.read(buffer, length, buffer.length - length, null);
    if (bytesRead === 0) return buffer.subarray(0, length);
    length += bytesRead;
  }
}

interface CachedFile {
  /** Identity, size and timestamps at the last read; any change means the file must be re-read. */
  stamp: string;
  parsed: ParsedManifest;
}

type Target = { kind: 'dir'; dir: string } | { kind: 'file'; dir: string; name: string };

export function createFileSource(options: FileSourceOptions): FileSource {
  const { path, nodeName, onError } = options;
  const checkFrequencyMs = options.checkFrequencyMs ?? DEFAULT_FILE_CHECK_FREQUENCY_MS;
  const debounceMs = options.debounceMs ?? DEFAULT_DEBOUNCE_MS;

  const cache = new Map<string, CachedFile>();
  /**
   * Problems with paths (missing, unreadable, not a file, a name that is not UTF-8) and pods that
   * repeat another file's name or UID, found by the last scan, so that ones that persist are not
   * reported again. Manifest errors need no such memory: they are reported when a file is read,
   * and an unchanged file is not read again.
   */
  let pathProblems = new Map<string, ManifestError>();
  /** The full name of the pod each file gave in the last snapshot: the file keeps that name while its pod has it. */
  let holders = new Map<string, string>();
  let stopped = false;
  let watcher: FSWatcher | undefined;
  let watchedKey = '';
  const clock = options.clock ?? realClock;
  // Each pod as the node keeps it, stamped, shared with its last version and frozen (sourcePods.ts).
  const kept = new SourcePods('file', () => clock.now());
  const onSnapshot = (pods: Pod[]) => options.onSnapshot(kept.snapshot(pods));
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

  /** Why `file` is not read as a manifest, or null: a regular file is read. */
  function notRegular(file: string, info: { isFile(): boolean; isDirectory(): boolean }): string | null {
    if (info.isDirectory()) return `${file}: is a directory; manifest directories are not read recursively`;
    return info.isFile() ? null : `${file}: not a regular file`;
  }

  async function readManifest(file: string, problems: Problems): Promise<Pod | undefined> {
    const problem = (message: string) => {
      cache.delete(file);
      problems.set(file, { file, message });
      return undefined;
    };
    let info;
    try {
      info = await stat(file, { bigint: true });
    } catch (err) {
      cache.delete(file);
      if (errorCode(err) !== 'ENOENT') return problem(`${file}: ${errorText(err)}`);
      // Removed since the directory was listed (nothing to say), or a symlink to nothing, which the
      // kubelet reports as a path it cannot stat (pkg/kubelet/config/file.go extractFromDir).
      const target = await readlink(file).catch(() => undefined);
      return target === undefined ? undefined : problem(`${file}: symlink to ${target}, which does not exist`);
    }
    const irregular = notRegular(file, info);
    if (irregular) return problem(irregular);
    const cached = cache.get(file);
    if (cached?.stamp === stampOf(info)) return cached.parsed.pod;
    let read: CachedFile;
    try {
      read = await readFileAt(file);
    } catch (err) {
      cache.delete(file);
      return errorCode(err) === 'ENOENT' ? undefined : problem(`${file}: ${errorText(err)}`);
    }
    cache.set(file, read);
    for (const error of read.parsed.errors) onError(error);
    return read.parsed.pod;
  }

  /**
   * Reads and parses `file` through one handle, so that the stamp is that of the content read even
   * when the file is replaced meanwhile. Opened non-blocking: a FIFO put there since the `stat`
   * must not hold the scan waiting for a writer.
   */
  async function readFileAt(file: string): Promise<CachedFile> {
    const handle = await open(file, constants.O_RDONLY | constants.O_NONBLOCK);
    try {
      const info = await handle.stat({ bigint: true });
      const irregular = notRegular(file, info);
      if (irregular) return { stamp: '', parsed: { errors: [{ file, message: irregular }] } };
      return { stamp: stampOf(info), parsed: parseManifest(await readAtMost(handle, MAX_MANIFEST_BYTES + 1, Number(info.size)), file, nodeName) };
    } finally {
      await handle.close();
    }
  }

  /** Reports the path problems that are new since the last scan. */
  function reportProblems(problems: Problems): void {
    for (const [file, error] of problems) {
      if (pathProblems.get(file)?.message !== error.message) onError(error);
    }
    pathProblems = problems;
  }

  /**
   * Leaves out the pods whose full name or UID another file's pod has, reporting them with both
   * files; `read[i]` is the pod of `files[i]`, if any. The files that held their pod's name in
   * the last snapshot are served first, then the others in name order.
   */
  function withoutDuplicates(files: readonly string[], read: readonly (Pod | undefined)[], problems: Problems): Pod[] {
    const byName = new Map<string, string>();
    const byUid = new Map<string, string>();
    const kept = new Array<boolean>(files.length).fill(false);
    const held = (i: number) => read[i] !== undefined && holders.get(files[i]!) === podFullName(read[i]);
    // A stable sort: name order within each group.
    const order = files.map((_, i) => i).sort((a, b) => Number(held(b)) - Number(held(a)));
    for (const i of order) {
      const pod = read[i];
      if (!pod) continue;
      const file = files[i]!;
      const { name, namespace, uid } = pod.metadata;
      const sameName = byName.get(podFullName(pod));
      const sameUid = byUid.get(uid);
      if (sameName !== undefined) {
        const message = `${file}: metadata.name: Duplicate value: ${JSON.stringify(name)} in namespace ${JSON.stringify(namespace)}: the pod of ${sameName} has this name`;
        problems.set(file, { file, field: 'metadata.name', message, duplicate: pod });
      } else if (sameUid !== undefined) {
        problems.set(file, { file, field: 'metadata.uid', message: `${file}: metadata.uid: Duplicate value: ${JSON.stringify(uid)}: the pod of ${sameUid} has this UID` });
      } else {
        byName.set(podFullName(pod), file);
        byUid.set(uid, file);
        kept[i] = true;
      }
    }
    holders = new Map([...byName].map(([name, file]) => [file, name]));
    return read.filter((pod, i): pod is Pod => kept[i]!);
  }

  async function scanOnce(): Promise<void> {
    if (stopped) return;
    const problems: Problems = new Map();
    let info;
    try {
      info = await stat(path, { bigint: true });
    } catch (err) {
      if (errorCode(err) !== 'ENOENT') {
        problems.set(path, { file: path, message: `${path}: ${errorText(err)}` });
        reportProblems(problems);
        return;
      }
      closeWatcher();
      cache.clear();
      problems.set(path, { file: path, message: `${path}: path does not exist, ignoring` });
      reportProblems(problems);
      if (!stopped) onSnapshot([]);
      return;
    }

    let files: string[];
    if (info.isDirectory()) {
      ensureWatcher({ kind: 'dir', dir: path }, `${info.dev}:${info.ino}`);
      try {
        files = [];
        for (const raw of await readdir(path, { encoding: 'buffer' })) {
          const name = raw.toString();
          if (name.startsWith('.')) continue;
          // A name that does not survive decoding could not be opened by its decoded form either.
          if (Buffer.from(name).equals(raw)) files.push(join(path, name));
          else problems.set(join(path, name), { file: join(path, name), message: `${join(path, name)}: file name is not UTF-8; rename the file` });
        }
        files.sort();
      } catch (err) {
        problems.set(path, { file: path, message: `${path}: ${errorText(err)}` });
        reportProblems(problems);
        return;
      }
    } else if (info.isFile()) {
      const dir = dirname(path);
      ensureWatcher({ kind: 'file', dir, name: basename(path) }, `file:${dir}`);
      files = [path];
    } else {
      problems.set(path, { file: path, message: `${path}: not a directory or a regular file` });
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
    const pods = withoutDuplicates(files, read, problems);
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
