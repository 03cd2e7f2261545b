/**
 * A runtime's streaming server (kubelet/pkg/cri/streaming server.go): CRI `Exec`, `Attach` and
 * `PortForward` do not stream over gRPC; they return the URL of a single-use request on this
 * HTTP server, and the node agent proxies the client's upgraded connection to it. Requests wait
 * in a cache for at most a minute, a thousand at most (request_cache.go CacheTTL, MaxInFlight),
 * each under a random token; the first connection to a token takes it.
 */
import { randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Duplex } from 'node:stream';
import type { AttachRequest, ExecRequest, PortForwardRequest } from '../types.ts';
import { type CommandIO, serveRemoteCommand } from './remoteCommand.ts';
import { type Dial, servePortForward } from './portForward.ts';
import { refuse } from './upgrade.ts';

/** What the runtime does once a client is connected. */
export interface StreamingRuntime {
  /** Runs `cmd` in the container; resolves on exit 0, rejects with ExitCodeError otherwise. */
  exec(containerId: string, cmd: readonly string[], io: CommandIO): Promise<void>;
  /** Streams the container's output until it exits or the client leaves. */
  attach(containerId: string, io: CommandIO): Promise<void>;
  /** Connects to `port` in the sandbox's network. */
  portForward(podSandboxId: string, port: number, signal: AbortSignal): Promise<Duplex>;
}

/** A request refused before any URL is handed out, with the gRPC code the CRI call fails with. */
export class StreamingRequestError extends Error {
  constructor(
    readonly code: 'INVALID_ARGUMENT' | 'RESOURCE_EXHAUSTED',
    message: string,
  ) {
    super(message);
  }
}

const CACHE_TTL_MS = 60_000;
const MAX_IN_FLIGHT = 1000;
const TOKEN_BYTES = 8;

type Pending =
  | { kind: 'exec'; request: ExecRequest; expires: number }
  | { kind: 'attach'; request: AttachRequest; expires: number }
  | { kind: 'portforward'; request: PortForwardRequest; expires: number };

export class StreamingServer {
  private readonly pending = new Map<string, Pending>();
  private readonly connections = new Set<Duplex>();

  private constructor(
    private readonly server: Server,
    private readonly runtime: StreamingRuntime,
    readonly baseUrl: string,
    private readonly now: () => number,
  ) {}

  /** Listens on `address` (loopback by default) at a free port. */
  static async start(runtime: StreamingRuntime, options: { address?: string; now?: () => number } = {}): Promise<StreamingServer> {
    const address = options.address ?? '127.0.0.1';
    const server = createServer((_req, res) => {
      res.writeHead(400, { 'Content-Type': 'text/plain; charset=utf-8' }).end('unable to upgrade: missing upgrade headers in request\n');
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(0, address, () => resolve());
    });
    const { port } = server.address() as AddressInfo;
    const host = address.includes(':') ? `[${address}]` : address;
    const streaming = new StreamingServer(server, runtime, `http://${host}:${port}`, options.now ?? Date.now);
    server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => streaming.serve(req, socket, head));
    return streaming;
  }

  /** Connections being served (exec, attach and port-forward sessions). */
  get sessions(): number {
    return this.connections.size;
  }

  getExec(request: ExecRequest): string {
    if (!request.containerId) throw new StreamingRequestError('INVALID_ARGUMENT', 'missing required container_id');
    if (request.cmd.length === 0) throw new StreamingRequestError('INVALID_ARGUMENT', 'missing required cmd');
    assertStreams(request);
    return this.url('exec', { kind: 'exec', request, expires: 0 });
  }

  getAttach(request: AttachRequest): string {
    if (!request.containerId) throw new StreamingRequestError('INVALID_ARGUMENT', 'missing required container_id');
    assertStreams(request);
    return this.url('attach', { kind: 'attach', request, expires: 0 });
  }

  getPortForward(request: PortForwardRequest): string {
    if (!request.podSandboxId) throw new StreamingRequestError('INVALID_ARGUMENT', 'missing required pod_sandbox_id');
    return this.url('portforward', { kind: 'portforward', request, expires: 0 });
  }

  async close(): Promise<void> {
    for (const socket of this.connections) socket.destroy();
    this.connections.clear();
    this.pending.clear();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private url(path: string, entry: Pending): string {
    const now = this.now();
    for (const [token, pending] of this.pending) if (pending.expires <= now) this.pending.delete(token);
    if (this.pending.size >= MAX_IN_FLIGHT) throw new StreamingRequestError('RESOURCE_EXHAUSTED', 'maximum number of in-flight requests exceeded');
    const token = randomBytes(TOKEN_BYTES).toString('base64url');
    this.pending.set(token, { ...entry, expires: now + CACHE_TTL_MS });
    return `${this.baseUrl}/${path}/${token}`;
  }

  private serve(req: IncomingMessage, socket: Duplex, head: Buffer): void {
    const match = /^\/(exec|attach|portforward)\/([A-Za-z0-9_-]+)$/.exec(new URL(req.url ?? '/', this.baseUrl).pathname);
    const pending = match ? this.pending.get(match[2]!) : undefined;
    if (!match || !pending || pending.kind !== match[1] || pending.expires <= this.now()) return refuse(socket, 404, '404 page not found');
    this.pending.delete(match[2]!);
    this.connections.add(socket);
    socket.once('close', () => this.connections.delete(socket));
    socket.on('error', () => socket.destroy());
    const runtime = this.runtime;
    switch (pending.kind) {
      case 'exec': {
        const { containerId, cmd } = pending.request;
        void serveRemoteCommand(req, socket, head, pending.request, (io) => runtime.exec(containerId, cmd, io));
        return;
      }
      case 'attach': {
        const { containerId } = pending.request;
        void serveRemoteCommand(req, socket, head, pending.request, (io) => runtime.attach(containerId, io));
        return;
      }
      case 'portforward': {
        const { podSandboxId } = pending.request;
        const dial: Dial = (port, signal) => runtime.portForward(podSandboxId, port, signal);
        servePortForward(req, socket, head, podSandboxId, dial);
        return;
      }
    }
  }
}

/** streaming server.go GetExec/GetAttach: at least one stream, and no stderr with a TTY. */
function assertStreams(request: { stdin: boolean; stdout: boolean; stderr: boolean; tty: boolean }): void {
  if (!request.stdin && !request.stdout && !request.stderr) throw new StreamingRequestError('INVALID_ARGUMENT', 'one of stdin, stdout, or stderr must be set');
  if (request.tty && request.stderr) throw new StreamingRequestError('INVALID_ARGUMENT', 'tty and stderr cannot both be true');
}
