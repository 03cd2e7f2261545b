/**
 * The sim's "process": a small interpreter for the shell subset parsed by `shell-parse.ts`, run
 * against a `SimFs`, writing to a log sink, timed by an injectable `Clock`, stoppable by
 * signals, reporting an exit code.
 *
 * Execution model. The interpreter is written as generators that yield an `Effect` whenever the
 * script would block (sleep, wait, spawn a background job). A small driver resumes them from
 * clock timers. Everything runs synchronously between timer firings, so a fake clock drives
 * scripts deterministically, and an idle container costs one suspended generator plus at most
 * one timer (none for `sleep infinity`). The exception is real I/O: `httpd` and `nc -l`
 * (`net.ts`) block their thread on a socket and resume it from Node's event loop.
 */

import { idOutput } from './identity.ts';
import type { Clock, TimerHandle } from '../../clock.ts';
import { HostFsError, SimFs } from './fs.ts';
import { HOST_NETWORK_ADDRESS, SimNetwork, httpd, nc, type AppletContext, type AppletResult, type IoStart } from './net.ts';
import { ddOperands, ddReport } from './dd.ts';
import { wget } from './wget.ts';
import { CpuMeter } from './usage.ts';
import { parse, ShellSyntaxError, type Command, type Redirect, type Word } from './shell-parse.ts';

type ShellSignal = 'TERM' | 'KILL';

/** Exit statuses a signal produces: 128 + signal number. */
export const EXIT_TERM = 143;
export const EXIT_KILL = 137;

export interface ShellOutput {
  stdout(text: string): void;
  stderr(text: string): void;
}

interface ShellProcessOptions {
  /** The container's argv: CRI `command ++ args`. */
  argv: string[];
  clock: Clock;
  fs: SimFs;
  output: ShellOutput;
  /** Called once with the exit status, from whatever stack ended the process. */
  onExit(exitCode: number): void;
  /**
   * True for a container's main process. PID 1 in a PID namespace gets no default signal
   * dispositions, so an untrapped SIGTERM is ignored (the stop timeout then ends in SIGKILL);
   * otherwise (exec'd commands) SIGTERM kills with 143.
   */
  pid1: boolean;
  env?: Record<string, string>;
  /** Working directory for relative paths; `/` by default. */
  cwd?: string;
  /**
   * Where `httpd` and `nc -l` listen. The engine passes the container's network, shared with its
   * execs, and closes it when the container exits. Without one the process gets its own on
   * 127.0.0.1, closed when the process ends.
   */
  network?: SimNetwork;
  /** Charged with the time the interpreter runs: the container's CPU usage. */
  cpu?: CpuMeter;
  /**
   * Asks the container's memory for `bytes` of this process's own (a `dd` buffer). False: they do
   * not fit under its memory limit, and the container has been OOM-killed (the engine killed it).
   */
  allocate?(bytes: number): boolean;
}

const SHELLS = new Set(['sh', 'bash', 'ash', 'dash']);
/** Loop iterations allowed without blocking before a busy loop is made to yield 1 ms of clock. */
const BUSY_LOOP_ITERATIONS = 10_000;

/** Splits a container argv into what the sim runs, following how Kubernetes images use `sh -c`. */
type Program =
  /** No argv at all: behaves like the pause process (runs until stopped, exits 0 on TERM). */
  | { kind: 'pause' }
  | { kind: 'script'; source: string }
  /** A bare argv run as one command without a shell (`["sleep", "3600"]`). */
  | { kind: 'argv'; argv: string[] }
  | { kind: 'usage-error'; message: string };

export function programFor(argv: readonly string[]): Program {
  const [first, ...rest] = argv;
  if (first === undefined) return { kind: 'pause' };
  if (SHELLS.has(basename(first))) {
    if (rest[0] !== '-c') {
      // A shell without -c reads commands from stdin, which a container does not have: it exits 0.
      return rest.length === 0 ? { kind: 'script', source: '' } : { kind: 'usage-error', message: `${first}: only "-c SCRIPT" is supported by the sim` };
    }
    const script = rest[1];
    if (script === undefined) return { kind: 'usage-error', message: `${first}: -c requires an argument` };
    return { kind: 'script', source: script };
  }
  return { kind: 'argv', argv: [...argv] };
}

/** Parsed scripts are shared: a thousand pods running the same script parse it once. */
const parseCache = new Map<string, Command>();
const PARSE_CACHE_LIMIT = 1000;

function parseCached(source: string): Command {
  let command = parseCache.get(source);
  if (!command) {
    command = parse(source);
    if (parseCache.size >= PARSE_CACHE_LIMIT) parseCache.clear();
    parseCache.set(source, command);
  }
  return command;
}

type Effect =
  | { kind: 'sleep'; ms: number }
  /** Block until every background job has finished. */
  | { kind: 'wait' }
  | { kind: 'spawn'; command: Command }
  /** One loop iteration passed: lets the driver stop a loop that never blocks from hogging the process. */
  | { kind: 'tick' }
  /** Real I/O (a server): resumes with the status it reports, or is cancelled. */
  | { kind: 'io'; start: IoStart };

interface Resume {
  /** The blocking effect was cut short by a trapped signal. */
  interrupted: boolean;
  /** The status an `io` effect finished with. */
  status?: number;
}

type Run<T = number> = Generator<Effect, T, Resume>;

const CONTINUE: Resume = { interrupted: false };
/** One loop iteration passed (shared: every iteration of every loop yields it). */
const TICK: Effect = { kind: 'tick' };
const WAIT: Effect = { kind: 'wait' };
const INTERRUPTED: Resume = { interrupted: true };

class ExitRequest {
  /** `replaced`: the shell was replaced by `exec`, so no EXIT trap of its runs. */
  constructor(
    readonly status: number,
    readonly replaced = false,
  ) {}
}
class LoopControl {
  constructor(readonly kind: 'break' | 'continue', public levels: number) {}
}

/**
 * What a loop does with an exception from its body: `break`/`continue` for the innermost loop
 * ends it (true) or goes on to the next iteration (false); `break N`/`continue N` ends this loop
 * and travels on to the enclosing one (N is never more than the loops there are: `loopControl`);
 * anything else travels on.
 */
