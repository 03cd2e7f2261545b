/**
 * SPDY/3.1 sessions, the framing `kubectl exec`, `attach` and `port-forward` still use between the
 * API server, the node agent and the runtime's streaming server (k8s.io/streaming httpstream/spdy
 * over moby/spdystream). One session multiplexes streams over an upgraded HTTP connection; every
 * stream carries a header block (`streamType`, `port`, `requestID`) and data frames, and is
 * half-closed by a FIN from each side.
 *
 * Only what spdystream speaks is implemented: SYN_STREAM, SYN_REPLY, RST_STREAM, DATA, PING (a
 * peer's pings are echoed), GOAWAY, HEADERS; SETTINGS and WINDOW_UPDATE are read and ignored, as
 * spdystream does (it keeps no flow-control windows, so neither side may wait for one).
 *
 * Header blocks are zlib streams primed with SPDY/3's dictionary, one per direction per session.
 * The peer's are inflated in order (a stream's data never overtakes its headers); ours are written
 * as stored (uncompressed) deflate blocks, valid zlib that needs no compressor state, since our
 * header blocks are a few dozen bytes.
 */
import { Duplex } from 'node:stream';
import { constants as zlibConstants, createInflate, type Inflate } from 'node:zlib';

/** A stream's headers, names in lower case (what SPDY puts on the wire). */
type SpdyHeaders = Record<string, string>;

const VERSION = 3;
const CONTROL = 0x8000;
const enum FrameType {
  SynStream = 1,
  SynReply = 2,
  RstStream = 3,
  Settings = 4,
  Ping = 6,
  GoAway = 7,
  Headers = 8,
  WindowUpdate = 9,
}
const FLAG_FIN = 0x01;
/** RST_STREAM status codes (SPDY/3 §2.6.3). */
const RST_CANCEL = 5;
const RST_PROTOCOL_ERROR = 1;
const MAX_FRAME_LENGTH = 0xffffff;
/** Data is written in frames of at most this size, so that streams interleave. */
const DATA_CHUNK = 32 * 1024;

/**
 * SPDY/3's header compression dictionary (draft-mbelshe-httpbis-spdy-00 §2.6.10.1): these names
 * and values, each preceded by its 32-bit length, then the status lines and dates in one run.
 */
const DICTIONARY_WORDS = [
  'options', 'head', 'post', 'put', 'delete', 'trace', 'accept', 'accept-charset', 'accept-encoding', 'accept-language', 'accept-ranges', 'age', 'allow',
  'authorization', 'cache-control', 'connection', 'content-base', 'content-encoding', 'content-language', 'content-length', 'content-location',
  'content-md5', 'content-range', 'content-type', 'date', 'etag', 'expect', 'expires', 'from', 'host', 'if-match', 'if-modified-since', 'if-none-match',
  'if-range', 'if-unmodified-since', 'last-modified', 'location', 'max-forwards', 'pragma', 'proxy-authenticate', 'proxy-authorization', 'range',
  'referer', 'retry-after', 'server', 'te', 'trailer', 'transfer-encoding', 'upgrade', 'user-agent', 'vary', 'via', 'warning', 'www-authenticate',
  'method', 'get', 'status', '200 OK', 'version', 'HTTP/1.1', 'url', 'public', 'set-cookie', 'keep-alive', 'origin',
];
const DICTIONARY_TAIL =
  '100101201202205206300302303304305306307402405406407408409410411412413414415416417502504505203 Non-Authoritative Information204 No Content' +
  '301 Moved Permanently400 Bad Request401 Unauthorized403 Forbidden404 Not Found500 Internal Server Error501 Not Implemented503 Service Unavailable' +
  'Jan Feb Mar Apr May Jun Jul Aug Sept Oct Nov Dec 00:00:00 Mon, Tue, Wed, Thu, Fri, Sat, Sun, GMTchunked,text/html,image/png,image/jpg,image/gif,' +
  'application/xml,application/xhtml+xml,text/plain,text/javascript,publicprivatemax-age=gzip,deflate,sdchcharset=utf-8charset=iso-8859-1,utf-,*,enq=0.';

