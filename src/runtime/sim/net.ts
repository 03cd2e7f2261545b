/**
 * Real sockets for simulated containers: the `httpd` and `nc -l` applets listen with Node on the
 * container's pod address (the sandbox's 127.b.c.d loopback address, or 127.0.0.1 for
 * host-network sandboxes), so kubelet-style httpGet and tcpSocket probes reach them.
 *
 * A `SimNetwork` is one container's view of the network: the address its servers bind and the
 * servers it currently has open. The engine gives every container one, shared by its main
 * process and its ExecSync processes, and closes everything left in it when the container exits
 * (daemonised servers outlive the shell command that started them, not the container).
 *
 * Cost: a listening server is one Node server object and one listening socket; it owns no timer
 * (the http server's connection-checking interval is pushed out to its maximum, and idle client
 * connections are bounded by a per-socket timeout that only exists while a client is connected).
 */

import { createServer as createHttpServer, type IncomingMessage, type Server as HttpServer, type ServerResponse } from 'node:http';
import { createServer as createTcpServer, type Server as TcpServer, type Socket } from 'node:net';
import { SimFs } from './fs.ts';
import { CpuMeter } from './usage.ts';

/** The address servers bind in host-network sandboxes (and in a bare `ShellProcess`). */
export const HOST_NETWORK_ADDRESS = '127.0.0.1';

/** Starts an asynchronous operation; `done(status)` ends it; the returned function cancels it. */
export type IoStart = (done: (status: number) => void) => () => void;

interface Listener {
  readonly port: number;
  close(): void;
}

interface PortWaiter {
  resolve(): void;
  reject(error: Error): void;
}

/** busybox httpd's connection timeout for reading a request (HEADER_READ_TIMEOUT). */
const IDLE_CONNECTION_MS = 60_000;
/** setInterval's maximum: the http server's connection sweep never runs (no timer per server). */
const NEVER_MS = 2 ** 31 - 1;

export class SimNetwork {
  private readonly listeners = new Set<Listener>();
  /** Listening sockets per port (more than one only transiently, e.g. a daemon and a clash). */
  private readonly ports = new Map<number, number>();
  private waiters: Map<number, PortWaiter[]> | null = null;
  private closedBecause: string | null = null;

  /**
   * @param host the address every server of this network binds
   * @param cpu charged with the time its servers take to answer (the container's CPU usage)
   */
  constructor(
    readonly host: string,
    readonly cpu: CpuMeter = new CpuMeter(),
  ) {}

  /** Whether a server of this network is listening on `port`. */
  isListening(port: number): boolean {
    return this.ports.has(port);
  }

  /** Resolves once a server listens on `port`; rejects when the network is closed first. */
  whenListening(port: number): Promise<void> {
    if (this.ports.has(port)) return Promise.resolve();
    if (this.closedBecause !== null) return Promise.reject(new Error(this.closedBecause));
    return new Promise((resolve, reject) => {
      this.waiters ??= new Map();
      const list = this.waiters.get(port) ?? [];
      list.push({ resolve, reject });
      this.waiters.set(port, list);
    });
  }

  /** Closes every server and rejects pending `whenListening` calls with `reason`. Idempotent. */
  closeAll(reason: string): void {
    if (this.closedBecause === null) this.closedBecause = reason;
    for (const listener of [...this.listeners]) listener.close();
    const waiters = this.waiters;
    this.waiters = null;
    for (const list of waiters?.values() ?? []) for (const waiter of list) waiter.reject(new Error(reason));
  }

  /** @internal a server is now listening */
  opened(listener: Listener): void {
    this.listeners.add(listener);
    this.ports.set(listener.port, (this.ports.get(listener.port) ?? 0) + 1);
    const list = this.waiters?.get(listener.port);
    if (!list) return;
    this.waiters?.delete(listener.port);
    for (const waiter of list) waiter.resolve();
  }

  /** @internal a server stopped listening */
  closed(listener: Listener): void {
    if (!this.listeners.delete(listener)) return;
    const count = (this.ports.get(listener.port) ?? 1) - 1;
    if (count > 0) this.ports.set(listener.port, count);
    else this.ports.delete(listener.port);
  }
}

/** What a networking applet needs from the shell that runs it. */
export interface AppletContext {
  network: SimNetwork;
  fs: SimFs;
  cwd: string;
  out(text: string): void;
  err(text: string): void;
}

/** An applet either finishes at once with a status, or runs asynchronously. */
export type AppletResult = { status: number } | { start: IoStart };

// ---------------------------------------------------------------------------------------- httpd

/**
 * `httpd [-f] [-v] [-p [IP:]PORT] [-h HOME] [-u USER[:GRP]] [-r REALM] [-c CONFFILE]`, as busybox.
 * Binds first (a bind error exits 1 before anything else). With `-f` it then serves in the
 * foreground until the process is signalled; without `-f` it "daemonises": the command returns 0
 * and the server keeps serving until the container exits.
 */
