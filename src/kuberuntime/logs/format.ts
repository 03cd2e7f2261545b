/**
 * Container log files as the runtime writes them, pure (k8s.io/cri-client pkg/logs/logs.go): CRI
 * lines `<RFC 3339 time> <stdout|stderr> <P|F>[:more tags] <content>`, a `P` line being a chunk
 * of a longer line that the next line continues; a file whose first line is not in that format is
 * read as Docker's JSON lines (`{"log","stream","time"}`). And what a reader asks of them
 * (v1.PodLogOptions as the kubelet applies them): the last N lines, those since a time, with
 * timestamps, within a byte budget.
 */

export type LogStream = 'stdout' | 'stderr';

export interface LogLine {
  /** The time as written (nanosecond text kept); a reader that filters by time parses it. */
  time: string;
  stream: LogStream;
  /** A chunk of a longer line: no newline after its content. */
  partial: boolean;
  content: Buffer;
}

/** The line's head: an RFC 3339 time (checked here, parsed only when a `since` asks), the stream, the tags. */
const CRI_LINE = /^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:\d\d)) (stdout|stderr) ([^ ]+) /;

const NEWLINE = Buffer.from('\n');

/**
 * One CRI line, with or without its newline, or null when it is not one. Given with its newline
 * (as the reader does), a full line's content is a view of the same bytes: nothing is copied.
 */
export function parseCriLine(line: Buffer): LogLine | null {
  const head = CRI_LINE.exec(line.subarray(0, 128).toString('latin1'));
  if (!head) return null;
  const partial = head[3]!.split(':')[0] === 'P';
  const ended = line[line.length - 1] === 0x0a;
  const body = line.subarray(head[0].length, ended ? line.length - 1 : line.length);
  const content = partial ? body : ended ? line.subarray(head[0].length) : Buffer.concat([body, NEWLINE]);
  return { time: head[1]!, stream: head[2] as LogStream, partial, content };
}

/** One Docker JSON line, or null. */
export function parseJsonLine(line: Buffer): LogLine | null {
  try {
    const entry = JSON.parse(line.toString('utf8').trimEnd()) as { log?: unknown; stream?: unknown; time?: unknown };
    if (typeof entry.log !== 'string' || (entry.stream !== 'stdout' && entry.stream !== 'stderr') || typeof entry.time !== 'string') return null;
    if (Number.isNaN(Date.parse(entry.time))) return null;
    return { time: entry.time, stream: entry.stream, partial: !entry.log.endsWith('\n'), content: Buffer.from(entry.log) };
  } catch {
    return null;
  }
}

/** The parser for a file, chosen by its first line (CRI unless that line is Docker JSON). */
export function parserFor(firstLine: Buffer): (line: Buffer) => LogLine | null {
  return parseCriLine(firstLine) === null && parseJsonLine(firstLine) !== null ? parseJsonLine : parseCriLine;
}

/** `2006-01-02T15:04:05.000000000Z`: the kubelet's timestamp prefix, nine fraction digits always. */
export function fixedTimestamp(time: string): string {
  const match = /^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(?:\.(\d+))?(Z|[+-]\d\d:\d\d)$/.exec(time);
  if (!match) return new Date(Date.parse(time)).toISOString().replace(/\.(\d{3})Z$/, '.$1000000Z');
  if (match[3] !== 'Z') return fixedTimestamp(new Date(Date.parse(time)).toISOString());
  return `${match[1]}.${(match[2] ?? '').padEnd(9, '0').slice(0, 9)}Z`;
}

export interface LogOptions {
  /** The last N lines of the file (P chunks count as lines); absent: all. */
  tailLines?: number;
  /** Lines older than this (ms since the epoch) are left out. */
  sinceMs?: number;
  timestamps?: boolean;
  /** At most this many bytes in all; absent: unlimited. */
  limitBytes?: number;
  follow?: boolean;
}

/**
 * What a reader writes for the lines of a file: each line kept by `since`, with the timestamp at
 * the start of a logical line when asked (not on a continuation of a P chunk), cut to the byte
 * budget. Stateful across calls (following a file): `budget` is what is left, `midLine` whether
 * the last written chunk was partial.
 */
export class LogFilter {
  private midLine: Record<LogStream, boolean> = { stdout: false, stderr: false };
  private budget: number;

  constructor(private readonly options: LogOptions) {
    this.budget = options.limitBytes ?? Infinity;
  }

  get exhausted(): boolean {
    return this.budget <= 0;
  }

  /** The bytes to write for `line`, or null (left out). */
  render(line: LogLine): Buffer | null {
    if (this.exhausted) return null;
    if (this.options.sinceMs !== undefined && Date.parse(line.time) < this.options.sinceMs) return null;
    const prefix = this.options.timestamps && !this.midLine[line.stream] ? Buffer.from(`${fixedTimestamp(line.time)} `) : null;
    this.midLine[line.stream] = line.partial;
    let out = prefix ? Buffer.concat([prefix, line.content]) : line.content;
    if (this.budget === Infinity) return out;
    if (out.length > this.budget) out = out.subarray(0, this.budget);
    this.budget -= out.length;
    return out;
  }
}

/** The byte offset where the last `n` lines of `text` start (a trailing newline ends the last line). */
export function tailOffset(text: Buffer, n: number): number {
  if (n <= 0) return text.length;
  let end = text.length;
  if (end > 0 && text[end - 1] === 0x0a) end--;
  let seen = 0;
  for (let i = end - 1; i >= 0; i--) {
    if (text[i] === 0x0a && ++seen === n) return i + 1;
  }
  return 0;
}
