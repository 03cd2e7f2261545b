/**
 * Serving `port-forward` on an upgraded connection (kubelet/pkg/cri/streaming/portforward
 * httpstream.go): the client opens, for every connection it forwards, an error stream and a data
 * stream carrying the same `requestID` and the pod's `port`; once both are there the runtime
 * connects to that port inside the pod and the data stream is spliced to it. A failure is written
 * on the error stream as JSON `{closeConnection, message}`; the session lives until the client
 * closes it.
 */
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import type { SpdySession, SpdyStream } from './spdy.ts';
import { STREAM_CREATION_TIMEOUT_MS } from './remoteCommand.ts';
import { finish, handshake, upgradeToSpdy } from './upgrade.ts';

const PORT_FORWARD_PROTOCOL = 'portforward.k8s.io';

/** Connects to `port` in the pod; the connection is closed when `signal` aborts. */
export type Dial = (port: number, signal: AbortSignal) => Promise<Duplex>;

interface StreamPair {
  data?: SpdyStream;
  error?: SpdyStream;
  timer: NodeJS.Timeout;
}

export function servePortForward(req: IncomingMessage, socket: Duplex, head: Buffer, podSandboxId: string, dial: Dial): void {
  const protocol = handshake(req, socket, [PORT_FORWARD_PROTOCOL]);
  if (protocol === null) return;
  const pairs = new Map<string, StreamPair>();
  const aborted = new AbortController();
  const session: SpdySession | null = upgradeToSpdy(req, socket, head, protocol, (stream) => {
    const port = Number(stream.headers.port);
    const type = stream.headers.streamtype;
    if (!Number.isInteger(port) || port < 1 || port > 65535 || (type !== 'data' && type !== 'error')) return void stream.destroy();
    const id = requestId(stream, type);
    let pair = pairs.get(id);
    if (!pair) {
      const created: StreamPair = {
        timer: setTimeout(() => {
          pairs.delete(id);
          created.error?.end(`(request=${id}) timed out waiting for streams`);
          created.data?.destroy();
        }, STREAM_CREATION_TIMEOUT_MS),
      };
      pairs.set(id, created);
      pair = created;
    }
    if (pair[type]) return void stream.end();
    pair[type] = stream;
    if (pair.data && pair.error) {
      clearTimeout(pair.timer);
      pairs.delete(id);
      void forward(pair.data, pair.error, port);
    }
  });
  if (!session) return;
  void session.closed.then(() => {
    aborted.abort();
    for (const pair of pairs.values()) clearTimeout(pair.timer);
    pairs.clear();
  });

  async function forward(data: SpdyStream, error: SpdyStream, port: number): Promise<void> {
    let target: Duplex;
    try {
      target = await dial(port, aborted.signal);
    } catch (err) {
      const message = `error forwarding port ${port} to pod ${podSandboxId}, uid : ${err instanceof Error ? err.message : String(err)}`;
      error.write(`${JSON.stringify({ closeConnection: true, message })}\n`);
      await Promise.all([finish(data), finish(error)]);
      return;
    }
    data.pipe(target);
    target.pipe(data);
    // The data stream closing (FIN or reset) ends the pod-side connection too.
    data.once('close', () => target.destroy());
    target.once('close', () => void finish(error));
  }
}

/** The pair a stream belongs to; clients that send no requestID number pairs by stream id (upstream's fallback). */
function requestId(stream: SpdyStream, type: 'data' | 'error'): string {
  return stream.headers.requestid ?? String(type === 'error' ? stream.id : stream.id - 2);
}
