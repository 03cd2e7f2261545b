/**
 * gRPC over HTTP/2, as the CRI client (on a unix socket) and the gRPC probes (over TCP) need it: unary and server-streaming calls
 * laid out as the gRPC protocol over HTTP/2 lays them out (a POST per call, each message framed by
 * a compressed flag and a 4-byte length, the status in the trailers), on one HTTP/2 connection made
 * at the first call and again after it breaks. Nothing else: no name resolution, load balancing,
 * retries, interceptors, compression or channelz — grpc-js ran its layers for all of them on each
 * of the dozen calls of every pod start, about as much CPU again as Node's HTTP/2 itself
 * (docs/benchmarks.md). The simulated runtime still serves with grpc-js, so the two meet on the wire.
 */
import http2 from 'node:http2';
import net from 'node:net';
import type { CriErrorCode } from '../types.ts';

/** The gRPC status codes by number (0 is OK). */
const STATUS_NAMES: readonly (CriErrorCode | 'OK')[] = [
  'OK',
  'CANCELLED',
  'UNKNOWN',
  'INVALID_ARGUMENT',
  'DEADLINE_EXCEEDED',
  'NOT_FOUND',
  'ALREADY_EXISTS',
  'PERMISSION_DENIED',
  'RESOURCE_EXHAUSTED',
  'FAILED_PRECONDITION',
  'ABORTED',
  'OUT_OF_RANGE',
  'UNIMPLEMENTED',
  'INTERNAL',
  'UNAVAILABLE',
  'DATA_LOSS',
  'UNAUTHENTICATED',
];

/** A call that ended without success: its gRPC status (never OK) and the server's or our message. */
export class GrpcStatusError extends Error {
  constructor(
    readonly code: CriErrorCode,
    readonly details: string,
  ) {
    super(`${code}: ${details}`);
  }
}

/** What a call needs of its method: its path, and how its request is written and its answer read. */
export interface GrpcMethod<Response, Request = object> {
  path: string;
  serialize: (request: Request) => Buffer;
  deserialize: (bytes: Buffer) => Response;
}

/** Where the server listens: a unix socket (a runtime), or a TCP host and port (a pod's gRPC health service). */
export type GrpcTarget = { path: string } | { host: string; port: number };

export interface GrpcCallOptions {
  /** The call's deadline from now; sent to the server as `grpc-timeout` too. None: no deadline (a stream). */
  timeoutMs?: number;
  signal?: AbortSignal;
}

export interface GrpcChannelOptions {
  /** Largest message accepted; a larger one ends its call with RESOURCE_EXHAUSTED. */
  maxReceiveMessageBytes: number;
}

/** Both windows of a connection, so that a node's list of a thousand containers does not wait on window updates. */
const WINDOW_BYTES = 4 * 1024 * 1024;
/** Messages a stream holds for a slow reader before it stops reading from the connection. */
const STREAM_HIGH_WATER = 256;

/** How an open call reports: each message, then its end (null: status OK). */
interface CallSink {
  message(bytes: Buffer): void;
  end(error: GrpcStatusError | null): void;
}

interface OpenCall {
  cancel(error: GrpcStatusError): void;
  pause(): void;
  resume(): void;
}

export class GrpcChannel {
  private session: http2.ClientHttp2Session | null = null;
  private readonly calls = new Set<OpenCall>();
  private closed = false;

  /** The target as messages name it: the socket's path, or host:port. */
  private readonly address: string;

  constructor(
    private readonly target: GrpcTarget,
    private readonly options: GrpcChannelOptions,
  ) {
    this.address = 'path' in target ? target.path : `${target.host.includes(':') ? `[${target.host}]` : target.host}:${target.port}`;
  }