function loopEnds(error: unknown): boolean {
  if (!(error instanceof LoopControl)) throw error;
  if (error.levels > 1) {
    error.levels--;
    throw error;
  }
  return error.kind === 'break';
}

type Sink = { kind: 'stdout' } | { kind: 'stderr' } | { kind: 'file'; path: string } | { kind: 'null' };

interface Streams {
  out: Sink;
  err: Sink;
}

/** A command without redirections writes to the process's own stdout and stderr. */
const STANDARD_STREAMS: Readonly<Streams> = Object.freeze<Streams>({ out: { kind: 'stdout' }, err: { kind: 'stderr' } });

/** A simple command, expanded: the builtin it names (`/bin/sleep` is `sleep`), its arguments and where it writes. */
interface CommandCall {
  name: string;
  rawName: string;
  args: string[];
  io: Streams;
}

interface Thread {
  main: boolean;
  run: Run;
  timer: TimerHandle | null;
  /** What the thread is blocked on, or null while it is runnable. */
  blockedOn: 'sleep' | 'wait' | 'io' | null;
  /** Cancels the pending `io` effect. */
  cancelIo: (() => void) | null;
  ticks: number;
  /** How many loops enclose what the thread runs now: what `break N` and `continue N` may leave. */
  loops: number;
  /** Its sleep timer's callback, made with the thread: a thread sleeping in a loop sets a timer each iteration. */
  wake: () => void;
}

export class ShellProcess {
  private readonly clock: Clock;
  private readonly fs: SimFs;
  private readonly output: ShellOutput;
  private readonly onExitCallback: (code: number) => void;
  private readonly pid1: boolean;
  private readonly program: Program;
  private readonly vars = new Map<string, string>();
  /** Signal name → action source; '' means ignore. */
  private readonly traps = new Map<string, string>();
  private cwd: string;
  private lastStatus = 0;
  private inTrap = false;
  private termPending = false;
  private mainThread: Thread | null = null;
  /** The thread being stepped: threads take turns, one step at a time. */
  private current: Thread | null = null;
  private readonly background = new Set<Thread>();
  private readonly runQueue: [Thread, Resume][] = [];
  private pumping = false;
  private status: 'new' | 'running' | 'exited' = 'new';
  private exitCodeValue: number | null = null;
  private networkValue: SimNetwork | null;
  private readonly ownsNetwork: boolean;
  private readonly cpu: CpuMeter;
  private readonly allocate: (bytes: number) => boolean;

  constructor(options: ShellProcessOptions) {
    this.clock = options.clock;
    this.fs = options.fs;
    this.output = options.output;
    this.onExitCallback = options.onExit;
    this.pid1 = options.pid1;
    this.cwd = SimFs.resolve(options.cwd || '/');
    for (const [key, value] of Object.entries(options.env ?? {})) this.vars.set(key, value);
    this.program = programFor(options.argv);
    this.networkValue = options.network ?? null;
    this.ownsNetwork = options.network === undefined;
    this.cpu = options.cpu ?? new CpuMeter();
    this.allocate = options.allocate ?? (() => true);
  }

  get exited(): boolean {
    return this.status === 'exited';
  }

  /** The exit status once exited, else null. */
  get exitCode(): number | null {
    return this.exitCodeValue;
  }

  start(): void {
    if (this.status !== 'new') return;
    this.status = 'running';
    const thread = this.thread(true, this.runProgram());
    this.mainThread = thread;
    this.schedule(thread, CONTINUE);
  }

  /**
   * Delivers a signal. KILL always ends the process (137). TERM runs the script's TERM trap at
   * once, interrupting whatever the script is blocked on; without a trap it is ignored by PID 1
   * (and exits 0 for the pause program), and kills other processes with 143.
   */
  signal(signal: ShellSignal): void {
    if (this.status !== 'running') {
      if (this.status === 'new') this.finish(signal === 'KILL' ? EXIT_KILL : EXIT_TERM);
      return;
    }
    if (signal === 'KILL') return this.finish(EXIT_KILL);
    const trap = this.traps.get('TERM');
    if (trap === '') return;
    if (trap !== undefined) {
      if (this.inTrap) return;
      const main = this.mainThread;
      if (main && main.blockedOn) {
        this.unblock(main);
        this.schedule(main, INTERRUPTED);
      } else {
        // The main thread is mid-step (a signal sent from inside an output callback): deliver
        // the interruption when it next blocks.
        this.termPending = true;
      }
      return;
    }
    if (this.program.kind === 'pause') return this.finish(0);
    if (!this.pid1) this.finish(EXIT_TERM);
  }

  /** Cancels every timer without reporting an exit: for tearing the whole runtime down. */
  dispose(): void {
    if (this.status === 'exited') return;
    this.status = 'exited';
    this.cancelAll();
  }

  // ------------------------------------------------------------------ driver

  private thread(main: boolean, run: Run): Thread {
    const thread: Thread = {
      main,
      run,
      timer: null,
      blockedOn: null,
      cancelIo: null,
      ticks: 0,
      loops: 0,
      wake: () => {
        thread.timer = null;
        thread.blockedOn = null;
        this.schedule(thread, CONTINUE);
      },
    };
    return thread;
  }

  private schedule(thread: Thread, resume: Resume): void {
    this.runQueue.push([thread, resume]);
    this.pump();
  }

  private pump(): void {
    if (!this.pumping) this.cpu.measure(this.drain);
  }

  /** An arrow function made once: every wake-up of every thread pumps. */
  private readonly drain = (): void => {
    this.pumping = true;
    try {
      for (let next = this.runQueue.shift(); next; next = this.runQueue.shift()) {
        if (this.status !== 'running') break;
        this.step(next[0], next[1]);
      }
    } finally {
      this.pumping = false;
      if (this.status !== 'running') this.runQueue.length = 0;
    }
  };

