/**
 * Serving `exec` and `attach` on an upgraded connection (kubelet/pkg/cri/streaming/remotecommand
 * httpstream.go createHTTPStreamStreams, exec.go ServeExec, attach.go ServeAttach): the client
 * opens one stream per channel it asked for (`streamType` error, stdin, stdout, stderr, and resize
 * with a TTY); once they are all there the command runs with them, and its outcome is written on
 * the error stream — a JSON Status from v4 on (`NonZeroExitCode` with the code as an `ExitCode`
 * cause), the error's text before — after which the connection closes.
 */
import type { IncomingMessage } from 'node:http';
import type { Duplex, Readable, Writable } from 'node:stream';
import type { SpdyStream } from './spdy.ts';
import { finish, handshake, upgradeToSpdy } from './upgrade.ts';

/** The remotecommand versions spoken over SPDY, preferred first (v5 is v4 on SPDY). */
const REMOTE_COMMAND_PROTOCOLS = ['v5.channel.k8s.io', 'v4.channel.k8s.io', 'v3.channel.k8s.io', 'v2.channel.k8s.io'] as const;
const JSON_STATUS = new Set<string>(['v5.channel.k8s.io', 'v4.channel.k8s.io']);

/** How long the client has to open its streams (remotecommand DefaultStreamCreationTimeout). */
export const STREAM_CREATION_TIMEOUT_MS = 30_000;

interface StreamChoice {
  stdin: boolean;
  stdout: boolean;
  stderr: boolean;
  tty: boolean;
}

/** What a command runs with; `signal` aborts when the client goes away. */
export interface CommandIO {
  stdin: Readable | null;
  stdout: Writable | null;
  /** Null with a TTY: the terminal carries both. */
  stderr: Writable | null;
  tty: boolean;
  signal: AbortSignal;
}

/** A command that exited with a code other than 0 (utilexec.ExitError). */
export class ExitCodeError extends Error {
  constructor(
    readonly exitCode: number,
    message: string,
  ) {
    super(message);
  }
}

/**
 * Runs `run` with the client's streams. `run` resolves when the command is over, or rejects
 * with ExitCodeError for a non-zero exit, or any other error for a failure to run it.
 */
export async function serveRemoteCommand(
  req: IncomingMessage,
  socket: Duplex,
  head: Buffer,
  choice: StreamChoice,
  run: (io: CommandIO) => Promise<void>,
): Promise<void> {
  const protocol = handshake(req, socket, REMOTE_COMMAND_PROTOCOLS);
  if (protocol === null) return;
  const expected = 1 + Number(choice.stdin) + Number(choice.stdout) + Number(choice.stderr && !choice.tty) + Number(choice.tty && protocol !== 'v2.channel.k8s.io');
  const streams = new Map<string, SpdyStream>();
  let ready!: () => void;
  const allThere = new Promise<void>((resolve) => (ready = resolve));
  const session = upgradeToSpdy(req, socket, head, protocol, (stream) => {
    const type = stream.headers.streamtype ?? '';
    if (!['error', 'stdin', 'stdout', 'stderr', 'resize'].includes(type)) return void stream.destroy();
    streams.set(type, stream);
    if (streams.size === expected) ready();
  });
  if (!session) return;
  const timeout = setTimeout(() => session.close(), STREAM_CREATION_TIMEOUT_MS);
  const opened = await Promise.race([allThere.then(() => true), session.closed.then(() => false)]);
  clearTimeout(timeout);
  if (!opened) return;

  const aborted = new AbortController();
  void session.closed.then(() => aborted.abort());
  const stdout = streams.get('stdout') ?? null;
  const stderr = choice.tty ? null : (streams.get('stderr') ?? null);
  // Terminal sizes are read and dropped: nothing the runtimes run here has a terminal to resize.
  streams.get('resize')?.resume();
  const errorStream = streams.get('error')!;
  let status: string | null;
  try {
    await run({ stdin: streams.get('stdin') ?? null, stdout, stderr, tty: choice.tty, signal: aborted.signal });
    status = JSON_STATUS.has(protocol) ? JSON.stringify({ metadata: {}, status: 'Success' }) : null;
  } catch (error) {
    status = failureStatus(protocol, error);
  }
  if (status !== null && !errorStream.destroyed) errorStream.write(status);
  await Promise.all([finish(stdout), finish(stderr), finish(errorStream)]);
  session.close();
}

/** The error stream's message for a failed command (apierrors.StatusError, as JSON from v4 on). */
function failureStatus(protocol: string, error: unknown): string {
  if (error instanceof ExitCodeError) {
    const message = `command terminated with non-zero exit code: ${error.message}`;
    if (!JSON_STATUS.has(protocol)) return message;
    return JSON.stringify({
      metadata: {},
      status: 'Failure',
      message,
      reason: 'NonZeroExitCode',
      details: { causes: [{ reason: 'ExitCode', message: String(error.exitCode) }] },
    });
  }
  const cause = `error executing command in container: ${error instanceof Error ? error.message : String(error)}`;
  const message = `Internal error occurred: ${cause}`;
  if (!JSON_STATUS.has(protocol)) return message;
  return JSON.stringify({ metadata: {}, status: 'Failure', message, reason: 'InternalError', details: { causes: [{ message: cause }] }, code: 500 });
}
