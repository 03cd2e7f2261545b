/**
 * Reading a container's log file for `kubectl logs` (k8s.io/cri-client pkg/logs ReadLogs): the
 * last `tailLines` lines or all, each kept or left out and rendered by format.ts, and with
 * `follow`, what is appended afterwards until the container stops. Following waits on a watch of
 * the file's directory (and looks again every second, as a watch can miss events); when the
 * runtime's log rotation puts a new file at the path, the rest of the old one is read and the new
 * one followed from its start. Rotated files are never read, as with the kubelet.
 */
import { type FileHandle, open, realpath, stat } from 'node:fs/promises';
import { watch } from 'node:fs';
import path from 'node:path';
import { type LogLine, type LogOptions, type LogStream, LogFilter, parserFor, tailOffset } from './format.ts';

interface LogReadDeps {
  /** Whether the container still runs (following ends at the end of the file once it does not). */
  isRunning(): Promise<boolean>;
  /** Ends the read (the client went away). */
  signal: AbortSignal;
  /** How often a follower looks again without a watch event; 1 s. */
  recheckMs?: number;
}

/** Writes the log's lines, as `options` ask, to `write`; resolves when done (or aborted). */
export async function readContainerLog(file: string, options: LogOptions, write: (stream: LogStream, chunk: Buffer) => void, deps: LogReadDeps): Promise<void> {
  const filter = new LogFilter(options);
  let handle: FileHandle = await open(await realpath(file), 'r');
  let ino = (await handle.stat()).ino;
  let position = 0;
  let pending = Buffer.alloc(0);
  let parse: ((line: Buffer) => LogLine | null) | null = null;

  /** Reads what the handle has past `position`; writes every complete line. */
  const drain = async (first: boolean): Promise<void> => {
    const size = (await handle.stat()).size;
    if (size <= position) return;
    const chunk = Buffer.alloc(size - position);
    const { bytesRead } = await handle.read(chunk, 0, chunk.length, position);
    position += bytesRead;
    let text = Buffer.concat([pending, chunk.subarray(0, bytesRead)]);
    if (first && options.tailLines !== undefined) text = text.subarray(tailOffset(text, options.tailLines));
    // Consecutive output of one stream goes out as one write of up to 64 KiB: a write per line
    // would cost more than the reading.
    let batch: Buffer[] = [];
    let batchBytes = 0;
    let batchStream: LogStream = 'stdout';
    const flush = () => {
      if (batchBytes > 0) write(batchStream, batch.length === 1 ? batch[0]! : Buffer.concat(batch, batchBytes));
      batch = [];
      batchBytes = 0;
    };
    let start = 0;
    for (let nl = text.indexOf(0x0a, start); nl >= 0 && !filter.exhausted; nl = text.indexOf(0x0a, start)) {
      const line = text.subarray(start, nl + 1);
      start = nl + 1;
      parse ??= parserFor(line);
      const parsed = parse(line);
      const out = parsed && filter.render(parsed);
      if (!out || !out.length) continue;
      if (parsed.stream !== batchStream || batchBytes >= 65_536) flush();
      batchStream = parsed.stream;
      batch.push(out);
      batchBytes += out.length;
    }
    flush();
    pending = Buffer.from(text.subarray(start));
  };

  try {
    await drain(true);
    if (!options.follow) return;
    const dir = path.dirname(await realpath(file));
    while (!filter.exhausted && !deps.signal.aborted) {
      if (!(await deps.isRunning())) {
        await drain(false);
        return;
      }
      await changed(dir, deps.signal, deps.recheckMs ?? 1_000);
      await drain(false);
      // Rotated: a new file at the path. The old one is read to its end above; follow the new one.
      const now = await stat(file).catch(() => null);
      if (now && now.ino !== ino) {
        await handle.close();
        handle = await open(await realpath(file), 'r');
        ino = now.ino;
        position = 0;
        pending = Buffer.alloc(0);
        await drain(false);
      }
    }
  } finally {
    await handle.close().catch(() => undefined);
  }
}

/** Resolves at the next change in `dir`, after `recheckMs`, or when aborted. */
function changed(dir: string, signal: AbortSignal, recheckMs: number): Promise<void> {
  return new Promise((resolve) => {
    let watcher: ReturnType<typeof watch> | undefined;
    const done = () => {
      clearTimeout(timer);
      watcher?.close();
      signal.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, recheckMs);
    signal.addEventListener('abort', done, { once: true });
    try {
      watcher = watch(dir, { persistent: false }, done);
      watcher.on('error', done);
    } catch {
      // No watch here: the timer alone.
    }
  });
}