  /** Runs `thread` until it blocks or ends. */
  private step(thread: Thread, initial: Resume): void {
    this.current = thread;
    let input = initial;
    for (;;) {
      if (this.status !== 'running') return;
      let result: IteratorResult<Effect, number>;
      try {
        result = thread.run.next(input);
      } catch (error) {
        if (error instanceof ExitRequest) return this.threadEnded(thread, error.status);
        // An interpreter bug must not escape into a timer callback and take the agent down with
        // it: the simulated process dies instead, visibly.
        this.output.stderr(`sh: internal error: ${error instanceof Error ? error.message : String(error)}\n`);
        return this.threadEnded(thread, 2);
      }
      if (result.done) return this.threadEnded(thread, result.value);
      const effect = result.value;
      input = CONTINUE;
      switch (effect.kind) {
        case 'tick':
          if (++thread.ticks < BUSY_LOOP_ITERATIONS) continue;
          thread.ticks = 0;
          this.blockOnTimer(thread, 1);
          return;
        case 'spawn': {
          const job = this.thread(false, this.runBackground(effect.command));
          this.background.add(job);
          this.runQueue.push([job, CONTINUE]);
          continue;
        }
        case 'sleep':
          thread.ticks = 0;
          if (thread.main && this.termPending) {
            this.termPending = false;
            input = INTERRUPTED;
            continue;
          }
          if (effect.ms === Infinity) thread.blockedOn = 'sleep';
          else this.blockOnTimer(thread, effect.ms);
          return;
        case 'wait':
          thread.ticks = 0;
          if (thread.main && this.termPending) {
            this.termPending = false;
            input = INTERRUPTED;
            continue;
          }
          if (this.background.size === 0) continue;
          thread.blockedOn = 'wait';
          return;
        case 'io':
          if (thread.main && this.termPending) {
            this.termPending = false;
            input = INTERRUPTED;
            continue;
          }
          this.blockOnIo(thread, effect.start);
          return;
      }
    }
  }

  private blockOnTimer(thread: Thread, ms: number): void {
    thread.blockedOn = 'sleep';
    thread.timer = this.clock.setTimeout(thread.wake, ms);
  }

  /** Blocks `thread` on real I/O until it reports a status (→ resumed) or is cancelled. */
  private blockOnIo(thread: Thread, start: IoStart): void {
    thread.blockedOn = 'io';
    let pending = true;
    let stop = (): void => {};
    const done = (status: number): void => {
      if (!pending) return;
      pending = false;
      thread.cancelIo = null;
      thread.blockedOn = null;
      // Only I/O that succeeded counts as blocking for the busy-loop guard: a loop around a
      // command that keeps failing at once (`while true; do httpd -f -p 80; done`) still yields.
      if (status === 0) thread.ticks = 0;
      this.schedule(thread, { interrupted: false, status });
    };
    thread.cancelIo = () => {
      if (!pending) return;
      pending = false;
      stop();
    };
    try {
      stop = start(done);
    } catch (error) {
      // As for interpreter bugs: the command fails visibly instead of taking the agent down.
      this.output.stderr(`sh: internal error: ${error instanceof Error ? error.message : String(error)}\n`);
      done(1);
    }
  }

  private unblock(thread: Thread): void {
    if (thread.timer) this.clock.clearTimeout(thread.timer);
    thread.timer = null;
    thread.blockedOn = null;
    const cancelIo = thread.cancelIo;
    thread.cancelIo = null;
    cancelIo?.();
  }

  private threadEnded(thread: Thread, status: number): void {
    if (thread.main) return this.finish(status);
    this.background.delete(thread);
    const main = this.mainThread;
    if (this.background.size === 0 && main && main.blockedOn === 'wait') {
      main.blockedOn = null;
      this.runQueue.push([main, CONTINUE]);
    }
  }

  private finish(exitCode: number): void {
    if (this.status === 'exited') return;
    this.status = 'exited';
    this.exitCodeValue = exitCode;
    this.cancelAll();
    this.onExitCallback(exitCode);
  }

  private cancelAll(): void {
    for (const thread of [this.mainThread, ...this.background]) if (thread) this.unblock(thread);
    this.background.clear();
    this.runQueue.length = 0;
    // A network of its own dies with the process (daemonised servers included); a container's
    // network is closed by the engine when the container exits.
    if (this.ownsNetwork) this.networkValue?.closeAll('the process exited');
  }

  private get network(): SimNetwork {
    this.networkValue ??= new SimNetwork(HOST_NETWORK_ADDRESS, this.cpu);
    return this.networkValue;
  }

  // ------------------------------------------------------------------ interpreter

  private *runProgram(): Run {
    let command: Command;
    switch (this.program.kind) {
      case 'pause':
        yield { kind: 'sleep', ms: Infinity };
        return 0;
      case 'usage-error':
        this.output.stderr(`${this.program.message}\n`);
        return 2;
      case 'argv':
        command = {
          kind: 'simple',
          assignments: [],
          words: this.program.argv.map((text) => ({ parts: [{ kind: 'literal', text, quoted: true }] })),
          redirects: [],
        };
        break;
      case 'script':
        try {
          command = parseCached(this.program.source);
        } catch (error) {
          if (!(error instanceof ShellSyntaxError)) throw error;
          this.output.stderr(`sh: ${error.message}\n`);
          return 2;
        }
        break;
    }
    let status: number;
    let replaced = false;
    try {
      status = yield* this.exec(command);
    } catch (error) {
      if (error instanceof ExitRequest) ({ status, replaced } = error);
      else throw error;
    }
    const exitTrap = replaced ? undefined : this.traps.get('EXIT');
    if (exitTrap) {
      this.traps.delete('EXIT');
      this.lastStatus = status;
      try {
        yield* this.runSource(exitTrap);
      } catch (error) {
        if (error instanceof ExitRequest) status = error.status;
        else throw error;
      }
    }
    return status;
  }

  private *runBackground(command: Command): Run {
    try {
      return yield* this.exec(command);
    } catch (error) {
      if (error instanceof ExitRequest) return error.status;
      throw error;
    }
  }

  private *runSource(source: string): Run {
    let command: Command;
    try {
      command = parseCached(source);
    } catch (error) {
      if (!(error instanceof ShellSyntaxError)) throw error;
      this.output.stderr(`sh: ${error.message}\n`);
      return 2;
    }
    return yield* this.exec(command);
  }

  /**
   * Runs a networking applet: an immediate status, or real I/O that blocks the thread until it
   * reports a status. A trapped TERM cancels it (closing its server) and returns 143.
   */
  private *applet(result: AppletResult): Run {
    if ('status' in result) return result.status;
    const resume = yield { kind: 'io', start: result.start };
    if (!resume.interrupted) return resume.status ?? 0;
    yield* this.runTrap();
    return EXIT_TERM;
  }

