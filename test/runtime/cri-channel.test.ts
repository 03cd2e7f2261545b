/**
 * The CRI client's gRPC channel against a bare HTTP/2 server that frames its answers as the test
 * says: messages cut across DATA frames or several in one, statuses in trailers or alone in the
 * headers, HTTP errors, an oversized message, a connection that breaks. The client's tests against
 * grpc-js's server (cri-client.test.ts) and sim:// cover the ordinary calls.
 */
import http2 from 'node:http2';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GrpcChannel, GrpcStatusError, type GrpcMethod } from '../../src/runtime/cri/channel.ts';

type Answer = (stream: http2.ServerHttp2Stream, headers: http2.IncomingHttpHeaders) => void;

let directory: string;
let socketPath: string;
let server: http2.Http2Server;
const answers = new Map<string, Answer>();
const sessions = new Set<http2.ServerHttp2Session>();

/** A message as gRPC frames it. */
function framed(text: string): Buffer {
  const body = Buffer.from(text);
  const head = Buffer.alloc(5);
  head.writeUInt32BE(body.length, 1);
  return Buffer.concat([head, body]);
}

const text: GrpcMethod<string> = { path: '/test/Text', serialize: (request) => Buffer.from(JSON.stringify(request)), deserialize: (bytes) => bytes.toString() };
const method = (path: string): GrpcMethod<string> => ({ ...text, path });

beforeAll(async () => {
  directory = mkdtempSync(join(tmpdir(), 'cri-channel-'));
  socketPath = join(directory, 'grpc.sock');
  server = http2.createServer();
  server.on('session', (session) => {
    sessions.add(session);
    session.on('close', () => sessions.delete(session));
  });
  server.on('stream', (stream, headers) => {
    const answer = answers.get(String(headers[':path']));
    if (answer) answer(stream, headers);
    else stream.respond({ ':status': 200, 'content-type': 'application/grpc', 'grpc-status': '12', 'grpc-message': 'no such method' }, { endStream: true });
  });
  await new Promise<void>((resolve) => server.listen(socketPath, resolve));
});

afterAll(async () => {
  for (const session of sessions) session.destroy();
  await new Promise((resolve) => server.close(resolve));
  rmSync(directory, { recursive: true, force: true });
});

function channel(maxReceiveMessageBytes = 1024 * 1024): GrpcChannel {
  return new GrpcChannel({ path: socketPath }, { maxReceiveMessageBytes });
}

async function failure(promise: Promise<unknown>): Promise<GrpcStatusError> {
  const error = await promise.then(
    () => null,
    (e: unknown) => e,
  );
  if (!(error instanceof GrpcStatusError)) throw new Error(`expected a GrpcStatusError, got ${String(error)}`);
  return error;
}

