/**
 * The authenticated port's TLS kept current (server/servingTls.ts) on a real HTTPS server on
 * loopback: a new serving pair is presented to the next handshake while a connection already open
 * keeps working; before any pair is issued every handshake fails, logged as the kubelet's; a new
 * client CA bundle decides who the next connections authenticate as; cipher suites and the lowest
 * version hold against OpenSSL's own client (`openssl s_client`).
 */
import { spawn } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import https from 'node:https';
import os from 'node:os';
import path from 'node:path';
import tls from 'node:tls';
import { X509Certificate } from 'node:crypto';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { realClock } from '../../src/clock.ts';
import type { Logger, LogLevel } from '../../src/log.ts';
import { type ServingPair, selfSignedPair } from '../../src/server/certificates.ts';
import { type CaBundleSource, clientCaFromFile } from '../../src/server/servingSources.ts';
import { NO_SERVING_CERTIFICATE, type ServingTls } from '../../src/server/servingTls.ts';
import { servingTlsSettings } from '../../src/server/servingTlsSettings.ts';
import { SettableCertificateSource } from '../support/certificateSources.ts';
import { type TestKubeletServer, startTestKubeletServer } from '../support/kubeletServerFixture.ts';
import { type KubeletClientPki, writeKubeletClientPki } from '../support/kubeletClientPki.ts';
import { noStreaming } from '../support/noStreaming.ts';

let dir: string;
let pairs: ServingPair[];
let clients: { a: KubeletClientPki; b: KubeletClientPki };
const servers: TestKubeletServer[] = [];
const closers: (() => void)[] = [];
const runtime = { containerStatus: async () => null, listContainers: async () => [], ...noStreaming } as never;

beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'statelet-serving-tls-'));
  pairs = await Promise.all([0, 1].map(() => selfSignedPair('node-a', ['127.0.0.1'], new Date())));
  clients = { a: await writeKubeletClientPki(await mkdtemp(path.join(dir, 'a-'))), b: await writeKubeletClientPki(await mkdtemp(path.join(dir, 'b-'))) };
});

afterEach(async () => {
  for (const close of closers.splice(0)) close();
  for (const server of servers.splice(0)) await server.close();
});

afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

function recordingLog(): { log: Logger; lines: { level: LogLevel; message: string; fields?: Record<string, unknown> }[] } {
  const lines: { level: LogLevel; message: string; fields?: Record<string, unknown> }[] = [];
  return { lines, log: (level, message, fields) => void lines.push({ level, message, ...(fields ? { fields } : {}) }) };
}

async function start(tlsOptions: Partial<ServingTls> & Pick<ServingTls, 'certificate'>, log: Logger = () => {}): Promise<TestKubeletServer> {
  const caText = await readFile(clients.a.caFile, 'utf8');
  const server = await startTestKubeletServer(await mkdtemp(path.join(dir, 's-')), {
    pods: () => [],
    runtime,
    log,
    tls: { clientCA: { current: () => caText, onChange: () => () => {} }, settings: { minVersion: 'TLSv1.2' }, ...tlsOptions },
  });
  servers.push(server);
  return server;
}

/** One handshake on a fresh connection: the fingerprint of the leaf presented, or the error. */
function handshake(port: number, options: tls.ConnectionOptions = {}): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = tls.connect({ host: '127.0.0.1', port, rejectUnauthorized: false, ...options }, () => {
      resolve(socket.getPeerX509Certificate()!.fingerprint256);
      socket.destroy();
    });
    socket.on('error', reject);
  });
}

const fingerprint = (pair: ServingPair) => new X509Certificate(pair.cert).fingerprint256;

/** GET `urlPath` on a fresh connection with the client certificate of `client`. */
function get(server: TestKubeletServer, urlPath: string, client: KubeletClientPki): Promise<number> {
  return Promise.all([readFile(client.certFile), readFile(client.keyFile)]).then(
    ([cert, key]) =>
      new Promise((resolve, reject) => {
        const req = https.request(`${server.url}${urlPath}`, { rejectUnauthorized: false, agent: false, cert, key }, (res) => {
          res.resume();
          res.on('end', () => resolve(res.statusCode ?? 0));
        });
        req.on('error', reject);
        req.end();
      }),
  );
}

/** A TLS connection kept open, on which HTTP requests are sent one after another. */
async function openConnection(server: TestKubeletServer): Promise<{ socket: tls.TLSSocket; request(urlPath: string): Promise<string> }> {
  const socket = tls.connect({ host: '127.0.0.1', port: server.server.port, rejectUnauthorized: false, cert: await readFile(clients.a.certFile), key: await readFile(clients.a.keyFile) });
  await new Promise<void>((resolve, reject) => socket.once('secureConnect', resolve).once('error', reject));
  return {
    socket,
    request: (urlPath) =>
      new Promise((resolve, reject) => {
        let text = '';
        const onData = (chunk: Buffer) => {
          text += chunk.toString();
          const match = /content-length: (\d+)\r\n[\s\S]*?\r\n\r\n/i.exec(text);
          if (match && text.length >= match.index + match[0].length + Number(match[1])) {
            socket.off('data', onData);
            resolve(text.split('\r\n')[0]!);
          }
        };
        socket.on('data', onData);
        socket.once('error', reject);
        socket.write(`GET ${urlPath} HTTP/1.1\r\nHost: node-a\r\n\r\n`);
      }),
  };
}