  /** After a trapped signal cut a blocking builtin short: runs the trap, and the builtin's status is 143. */
  private *trapped(): Run {
    yield* this.runTrap();
    return EXIT_TERM;
  }

  /** Runs the TERM trap after it interrupted a blocking command. */
  private *runTrap(): Run<void> {
    const action = this.traps.get('TERM');
    if (!action) return;
    this.inTrap = true;
    const saved = this.lastStatus;
    try {
      yield* this.runSource(action);
    } finally {
      this.inTrap = false;
    }
    this.lastStatus = saved;
  }

  /**
   * Starts a command: a simple command that cannot block (every builtin but the BLOCKING ones)
   * runs now and gives its status; any other gives the generator that runs it. The loops call it
   * directly: a thousand simulated `while true; do sleep 1; done` loops run a thousand iterations
   * a second, and each generator is an allocation that lives until its command ends.
   */
  private begin(command: Command): number | Run {
    if (command.kind !== 'simple') return this.execNode(command);
    const call = this.prepareSimple(command);
    if (typeof call === 'number') return call;
    return BLOCKING.has(call.name) ? this.runBlocking(call) : this.runBuiltin(call);
  }

  /** Runs a command (`begin`) to its end; its status becomes `$?`. */
  private *exec(command: Command): Run {
    const started = this.begin(command);
    this.lastStatus = typeof started === 'number' ? started : yield* started;
    return this.lastStatus;
  }

  private *execNode(command: Exclude<Command, { kind: 'simple' }>): Run {
    switch (command.kind) {
      case 'list': {
        let status = 0;
        for (const item of command.items) {
          const pause = literalSleep(item);
          if (pause) status = this.lastStatus = (yield pause).interrupted ? yield* this.trapped() : 0;
          else status = yield* this.exec(item);
        }
        return status;
      }
      case 'and': {
        const left = yield* this.exec(command.left);
        return left === 0 ? yield* this.exec(command.right) : left;
      }
      case 'or': {
        const left = yield* this.exec(command.left);
        return left !== 0 ? yield* this.exec(command.right) : left;
      }
      case 'not':
        return (yield* this.exec(command.body)) === 0 ? 1 : 0;
      case 'background':
        yield { kind: 'spawn', command: command.body };
        return 0;
      case 'if': {
        if ((yield* this.exec(command.condition)) === 0) return yield* this.exec(command.then);
        return command.otherwise ? yield* this.exec(command.otherwise) : 0;
      }
      case 'loop':
      case 'for': {
        const thread = this.enterLoop();
        const items = command.kind === 'for' ? this.expandWords(command.items) : [];
        let status = 0;
        try {
          for (let next = 0; command.kind === 'loop' || next < items.length; next++) {
            yield TICK;
            // The body is run here rather than through exec or a helper generator (see begin), and
            // a body that is a literal `sleep N` is slept by the loop itself (literalSleep): a
            // sleeping loop then holds nothing per iteration but its timer. A `break` or
            // `continue` in a while loop's condition is this loop's too.
            try {
              if (command.kind === 'for') {
                this.vars.set(command.name, items[next]!);
              } else {
                const condition = this.begin(command.condition);
                this.lastStatus = typeof condition === 'number' ? condition : yield* condition;
                if ((this.lastStatus === 0) === command.until) break;
              }
              const pause = literalSleep(command.body);
              if (pause) {
                status = this.lastStatus = (yield pause).interrupted ? yield* this.trapped() : 0;
              } else {
                const body = this.begin(command.body);
                status = this.lastStatus = typeof body === 'number' ? body : yield* body;
              }
            } catch (error) {
              status = 0;
              if (loopEnds(error)) break;
            }
          }
        } finally {
          thread.loops--;
        }
        return status;
      }
    }
  }

  /** The running thread, one loop deeper: a loop's entry (its exit takes the loop off again). */
  private enterLoop(): Thread {
    const thread = this.current!;
    thread.loops++;
    return thread;
  }

  // ------------------------------------------------------------------ expansion and I/O

  private expandWord(word: Word): { text: string; quoted: boolean } {
    let text = '';
    let quoted = false;
    for (const part of word.parts) {
      quoted ||= part.quoted;
      text += part.kind === 'literal' ? part.text : this.lookup(part.name);
    }
    return { text, quoted };
  }

  /** Expands words; an unquoted word that expands to nothing disappears, as in sh. */
  private expandWords(words: readonly Word[]): string[] {
    const result: string[] = [];
    for (const word of words) {
      const { text, quoted } = this.expandWord(word);
      if (text !== '' || quoted) result.push(text);
    }
    return result;
  }

  private lookup(name: string): string {
    switch (name) {
      case '?': return String(this.lastStatus);
      case '$': return '1';
      case '0': return 'sh';
      case '#': return '0';
      default: return this.vars.get(name) ?? '';
    }
  }

  private resolveStreams(redirects: readonly Redirect[]): Streams | string {
    if (redirects.length === 0) return STANDARD_STREAMS;
    const streams: Streams = { ...STANDARD_STREAMS };
    for (const redirect of redirects) {
      const target = this.expandWord(redirect.target).text;
      let sink: Sink;
      if (redirect.op === '>&') {
        if (target === '1') sink = streams.out;
        else if (target === '2') sink = streams.err;
        else return `${target}: bad file descriptor`;
      } else {
        const path = SimFs.resolve(target, this.cwd);
        if (this.fs.isDir(path)) return `can't create ${target}: Is a directory`;
        if (this.fs.isReadOnly(path)) return `can't create ${target}: Read-only file system`;
        const opened = orRefusal(() => (redirect.op === '>' ? this.fs.write(path, '') : this.fs.append(path, '')));
        if (opened instanceof HostFsError) return `can't create ${target}: ${opened.text}`;
        sink = path === '/dev/null' ? { kind: 'null' } : { kind: 'file', path };
      }
      if (redirect.fd === 1) streams.out = sink;
      else streams.err = sink;
    }
    return streams;
  }

