/**
 * The SPDY session (runtime/streaming/spdy.ts) against frames recorded from client-go's SPDY
 * executor (moby/spdystream, zlib with SPDY/3's dictionary and one compression context for the
 * whole session), and against itself: streams, FIN, reset, ping echo, GOAWAY.
 */
import { createServer, connect, type Server, type Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { SpdySession, type SpdyStream } from '../../src/runtime/streaming/spdy.ts';

/** SYN_STREAM payloads client-go sent for `kubectl exec` with stdout and stderr, in order. */
const GO_SYN_STREAMS = [
  '0000000100000000000078f9e3c6a7c26260606004a7b392a2d4c45c6851c29a0a0a6800000000ffff',
  '00000003000000000000c22ac5565c92925f5a02000000ffff',
  '00000005000000000000c229975a5404000000ffff',
];

function controlFrame(type: number, payload: Buffer, flags = 0): Buffer {
  const header = Buffer.alloc(8);
  header.writeUInt16BE(0x8003, 0);
  header.writeUInt16BE(type, 2);
  header.writeUInt32BE(((flags << 24) | payload.length) >>> 0, 4);
  return Buffer.concat([header, payload]);
}

let server: Server | undefined;
const sockets: Socket[] = [];

afterEach(async () => {
  for (const socket of sockets.splice(0)) socket.destroy();
  await new Promise((resolve) => (server ? server.close(resolve) : resolve(undefined)));
  server = undefined;
});

/** A server session on one end of a loopback connection; the raw client socket on the other. */
async function pair(onStream: (stream: SpdyStream) => void): Promise<{ session: Promise<SpdySession>; client: Socket }> {
  let accept!: (session: SpdySession) => void;
  const session = new Promise<SpdySession>((resolve) => (accept = resolve));
  server = createServer((socket) => {
    sockets.push(socket);
    accept(new SpdySession(socket, { role: 'server', onStream }));
  });
  await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
  const address = server.address() as { port: number };
  const client = connect(address.port, '127.0.0.1');
  sockets.push(client);
  await new Promise((resolve) => client.once('connect', resolve));
  return { session, client };
}

describe('SPDY session', () => {
  it("reads client-go's compressed header blocks in order, answering each stream with SYN_REPLY, and echoes its pings", async () => {
    const seen: { id: number; type: string }[] = [];
    const { client } = await pair((stream) => seen.push({ id: stream.id, type: stream.headers.streamtype ?? '' }));
    const replies: Buffer[] = [];
    client.on('data', (chunk: Buffer) => replies.push(chunk));
    client.write(Buffer.concat(GO_SYN_STREAMS.map((hex) => controlFrame(1, Buffer.from(hex, 'hex')))));
    await expect.poll(() => seen.length).toBe(3);
    expect(seen).toEqual([
      { id: 1, type: 'error' },
      { id: 3, type: 'stdout' },
      { id: 5, type: 'stderr' },
    ]);
    await expect.poll(() => Buffer.concat(replies).length).toBeGreaterThan(0);
    // The first reply: SYN_REPLY (type 2) for stream 1.
    const first = Buffer.concat(replies);
    expect(first.readUInt16BE(0)).toBe(0x8003);
    expect(first.readUInt16BE(2)).toBe(2);
    expect(first.readUInt32BE(8)).toBe(1);

    // client-go pings every 5 s through the API server; the ping comes back as it was.
    const ping = controlFrame(6, Buffer.from('00000007', 'hex'));
    const before = Buffer.concat(replies).length;
    client.write(ping);
    await expect.poll(() => Buffer.concat(replies).length).toBe(before + ping.length);
    expect(Buffer.concat(replies).subarray(before)).toEqual(ping);
  });

  it('carries data both ways with FIN, and ends every stream at GOAWAY', async () => {
    const received: string[] = [];
    let serverStream: SpdyStream | undefined;
    const { session: serverSession, client } = await pair((stream) => {
      serverStream = stream;
      stream.on('data', (chunk: Buffer) => received.push(chunk.toString()));
      stream.once('end', () => stream.end('bye'));
    });
    const clientSession = new SpdySession(client, { role: 'client' });
    const stream = await clientSession.open({ streamtype: 'data', port: '80' });
    expect(serverStream?.headers).toEqual({ streamtype: 'data', port: '80' });
    let answer = '';
    stream.on('data', (chunk: Buffer) => (answer += chunk.toString()));
    const ended = new Promise((resolve) => stream.once('end', resolve));
    stream.end('hello');
    await ended;
    expect(received.join('')).toBe('hello');
    expect(answer).toBe('bye');
    expect((await serverSession).size).toBe(0);

    const open = await clientSession.open({ streamtype: 'data' });
    const closed = new Promise((resolve) => open.once('close', resolve));
    clientSession.close();
    await closed;
    await (await serverSession).closed;
  });

  it('destroys a stream the peer resets, leaving the session open', async () => {
    let serverStream: SpdyStream | undefined;
    const { session, client } = await pair((stream) => (serverStream = stream));
    const clientSession = new SpdySession(client, { role: 'client' });
    const stream = await clientSession.open({ streamtype: 'error' });
    const reset = new Promise((resolve) => serverStream!.once('close', resolve));
    stream.destroy();
    await reset;
    expect((await session).size).toBe(0);
    expect((await clientSession.open({ streamtype: 'stdout' })).id).toBe(3);
  });
});
