/**
 * Container logs in the CRI log format (`<timestamp> <stream> <P|F> <text>`), written to the
 * files kubelet-style log readers expect. Writes are batched: lines accumulate in memory and one
 * timer flushes every file that has pending data with a single append each, so a thousand
 * chatty containers cost neither a timer nor an open descriptor apiece, and nothing is synced
 * per line.
 */

import { closeSync, mkdirSync, openSync } from 'node:fs';
import { appendFile, mkdir } from 'node:fs/promises';
import { dirname } from 'node:path';

export type LogStream = 'stdout' | 'stderr';

/** containerd's fixed-width form of RFC 3339 with nanoseconds. */
function criTimestamp(ms: number): string {
  const whole = Math.floor(ms);
  const iso = new Date(whole).toISOString(); // 2024-01-01T00:00:00.123Z
  const nanosBeyondMs = Math.round((ms - whole) * 1e6);
  return `${iso.slice(0, 23)}${String(nanosBeyondMs).padStart(6, '0')}Z`;
}

export class CriLogWriter {
  private pending = new Map<string, string[]>();
  private readonly createdDirs = new Set<string>();
  private timer: NodeJS.Timeout | null = null;
  private flushing: Promise<void> = Promise.resolve();
  /** The last write failure, kept for diagnosis; logging must never break the runtime. */
  lastError: unknown = null;

  constructor(private readonly flushIntervalMs = 200) {}

  append(path: string, text: string): void {
    let chunks = this.pending.get(path);
    if (!chunks) {
      chunks = [];
      this.pending.set(path, chunks);
    }
    chunks.push(text);
    if (!this.timer) {
      this.timer = setTimeout(() => {
        this.timer = null;
        void this.flush();
      }, this.flushIntervalMs);
      this.timer.unref();
    }
  }

  /** Writes everything appended so far; resolves once it is on disk (in the page cache). */
  flush(): Promise<void> {
    if (this.timer) {
      clearTimeout(this.timer);
      this.timer = null;
    }
    const batch = this.pending;
    this.pending = new Map();
    // Chained so that two flushes never interleave appends to the same file.
    this.flushing = this.flushing.then(() => this.write(batch));
    return this.flushing;
  }

  private async write(batch: Map<string, string[]>): Promise<void> {
    await Promise.all(
      [...batch].map(async ([path, chunks]) => {
        try {
          const dir = dirname(path);
          if (!this.createdDirs.has(dir)) {
            await mkdir(dir, { recursive: true });
            this.createdDirs.add(dir);
          }
          await appendFile(path, chunks.join(''));
        } catch (error) {
          this.lastError = error;
        }
      }),
    );
  }
}

/**
 * Splits one container's output into CRI log lines. Text without a trailing newline is held
 * until the line completes or the container exits (then written as a final `P` line, as
 * containerd's redirectLogs writes what is left at EOF: `echo -n DONE` reads back as `DONE`).
 */
export class ContainerLog {
  private partial: Record<LogStream, string> = { stdout: '', stderr: '' };

  constructor(
    private readonly writer: CriLogWriter,
    private readonly path: string,
    private readonly now: () => number,
  ) {
    this.reopen();
  }

  /**
   * Makes the file at the log path, as containerd does at the container's start and at
   * ReopenContainerLog: a reader (kubectl logs -f right after the start) finds it before the first
   * batch is written, and after a rotation the next lines go to a new file. Throws when the file
   * cannot be made (a full or read-only disk), as containerd fails those calls.
   */
  reopen(): void {
    mkdirSync(dirname(this.path), { recursive: true });
    closeSync(openSync(this.path, 'a'));
  }

  write(stream: LogStream, text: string): void {
    const combined = this.partial[stream] + text;
    const lastNewline = combined.lastIndexOf('\n');
    if (lastNewline < 0) {
      this.partial[stream] = combined;
      return;
    }
    this.partial[stream] = combined.slice(lastNewline + 1);
    const timestamp = criTimestamp(this.now());
    let out = '';
    for (const line of combined.slice(0, lastNewline).split('\n')) out += `${timestamp} ${stream} F ${line}\n`;
    this.writer.append(this.path, out);
  }

  /** Writes any unterminated line as partial: the process is gone, nothing more will complete it. */
  close(): void {
    for (const stream of ['stdout', 'stderr'] as const) {
      const rest = this.partial[stream];
      if (rest === '') continue;
      this.partial[stream] = '';
      this.writer.append(this.path, `${criTimestamp(this.now())} ${stream} P ${rest}\n`);
    }
  }
}
