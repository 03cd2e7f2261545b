/**
 * Exec, Attach and PortForward for `sim://`: the runtime's streaming server (../streaming) on
 * loopback, started at the first request, serving the engine's containers — an exec runs through
 * the shell interpreter with its output streamed, attach follows the main process's output, and
 * port-forward connects to the sandbox's real listening address (see README "Servers").
 */
import { connect } from 'node:net';
import type { Duplex } from 'node:stream';
import type { AttachRequest, ExecRequest, PortForwardRequest } from '../types.ts';
import { type CommandIO, ExitCodeError } from '../streaming/remoteCommand.ts';
import { StreamingServer, type StreamingRuntime } from '../streaming/server.ts';
import type { ShellOutput } from './shell.ts';

/** What the streaming server asks of the engine (engine.ts): its processes, its output, its sandboxes' addresses. */
export interface StreamedEngine {
  startExec(id: string, cmd: readonly string[], output: ShellOutput): { exited: Promise<number>; kill(): void };
  attachOutput(id: string, output: ShellOutput): { exited: Promise<void>; detach(): void };
  sandboxAddress(id: string): string;
  onClose(hook: () => Promise<void>): void;
}

const byEngine = new WeakMap<StreamedEngine, SimStreaming>();

export class SimStreaming implements StreamingRuntime {
  private server: Promise<StreamingServer> | null = null;

  private constructor(private readonly engine: StreamedEngine) {}

  /** The engine's streaming, shared by its gRPC server and its in-process runtime, closed with it. */
  static of(engine: StreamedEngine): SimStreaming {
    let streaming = byEngine.get(engine);
    if (!streaming) {
      const created = new SimStreaming(engine);
      engine.onClose(() => created.close());
      byEngine.set(engine, created);
      streaming = created;
    }
    return streaming;
  }

  async getExec(request: ExecRequest): Promise<string> {
    return (await this.started()).getExec(request);
  }

  async getAttach(request: AttachRequest): Promise<string> {
    return (await this.started()).getAttach(request);
  }

  async getPortForward(request: PortForwardRequest): Promise<string> {
    return (await this.started()).getPortForward(request);
  }

  /** Open streaming connections (0 before the first request). */
  async sessions(): Promise<number> {
    return this.server ? (await this.server).sessions : 0;
  }

  async close(): Promise<void> {
    const server = this.server;
    this.server = null;
    if (server) await (await server).close();
  }

  async exec(containerId: string, cmd: readonly string[], io: CommandIO): Promise<void> {
    const run = this.engine.startExec(containerId, cmd, outputTo(io));
    // Nothing simulated reads input: stdin is drained so the client can finish sending.
    io.stdin?.resume();
    const onAbort = () => run.kill();
    io.signal.addEventListener('abort', onAbort, { once: true });
    const exitCode = await run.exited;
    io.signal.removeEventListener('abort', onAbort);
    if (exitCode !== 0) throw new ExitCodeError(exitCode, `error executing command ${JSON.stringify(cmd)}, exit code ${exitCode}`);
  }

  async attach(containerId: string, io: CommandIO): Promise<void> {
    const attached = this.engine.attachOutput(containerId, outputTo(io));
    io.stdin?.resume();
    const left = new Promise<void>((resolve) => io.signal.addEventListener('abort', () => resolve(), { once: true }));
    await Promise.race([attached.exited, left]);
    attached.detach();
  }

  portForward(podSandboxId: string, port: number, signal: AbortSignal): Promise<Duplex> {
    const host = this.engine.sandboxAddress(podSandboxId);
    return new Promise((resolve, reject) => {
      const socket = connect({ host, port });
      const onAbort = () => socket.destroy();
      signal.addEventListener('abort', onAbort, { once: true });
      socket.once('close', () => signal.removeEventListener('abort', onAbort));
      socket.once('connect', () => resolve(socket));
      socket.on('error', (error) => reject(new Error(`failed to connect to localhost:${port} inside the network of sandbox ${podSandboxId}: ${error.message}`)));
    });
  }

  private started(): Promise<StreamingServer> {
    this.server ??= StreamingServer.start(this);
    return this.server;
  }
}

/** Output to the client's streams; with a TTY stderr shares the terminal (stdout). */
function outputTo(io: CommandIO): ShellOutput {
  const stderr = io.tty ? io.stdout : io.stderr;
  return {
    stdout: (text) => void io.stdout?.write(text),
    stderr: (text) => void stderr?.write(text),
  };
}
