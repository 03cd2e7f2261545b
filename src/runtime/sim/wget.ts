/**
 * `wget` for simulated containers, as busybox's: an HTTP client that really connects, so a pod
 * reaches another pod's server by its address (on this node or another simulated node of the
 * host), and an exec probe can ask its own container's server (`wget -q -O- localhost:8080/`).
 *
 * `wget [-q] [-S] [--spider] [-O FILE] [-T SEC] URL`, with busybox's messages and statuses: 0 when
 * the server answered 2xx, 1 otherwise. `localhost` and 127.0.0.1 are the container's own address
 * (a pod's loopback is its own, and its servers listen on its address); other hosts are IP
 * addresses: the sim has no DNS, so a name is `bad address`. Redirects are followed, as busybox
 * follows them. Not modelled: https, FTP, `-c`, `-P`, `--post-data`, `--header`, the progress bar.
 */
import { request } from 'node:http';
import net from 'node:net';
import { SimFs } from './fs.ts';
import { type AppletContext, type AppletResult, parseOptions } from './net.ts';

/** busybox's default network timeout (-T), in seconds. */
const DEFAULT_TIMEOUT_S = 900;
/** How many redirects busybox follows before giving up. */
const MAX_REDIRECTS = 20;

const LONG_OPTIONS: Readonly<Record<string, string>> = { quiet: 'q', 'server-response': 'S', spider: 'spider', 'output-document': 'O', timeout: 'T' };

interface WgetRequest {
  url: string;
  quiet: boolean;
  headers: boolean;
  spider: boolean;
  /** `-` for stdout, else a path; null: named after the URL. */
  output: string | null;
  timeoutMs: number;
}

/** The long options as their short letters (`--spider` stays a flag of its own), then getopt. */
function parseArgs(args: string[]): WgetRequest | { error: string } {
  const short: string[] = [];
  let spider = false;
  for (const arg of args) {
    if (!arg.startsWith('--') || arg === '--') {
      short.push(arg);
      continue;
    }
    const [name = '', value] = arg.slice(2).split(/=(.*)/s);
    const letter = LONG_OPTIONS[name];
    if (letter === undefined) return { error: `unrecognized option '${arg}'` };
    if (letter === 'spider') spider = true;
    else short.push(value === undefined ? `-${letter}` : `-${letter}${value}`);
  }
  const parsed = parseOptions(short, 'qScY', 'OTPUo');
  if ('error' in parsed) return parsed;
  const { flags, values, operands } = parsed;
  for (const unsupported of ['c', 'Y', 'P', 'U', 'o']) {
    if (flags.has(unsupported) || values.has(unsupported)) return { error: `-${unsupported} is not supported by the sim` };
  }
  if (operands.length !== 1) return { error: operands.length === 0 ? 'missing URL' : 'the sim fetches one URL per wget' };
  const timeoutText = values.get('T');
  const timeoutS = timeoutText === undefined ? DEFAULT_TIMEOUT_S : Number(timeoutText);
  if (!Number.isFinite(timeoutS) || timeoutS < 0) return { error: `invalid number '${timeoutText}'` };
  return { url: operands[0]!, quiet: flags.has('q'), headers: flags.has('S'), spider, output: values.get('O') ?? null, timeoutMs: timeoutS * 1000 };
}

interface Target {
  host: string;
  port: number;
  path: string;
}

function parseUrl(url: string, ownAddress: string): Target | { error: string } {
  const withScheme = url.includes('://') ? url : `http://${url}`;
  if (!withScheme.startsWith('http://')) return { error: `not an http or ftp url: ${url}` };
  let parsed: URL;
  try {
    parsed = new URL(withScheme);
  } catch {
    return { error: `bad address '${url}'` };
  }
  const name = parsed.hostname.replace(/^\[(.*)\]$/, '$1');
  const host = name === 'localhost' || name === '127.0.0.1' ? ownAddress : name;
  if (net.isIP(host) === 0) return { error: `bad address '${parsed.hostname}'` };
  return { host, port: parsed.port === '' ? 80 : Number(parsed.port), path: `${parsed.pathname}${parsed.search}` };
}

/** busybox names the file after the URL's last path segment, `index.html` for a directory. */
function defaultFileName(path: string): string {
  const last = path.split('?')[0]!.split('/').pop() ?? '';
  return last === '' ? 'index.html' : decodeURIComponent(last);
}