export function httpd(args: string[], ctx: AppletContext): AppletResult {
  const parsed = parseOptions(args, 'fvi', 'phcurdem');
  if ('error' in parsed) {
    ctx.err(`httpd: ${parsed.error}\n${HTTPD_USAGE}`);
    return { status: 1 };
  }
  const { flags, values, operands } = parsed;
  for (const unsupported of ['i', 'd', 'e', 'm']) {
    if (flags.has(unsupported) || values.has(unsupported)) {
      ctx.err(`httpd: -${unsupported} is not supported by the sim\n`);
      return { status: 1 };
    }
  }
  if (operands.length > 0) {
    ctx.err(`httpd: unexpected argument '${operands[0]}'\n${HTTPD_USAGE}`);
    return { status: 1 };
  }
  const home = SimFs.resolve(values.get('h') ?? ctx.cwd, ctx.cwd);
  if (!ctx.fs.isDir(home)) {
    ctx.err(`httpd: can't change directory to '${values.get('h') ?? ctx.cwd}': No such file or directory\n`);
    return { status: 1 };
  }
  const config = values.get('c');
  if (config !== undefined && !ctx.fs.isFile(SimFs.resolve(config, ctx.cwd))) {
    ctx.err(`httpd: ${config}: No such file or directory\n`);
    return { status: 1 };
  }
  const address = bindAddress(values.get('p') ?? '80', 80, ctx.network.host);
  if ('error' in address) {
    ctx.err(`httpd: ${address.error}\n`);
    return { status: 1 };
  }
  const foreground = flags.has('f');
  const { fs, network } = ctx;
  return {
    start: (done) => {
      const server = createHttpServer({ connectionsCheckingInterval: NEVER_MS }, (req, res) => network.cpu.measure(() => serveFile(req, res, fs, home)));
      server.setTimeout(IDLE_CONNECTION_MS);
      return listen(server, network, address.port, ctx, 'httpd', (started) => {
        if (!started) done(1);
        else if (!foreground) done(0);
      });
    },
  };
}

const HTTPD_USAGE = 'Usage: httpd [-ifv[v]] [-c CONFFILE] [-d/-e STRING] [-r REALM] [-h HOME] [-p [IP:]PORT] [-u USER[:GRP]]\n';

const MIME_TYPES: Record<string, string> = {
  '.txt': 'text/plain', '.h': 'text/plain', '.c': 'text/plain', '.cc': 'text/plain', '.cpp': 'text/plain',
  '.htm': 'text/html', '.html': 'text/html',
  '.jpg': 'image/jpeg', '.jpeg': 'image/jpeg', '.gif': 'image/gif', '.png': 'image/png', '.svg': 'image/svg+xml',
  '.css': 'text/css', '.js': 'application/javascript',
};

const STATUS_TEXT: Record<number, [string, string]> = {
  302: ['Found', ''],
  400: ['Bad Request', 'Unsupported method'],
  404: ['Not Found', 'The requested URL was not found'],
  501: ['Not Implemented', 'The requested method is not recognized'],
};

/** Answers one request from the simulated filesystem the way busybox httpd does for static files. */
function serveFile(req: IncomingMessage, res: ServerResponse, fs: SimFs, home: string): void {
  // busybox answers every request on its own connection and closes it.
  res.setHeader('Connection', 'close');
  const method = req.method ?? '';
  if (method !== 'GET' && method !== 'HEAD') return sendStatus(res, 501);
  const url = canonicalUrl(req.url ?? '');
  if (typeof url === 'number') return sendStatus(res, url);
  const path = SimFs.resolve(`.${url.path.endsWith('/') ? `${url.path}index.html` : url.path}`, home);
  if (!url.path.endsWith('/') && fs.isDir(path)) {
    res.setHeader('Location', `${url.path}/${url.query === null ? '' : `?${url.query}`}`);
    return sendStatus(res, 302);
  }
  const content = fs.read(path);
  if (content === undefined) return sendStatus(res, 404);
  const body = Buffer.from(content);
  const dot = path.lastIndexOf('.');
  const mime = dot > path.lastIndexOf('/') ? MIME_TYPES[path.slice(dot).toLowerCase()] : undefined;
  res.statusCode = 200;
  if (mime) res.setHeader('Content-Type', mime);
  res.setHeader('Content-Length', body.length);
  res.end(method === 'HEAD' ? undefined : body);
}