export const HEADER_DICTIONARY: Buffer = Buffer.concat([
  ...DICTIONARY_WORDS.flatMap((word) => {
    const length = Buffer.alloc(4);
    length.writeUInt32BE(word.length);
    return [length, Buffer.from(word, 'latin1')];
  }),
  Buffer.from(DICTIONARY_TAIL, 'latin1'),
]);

export function adler32(data: Uint8Array): number {
  let a = 1;
  let b = 0;
  for (const byte of data) {
    a = (a + byte) % 65521;
    b = (b + a) % 65521;
  }
  return ((b << 16) | a) >>> 0;
}

/** The zlib stream header announcing the dictionary: CMF 0x78, FLG with FDICT and its check bits, DICTID. */
function zlibHeader(): Buffer {
  const cmf = 0x78;
  const flagsWithoutCheck = 0xe0 | 0x20;
  const flg = flagsWithoutCheck + (31 - ((cmf * 256 + flagsWithoutCheck) % 31));
  const header = Buffer.alloc(6);
  header[0] = cmf;
  header[1] = flg;
  header.writeUInt32BE(adler32(HEADER_DICTIONARY), 2);
  return header;
}

function encodeHeaderBlock(headers: SpdyHeaders): Buffer {
  const entries = Object.entries(headers);
  const parts: Buffer[] = [uint32(entries.length)];
  for (const [name, value] of entries) {
    const n = Buffer.from(name.toLowerCase());
    const v = Buffer.from(value);
    parts.push(uint32(n.length), n, uint32(v.length), v);
  }
  return Buffer.concat(parts);
}

/** Reads a header block; a value holding several (NUL-separated) keeps the first, as Header.Get. */
function decodeHeaderBlock(block: Buffer): SpdyHeaders {
  const headers: SpdyHeaders = {};
  const count = block.readUInt32BE(0);
  let at = 4;
  for (let i = 0; i < count; i++) {
    const nameLength = block.readUInt32BE(at);
    const name = block.toString('utf8', at + 4, at + 4 + nameLength).toLowerCase();
    at += 4 + nameLength;
    const valueLength = block.readUInt32BE(at);
    const value = block.toString('utf8', at + 4, at + 4 + valueLength);
    at += 4 + valueLength;
    headers[name] = value.split('\0')[0] ?? '';
  }
  return headers;
}

function uint32(value: number): Buffer {
  const b = Buffer.alloc(4);
  b.writeUInt32BE(value >>> 0);
  return b;
}

function storedBlock(data: Buffer): Buffer {
  const header = Buffer.alloc(5);
  header.writeUInt16LE(data.length, 1);
  header.writeUInt16LE(~data.length & 0xffff, 3);
  return Buffer.concat([header, data]);
}

function controlFrame(type: FrameType, flags: number, payload: Buffer): Buffer {
  const header = Buffer.alloc(8);
  header.writeUInt16BE(CONTROL | VERSION, 0);
  header.writeUInt16BE(type, 2);
  header.writeUInt32BE(((flags << 24) | payload.length) >>> 0, 4);
  return Buffer.concat([header, payload]);
}

function dataFrame(streamId: number, flags: number, data: Uint8Array): Buffer {
  const frame = Buffer.alloc(8 + data.length);
  frame.writeUInt32BE(streamId & 0x7fffffff, 0);
  frame.writeUInt32BE(((flags << 24) | data.length) >>> 0, 4);
  frame.set(data, 8);
  return frame;
}

interface Frame {
  control: boolean;
  type: number;
  streamId: number;
  flags: number;
  payload: Buffer;
}

