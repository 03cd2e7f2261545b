/**
 * Content read from files and kept current as the files change, as the kubelet's dynamic
 * certificate contents are (apiserver dynamiccertificates: dynamic_serving_content.go
 * DynamicCertKeyPairContent for --tls-cert-file/--tls-private-key-file, dynamic_cafile_content.go
 * DynamicFileCAContent for the client CA file):
 * - a check reads every file, and when the text differs from what is in use, parses it; content
 *   that does not parse is refused with a log line and the old content stays in use;
 * - checks run on the file system's events and every minute besides (FileRefreshDuration), so a
 *   change the events miss is still picked up. statelet watches the files' directories rather
 *   than the files (fsnotify's watch on the file is re-added after a rename): a file replaced by a
 *   rename, or a Secret volume's `..data` swap, is an event there.
 * The first read happens at start and must succeed (NewDynamicServingContentFromFiles,
 * NewDynamicCAContentFromFile fail the kubelet's start).
 */
import { type FSWatcher, watch as fsWatch } from 'node:fs';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import type { Clock, TimerHandle } from '../clock.ts';
import type { Logger } from '../log.ts';

/** dynamic_cafile_content.go FileRefreshDuration. */
export const FILE_REFRESH_MS = 60_000;

export interface WatchedFilesDeps {
  clock: Clock;
  log: Logger;
  /** Watch the files (the kubelet's Reload… gates); false: read once at start. */
  reload: boolean;
}

export class WatchedFiles<T> {
  private value: T;
  private texts: string[];
  /** What was last refused (the texts, or the read error), so that a file that stays bad is logged once. */
  private rejected: string | null = null;
  private readonly listeners = new Set<() => void>();
  private readonly watchers: FSWatcher[] = [];
  private tick: TimerHandle | null = null;
  private running: Promise<void> | null = null;
  private again = false;
  private held = 0;
  private closed = false;

  private constructor(
    /** What is read, for log lines: `client CA file`, `serving certificate files`. */
    private readonly purpose: string,
    private readonly files: readonly string[],
    private readonly parse: (texts: string[]) => T,
    private readonly deps: WatchedFilesDeps,
    first: { texts: string[]; value: T },
  ) {
    this.value = first.value;
    this.texts = first.texts;
  }

  /** Reads and parses the files once (an error names the purpose and the files), then watches them when `deps.reload`. */
  static async open<T>(purpose: string, files: readonly string[], parse: (texts: string[]) => T, deps: WatchedFilesDeps): Promise<WatchedFiles<T>> {
    const texts = await Promise.all(files.map((file) => readFile(file, 'utf8')));
    let value: T;
    try {
      value = parse(texts);
    } catch (err) {
      throw new Error(`${purpose} ${files.join(', ')}: ${err instanceof Error ? err.message : String(err)}`);
    }
    const watched = new WatchedFiles(purpose, files, parse, deps, { texts, value });
    if (deps.reload) watched.watch();
    return watched;
  }

  current(): T {
    return this.value;
  }

  onChange(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => void this.listeners.delete(listener);
  }

  /** Reads the files now; resolves once this check (and any asked for meanwhile) is done. */
  check(): Promise<void> {
    if (this.closed || this.held > 0) return Promise.resolve();
    if (this.running) {
      this.again = true;
      return this.running;
    }
    this.running = (async () => {
      do {
        this.again = false;
        await this.checkOnce();
      } while (this.again && !this.closed);
    })().finally(() => (this.running = null));
    return this.running;
  }

  /**
   * Runs `write` (which rewrites the files) with checks held off, so a half-written pair is never
   * read, then checks. For a writer of the files that is part of the agent (the self-signed renewal).
   */
  async rewrite(write: () => Promise<void>): Promise<void> {
    await this.running;
    this.held++;
    try {
      await write();
    } finally {
      this.held--;
    }
    await this.check();
  }

  close(): void {
    this.closed = true;
    for (const watcher of this.watchers.splice(0)) watcher.close();
    if (this.tick !== null) this.deps.clock.clearTimeout(this.tick);
    this.tick = null;
  }

  private async checkOnce(): Promise<void> {
    let texts: string[];
    try {
      texts = await Promise.all(this.files.map((file) => readFile(file, 'utf8')));
    } catch (err) {
      this.refuse(`read: ${err instanceof Error ? err.message : String(err)}`, err);
      return;
    }
    if (same(texts, this.texts)) return;
    let value: T;
    try {
      value = this.parse(texts);
    } catch (err) {
      this.refuse(JSON.stringify(texts), err);
      return;
    }
    this.texts = texts;
    this.value = value;
    this.rejected = null;
    this.deps.log('info', 'Loaded new content from files', { purpose: this.purpose, files: this.files.join(',') });
    for (const listener of [...this.listeners]) listener();
  }

  /** Logs a refusal once per distinct content or error (a file that stays bad is not logged each minute). */
  private refuse(what: string, err: unknown): void {
    if (what === this.rejected) return;
    this.rejected = what;
    this.deps.log('error', 'Refused new content from files, keeping the content in use', { purpose: this.purpose, files: this.files.join(','), err });
  }

  private watch(): void {
    for (const dir of new Set(this.files.map((file) => path.dirname(path.resolve(file))))) {
      try {
        const watcher = fsWatch(dir, { persistent: false }, () => void this.check());
        watcher.on('error', () => watcher.close());
        this.watchers.push(watcher);
      } catch (err) {
        // The minute's check still runs.
        this.deps.log('warn', 'Cannot watch a directory; its files are checked every minute', { purpose: this.purpose, dir, err });
      }
    }
    const every = () => {
      this.tick = this.deps.clock.setTimeout(() => {
        void this.check();
        every();
      }, FILE_REFRESH_MS);
    };
    every();
  }
}

function same(a: readonly string[], b: readonly string[]): boolean {
  return a.length === b.length && a.every((text, i) => text === b[i]);
}