export function wget(args: string[], ctx: AppletContext): AppletResult {
  const options = parseArgs(args);
  if ('error' in options) {
    ctx.err(`wget: ${options.error}\n${WGET_USAGE}`);
    return { status: 1 };
  }
  const first = parseUrl(options.url, ctx.network.host);
  if ('error' in first) {
    ctx.err(`wget: ${first.error}\n`);
    return { status: 1 };
  }
  const output = options.spider ? null : options.output ?? defaultFileName(first.path);
  const file = output === null || output === '-' ? null : SimFs.resolve(output, ctx.cwd);
  const say = (text: string) => {
    if (!options.quiet) ctx.err(text);
  };
  return {
    start: (done) => {
      let cancel = (): void => {};
      let finished = false;
      const finish = (status: number, message?: string) => {
        if (finished) return;
        finished = true;
        clearTimeout(timer);
        if (message !== undefined) ctx.err(`wget: ${message}\n`);
        done(status);
      };
      const timer = setTimeout(() => {
        cancel();
        finish(1, 'download timed out');
      }, options.timeoutMs);
      const fetch = (target: Target, redirects: number) => {
        say(`Connecting to ${target.host}:${target.port} (${target.host}:${target.port})\n`);
        const req = request({ host: target.host, port: target.port, path: target.path, method: options.spider ? 'HEAD' : 'GET', agent: false, headers: { 'User-Agent': 'Wget', Connection: 'close' } });
        cancel = () => req.destroy();
        req.on('error', (error: NodeJS.ErrnoException) => finish(1, connectError(error, target.host)));
        req.on('response', (res) => {
          const status = res.statusCode ?? 0;
          if (options.headers) ctx.err(`  HTTP/${res.httpVersion} ${status} ${res.statusMessage ?? ''}\n${headerLines(res.rawHeaders)}`);
          const location = res.headers.location;
          if (status >= 300 && status < 400 && location !== undefined) {
            res.resume();
            if (redirects >= MAX_REDIRECTS) return finish(1, 'too many redirections');
            const next = parseUrl(new URL(location, `http://${target.host}:${target.port}${target.path}`).href, ctx.network.host);
            if ('error' in next) return finish(1, next.error);
            return fetch(next, redirects + 1);
          }
          if (status < 200 || status >= 300) {
            res.resume();
            return finish(1, `server returned error: HTTP/${res.httpVersion} ${status} ${res.statusMessage ?? ''}`);
          }
          if (options.spider) {
            res.resume();
            say('remote file exists\n');
            return finish(0);
          }
          // busybox opens the file once the server answered, and one it names itself with O_EXCL: it never overwrites one.
          if (file !== null && options.output === null && ctx.fs.exists(file)) {
            res.resume();
            return finish(1, `can't open '${output}': File exists`);
          }
          say(file === null ? 'writing to stdout\n' : `saving to '${output}'\n`);
          const chunks: Buffer[] = [];
          res.on('data', (chunk: Buffer) => chunks.push(chunk));
          res.on('error', () => finish(1, 'error getting response: Connection reset by peer'));
          res.on('end', () =>
            ctx.network.cpu.measure(() => {
              const body = Buffer.concat(chunks).toString('utf8');
              if (file === null) ctx.out(body);
              else {
                try {
                  ctx.fs.write(file, body);
                } catch (err) {
                  return finish(1, `can't open '${output}': ${(err as Error).message}`);
                }
              }
              say(file === null ? 'written to stdout\n' : `'${output}' saved\n`);
              finish(0);
            }),
          );
        });
        req.end();
      };
      fetch(first, 0);
      return () => {
        finished = true;
        clearTimeout(timer);
        cancel();
      };
    },
  };
}

const WGET_USAGE = 'Usage: wget [-qS] [--spider] [-O FILE] [-T SEC] URL\n';

function connectError(error: NodeJS.ErrnoException, host: string): string {
  switch (error.code) {
    case 'ECONNREFUSED': return `can't connect to remote host (${host}): Connection refused`;
    case 'EHOSTUNREACH': return `can't connect to remote host (${host}): No route to host`;
    case 'ENETUNREACH': return `can't connect to remote host (${host}): Network is unreachable`;
    case 'ECONNRESET': return 'error getting response: Connection reset by peer';
    default: return `can't connect to remote host (${host}): ${error.message}`;
  }
}

function headerLines(raw: string[]): string {
  let text = '';
  for (let i = 0; i + 1 < raw.length; i += 2) text += `  ${raw[i]}: ${raw[i + 1]}\n`;
  return text;
}
