/**
 * The client side of exec, attach and port-forward over SPDY, as client-go's SPDY executor and
 * port forwarder speak it: for tests and benchmarks that call a streaming URL (the runtime's, or
 * the agent's `/exec/…` on its authenticated port) without kubectl.
 */
import { request as httpRequest } from 'node:http';
import { request as httpsRequest, type RequestOptions } from 'node:https';
import type { Duplex } from 'node:stream';
import { SpdySession, type SpdyStream } from '../../src/runtime/streaming/spdy.ts';

export interface Upgraded {
  session: SpdySession;
  protocol: string;
}

/** Upgrades a request to `url` to SPDY/3.1 offering `protocols`; rejects with the status and body otherwise. */
export function upgrade(url: string, protocols: readonly string[], options: RequestOptions = {}): Promise<Upgraded> {
  const target = new URL(url);
  const request = target.protocol === 'https:' ? httpsRequest : httpRequest;
  return new Promise((resolve, reject) => {
    const req = request(target, {
      ...options,
      method: 'POST',
      headers: { ...options.headers, Connection: 'Upgrade', Upgrade: 'SPDY/3.1', 'X-Stream-Protocol-Version': protocols.join(', ') },
    });
    req.once('upgrade', (res, socket: Duplex, head: Buffer) => {
      if (head.length > 0) socket.unshift(head);
      resolve({ session: new SpdySession(socket, { role: 'client' }), protocol: String(res.headers['x-stream-protocol-version'] ?? '') });
    });
    req.once('response', (res) => {
      let body = '';
      res.on('data', (chunk: Buffer) => (body += chunk.toString()));
      res.once('end', () => reject(Object.assign(new Error(`${res.statusCode}: ${body.trim()}`), { status: res.statusCode, body })));
    });
    req.once('error', reject);
    req.end();
  });
}

export interface CommandResult {
  stdout: string;
  stderr: string;
  /** The exit code the status reports (0 for Success). */
  exitCode: number;
  /** The error stream as sent. */
  status: string;
}

const readAll = (stream: SpdyStream | null): Promise<string> =>
  new Promise((resolve) => {
    if (!stream) return resolve('');
    let text = '';
    stream.on('data', (chunk: Buffer) => (text += chunk.toString()));
    stream.once('end', () => resolve(text));
    stream.once('close', () => resolve(text));
  });

/**
 * Runs an exec or attach session (v4 protocol) to its end, opening the error stream, stdout and,
 * unless `withStderr` is false, stderr: exactly the streams the request asked for.
 */
export async function runCommand(url: string, options: RequestOptions = {}, onStarted?: () => void, withStderr = true): Promise<CommandResult> {
  const { session } = await upgrade(url, ['v4.channel.k8s.io'], options);
  const error = await session.open({ streamtype: 'error' });
  const stdout = await session.open({ streamtype: 'stdout' });
  const stderr = withStderr ? await session.open({ streamtype: 'stderr' }) : null;
  error.end();
  stdout.end();
  stderr?.end();
  onStarted?.();
  const [out, err, status] = await Promise.all([readAll(stdout), readAll(stderr), readAll(error)]);
  await session.closed;
  const parsed = status ? (JSON.parse(status) as { status: string; details?: { causes?: { reason?: string; message?: string }[] } }) : { status: 'Success' };
  const exitCause = parsed.details?.causes?.find((cause) => cause.reason === 'ExitCode');
  return { stdout: out, stderr: err, exitCode: parsed.status === 'Success' ? 0 : Number(exitCause?.message ?? -1), status };
}

/** Opens one forwarded connection to `port` on a port-forward session: the data stream, and the error stream's text. */
export async function forwardOnce(session: SpdySession, port: number, requestId: string): Promise<{ data: SpdyStream; error: Promise<string> }> {
  const error = await session.open({ streamtype: 'error', port: String(port), requestid: requestId });
  error.end();
  const data = await session.open({ streamtype: 'data', port: String(port), requestid: requestId });
  return { data, error: readAll(error) };
}