function sendStatus(res: ServerResponse, status: number): void {
  const [text, info] = STATUS_TEXT[status] ?? ['Error', ''];
  const body = info ? `<HTML><HEAD><TITLE>${status} ${text}</TITLE></HEAD>\n<BODY><H1>${status} ${text}</H1>\n${info}\n</BODY></HTML>\n` : '';
  res.statusCode = status;
  res.statusMessage = text;
  res.setHeader('Content-Type', 'text/html');
  res.setHeader('Content-Length', Buffer.byteLength(body));
  res.end(res.req.method === 'HEAD' ? undefined : body);
}

/**
 * The request path as busybox canonicalises it: percent-decoded (a malformed escape is 400),
 * `.`/`..`/repeated slashes folded, a trailing slash kept, `..` above the root refused with 400.
 */
function canonicalUrl(raw: string): { path: string; query: string | null } | number {
  const q = raw.indexOf('?');
  const encoded = q < 0 ? raw : raw.slice(0, q);
  if (!encoded.startsWith('/')) return 400;
  if (/%(?![0-9a-fA-F]{2})/.test(encoded)) return 400;
  const bytes = Buffer.from(encoded.replace(/%([0-9a-fA-F]{2})/g, (_, hex: string) => String.fromCharCode(parseInt(hex, 16))), 'latin1');
  const decoded = bytes.toString('utf8');
  if (decoded.includes('\0')) return 404;
  const parts: string[] = [];
  const segments = decoded.split('/');
  for (const segment of segments) {
    if (segment === '' || segment === '.') continue;
    if (segment === '..') {
      if (parts.length === 0) return 400;
      parts.pop();
    } else parts.push(segment);
  }
  const last = segments[segments.length - 1];
  const trailing = last === '' || last === '.' || last === '..';
  const path = `/${parts.join('/')}${trailing && parts.length > 0 ? '/' : ''}`;
  return { path, query: q < 0 ? null : raw.slice(q + 1) };
}

// ------------------------------------------------------------------------------------------ nc

/**
 * `nc -l -p PORT` (also `-lk`, `-lp PORT`, `-s ADDR`, `-n`, `-v`), as busybox's nc (nc 1.10
 * compatible build): accepts ONE connection, then stops listening; the container has no stdin,
 * so nc at once shuts its sending side; what the peer sends goes to stdout; exits 0 when the
 * peer closes. busybox makes `-k` persistent only together with `-e PROG`, so `-lk` without
 * `-e` also serves one connection. Connect mode (`nc HOST PORT`) and `-e` are not supported.
 */
export function nc(args: string[], ctx: AppletContext): AppletResult {
  const parsed = parseOptions(args, 'lknvuz', 'psweio');
  if ('error' in parsed) {
    ctx.err(`nc: ${parsed.error}\n${NC_USAGE}`);
    return { status: 1 };
  }
  const { flags, values, operands } = parsed;
  for (const unsupported of ['u', 'z', 'w', 'e', 'i', 'o']) {
    if (flags.has(unsupported) || values.has(unsupported)) {
      ctx.err(`nc: -${unsupported} is not supported by the sim\n`);
      return { status: 1 };
    }
  }
  if (!flags.has('l')) {
    ctx.err('nc: only listen mode (nc -l -p PORT) is supported by the sim\n');
    return { status: 1 };
  }
  const portSpec = values.get('p');
  if (portSpec === undefined || operands.length > 0) {
    // Without -p nc listens on a random port, and HOST/PORT operands filter the peer: not modelled.
    ctx.err(`nc: the sim supports "nc -l -p PORT" only\n${NC_USAGE}`);
    return { status: 1 };
  }
  const port = parsePort(portSpec);
  if (port === null) {
    ctx.err(`nc: bad port '${portSpec}'\n`);
    return { status: 1 };
  }
  const local = values.get('s');
  const address = bindAddress(local === undefined ? String(port) : `${local}:${port}`, port, ctx.network.host);
  if ('error' in address) {
    ctx.err(`nc: ${address.error}\n`);
    return { status: 1 };
  }
  const verbose = flags.has('v');
  const { network } = ctx;
  return {
    start: (done) => {
      let peer: Socket | null = null;
      const server = createTcpServer({ pauseOnConnect: false });
      let closeListener = (): void => {};
      server.on('connection', (socket) => {
        if (peer) {
          socket.destroy();
          return;
        }
        peer = socket;
        // One connection only: the listening socket goes away as busybox closes it after accept().
        closeListener();
        if (verbose) ctx.err(`connect to [${socket.localAddress}]:${socket.localPort} from [${socket.remoteAddress}]:${socket.remotePort}\n`);
        socket.setEncoding('utf8');
        socket.on('data', (text: string) => network.cpu.measure(() => ctx.out(text)));
        socket.on('error', () => {});
        socket.on('close', () => done(0));
        // No stdin in a container: nothing to send, so shut the sending side at once.
        socket.end();
      });
      closeListener = listen(server, network, address.port, ctx, 'nc', (started) => {
        if (!started) done(1);
        else if (verbose) ctx.err(`listening on [${network.host}]:${address.port} ...\n`);
      });
      return () => {
        closeListener();
        peer?.destroy();
      };
    },
  };
}