  /** Writes to the process's own stdout and stderr, made once for every command that has no redirections. */
  private readonly writeStdout = (text: string): boolean => this.write(STANDARD_STREAMS.out, text);
  private readonly writeStderr = (text: string): void => void this.write(STANDARD_STREAMS.err, text);

  private outputWriter(io: Streams): (text: string) => boolean {
    return io === STANDARD_STREAMS ? this.writeStdout : (text) => this.write(io.out, text);
  }

  private errorWriter(io: Streams): (text: string) => void {
    return io === STANDARD_STREAMS ? this.writeStderr : (text) => void this.write(io.err, text);
  }

  /** Writes `text` to `sink`; false when the host refused it (said on the process's stderr, as sh says it). */
  private write(sink: Sink, text: string): boolean {
    if (text === '') return true;
    switch (sink.kind) {
      case 'stdout':
        this.output.stdout(text);
        return true;
      case 'stderr':
        this.output.stderr(text);
        return true;
      case 'file': {
        const written = orRefusal(() => this.fs.append(sink.path, text));
        if (!(written instanceof HostFsError)) return true;
        this.output.stderr(`sh: write error: ${written.text}\n`);
        return false;
      }
      case 'null':
        return true;
    }
  }

  // ------------------------------------------------------------------ commands

  /**
   * A simple command's words, assignments and redirects, applied: its call, or its status when
   * there is nothing to run. A command of literal words alone (`sleep 1`, `true`) is the same call
   * every time: made once, shared by every shell running the script (`staticCalls`).
   */
  private prepareSimple(command: Extract<Command, { kind: 'simple' }>): CommandCall | number {
    const known = staticCalls.get(command);
    if (known) return known;
    const { assignments, words, redirects } = command;
    const argv = this.expandWords(words);
    if (argv.length > 0 && assignments.length === 0 && redirects.length === 0 && words.every(isLiteral)) {
      const call = commandCall(argv, STANDARD_STREAMS);
      Object.freeze(call.args);
      staticCalls.set(command, Object.freeze(call));
      return call;
    }
    // Shell variables only: prefix assignments on a command are applied to the shell too, a
    // simplification (real sh scopes them to that command's environment).
    if (assignments.length > 0) {
      const values = assignments.map((a) => [a.name, this.expandWord(a.value).text] as const);
      for (const [name, value] of values) this.vars.set(name, value);
    }
    const streams = this.resolveStreams(redirects);
    if (typeof streams === 'string') {
      this.output.stderr(`sh: ${streams}\n`);
      return 1;
    }
    return argv.length === 0 ? 0 : commandCall(argv, streams);
  }

  /**
   * The builtins that block (or run other commands that may): each a generator. `sleep` has a
   * small one of its own: a generator holds every local of its function while it is suspended,
   * and a sleeping loop makes one each iteration.
   */
  private runBlocking(call: CommandCall): Run {
    return call.name === 'sleep' ? this.sleep(call) : this.runOtherBlocking(call);
  }

  private *sleep({ args, io }: CommandCall): Run {
    const ms = sleepMs(args, this.errorWriter(io));
    if (ms === null) return 1;
    if (ms === 0) return 0;
    return (yield { kind: 'sleep', ms }).interrupted ? yield* this.trapped() : 0;
  }

  private *runOtherBlocking(call: CommandCall): Run {
    const { name, args, io } = call;
    const err = this.errorWriter(io);
    switch (name) {
      case 'wait':
        return (yield WAIT).interrupted ? yield* this.trapped() : 0;
      case 'exec': {
        // The command replaces the shell: its status is the shell's, nothing after it runs.
        if (args.length === 0) return 0;
        const inner = commandCall(args, io);
        throw new ExitRequest(BLOCKING.has(inner.name) ? yield* this.runBlocking(inner) : this.runBuiltin(inner), true);
      }
      case 'sh':
        return yield* this.nestedShell(args, err);
      case 'httpd':
        return yield* this.applet(httpd(args, this.appletContext(this.outputWriter(io), err)));
      case 'nc':
        return yield* this.applet(nc(args, this.appletContext(this.outputWriter(io), err)));
      case 'wget':
        return yield* this.applet(wget(args, this.appletContext(this.outputWriter(io), err)));
      default:
        return this.runBuiltin(call);
    }
  }

  /** The builtins that never block. */
  private runBuiltin({ name, rawName, args, io }: CommandCall): number {
    const out = this.outputWriter(io);
    const err = this.errorWriter(io);
    switch (name) {
      case ':':
      case 'true':
        return 0;
      case 'false':
        return 1;
      case 'exit': {
        const code = args[0] === undefined ? this.lastStatus : parseExitCode(args[0]);
        if (code === null) {
          err(`sh: exit: Illegal number: ${args[0]}\n`);
          throw new ExitRequest(2);
        }
        throw new ExitRequest(code);
      }
      case 'echo':
        return out(echo(args)) ? 0 : 1;
      case 'trap':
        return this.trap(args, err);
      case 'test':
        return test(args, this.fs, this.cwd, err, 'test');
      case '[':
        if (args[args.length - 1] !== ']') {
          err('[: missing ]\n');
          return 2;
        }
        return test(args.slice(0, -1), this.fs, this.cwd, err, '[');
      case 'touch':
        return this.touch(args, err);
      case 'rm':
        return this.rm(args, err);
      case 'mkdir':
        return this.mkdir(args, err);
      case 'cat':
        return this.cat(args, out, err);
      case 'dd':
        return this.dd(args, err);
      case 'id':
        return this.id(args, out, err);
      case 'stat':
        return this.stat(args, out, err);
      case 'grep':
        return this.grep(args, out, err);
      case 'pwd':
        out(`${this.cwd}\n`);
        return 0;
      case 'cd': {
        const target = SimFs.resolve(args[0] ?? '/', this.cwd);
        if (!this.fs.isDir(target)) {
          err(`sh: cd: can't cd to ${args[0]}: No such file or directory\n`);
          return 2;
        }
        this.cwd = target;
        return 0;
      }
      case 'break':
      case 'continue':
        return this.loopControl(name, args[0], err);
      default:
        err(`sh: ${rawName}: not found\n`);
        return 127;
    }
  }