/** One stream of a session: a Duplex whose writes are DATA frames and whose end is a FIN. */
export class SpdyStream extends Duplex {
  /** The peer half-closed (FIN) or reset the stream. */
  remoteClosed = false;
  /** We sent our FIN or reset the stream. */
  localClosed = false;

  constructor(
    private readonly session: SpdySession,
    readonly id: number,
    readonly headers: SpdyHeaders,
  ) {
    super({ allowHalfOpen: true });
    // Transport failures end the session, which destroys its streams; a stream's own error
    // (a write after the peer reset it) has nothing more to tell.
    this.on('error', () => {});
  }

  override _read(): void {}

  override _write(chunk: Buffer, _encoding: BufferEncoding, callback: (error?: Error | null) => void): void {
    this.session.sendData(this, chunk, false, callback);
  }

  override _final(callback: (error?: Error | null) => void): void {
    this.session.sendData(this, Buffer.alloc(0), true, callback);
  }

  override _destroy(error: Error | null, callback: (error?: Error | null) => void): void {
    if (!this.localClosed || !this.remoteClosed) this.session.reset(this);
    callback(error);
  }

  /** Data or FIN from the peer. */
  received(data: Buffer, fin: boolean): void {
    if (this.remoteClosed) return;
    if (data.length > 0) this.push(data);
    if (fin) {
      this.remoteClosed = true;
      this.push(null);
      this.session.settle(this);
    }
  }
}

interface SpdySessionOptions {
  /** `server` answers streams the peer opens (even ids are its own); `client` opens odd ones. */
  role: 'server' | 'client';
  /** A stream the peer opened, already answered with SYN_REPLY. */
  onStream?(stream: SpdyStream): void;
}

/**
 * A SPDY session over an upgraded connection. It ends when the peer sends GOAWAY or closes, or
 * when `close()` is called: every stream still open is destroyed then, and `closed` resolves.
 */
export class SpdySession {
  private readonly streams = new Map<number, SpdyStream>();
  private readonly pendingReplies = new Map<number, { resolve(headers: SpdyHeaders): void; reject(error: Error): void }>();
  private nextStreamId: number;
  private lastReceivedId = 0;
  private buffered: Buffer = Buffer.alloc(0);
  private readonly inflater: Inflate;
  private inflaterReady = true;
  /** Frames waiting while a header block is inflated: processing stays in arrival order. */
  private readonly backlog: Frame[] = [];
  private processing = false;
  /** The connection ended on the peer's side; the session ends once the backlog is handled. */
  private peerGone = false;
  private sentCompressionHeader = false;
  private ended = false;
  readonly closed: Promise<void>;
  private resolveClosed!: () => void;

  constructor(
    private readonly socket: Duplex,
    private readonly options: SpdySessionOptions,
  ) {
    this.nextStreamId = options.role === 'client' ? 1 : 2;
    this.closed = new Promise((resolve) => (this.resolveClosed = resolve));
    this.inflater = createInflate({ dictionary: HEADER_DICTIONARY });
    this.inflater.on('error', (error) => this.fail(`header block: ${error.message}`));
    socket.setMaxListeners(0);
    socket.on('data', (chunk: Buffer) => this.receive(chunk));
    socket.on('error', () => this.end());
    // The peer's last frames may still wait for their headers to inflate: they go first.
    const peerGone = () => {
      this.peerGone = true;
      void this.drain();
    };
    socket.on('close', peerGone);
    socket.on('end', peerGone);
  }

  /** Streams currently open. */
  get size(): number {
    return this.streams.size;
  }

  /** Opens a stream with these headers and resolves once the peer replied. */
  async open(headers: SpdyHeaders): Promise<SpdyStream> {
    if (this.ended) throw new Error('the SPDY session is closed');
    const id = this.nextStreamId;
    this.nextStreamId += 2;
    const stream = new SpdyStream(this, id, headers);
    this.streams.set(id, stream);
    const replied = new Promise<SpdyHeaders>((resolve, reject) => this.pendingReplies.set(id, { resolve, reject }));
    const payload = Buffer.concat([uint32(id), uint32(0), Buffer.from([0, 0]), this.headerBlock(headers)]);
    this.write(controlFrame(FrameType.SynStream, 0, payload));
    await replied;
    return stream;
  }

