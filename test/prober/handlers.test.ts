import http from 'node:http';
import net from 'node:net';
import * as grpc from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Probe } from '../../src/api/types.ts';
import {
  decodeHealthCheckResponse,
  encodeHealthCheckRequest,
  probeUserAgent,
  runProbe,
  type ProbeTarget,
} from '../../src/prober/handlers.ts';
import { TestRuntime } from '../support/testRuntime.ts';
import { CriError, type RuntimeService } from '../../src/runtime/types.ts';
import { container, makePod } from '../support/pods.ts';

const signal = new AbortController().signal;
let server: http.Server;
let port = 0;
const seen: http.IncomingHttpHeaders[] = [];

beforeAll(async () => {
  server = http.createServer((req, res) => {
    seen.push(req.headers);
    const url = new URL(req.url ?? '/', 'http://x');
    const code = Number(url.searchParams.get('code') ?? '200');
    if (url.pathname === '/redirect-same') return res.writeHead(302, { location: '/ok' }).end();
    if (url.pathname === '/redirect-other') return res.writeHead(302, { location: `http://localhost:${port}/ok` }).end('moved');
    if (url.pathname === '/loop') return res.writeHead(302, { location: '/loop' }).end();
    if (url.pathname === '/slow') return void setTimeout(() => res.end('late'), 3000);
    res.writeHead(code).end(`body-${code}`);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  port = (server.address() as net.AddressInfo).port;
});
afterAll(() => {
  server.closeAllConnections();
  server.close();
});

function target(runtime: RuntimeService = new TestRuntime(), podIP = '127.0.0.1'): ProbeTarget {
  return {
    runtime,
    pod: makePod('p'),
    container: container('c', { ports: [{ name: 'web', containerPort: port }] }),
    containerId: 'cid',
    podIP,
  };
}

describe('httpGet', () => {
  const cases: { name: string; probe: () => Probe; result: string; output?: RegExp }[] = [
    { name: '200', probe: () => ({ httpGet: { port, path: '/ok' } }), result: 'Success', output: /body-200/ },
    { name: '399 (a 3xx not followed)', probe: () => ({ httpGet: { port, path: '/?code=399' } }), result: 'Warning' },
    { name: '404', probe: () => ({ httpGet: { port, path: '/?code=404' } }), result: 'Failure', output: /statuscode: 404/ },
    { name: '500', probe: () => ({ httpGet: { port, path: '/?code=500' } }), result: 'Failure' },
    { name: 'named port', probe: () => ({ httpGet: { port: 'web', path: '/ok' } }), result: 'Success' },
    { name: 'unknown named port', probe: () => ({ httpGet: { port: 'nope' } }), result: 'Unknown', output: /couldn't find port/ },
    { name: 'redirect, same host: followed', probe: () => ({ httpGet: { port, path: '/redirect-same' } }), result: 'Success', output: /body-200/ },
    { name: 'redirect to another host: warning', probe: () => ({ httpGet: { port, path: '/redirect-other' } }), result: 'Warning', output: /Probe terminated redirects/ },
    { name: 'redirect loop', probe: () => ({ httpGet: { port, path: '/loop' } }), result: 'Failure', output: /stopped after 10 redirects/ },
    { name: 'timeout', probe: () => ({ httpGet: { port, path: '/slow' }, timeoutSeconds: 1 }), result: 'Failure', output: /deadline exceeded/ },
    { name: 'connection refused', probe: () => ({ httpGet: { port: 1, path: '/' } }), result: 'Failure', output: /ECONNREFUSED/ },
  ];
  it.each(cases)('$name', async ({ probe, result, output }) => {
    const outcome = await runProbe(probe(), target(), signal);
    expect(outcome.result).toBe(result);
    if (output) expect(outcome.output).toMatch(output);
  });

  it('sends the probe headers, a kube-probe user agent, and defaults the host to the pod IP', async () => {
    seen.length = 0;
    await runProbe({ httpGet: { port, path: 'ok', httpHeaders: [{ name: 'X-Test', value: 'yes' }] } }, target(), signal);
    expect(seen[0]?.['x-test']).toBe('yes');
    expect(seen[0]?.['user-agent']).toBe(probeUserAgent);
    expect(seen[0]?.['accept']).toBe('*/*');
    seen.length = 0;
    await runProbe({ httpGet: { port, path: '/ok', httpHeaders: [{ name: 'User-Agent', value: 'mine' }] } }, target(), signal);
    expect(seen[0]?.['user-agent']).toBe('mine');
  });

  it('without a pod IP or host the probe cannot run', async () => {
    expect((await runProbe({ httpGet: { port } }, target(undefined, ''), signal)).result).toBe('Unknown');
    expect((await runProbe({ httpGet: { port, host: '127.0.0.1', path: '/ok' } }, target(undefined, ''), signal)).result).toBe('Success');
  });
});

describe('tcpSocket', () => {
  it('succeeds when something listens, fails otherwise', async () => {
    expect((await runProbe({ tcpSocket: { port } }, target(), signal)).result).toBe('Success');
    expect((await runProbe({ tcpSocket: { port: 'web' } }, target(), signal)).result).toBe('Success');
    const refused = await runProbe({ tcpSocket: { port: 1 } }, target(), signal);
    expect(refused).toMatchObject({ result: 'Failure', output: expect.stringMatching(/ECONNREFUSED/) });
  });
});

describe('exec', () => {
  const runtimeAnswering = (answer: () => Promise<{ exitCode: number; out?: string }>): RuntimeService => {
    const fake = new TestRuntime();
    fake.execSync = async () => {
      const { exitCode, out = '' } = await answer();
      return { exitCode, stdout: Buffer.from(out), stderr: Buffer.alloc(0) };
    };
    return fake;
  };
  it('exit 0 succeeds, other exits fail with the output, errors are Unknown, timeouts fail', async () => {
    const probe = { exec: { command: ['check'] }, timeoutSeconds: 1 };
    expect(await runProbe(probe, target(runtimeAnswering(async () => ({ exitCode: 0, out: 'fine' }))), signal)).toEqual({ result: 'Success', output: 'fine' });
    expect(await runProbe(probe, target(runtimeAnswering(async () => ({ exitCode: 1, out: 'sick' }))), signal)).toEqual({ result: 'Failure', output: 'sick' });
    const refused = runtimeAnswering(() => Promise.reject(new CriError('ExecSync', 'FAILED_PRECONDITION', 'not running')));
    expect((await runProbe(probe, target(refused), signal)).result).toBe('Unknown');
    const deadline = runtimeAnswering(() => Promise.reject(new CriError('ExecSync', 'DEADLINE_EXCEEDED', 'timeout')));
    expect(await runProbe(probe, target(deadline), signal)).toMatchObject({ result: 'Failure', output: expect.stringMatching(/timed out/) });
  });

  it('passes the probe timeout to ExecSync', async () => {
    const fake = new TestRuntime();
    let timeout = -1;
    fake.execSync = async (_id, _cmd, t) => {
      timeout = t;
      return { exitCode: 0, stdout: Buffer.alloc(0), stderr: Buffer.alloc(0) };
    };
    await runProbe({ exec: { command: ['x'] }, timeoutSeconds: 7 }, target(fake), signal);
    expect(timeout).toBe(7);
    await runProbe({ exec: { command: ['x'] } }, target(fake), signal);
    expect(timeout).toBe(1);
  });
});

describe('grpc', () => {
  let grpcServer: grpc.Server;
  let grpcPort = 0;
  beforeAll(async () => {
    grpcServer = new grpc.Server();
    grpcServer.addService(
      {
        check: {
          path: '/grpc.health.v1.Health/Check',
          requestStream: false,
          responseStream: false,
          requestSerialize: (r: { service: string }) => encodeHealthCheckRequest(r.service),
          // An object, not a string: grpc-js takes a falsy request for a missing one.
          requestDeserialize: (b: Buffer) => ({ service: b.length > 2 ? b.subarray(2).toString() : '' }),
          responseSerialize: (status: number) => Buffer.from([0x08, status]),
          responseDeserialize: decodeHealthCheckResponse,
        },
      },
      {
        check: (call: grpc.ServerUnaryCall<{ service: string }, number>, callback: grpc.sendUnaryData<number>) => {
          const statuses: Record<string, number> = { '': 1, sick: 2, slow: -1 };
          const status = statuses[call.request.service];
          if (status === undefined) return callback({ code: grpc.status.NOT_FOUND, details: 'unknown service' });
          if (status < 0) return void setTimeout(() => callback(null, 1), 2000);
          callback(null, status);
        },
      },
    );
    grpcPort = await new Promise<number>((resolve, reject) =>
      grpcServer.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (err, p) => (err ? reject(err) : resolve(p))),
    );
  });
  afterAll(() => grpcServer.forceShutdown());

  it.each([
    { service: undefined, result: 'Success' },
    { service: 'sick', result: 'Failure', output: /NOT_SERVING/ },
    { service: 'other', result: 'Failure', output: /health rpc probe failed/ },
    { service: 'slow', result: 'Failure', output: /timeout/ },
  ])('service $service ⇒ $result', async ({ service, result, output }) => {
    const outcome = await runProbe({ grpc: { port: grpcPort, ...(service ? { service } : {}) }, timeoutSeconds: 1 }, target(), signal);
    expect(outcome.result, outcome.output).toBe(result);
    if (output) expect(outcome.output).toMatch(output);
  });

  it('fails when nothing listens', async () => {
    expect((await runProbe({ grpc: { port: 1 }, timeoutSeconds: 1 }, target(), signal)).result).toBe('Failure');
  });

  it('encodes and decodes the health messages', () => {
    expect(encodeHealthCheckRequest('')).toEqual(Buffer.from([0x0a, 0]));
    expect(encodeHealthCheckRequest('ab')).toEqual(Buffer.from([0x0a, 2, 0x61, 0x62]));
    expect(decodeHealthCheckResponse(Buffer.from([0x08, 1]))).toBe(1);
    expect(decodeHealthCheckResponse(Buffer.alloc(0))).toBe(0);
  });
});