  unary<Response, Request = object>(method: GrpcMethod<Response, Request>, request: Request, options: GrpcCallOptions): Promise<Response> {
    return new Promise<Response>((resolve, reject) => {
      let answer: Buffer | null = null;
      this.open(method.path, method.serialize(request), options, {
        message: (bytes) => {
          answer ??= bytes;
        },
        end: (error) => {
          if (error) reject(error);
          else if (answer === null) reject(new GrpcStatusError('INTERNAL', 'the server answered without a message'));
          else {
            try {
              resolve(method.deserialize(answer));
            } catch (cause) {
              reject(new GrpcStatusError('INTERNAL', `the answer cannot be read: ${errorMessage(cause)}`));
            }
          }
        },
      });
    });
  }

  /**
   * Opens the stream at once, before the first `next()`: what the server sends meanwhile is held,
   * not missed. Returning from the iteration (or `return()`) cancels the call.
   */
  serverStream<Response, Request = object>(method: GrpcMethod<Response, Request>, request: Request, options: GrpcCallOptions): AsyncGenerator<Response> {
    const queue: Response[] = [];
    const state: { ended: { error: GrpcStatusError | null } | null } = { ended: null };
    let wake: (() => void) | null = null;
    const call = this.open(method.path, method.serialize(request), options, {
      message: (bytes) => {
        try {
          queue.push(method.deserialize(bytes));
        } catch (cause) {
          call.cancel(new GrpcStatusError('INTERNAL', `a message cannot be read: ${errorMessage(cause)}`));
          return;
        }
        if (queue.length >= STREAM_HIGH_WATER) call.pause();
        wake?.();
      },
      end: (error) => {
        state.ended = { error };
        wake?.();
      },
    });
    return (async function* read(): AsyncGenerator<Response> {
      try {
        for (;;) {
          if (queue.length > 0) {
            const message = queue.shift()!;
            if (queue.length === STREAM_HIGH_WATER / 2) call.resume();
            yield message;
          } else if (state.ended !== null) {
            if (state.ended.error) throw state.ended.error;
            return;
          } else {
            await new Promise<void>((resolve) => (wake = resolve));
            wake = null;
          }
        }
      } finally {
        call.cancel(new GrpcStatusError('CANCELLED', 'the stream was left'));
      }
    })();
  }

  /**
   * Later calls fail at once (UNAVAILABLE); the calls under way go on to their end, which closes
   * the connection, as grpc-js's close did. The connection no longer holds the process open.
   */
  close(): void {
    this.closed = true;
    this.session?.close();
    this.session?.unref();
    this.session = null;
  }