  /**
   * `break [N]` / `continue [N]` as busybox's ash (shell/ash.c breakcmd, dash's): N loops out,
   * at most as many as enclose it; outside a loop it does nothing (status 0); an N that is not a
   * positive number is an error that ends the shell with 2.
   */
  private loopControl(kind: 'break' | 'continue', count: string | undefined, err: (text: string) => void): number {
    const levels = count === undefined ? 1 : /^[0-9]+$/.test(count) ? Number(count) : 0;
    if (levels === 0) {
      err(`sh: ${kind}: Illegal number: ${count}\n`);
      throw new ExitRequest(2);
    }
    const loops = this.current!.loops;
    if (loops === 0) return 0;
    throw new LoopControl(kind, Math.min(levels, loops));
  }

  private appletContext(out: (text: string) => void, err: (text: string) => void): AppletContext {
    // Output that arrives from a socket after the process ended goes nowhere.
    const live = (write: (text: string) => void) => (text: string): void => {
      if (this.status === 'running') write(text);
    };
    return { network: this.network, fs: this.fs, cwd: this.cwd, out: live(out), err: live(err) };
  }

  /** `sh -c SCRIPT` inside a script: run inline; its `exit` ends only the nested shell. */
  private *nestedShell(args: string[], err: (text: string) => void): Run {
    if (args[0] !== '-c' || args[1] === undefined) {
      err('sh: only "sh -c SCRIPT" is supported by the sim\n');
      return 2;
    }
    // A new shell is a new process: the loops of this one are not its own to leave.
    const thread = this.current!;
    const loops = thread.loops;
    thread.loops = 0;
    try {
      return yield* this.runSource(args[1]);
    } catch (error) {
      if (error instanceof ExitRequest) return error.status;
      throw error;
    } finally {
      thread.loops = loops;
    }
  }

  private trap(args: string[], err: (text: string) => void): number {
    const [action, ...signals] = args;
    if (action === undefined) return 0;
    let status = 0;
    for (const spec of signals) {
      const signal = signalName(spec);
      if (signal === null) {
        err(`sh: trap: ${spec}: bad trap\n`);
        status = 1;
        continue;
      }
      if (action === '-') this.traps.delete(signal);
      else this.traps.set(signal, action);
    }
    return status;
  }

  // Each builtin that makes a closure has a method of its own: a closure in runBuiltin would cost
  // every builtin call, `true` in a loop's condition too, a context object.
  private touch(args: string[], err: (text: string) => void): number {
    let status = 0;
    for (const file of args) {
      const path = SimFs.resolve(file, this.cwd);
      const touched = this.fs.isReadOnly(path) ? new HostFsError('Read-only file system') : orRefusal(() => this.fs.touch(path));
      if (touched instanceof HostFsError) {
        err(`touch: ${file}: ${touched.text}\n`);
        status = 1;
      }
    }
    return status;
  }

  private rm(args: string[], err: (text: string) => void): number {
    const { flags, operands } = splitFlags(args);
    const force = flags.has('f');
    const recursive = flags.has('r') || flags.has('R');
    let status = 0;
    for (const operand of operands) {
      const result = orRefusal(() => this.fs.remove(SimFs.resolve(operand, this.cwd), recursive));
      if (result instanceof HostFsError) {
        err(`rm: can't remove '${operand}': ${result.text}\n`);
        status = 1;
      } else if (result === 'missing' && !force) {
        err(`rm: can't remove '${operand}': No such file or directory\n`);
        status = 1;
      } else if (result === 'is-directory') {
        err(`rm: '${operand}' is a directory\n`);
        status = 1;
      } else if (result === 'read-only') {
        err(`rm: can't remove '${operand}': Read-only file system\n`);
        status = 1;
      }
    }
    return status;
  }

  private mkdir(args: string[], err: (text: string) => void): number {
    const { flags, operands } = splitFlags(args);
    let status = 0;
    for (const operand of operands) {
      const result = orRefusal(() => this.fs.mkdir(SimFs.resolve(operand, this.cwd), flags.has('p')));
      if (result instanceof HostFsError) err(`mkdir: can't create directory '${operand}': ${result.text}\n`);
      if (result === 'exists') err(`mkdir: can't create directory '${operand}': File exists\n`);
      if (result === 'no-parent') err(`mkdir: can't create directory '${operand}': No such file or directory\n`);
      if (result === 'read-only') err(`mkdir: can't create directory '${operand}': Read-only file system\n`);
      if (result !== 'created') status = 1;
    }
    return status;
  }

  /** `id [-u|-g|-G]`: the process's user and groups, as the container's /proc/self/status gives them. */
  private id(args: string[], out: (text: string) => void, err: (text: string) => void): number {
    const flag = args[0] ?? '';
    if (args.length > 1 || !(flag === '' || flag === '-u' || flag === '-g' || flag === '-G')) {
      err('id: usage: id [-u|-g|-G]\n');
      return 1;
    }
    const status = this.fs.read('/proc/self/status') ?? '';
    const first = (key: string) => Number(new RegExp(`^${key}:\\s*(\\d+)`, 'm').exec(status)?.[1] ?? 0);
    const groups = (/^Groups:\s*(.*)$/m.exec(status)?.[1] ?? '').trim().split(/\s+/).filter(Boolean).map(Number);
    out(`${idOutput({ uid: first('Uid'), gid: first('Gid'), groups: groups.length ? groups : [first('Gid')] }, flag)}\n`);
    return 0;
  }

  /**
   * `stat -c FORMAT FILE…` with busybox's `%u` (owner), `%g` (group), `%a` (mode in octal, setgid
   * and the like included), `%n` (the name) and `%%`: one line per file. sim:// knows owners and
   * modes only under mounts (the host's files); elsewhere it says so.
   */
  private stat(args: string[], out: (text: string) => void, err: (text: string) => void): number {
    const format = args[0] === '-c' ? args[1] : /^--format=/.test(args[0] ?? '') ? args[0]!.slice('--format='.length) : undefined;
    const files = args.slice(args[0] === '-c' ? 2 : 1);
    if (format === undefined || files.length === 0 || /%[^ugan%]/.test(format.replace(/%%/g, ''))) {
      err('stat: sim:// supports stat -c FORMAT FILE... with %u %g %a %n %%\n');
      return 1;
    }
    let status = 0;
    for (const operand of files) {
      const owner = this.fs.owner(SimFs.resolve(operand, this.cwd));
      if (!owner) {
        err(owner === null ? `stat: can't stat '${operand}': No such file or directory\n` : `stat: sim:// knows owners only of mounted paths: '${operand}'\n`);
        status = 1;
        continue;
      }
      const fields: Record<string, string> = { u: String(owner.uid), g: String(owner.gid), a: owner.mode.toString(8), n: operand, '%': '%' };
      out(`${format.replace(/%([ugan%])/g, (_all, key: string) => fields[key]!)}\n`);
    }
    return status;
  }

