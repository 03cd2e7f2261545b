/**
 * The HTTP side of a streaming request: the protocol handshake and the upgrade to SPDY, as the
 * runtime's streaming server performs them (k8s.io/streaming httpstream.go Handshake,
 * httpstream/spdy/upgrade.go UpgradeResponse), and plain HTTP errors on a raw socket.
 */
import type { IncomingMessage } from 'node:http';
import { STATUS_CODES } from 'node:http';
import type { Duplex } from 'node:stream';
import { SpdySession, type SpdyStream } from './spdy.ts';

const PROTOCOL_HEADER = 'x-stream-protocol-version';

/** Answers a request that was not upgraded, and closes the connection. */
export function refuse(socket: Duplex, status: number, message: string, headers: Record<string, string> = {}): void {
  const body = Buffer.from(`${message}\n`);
  const lines = [
    `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? ''}`,
    'Content-Type: text/plain; charset=utf-8',
    'X-Content-Type-Options: nosniff',
    `Content-Length: ${body.length}`,
    'Connection: close',
    ...Object.entries(headers).map(([name, value]) => `${name}: ${value}`),
  ];
  socket.end(Buffer.concat([Buffer.from(`${lines.join('\r\n')}\r\n\r\n`), body]));
}

/** The header's values, comma-separated or repeated, trimmed and without empties. */
function headerValues(req: IncomingMessage, name: string): string[] {
  const raw = req.headersDistinct[name] ?? [];
  return raw.flatMap((value) => value.split(',')).map((value) => value.trim()).filter(Boolean);
}

/**
 * Picks the first protocol the client offers that the server speaks; refuses the request (400
 * without the header, 403 with none in common) and returns null otherwise.
 */
export function handshake(req: IncomingMessage, socket: Duplex, serverProtocols: readonly string[]): string | null {
  if (req.headersDistinct[PROTOCOL_HEADER] === undefined) {
    refuse(socket, 400, `unable to upgrade: header X-Stream-Protocol-Version does not exist in request with ${Object.keys(req.headers).length} headers`);
    return null;
  }
  const offered = headerValues(req, PROTOCOL_HEADER);
  const chosen = offered.find((protocol) => serverProtocols.includes(protocol));
  if (chosen === undefined) {
    refuse(socket, 403, `unable to upgrade: unable to negotiate protocol: client supports [${offered.join(' ')}], server accepts [${serverProtocols.join(' ')}]`, {
      'X-Accepted-Stream-Protocol-Versions': serverProtocols.join(', '),
    });
    return null;
  }
  return chosen;
}

/** Switches the connection to SPDY/3.1 and returns the session; null (answered 400) if the request did not ask for it. */
export function upgradeToSpdy(req: IncomingMessage, socket: Duplex, head: Buffer, protocol: string, onStream: (stream: SpdyStream) => void): SpdySession | null {
  const connection = (req.headers.connection ?? '').toLowerCase();
  const upgrade = (req.headers.upgrade ?? '').toLowerCase();
  if (!connection.includes('upgrade') || !upgrade.includes('spdy/3.1')) {
    refuse(socket, 400, 'unable to upgrade: missing upgrade headers in request');
    return null;
  }
  socket.write(`HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: SPDY/3.1\r\nX-Stream-Protocol-Version: ${protocol}\r\n\r\n`);
  if (head.length > 0) socket.unshift(head);
  return new SpdySession(socket, { role: 'server', onStream });
}

/** Ends a stream and resolves once its FIN is written (or the stream is gone). */
export function finish(stream: SpdyStream | null): Promise<void> {
  if (!stream || stream.destroyed || stream.writableFinished) return Promise.resolve();
  return new Promise((resolve) => {
    stream.once('close', resolve);
    stream.end(resolve);
  });
}