describe('GrpcChannel', () => {
  it('sends the request framed, with its deadline, and reads an answer cut across DATA frames', async () => {
    let seen: { headers: http2.IncomingHttpHeaders; body: Buffer } | undefined;
    answers.set('/test/Cut', (stream, headers) => {
      const chunks: Buffer[] = [];
      stream.on('data', (chunk: Buffer) => chunks.push(chunk));
      stream.on('end', () => {
        seen = { headers, body: Buffer.concat(chunks) };
        stream.respond({ ':status': 200, 'content-type': 'application/grpc' }, { waitForTrailers: true });
        const answer = framed('a whole answer');
        stream.write(answer.subarray(0, 3)); // not even the length yet
        stream.write(answer.subarray(3, 9));
        stream.end(answer.subarray(9));
        stream.on('wantTrailers', () => stream.sendTrailers({ 'grpc-status': '0' }));
      });
    });
    const grpc = channel();
    try {
      expect(await grpc.unary(method('/test/Cut'), { ask: 1 }, { timeoutMs: 5_000 })).toBe('a whole answer');
      expect(seen?.headers).toMatchObject({ 'content-type': 'application/grpc', te: 'trailers', 'grpc-timeout': '5000m' });
      expect(seen?.body.equals(framed('{"ask":1}'))).toBe(true);
    } finally {
      grpc.close();
    }
  });

  it('reads a large answer written a kilobyte at a time, and the message after it in the same stream', async () => {
    const large = 'x'.repeat(200_000);
    answers.set('/test/Large', (stream) => {
      stream.respond({ ':status': 200, 'content-type': 'application/grpc' }, { waitForTrailers: true });
      const bytes = Buffer.concat([framed(large), framed('after')]);
      for (let at = 0; at < bytes.length; at += 1024) stream.write(bytes.subarray(at, at + 1024));
      stream.end();
      stream.on('wantTrailers', () => stream.sendTrailers({ 'grpc-status': '0' }));
    });
    const grpc = channel();
    try {
      const received: string[] = [];
      for await (const message of grpc.serverStream(method('/test/Large'), {}, {})) received.push(message);
      expect(received.map((m) => m.length)).toEqual([200_000, 5]);
      expect(received[0] === large && received[1] === 'after').toBe(true);
    } finally {
      grpc.close();
    }
  });

  it('streams several messages of one DATA frame in order, and a slow reader gets them all', async () => {
    answers.set('/test/Many', (stream) => {
      stream.respond({ ':status': 200, 'content-type': 'application/grpc' }, { waitForTrailers: true });
      stream.write(Buffer.concat([framed('m0'), framed('m1'), framed('m2')]));
      for (let i = 3; i < 1000; i++) stream.write(framed(`m${i}`)); // more than the stream holds before it pauses
      stream.end();
      stream.on('wantTrailers', () => stream.sendTrailers({ 'grpc-status': '0' }));
    });
    const grpc = channel();
    try {
      const received: string[] = [];
      for await (const message of grpc.serverStream(method('/test/Many'), {}, {})) {
        received.push(message);
        if (received.length % 100 === 0) await new Promise((resolve) => setImmediate(resolve));
      }
      expect(received).toEqual(Array.from({ length: 1000 }, (_, i) => `m${i}`));
    } finally {
      grpc.close();
    }
  });

  it('reads a status given alone in the headers, its message percent-decoded', async () => {
    answers.set('/test/Refused', (stream) => {
      stream.respond({ ':status': 200, 'content-type': 'application/grpc', 'grpc-status': '5', 'grpc-message': 'container %22c1%22 not found' }, { endStream: true });
    });
    const grpc = channel();
    try {
      expect(await failure(grpc.unary(method('/test/Refused'), {}, { timeoutMs: 5_000 }))).toMatchObject({ code: 'NOT_FOUND', details: 'container "c1" not found' });
      expect(await failure(grpc.unary(method('/test/Absent'), {}, { timeoutMs: 5_000 }))).toMatchObject({ code: 'UNIMPLEMENTED', details: 'no such method' });
    } finally {
      grpc.close();
    }
  });

  it('maps an answer that is not gRPC: an HTTP error, another content type, no status, no message', async () => {
    answers.set('/test/Http404', (stream) => stream.respond({ ':status': 404 }, { endStream: true }));
    answers.set('/test/Html', (stream) => {
      stream.respond({ ':status': 200, 'content-type': 'text/html' });
      stream.end('<html>');
    });
    answers.set('/test/NoStatus', (stream) => {
      stream.respond({ ':status': 200, 'content-type': 'application/grpc' });
      stream.end(framed('x'));
    });
    answers.set('/test/Empty', (stream) => {
      stream.respond({ ':status': 200, 'content-type': 'application/grpc' }, { waitForTrailers: true });
      stream.end();
      stream.on('wantTrailers', () => stream.sendTrailers({ 'grpc-status': '0' }));
    });
    const grpc = channel();
    const call = (path: string) => failure(grpc.unary(method(path), {}, { timeoutMs: 5_000 }));
    try {
      expect(await call('/test/Http404')).toMatchObject({ code: 'UNIMPLEMENTED', details: 'the server answered HTTP 404' });
      expect(await call('/test/Html')).toMatchObject({ code: 'UNKNOWN', details: 'the server answered with content-type text/html' });
      expect(await call('/test/NoStatus')).toMatchObject({ code: 'INTERNAL', details: 'the server ended the call without a gRPC status' });
      expect(await call('/test/Empty')).toMatchObject({ code: 'INTERNAL', details: 'the server answered without a message' });
    } finally {
      grpc.close();
    }
  });

  it('refuses a message over the size it accepts', async () => {
    answers.set('/test/Big', (stream) => {
      stream.respond({ ':status': 200, 'content-type': 'application/grpc' });
      stream.end(framed('x'.repeat(2048)));
    });
    const grpc = channel(1024);
    try {
      expect(await failure(grpc.unary(method('/test/Big'), {}, { timeoutMs: 5_000 }))).toMatchObject({ code: 'RESOURCE_EXHAUSTED', details: 'a message of 2048 bytes is over the 1024 accepted' });
    } finally {
      grpc.close();
    }
  });

  it('fails the calls of a connection that breaks with UNAVAILABLE, and the next call connects again', async () => {
    answers.set('/test/Hang', () => {
      for (const session of sessions) session.destroy();
    });
    answers.set('/test/Ok', (stream) => {
      stream.respond({ ':status': 200, 'content-type': 'application/grpc' }, { waitForTrailers: true });
      stream.end(framed('back'));
      stream.on('wantTrailers', () => stream.sendTrailers({ 'grpc-status': '0' }));
    });
    const grpc = channel();
    try {
      expect((await failure(grpc.unary(method('/test/Hang'), {}, { timeoutMs: 5_000 }))).code).toBe('UNAVAILABLE');
      expect(await grpc.unary(method('/test/Ok'), {}, { timeoutMs: 5_000 })).toBe('back');
    } finally {
      grpc.close();
    }
  });

  it('fails at once when nothing listens, and after close', async () => {
    const absent = new GrpcChannel({ path: join(directory, 'absent.sock') }, { maxReceiveMessageBytes: 1024 });
    const error = await failure(absent.unary(text, {}, { timeoutMs: 5_000 }));
    expect(error.code).toBe('UNAVAILABLE');
    expect(error.details).toContain('ENOENT');
    absent.close();
    expect(await failure(absent.unary(text, {}, { timeoutMs: 5_000 }))).toMatchObject({ code: 'UNAVAILABLE', details: 'the channel was closed' });
  });
});