const NC_USAGE = 'Usage: nc [OPTIONS] -l -p PORT  - listen\n';

// -------------------------------------------------------------------------------------- helpers

/**
 * Listens on `network.host:port`; `started(false)` after printing busybox's bind error, or
 * `started(true)`. Returns the function that closes the server (and drops its connections).
 */
function listen(server: HttpServer | TcpServer, network: SimNetwork, port: number, ctx: AppletContext, name: string, started: (ok: boolean) => void): () => void {
  let state: 'binding' | 'listening' | 'closed' = 'binding';
  const listener: Listener = {
    port,
    close: () => {
      if (state === 'closed') return;
      state = 'closed';
      network.closed(listener);
      server.close();
      if ('closeAllConnections' in server) server.closeAllConnections();
    },
  };
  server.once('error', (error: NodeJS.ErrnoException) => {
    if (state !== 'binding') return;
    state = 'closed';
    ctx.err(`${name}: bind: ${errnoText(error)}\n`);
    started(false);
  });
  server.listen({ host: network.host, port, backlog: 9 }, () => {
    if (state !== 'binding') {
      server.close();
      return;
    }
    state = 'listening';
    // Errors after listening (none expected for a listening socket) must not crash the agent.
    server.on('error', () => {});
    network.opened(listener);
    started(true);
  });
  return listener.close;
}

function errnoText(error: NodeJS.ErrnoException): string {
  switch (error.code) {
    case 'EADDRINUSE': return 'Address already in use';
    case 'EACCES': return 'Permission denied';
    case 'EADDRNOTAVAIL': return 'Cannot assign requested address';
    default: return error.message;
  }
}

function parsePort(text: string): number | null {
  if (!/^[0-9]+$/.test(text)) return null;
  const port = Number(text);
  return port >= 1 && port <= 65535 ? port : null;
}

/**
 * `PORT`, `IP`, `IP:PORT` or `[IPv6]:PORT` → the port to bind on the network's own address. Only
 * the wildcard addresses and the container's own address can be bound: the pod-private
 * 127.0.0.1 of a pod-network container is not modelled (it would be reachable from outside).
 */
function bindAddress(spec: string, defaultPort: number, host: string): { port: number } | { error: string } {
  const bare = parsePort(spec);
  if (bare !== null) return { port: bare };
  let ip = spec;
  let port = defaultPort;
  const bracket = /^\[([^\]]*)\](?::(.*))?$/.exec(spec);
  const colon = spec.lastIndexOf(':');
  let portText: string | undefined;
  if (bracket) {
    ip = bracket[1] ?? '';
    portText = bracket[2];
  } else if (colon >= 0 && spec.indexOf(':') === colon) {
    ip = spec.slice(0, colon);
    portText = spec.slice(colon + 1);
  }
  if (portText !== undefined) {
    const parsed = parsePort(portText);
    if (parsed === null) return { error: `bad port spec '${spec}'` };
    port = parsed;
  }
  if (ip === '0.0.0.0' || ip === '::' || ip === host) return { port };
  if (ip === 'localhost' || ip.startsWith('127.') || ip === '::1') {
    return { error: `bind to ${ip}: a pod's own loopback is not modelled by the sim; bind 0.0.0.0 or the pod IP` };
  }
  if (!/^[0-9.]+$/.test(ip) && !ip.includes(':')) return { error: `bad address '${spec}'` };
  return { error: 'bind: Cannot assign requested address' };
}

/** getopt-style parsing: clustered flags (`-lk`), values attached or separate (`-p8080`, `-p 8080`), `--`. */
export function parseOptions(args: string[], flagChars: string, valueChars: string): { flags: Set<string>; values: Map<string, string>; operands: string[] } | { error: string } {
  const flags = new Set<string>();
  const values = new Map<string, string>();
  const operands: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const arg = args[i] ?? '';
    if (arg === '--') {
      operands.push(...args.slice(i + 1));
      break;
    }
    if (arg.length < 2 || !arg.startsWith('-')) {
      operands.push(arg);
      continue;
    }
    for (let j = 1; j < arg.length; j++) {
      const c = arg[j] ?? '';
      if (flagChars.includes(c)) {
        flags.add(c);
      } else if (valueChars.includes(c)) {
        const value = j + 1 < arg.length ? arg.slice(j + 1) : args[++i];
        if (value === undefined) return { error: `option requires an argument -- '${c}'` };
        values.set(c, value);
        break;
      } else {
        return { error: `invalid option -- '${c}'` };
      }
    }
  }
  return { flags, values, operands };
}