describe('the serving certificate swapped live', () => {
  it('presents the new pair to the next handshake without restarting the listener, and an open connection keeps working', async () => {
    const certificate = new SettableCertificateSource(pairs[0]!);
    const server = await start({ certificate });
    expect(await handshake(server.server.port)).toBe(fingerprint(pairs[0]!));
    const open = await openConnection(server);
    expect(await open.request('/healthz')).toBe('HTTP/1.1 200 OK');

    certificate.set(pairs[1]!);
    expect(await handshake(server.server.port)).toBe(fingerprint(pairs[1]!));
    // The connection made before the swap is still served, with the certificate it was made with.
    expect(await open.request('/healthz')).toBe('HTTP/1.1 200 OK');
    expect(open.socket.getPeerX509Certificate()!.fingerprint256).toBe(fingerprint(pairs[0]!));
    open.socket.destroy();
  });

  it("fails every handshake until a pair is issued, logging the kubelet's reason, then serves it", async () => {
    const certificate = new SettableCertificateSource(null);
    const { log, lines } = recordingLog();
    const server = await start({ certificate }, log);
    await expect(handshake(server.server.port)).rejects.toThrow(/handshake failure|alert/);
    await expect(handshake(server.server.port)).rejects.toThrow();
    const refusals = lines.filter((line) => line.message === 'http: TLS handshake error');
    expect(refusals).toHaveLength(2);
    expect(refusals[0]).toMatchObject({ level: 'warn', fields: { err: NO_SERVING_CERTIFICATE, from: expect.stringMatching(/^127\.0\.0\.1:\d+$/) } });

    certificate.set(pairs[0]!);
    expect(await handshake(server.server.port)).toBe(fingerprint(pairs[0]!));
    expect(await get(server, '/healthz', clients.a)).toBe(200);
  });
});

describe('the client CA bundle reloaded (ReloadKubeletClientCAFile)', () => {
  it('authenticates the next connections against the new bundle', async () => {
    const caFile = path.join(dir, 'client-ca.crt');
    await writeFile(caFile, await readFile(clients.a.caFile));
    const clientCA: CaBundleSource = await clientCaFromFile(caFile, { clock: realClock, log: () => {}, reload: true });
    closers.push(() => clientCA.close());
    const server = await start({ certificate: new SettableCertificateSource(pairs[0]!), clientCA });
    expect(await get(server, '/healthz', clients.a)).toBe(200);
    expect(await get(server, '/healthz', clients.b)).toBe(401);

    const changed = new Promise<void>((resolve) => clientCA.onChange(resolve));
    await writeFile(caFile, await readFile(clients.b.caFile));
    await changed;
    expect(await get(server, '/healthz', clients.b)).toBe(200);
    expect(await get(server, '/healthz', clients.a)).toBe(401);
  });
});

/** `openssl s_client` against the port: whether the handshake succeeded, and the protocol and cipher it agreed. */
function opensslClient(port: number, args: string[]): Promise<{ ok: boolean; output: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn('openssl', ['s_client', '-connect', `127.0.0.1:${port}`, '-servername', 'node-a', ...args], { stdio: ['pipe', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolve({ ok: code === 0 && /Cipher is (?!\(NONE\))/.test(output), output }));
    child.stdin.end();
  });
}

describe('tlsCipherSuites and tlsMinVersion against OpenSSL s_client', () => {
  it('accepts a named suite and refuses one not named; TLS 1.3 stays on with its fixed suites', async () => {
    const { settings } = servingTlsSettings(['TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256'], 'VersionTLS12', tls.DEFAULT_CIPHERS);
    const server = await start({ certificate: new SettableCertificateSource(pairs[0]!), settings });
    const named = await opensslClient(server.server.port, ['-tls1_2', '-cipher', 'ECDHE-RSA-AES128-GCM-SHA256']);
    expect(named.output).toMatch(/Cipher is ECDHE-RSA-AES128-GCM-SHA256/);
    expect(named.ok).toBe(true);
    const other = await opensslClient(server.server.port, ['-tls1_2', '-cipher', 'ECDHE-RSA-AES256-GCM-SHA384']);
    expect(other.ok).toBe(false);
    expect(other.output).toMatch(/handshake failure/);
    const tls13 = await opensslClient(server.server.port, ['-tls1_3']);
    expect(tls13.output).toMatch(/TLSv1\.3/);
    expect(tls13.ok).toBe(true);
  });

  it('refuses a version below the minimum and accepts the minimum, down to TLS 1.0', async () => {
    const atLeast13 = await start({ certificate: new SettableCertificateSource(pairs[0]!), settings: servingTlsSettings([], 'VersionTLS13', tls.DEFAULT_CIPHERS).settings });
    expect((await opensslClient(atLeast13.server.port, ['-tls1_2'])).ok).toBe(false);
    expect((await opensslClient(atLeast13.server.port, ['-tls1_3'])).ok).toBe(true);
    const atLeast10 = await start({ certificate: new SettableCertificateSource(pairs[0]!), settings: servingTlsSettings([], 'VersionTLS10', tls.DEFAULT_CIPHERS).settings });
    const old = await opensslClient(atLeast10.server.port, ['-tls1', '-cipher', 'DEFAULT:@SECLEVEL=0']);
    expect(old.output).toMatch(/Protocol *: TLSv1\b|TLSv1, Cipher/);
    expect(old.ok).toBe(true);
    const defaults = await start({ certificate: new SettableCertificateSource(pairs[0]!) });
    expect((await opensslClient(defaults.server.port, ['-tls1', '-cipher', 'DEFAULT:@SECLEVEL=0'])).ok).toBe(false);
  });
});