  private open(path: string, body: Buffer, { timeoutMs, signal }: GrpcCallOptions, sink: CallSink): OpenCall {
    let finished = false;
    let stream: http2.ClientHttp2Stream | null = null;
    let timer: NodeJS.Timeout | undefined;
    const onAbort = (): void => call.cancel(new GrpcStatusError('CANCELLED', 'cancelled by the caller'));
    const finish = (error: GrpcStatusError | null): void => {
      if (finished) return;
      finished = true;
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
      this.calls.delete(call);
      if (this.calls.size === 0) this.session?.unref();
      sink.end(error);
    };
    const call: OpenCall = {
      cancel: (error) => {
        if (stream && !stream.closed) stream.close(http2.constants.NGHTTP2_CANCEL);
        finish(error);
      },
      pause: () => stream?.pause(),
      resume: () => stream?.resume(),
    };
    if (this.closed) {
      queueMicrotask(() => finish(new GrpcStatusError('UNAVAILABLE', 'the channel was closed')));
      return call;
    }
    if (signal?.aborted) {
      queueMicrotask(() => finish(new GrpcStatusError('CANCELLED', 'cancelled before it was sent')));
      return call;
    }
    this.calls.add(call);
    const headers: http2.OutgoingHttpHeaders = {
      ':method': 'POST',
      ':path': path,
      'content-type': 'application/grpc',
      te: 'trailers',
      'grpc-accept-encoding': 'identity',
      'user-agent': 'statelet-cri',
    };
    if (timeoutMs !== undefined) {
      headers['grpc-timeout'] = grpcTimeout(timeoutMs);
      timer = setTimeout(() => call.cancel(new GrpcStatusError('DEADLINE_EXCEEDED', `no answer within ${timeoutMs} ms`)), timeoutMs);
    }
    signal?.addEventListener('abort', onAbort, { once: true });
    try {
      stream = this.request(headers);
    } catch (error) {
      finish(new GrpcStatusError('UNAVAILABLE', `cannot reach ${this.address}: ${errorMessage(error)}`));
      return call;
    }

    const connection = stream.session;
    let status: GrpcStatusError | null | undefined; // undefined: not yet known; null: OK
    let streamError: Error | undefined;
    const frames = new FrameReader(this.options.maxReceiveMessageBytes);
    stream.on('response', (responseHeaders) => {
      const given = statusOf(responseHeaders); // a call the server ended at once ("trailers only")
      status = given !== undefined ? given : httpStatusError(responseHeaders);
    });
    stream.on('data', (chunk: Buffer) => {
      if (status) return; // not a gRPC answer: its body is not messages
      const messages = frames.push(chunk);
      if (messages instanceof GrpcStatusError) call.cancel(messages);
      else for (const message of messages) if (!finished) sink.message(message);
    });
    stream.on('trailers', (trailers) => {
      const given = statusOf(trailers);
      status = given !== undefined ? given : new GrpcStatusError('UNKNOWN', 'the server ended the call without a gRPC status');
    });
    stream.on('error', (error: Error) => {
      streamError = error;
    });
    stream.on('close', () => {
      if (status !== undefined) finish(status);
      else if (streamError) finish(new GrpcStatusError('UNAVAILABLE', `cannot reach ${this.address}: ${streamError.message}`));
      else if (connection?.closed || connection?.destroyed) finish(new GrpcStatusError('UNAVAILABLE', `the connection to ${this.address} was lost`));
      else finish(resetError(stream!.rstCode));
    });
    stream.end(frame(body));
    return call;
  }

  /** A new stream on the connection, made first if there is none (or it is going away). */
  private request(headers: http2.OutgoingHttpHeaders): http2.ClientHttp2Stream {
    try {
      return this.connection().request(headers);
    } catch {
      // A connection that had just begun to close (or had used up its stream ids): a new one.
      this.session = null;
      return this.connection().request(headers);
    }
  }

  private connection(): http2.ClientHttp2Session {
    let session = this.session;
    if (session === null || session.closed || session.destroyed) {
      session = http2.connect('http://localhost', {
        createConnection: () => ('path' in this.target ? net.connect(this.target.path) : net.connect(this.target.port, this.target.host)),
        settings: { enablePush: false, initialWindowSize: WINDOW_BYTES },
        maxSessionMemory: 64,
      });
      const made = session;
      // A broken connection is told to each call on it; the next call makes a new one.
      made.on('error', () => {});
      made.on('connect', () => made.setLocalWindowSize(WINDOW_BYTES));
      const forget = (): void => {
        if (this.session === made) this.session = null;
      };
      made.on('close', forget);
      made.on('goaway', forget);
      this.session = session;
    }
    // The connection holds the process open only while calls are under way, as grpc-js's did.
    session.ref();
    return session;
  }
}

/** A message as gRPC frames it: uncompressed, its length in 4 bytes, then its bytes. */
function frame(body: Buffer): Buffer {
  const framed = Buffer.allocUnsafe(5 + body.length);
  framed[0] = 0;
  framed.writeUInt32BE(body.length, 1);
  body.copy(framed, 5);
  return framed;
}

/** Splits the DATA of a call into its messages, whichever way the chunks cut them. */
class FrameReader {
  /** What arrived of a message not yet whole, and how many bytes it takes to go on. */
  private pending: Buffer[] = [];
  private pendingBytes = 0;
  private needed = 5;

  constructor(private readonly maxBytes: number) {}