  private cat(args: string[], out: (text: string) => void, err: (text: string) => void): number {
    let status = 0;
    for (const operand of args) {
      const path = SimFs.resolve(operand, this.cwd);
      const content = this.fs.read(path);
      if (content !== undefined) out(content);
      else {
        err(this.fs.isDir(path) ? `cat: read error: Is a directory\n` : `cat: can't open '${operand}': No such file or directory\n`);
        status = 1;
      }
    }
    return status;
  }

  /**
   * `dd if=SRC of=DEST bs=SIZE count=N` as busybox runs it (its operands and report: `dd.ts`), for
   * what tests fill memory and disk with: SRC is /dev/zero, a file, or none (the container's empty
   * stdin); DEST /dev/null or a file (truncated). Its block buffer is the process's own memory
   * while it copies: over the container's memory limit, the container is OOM-killed (137).
   */
  private dd(args: string[], err: (text: string) => void): number {
    const operands = ddOperands(args);
    if ('error' in operands) {
      err(operands.error);
      return 1;
    }
    const { source, dest, blockSize, count } = operands;
    let bytes = 0;
    if (source === '/dev/zero') bytes = blockSize * (count ?? 0);
    else if (source !== null) {
      const size = this.fs.size(SimFs.resolve(source, this.cwd));
      if (size === undefined) {
        err(`dd: can't open '${source}': No such file or directory\n`);
        return 1;
      }
      bytes = count === null ? size : Math.min(size, blockSize * count);
    }
    if (!this.allocate(blockSize)) return EXIT_KILL;
    if (dest !== '/dev/null') {
      const path = SimFs.resolve(dest, this.cwd);
      if (this.fs.isReadOnly(path)) {
        err(`dd: can't open '${dest}': Read-only file system\n`);
        return 1;
      }
      const written = orRefusal(() =>
        source === '/dev/zero' ? this.fs.writeZeros(path, bytes) : this.fs.write(path, source === null ? '' : (this.fs.read(SimFs.resolve(source, this.cwd)) ?? '').slice(0, bytes)),
      );
      if (written instanceof HostFsError) {
        err(`dd: error writing '${dest}': ${written.text}\n`);
        return 1;
      }
    }
    err(ddReport(bytes, operands));
    return 0;
  }

  /**
   * `grep [-q] [-F] PATTERN FILE…`: the lines of the files that match (a JavaScript regular
   * expression, or with -F a fixed string); 0 when one did, 1 when none, 2 on a missing file.
   */
  private grep(args: string[], out: (text: string) => void, err: (text: string) => void): number {
    const flags = new Set<string>();
    let i = 0;
    for (; i < args.length && /^-[qF]+$/.test(args[i]!); i++) for (const f of args[i]!.slice(1)) flags.add(f);
    const pattern = args[i];
    const files = args.slice(i + 1);
    if (pattern === undefined || files.length === 0) {
      err('grep: usage: grep [-q] [-F] PATTERN FILE...\n');
      return 2;
    }
    const matches = (line: string) => (flags.has('F') ? line.includes(pattern) : new RegExp(pattern).test(line));
    let found = false;
    let status = 0;
    for (const operand of files) {
      const content = this.fs.read(SimFs.resolve(operand, this.cwd));
      if (content === undefined) {
        err(`grep: ${operand}: No such file or directory\n`);
        status = 2;
        continue;
      }
      for (const line of content.split('\n')) {
        if (!matches(line)) continue;
        found = true;
        if (!flags.has('q')) out(`${files.length > 1 ? `${operand}:` : ''}${line}\n`);
      }
    }
    return found ? 0 : status || 1;
  }
}

/** Runs a filesystem call that may reach the host through a mount: its result, or the host's refusal (a full or read-only disk). */
function orRefusal<T>(io: () => T): T | HostFsError {
  try {
    return io();
  } catch (error) {
    if (error instanceof HostFsError) return error;
    throw error;
  }
}

/** The calls of simple commands made of literal words alone, by their parsed command (parses are shared: `parseCached`). */
const staticCalls = new WeakMap<Command, CommandCall>();

const isLiteral = (word: Word): boolean => word.parts.every((part) => part.kind === 'literal');

function commandCall(argv: string[], io: Streams): CommandCall {
  const [rawName = '', ...args] = argv;
  const name = rawName.includes('/') && APPLETS.has(basename(rawName)) ? basename(rawName) : rawName;
  return { name, rawName, args, io };
}

/**
 * The effect of a command that is `sleep` with literal, valid, finite operands and nothing else
 * (no assignment, no redirection), made once per parsed command: a loop or a list yields it
 * itself, as the `sleep` builtin would, without a generator of the builtin's; undefined for any
 * other command.
 */
function literalSleep(command: Command): Effect | undefined {
  let effect = literalSleeps.get(command);
  if (effect === undefined) {
    effect = null;
    if (command.kind === 'simple' && command.assignments.length === 0 && command.redirects.length === 0 && command.words.every(isLiteral)) {
      const [name, ...args] = command.words.map((word) => word.parts.map((part) => (part.kind === 'literal' ? part.text : '')).join(''));
      const ms = name !== undefined && basename(name) === 'sleep' && args.length > 0 ? sleepMs(args, () => {}) : null;
      if (ms !== null && ms > 0 && ms !== Infinity) effect = { kind: 'sleep', ms };
    }
    literalSleeps.set(command, effect);
  }
  return effect ?? undefined;
}

const literalSleeps = new WeakMap<Command, Effect | null>();