  /** GOAWAY, then the connection ends once what was written is flushed. */
  close(): void {
    if (this.ended) return;
    const payload = Buffer.concat([uint32(this.lastReceivedId), uint32(0)]);
    this.write(controlFrame(FrameType.GoAway, 0, payload));
    this.socket.end();
    this.end();
  }

  /** Writes data (and a FIN) on a stream; `done` once the connection accepted it. */
  sendData(stream: SpdyStream, data: Buffer, fin: boolean, done: (error?: Error | null) => void): void {
    if (this.ended || stream.localClosed) return done(this.ended ? new Error('the SPDY session is closed') : null);
    let offset = 0;
    let flushed = true;
    do {
      const chunk = data.subarray(offset, offset + DATA_CHUNK);
      offset += chunk.length;
      const last = offset >= data.length;
      flushed = this.write(dataFrame(stream.id, last && fin ? FLAG_FIN : 0, chunk));
    } while (offset < data.length);
    if (fin) {
      stream.localClosed = true;
      this.settle(stream);
    }
    if (flushed) done();
    else this.socket.once('drain', () => done());
  }

  reset(stream: SpdyStream): void {
    if (this.ended || !this.streams.has(stream.id)) return;
    this.write(controlFrame(FrameType.RstStream, 0, Buffer.concat([uint32(stream.id), uint32(RST_CANCEL)])));
    stream.localClosed = true;
    stream.remoteClosed = true;
    this.streams.delete(stream.id);
  }

  /** A stream both sides have finished leaves the session. */
  settle(stream: SpdyStream): void {
    if (stream.localClosed && stream.remoteClosed) this.streams.delete(stream.id);
  }

  private write(frame: Buffer): boolean {
    if (this.socket.destroyed || this.socket.writableEnded) return true;
    return this.socket.write(frame);
  }

  private headerBlock(headers: SpdyHeaders): Buffer {
    const raw = encodeHeaderBlock(headers);
    const parts: Buffer[] = [];
    if (!this.sentCompressionHeader) {
      parts.push(zlibHeader());
      this.sentCompressionHeader = true;
    }
    // Stored deflate blocks (BFINAL 0, BTYPE 00) of at most 65535 bytes, then an empty one: the
    // sync-flush marker, after which an inflater hands out what it has without reading further
    // (Go's flate waits for the next block's header otherwise, past the end of the frame).
    for (let at = 0; at < raw.length; at += 0xffff) parts.push(storedBlock(raw.subarray(at, at + 0xffff)));
    parts.push(storedBlock(Buffer.alloc(0)));
    return Buffer.concat(parts);
  }

  private receive(chunk: Buffer): void {
    this.buffered = this.buffered.length === 0 ? chunk : Buffer.concat([this.buffered, chunk]);
    while (this.buffered.length >= 8) {
      const length = this.buffered.readUInt32BE(4) & MAX_FRAME_LENGTH;
      if (this.buffered.length < 8 + length) break;
      const first = this.buffered.readUInt32BE(0);
      const control = (first & 0x80000000) !== 0;
      const frame: Frame = {
        control,
        type: control ? first & 0xffff : 0,
        streamId: control ? 0 : first & 0x7fffffff,
        flags: this.buffered[4]!,
        payload: this.buffered.subarray(8, 8 + length),
      };
      this.buffered = this.buffered.subarray(8 + length);
      this.backlog.push(frame);
    }
    void this.drain();
  }