  push(chunk: Buffer): Buffer[] | GrpcStatusError {
    // A large answer (a node's list) comes in many DATA frames: its chunks are joined once, when
    // the whole message is there, not again at each frame.
    if (this.pendingBytes > 0) {
      this.pending.push(chunk);
      this.pendingBytes += chunk.length;
      if (this.pendingBytes < this.needed) return [];
      chunk = Buffer.concat(this.pending, this.pendingBytes);
      this.pending = [];
      this.pendingBytes = 0;
    }
    let data = chunk;
    const messages: Buffer[] = [];
    this.needed = 5;
    while (data.length >= 5) {
      if (data[0] !== 0) return new GrpcStatusError('INTERNAL', 'the server sent a compressed message, which this client did not offer to read');
      const length = data.readUInt32BE(1);
      if (length > this.maxBytes) return new GrpcStatusError('RESOURCE_EXHAUSTED', `a message of ${length} bytes is over the ${this.maxBytes} accepted`);
      if (data.length < 5 + length) {
        this.needed = 5 + length;
        break;
      }
      messages.push(data.subarray(5, 5 + length));
      data = data.subarray(5 + length);
    }
    if (data.length > 0) {
      this.pending = [data];
      this.pendingBytes = data.length;
    }
    return messages;
  }
}

/** The status a server put in its trailers (or its headers, for a call it ends at once); undefined when none. */
function statusOf(headers: http2.IncomingHttpHeaders): GrpcStatusError | null | undefined {
  const value = headers['grpc-status'];
  if (value === undefined) return undefined;
  const code = Number(value);
  if (code === 0) return null;
  const name = STATUS_NAMES[code];
  const message = headers['grpc-message'];
  const details = typeof message === 'string' ? percentDecoded(message) : '';
  return new GrpcStatusError(name === undefined || name === 'OK' ? 'UNKNOWN' : name, details);
}

/** An answer that is not gRPC's: its HTTP status as the gRPC protocol maps it; undefined for a gRPC answer. */
function httpStatusError(headers: http2.IncomingHttpHeaders): GrpcStatusError | undefined {
  const status = Number(headers[':status']);
  if (status === 200) {
    const type = headers['content-type'];
    return type?.startsWith('application/grpc') ? undefined : new GrpcStatusError('UNKNOWN', `the server answered with content-type ${type ?? '(none)'}`);
  }
  const code: CriErrorCode =
    status === 400 ? 'INTERNAL' : status === 401 ? 'UNAUTHENTICATED' : status === 403 ? 'PERMISSION_DENIED' : status === 404 ? 'UNIMPLEMENTED' : status === 429 || status === 502 || status === 503 || status === 504 ? 'UNAVAILABLE' : 'UNKNOWN';
  return new GrpcStatusError(code, `the server answered HTTP ${status}`);
}

/** A stream that ended without a gRPC status: ended as such, or reset by the server (by its HTTP/2 error code). */
function resetError(rstCode: number | undefined): GrpcStatusError {
  if (rstCode === http2.constants.NGHTTP2_NO_ERROR) return new GrpcStatusError('INTERNAL', 'the server ended the call without a gRPC status');
  const { NGHTTP2_REFUSED_STREAM, NGHTTP2_CANCEL, NGHTTP2_ENHANCE_YOUR_CALM, NGHTTP2_INADEQUATE_SECURITY } = http2.constants;
  const code: CriErrorCode =
    rstCode === NGHTTP2_REFUSED_STREAM ? 'UNAVAILABLE' : rstCode === NGHTTP2_CANCEL ? 'CANCELLED' : rstCode === NGHTTP2_ENHANCE_YOUR_CALM ? 'RESOURCE_EXHAUSTED' : rstCode === NGHTTP2_INADEQUATE_SECURITY ? 'PERMISSION_DENIED' : 'INTERNAL';
  return new GrpcStatusError(code, `the server reset the stream (HTTP/2 error ${rstCode ?? 'unknown'}) without a gRPC status`);
}

/** `grpc-timeout`: at most 8 digits, in the finest unit that fits. */
function grpcTimeout(ms: number): string {
  const whole = Math.max(1, Math.ceil(ms));
  return whole < 1e8 ? `${whole}m` : `${Math.min(99_999_999, Math.ceil(whole / 1000))}S`;
}

function percentDecoded(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}

function errorMessage(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