/** `sleep`'s operands in milliseconds (summed, as busybox does); null after saying what is wrong. */
function sleepMs(args: string[], err: (text: string) => void): number | null {
  if (args.length === 0) {
    err('sleep: missing operand\n');
    return null;
  }
  let ms = 0;
  for (const arg of args) {
    const duration = parseDuration(arg);
    if (duration === null) {
      err(`sleep: invalid number '${arg}'\n`);
      return null;
    }
    ms += duration;
  }
  return ms;
}

/**
 * The commands that are busybox applets, files of the image (`/bin/sleep`, `/usr/bin/wget`):
 * named by a path too. The shell's own builtins (`:`, `break`, `continue`, `cd`, `exec`, `exit`,
 * `trap`, `wait`) are no file, so a path to one is not found, as in busybox.
 */
const APPLETS = new Set(['true', 'false', 'echo', 'sleep', 'test', '[', 'touch', 'rm', 'mkdir', 'cat', 'dd', 'grep', 'id', 'stat', 'pwd', 'sh', 'httpd', 'nc', 'wget']);
/** The builtins that may block, run by `runBlocking`; the rest run by `runBuiltin`. */
const BLOCKING = new Set(['sleep', 'wait', 'exec', 'sh', 'httpd', 'nc', 'wget']);

function basename(path: string): string {
  return path.slice(path.lastIndexOf('/') + 1);
}

function parseExitCode(text: string): number | null {
  if (!/^-?[0-9]+$/.test(text)) return null;
  return ((Number(text) % 256) + 256) % 256;
}

const DURATION_UNITS: Readonly<Record<string, number>> = { '': 1, s: 1, m: 60, h: 3600, d: 86400 };

/** `sleep` operands as busybox reads them: seconds with optional fraction and s/m/h/d suffix. */
function parseDuration(text: string): number | null {
  if (text === 'infinity' || text === 'inf') return Infinity;
  // Whole seconds, the common case, without a match to allocate.
  if (/^[0-9]+$/.test(text)) return Number(text) * 1000;
  const match = /^([0-9]*\.?[0-9]+)([smhd]?)$/.exec(text);
  if (!match) return null;
  return Math.round(Number(match[1]) * (DURATION_UNITS[match[2] ?? ''] ?? 1) * 1000);
}

const SIGNALS: Record<string, string> = { '0': 'EXIT', '1': 'HUP', '2': 'INT', '3': 'QUIT', '15': 'TERM' };
const SIGNAL_NAMES = new Set(['EXIT', 'HUP', 'INT', 'QUIT', 'TERM', 'USR1', 'USR2']);

function signalName(spec: string): string | null {
  const upper = spec.toUpperCase();
  const name = SIGNALS[upper] ?? (upper.startsWith('SIG') ? upper.slice(3) : upper);
  return SIGNAL_NAMES.has(name) ? name : null;
}

function splitFlags(args: string[]): { flags: Set<string>; operands: string[] } {
  const flags = new Set<string>();
  const operands: string[] = [];
  let flagsDone = false;
  for (const arg of args) {
    if (!flagsDone && arg === '--') flagsDone = true;
    else if (!flagsDone && arg.length > 1 && arg.startsWith('-')) for (const flag of arg.slice(1)) flags.add(flag);
    else operands.push(arg);
  }
  return { flags, operands };
}

function echo(args: string[]): string {
  let newline = true;
  let escapes = false;
  let i = 0;
  for (; i < args.length; i++) {
    const arg = args[i] ?? '';
    if (!/^-[neE]+$/.test(arg)) break;
    for (const flag of arg.slice(1)) {
      if (flag === 'n') newline = false;
      if (flag === 'e') escapes = true;
      if (flag === 'E') escapes = false;
    }
  }
  let text = args.slice(i).join(' ');
  if (escapes) {
    const cut = text.indexOf('\\c');
    if (cut >= 0) { text = text.slice(0, cut); newline = false; }
    text = text.replace(/\\([ntr\\])/g, (_, c: string) => ({ n: '\n', t: '\t', r: '\r', '\\': '\\' })[c] ?? c);
  }
  return newline ? `${text}\n` : text;
}

const FILE_TESTS = new Set(['-e', '-f', '-d', '-s', '-r', '-w', '-x']);
const INTEGER_TESTS = new Set(['-eq', '-ne', '-lt', '-le', '-gt', '-ge']);

/** `test` / `[` with the unary file and string tests and the binary comparisons (no -a/-o). */
function test(args: string[], fs: SimFs, cwd: string, err: (text: string) => void, name: string): number {
  const truth = (value: boolean): number => (value ? 0 : 1);
  const [a, b, c] = args;
  if (a === '!' && args.length > 1) {
    const inner = test(args.slice(1), fs, cwd, err, name);
    return inner === 2 ? 2 : inner === 0 ? 1 : 0;
  }
  if (a === undefined) return 1;
  if (b === undefined) return truth(a !== '');
  if (c === undefined && args.length === 2) {
    if (a === '-n') return truth(b !== '');
    if (a === '-z') return truth(b === '');
    if (FILE_TESTS.has(a)) {
      const path = SimFs.resolve(b, cwd);
      switch (a) {
        case '-f': return truth(fs.isFile(path));
        case '-d': return truth(fs.isDir(path));
        case '-s': return truth((fs.read(path) ?? '') !== '');
        default: return truth(fs.exists(path));
      }
    }
    err(`sh: ${name}: ${a}: unary operator expected\n`);
    return 2;
  }
  if (c !== undefined && args.length === 3) {
    if (b === '=' || b === '==') return truth(a === c);
    if (b === '!=') return truth(a !== c);
    if (INTEGER_TESTS.has(b)) {
      if (!/^-?[0-9]+$/.test(a) || !/^-?[0-9]+$/.test(c)) {
        err(`sh: ${name}: bad number\n`);
        return 2;
      }
      const x = Number(a);
      const y = Number(c);
      switch (b) {
        case '-eq': return truth(x === y);
        case '-ne': return truth(x !== y);
        case '-lt': return truth(x < y);
        case '-le': return truth(x <= y);
        case '-gt': return truth(x > y);
        default: return truth(x >= y);
      }
    }
  }
  err(`sh: ${name}: syntax error\n`);
  return 2;
}