  private async drain(): Promise<void> {
    if (this.processing) return;
    this.processing = true;
    try {
      for (let frame = this.backlog.shift(); frame && !this.ended; frame = this.backlog.shift()) await this.handle(frame);
    } catch (error) {
      this.fail(error instanceof Error ? error.message : String(error));
    } finally {
      this.processing = false;
    }
    if (this.peerGone && this.backlog.length === 0) this.end();
  }

  private async handle(frame: Frame): Promise<void> {
    if (!frame.control) {
      const stream = this.streams.get(frame.streamId);
      // Data for a stream that is gone (reset) is dropped, as spdystream does.
      stream?.received(Buffer.from(frame.payload), (frame.flags & FLAG_FIN) !== 0);
      return;
    }
    const p = frame.payload;
    switch (frame.type) {
      case FrameType.SynStream: {
        const id = p.readUInt32BE(0) & 0x7fffffff;
        const headers = decodeHeaderBlock(await this.inflate(p.subarray(10)));
        this.lastReceivedId = id;
        const stream = new SpdyStream(this, id, headers);
        this.streams.set(id, stream);
        this.write(controlFrame(FrameType.SynReply, 0, Buffer.concat([uint32(id), this.headerBlock({})])));
        if (frame.flags & FLAG_FIN) stream.received(Buffer.alloc(0), true);
        this.options.onStream?.(stream);
        return;
      }
      case FrameType.SynReply: {
        const id = p.readUInt32BE(0) & 0x7fffffff;
        const headers = decodeHeaderBlock(await this.inflate(p.subarray(4)));
        this.pendingReplies.get(id)?.resolve(headers);
        this.pendingReplies.delete(id);
        if (frame.flags & FLAG_FIN) this.streams.get(id)?.received(Buffer.alloc(0), true);
        return;
      }
      case FrameType.Headers:
        // Read to keep the inflater in step; no stream of ours uses late headers.
        await this.inflate(p.subarray(4));
        return;
      case FrameType.RstStream: {
        const stream = this.streams.get(p.readUInt32BE(0) & 0x7fffffff);
        if (!stream) return;
        stream.localClosed = true;
        stream.remoteClosed = true;
        this.streams.delete(stream.id);
        stream.destroy();
        return;
      }
      case FrameType.Ping:
        // Our own pings would have our parity; we send none, so every ping is the peer's.
        this.write(controlFrame(FrameType.Ping, 0, Buffer.from(p)));
        return;
      case FrameType.GoAway:
        this.socket.end();
        this.end();
        return;
      default:
        // SETTINGS, WINDOW_UPDATE and anything newer: nothing for us to do.
        return;
    }
  }

  private inflate(block: Buffer): Promise<Buffer> {
    if (!this.inflaterReady) return Promise.reject(new Error('header decompression failed earlier'));
    return new Promise((resolve) => {
      const chunks: Buffer[] = [];
      const collect = (chunk: Buffer) => chunks.push(chunk);
      this.inflater.on('data', collect);
      this.inflater.write(block);
      this.inflater.flush(zlibConstants.Z_SYNC_FLUSH, () => {
        this.inflater.off('data', collect);
        resolve(Buffer.concat(chunks));
      });
    });
  }

  private fail(reason: string): void {
    this.inflaterReady = false;
    if (this.ended) return;
    this.write(controlFrame(FrameType.GoAway, 0, Buffer.concat([uint32(this.lastReceivedId), uint32(RST_PROTOCOL_ERROR)])));
    this.socket.destroy(new Error(`SPDY protocol error: ${reason}`));
    this.end();
  }

  private end(): void {
    if (this.ended) return;
    this.ended = true;
    for (const stream of this.streams.values()) {
      stream.localClosed = true;
      stream.remoteClosed = true;
      stream.destroy();
    }
    this.streams.clear();
    for (const pending of this.pendingReplies.values()) pending.reject(new Error('the SPDY session closed before the stream was answered'));
    this.pendingReplies.clear();
    this.backlog.length = 0;
    this.inflater.close();
    this.resolveClosed();
  }
}
