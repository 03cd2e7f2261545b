/**
 * Structured logging: a static message plus fields, one line per record, as klog's structured
 * form (`I1122 03:24:12.345678 message key="value"`) or as JSON. Every pod line carries
 * `pod="<namespace>/<name>"`.
 */
export type LogLevel = 'info' | 'warn' | 'error' | 'debug';
export type LogFields = Record<string, unknown>;
export type Logger = (level: LogLevel, message: string, fields?: LogFields) => void;

const letter: Record<LogLevel, string> = { info: 'I', warn: 'W', error: 'E', debug: 'I' };

function textValue(value: unknown): string {
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  if (value instanceof Error) return JSON.stringify(value.message);
  return JSON.stringify(typeof value === 'string' ? value : value ?? null);
}

function klogStamp(date: Date): string {
  const pad = (n: number, w = 2) => String(n).padStart(w, '0');
  return `${pad(date.getUTCMonth() + 1)}${pad(date.getUTCDate())} ${pad(date.getUTCHours())}:${pad(date.getUTCMinutes())}:${pad(date.getUTCSeconds())}.${pad(date.getUTCMilliseconds(), 3)}`;
}

/**
 * Lines to `out`, the lines of one turn of the event loop in one write: stderr is written
 * synchronously, and a burst of pod starts logs several lines per pod, a system call each. What
 * is pending when the process exits is written then.
 */
export function batchedLines(out: (text: string) => void, onExit: (flush: () => void) => void = (flush) => process.once('exit', flush)): (line: string) => void {
  let pending: string[] = [];
  const flush = () => {
    if (pending.length === 0) return;
    const text = pending.join('\n') + '\n';
    pending = [];
    out(text);
  };
  onExit(flush);
  return (line) => {
    if (pending.push(line) === 1) setImmediate(flush);
  };
}

export function createLogger(options: {
  format: 'text' | 'json';
  verbosity: number;
  write?: (line: string) => void;
}): Logger {
  const write = options.write ?? batchedLines((text) => process.stderr.write(text));
  return (level, message, fields = {}) => {
    if (level === 'debug' && options.verbosity < 4) return;
    const now = new Date();
    if (options.format === 'json') {
      const record: LogFields = { ts: now.getTime() / 1000, level, msg: message };
      for (const [key, value] of Object.entries(fields)) record[key] = value instanceof Error ? value.message : value;
      write(JSON.stringify(record));
      return;
    }
    let line = `${letter[level]}${klogStamp(now)} ${JSON.stringify(message)}`;
    for (const [key, value] of Object.entries(fields)) line += ` ${key}=${textValue(value)}`;
    write(line);
  };
}

/** A logger that drops everything (tests). */
export const silentLogger: Logger = () => {};

/**
 * Tells which failures are news, so that each is logged once per cause (a disk full for minutes
 * must not print a line per retry): a subject's (a pod's, a log file's) failure is news when it
 * starts and when its cause changes, not while it repeats; `resolved` forgets the subject, so its
 * next failure is news again.
 */
export class RepeatedFailures {
  private readonly causes = new Map<string, string>();

  /** Whether `cause` is news for `subject`; remembers it. */
  isNews(subject: string, cause: string): boolean {
    if (this.causes.get(subject) === cause) return false;
    this.causes.set(subject, cause);
    return true;
  }

  /** The subject works again (or is gone). */
  resolved(subject: string): void {
    this.causes.delete(subject);
  }

  /** Forgets every subject `failing` says fails no more. */
  retain(failing: (subject: string) => boolean): void {
    for (const subject of this.causes.keys()) if (!failing(subject)) this.causes.delete(subject);
  }
}
