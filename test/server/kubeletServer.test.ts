/** The authenticated API in-process (kubeletServer.ts): TLS, client certificates, refusals and containerLogs, against a log file on disk. */
import { X509Certificate } from 'node:crypto';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import https from 'node:https';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Pod } from '../../src/api/types.ts';
import { agentDefaults } from '../../src/cli/config.ts';
import { configz } from '../../src/cli/options.ts';
import { silentLogger } from '../../src/log.ts';
import { RequestAuth } from '../../src/server/auth.ts';
import { type ClosableCertificateSource, selfSignedServingPair } from '../../src/server/servingSources.ts';
import { realClock } from '../../src/clock.ts';
import type { ListeningServer } from '../../src/server/http.ts';
import { startKubeletServer } from '../../src/server/kubeletServer.ts';
import { StatsProvider } from '../../src/stats/provider.ts';
import { SimEngine } from '../../src/runtime/sim/engine.ts';
import { inProcessRuntime } from '../support/inProcessRuntime.ts';
import { containerConfig, podSandboxConfig } from '../runtime/support.ts';
import { type KubeletClientPki, writeKubeletClientPki } from '../support/kubeletClientPki.ts';
import { noStreaming } from '../support/noStreaming.ts';

let dir: string;
let pki: KubeletClientPki;
let server: ListeningServer;
let certificate: ClosableCertificateSource;
const engine = new SimEngine({ pullDelayMs: 0 });
const HOST = { bootTime: Date.UTC(2026, 0, 1), cpuNanoseconds: 5e9, memTotalBytes: 8 << 30, memFreeBytes: 6 << 30, inactiveFileBytes: 1 << 30, swapTotalBytes: 0, swapFreeBytes: 0 };

const pod = {
  metadata: { name: 'web', namespace: 'shop', uid: 'u1' },
  spec: { containers: [{ name: 'app', image: 'busybox' }] },
  status: { phase: 'Running', containerStatuses: [{ name: 'app', containerID: 'sim://c1', state: { running: {} }, lastState: {}, ready: true, restartCount: 0, image: '', imageID: '' }] },
} as unknown as Pod;

beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'statelet-server-'));
  pki = await writeKubeletClientPki(dir);
  const sandbox = engine.runPodSandbox(podSandboxConfig('web', { metadata: { name: 'web', namespace: 'shop', uid: 'u1', attempt: 0 } }));
  engine.startContainer(engine.createContainer(sandbox, containerConfig('app', { command: ['sleep', 'infinity'] })));
  const logFile = path.join(dir, '0.log');
  await writeFile(logFile, ['one', 'two', 'three'].map((l) => `2026-11-25T10:00:00.000000001Z stdout F ${l}\n`).join(''));
  certificate = await selfSignedServingPair({ certDir: path.join(dir, 'pki'), host: 'node-a', addresses: ['127.0.0.1'], clock: realClock, log: silentLogger, reload: true });
  const clientCA = await readFile(pki.caFile, 'utf8');
  server = await startKubeletServer('127.0.0.1', 0, {
    view: { pods: () => [pod], unhealthyReason: () => null, hangingCalls: () => ['StopContainer (app) for pod shop/web: no answer for 95s'], metrics: async () => 'm 1\n', probeMetrics: async () => 'p 1\n' },
    pods: () => [pod],
    runtime: {
      containerStatus: async () => ({ logPath: logFile, state: 'CONTAINER_EXITED' }) as never,
      listContainers: async () =>
        [
          { id: 'c1', image: 'busybox:1', metadata: { name: 'app', attempt: 0 }, labels: { 'io.kubernetes.pod.name': 'web', 'io.kubernetes.pod.namespace': 'shop', 'io.kubernetes.pod.uid': 'u1', 'io.kubernetes.container.name': 'app' } },
          { id: 'c2', image: 'busybox:1', metadata: { name: 'side', attempt: 0 }, labels: { 'io.kubernetes.pod.name': 'web', 'io.kubernetes.pod.namespace': 'shop', 'io.kubernetes.pod.uid': 'u1', 'io.kubernetes.container.name': 'side' } },
          { id: 'x', image: 'pause', metadata: { name: 'unlabelled', attempt: 0 }, labels: {} },
        ] as never,
      ...noStreaming,
    },
    configz: () => configz(agentDefaults() as never),
    stats: new StatsProvider({ nodeName: 'node-a', runtime: inProcessRuntime(engine), podLogsDir: dir, now: Date.now, log: silentLogger, readHost: async () => HOST }),
    auth: new RequestAuth({ anonymous: false, nodeName: 'node-a', now: Date.now }),
    tls: { certificate, clientCA: { current: () => clientCA, onChange: () => () => {} }, settings: { minVersion: 'TLSv1.2' } },
    now: Date.now,
    log: silentLogger,
  });
});

afterAll(async () => {
  await server?.close();
  certificate?.close();
  await engine.close();
  await rm(dir, { recursive: true, force: true });
});

async function get(urlPath: string, withCertificate = true): Promise<{ status: number; body: string }> {
  const client = withCertificate ? { cert: await readFile(pki.certFile), key: await readFile(pki.keyFile) } : {};
  return new Promise((resolve, reject) => {
    const req = https.request(`https://127.0.0.1:${server.port}${urlPath}`, { rejectUnauthorized: false, ...client }, (res) => {
      let body = '';
      res.on('data', (chunk: Buffer) => (body += chunk.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('error', reject);
    req.end();
  });
}

describe('the authenticated API', () => {
  it('refuses a caller without credentials with 401, and serves one with a client certificate of the CA', async () => {
    expect(await get('/pods', false)).toEqual({ status: 401, body: 'Unauthorized' });
    const pods = await get('/pods');
    expect(pods.status).toBe(200);
    expect(JSON.parse(pods.body).items[0].metadata.name).toBe('web');
    expect(await get('/healthz')).toEqual({ status: 200, body: 'ok' });
    // A hanging call is named, and leaves the node healthy.
    expect(await get('/healthz?verbose')).toEqual({ status: 200, body: '[+]ping ok\n[+]syncloop ok\nruntime calls not returning (each holds its pod only):\n  StopContainer (app) for pod shop/web: no answer for 95s\nhealthz check passed\n' });
  });

  it('serves a container log with its options, and names what it cannot find', async () => {
    expect(await get('/containerLogs/shop/web/app')).toEqual({ status: 200, body: 'one\ntwo\nthree\n' });
    expect((await get('/containerLogs/shop/web/app?tailLines=1&timestamps=true')).body).toBe('2026-11-25T10:00:00.000000001Z three\n');
    expect(await get('/containerLogs/shop/nope/app')).toEqual({ status: 404, body: 'pod "nope" does not exist' });
    expect(await get('/containerLogs/shop/web/db')).toEqual({ status: 404, body: 'container "db" not found in pod "web"' });
    expect(await get('/containerLogs/shop/web/app?tailLines=-5')).toEqual({ status: 422, body: '{"message": "Invalid request."}' });
    expect(await get('/containerLogs/shop/web/app?previous=true')).toEqual({ status: 400, body: 'previous terminated container "app" in pod "web" not found' });
  });

  it('lists the pods the runtime runs at /runningpods/, and the configuration in effect at /configz', async () => {
    expect(JSON.parse((await get('/runningpods/')).body)).toEqual({
      kind: 'PodList',
      apiVersion: 'v1',
      metadata: {},
      items: [{ metadata: { name: 'web', namespace: 'shop', uid: 'u1' }, spec: { containers: [{ name: 'app', image: 'busybox:1' }, { name: 'side', image: 'busybox:1' }] } }],
    });
    const config = JSON.parse((await get('/configz')).body).kubeletconfig;
    expect(config).toMatchObject({ kind: 'KubeletConfiguration', apiVersion: 'kubelet.config.k8s.io/v1beta1', syncFrequency: '1m0s', maxPods: 110, containerLogMaxSize: '10Mi', crashLoopBackOff: { maxContainerRestartPeriod: '5m0s' } });
  });

  it("serves /stats/summary and /metrics/resource from the runtime's stats", async () => {
    const summary = JSON.parse((await get('/stats/summary?only_cpu_and_memory=true')).body);
    expect(summary.node).toMatchObject({ nodeName: 'node-a', startTime: '2026-01-01T00:00:00Z', memory: { workingSetBytes: 1 << 30 } });
    expect(summary.pods.map((p: { podRef: { name: string }; containers: { name: string }[] }) => [p.podRef.name, p.containers.map((c) => c.name)])).toEqual([['web', ['app']]]);
    const metrics = (await get('/metrics/resource')).body;
    expect(metrics).toMatch(/^container_memory_working_set_bytes\{container="app",namespace="shop",pod="web"\} \d+ \d+$/m);
    expect(metrics).toContain('resource_scrape_error 0\n');
  });

  it('keeps its self-signed certificate for the node name and addresses, and reuses it', async () => {
    const cert = new X509Certificate(await readFile(path.join(dir, 'pki', 'kubelet.crt')));
    expect(cert.subjectAltName).toBe('DNS:node-a, IP Address:127.0.0.1');
    const again = await selfSignedServingPair({ certDir: path.join(dir, 'pki'), host: 'node-a', addresses: [], clock: realClock, log: silentLogger, reload: false });
    expect(new X509Certificate(again.current()!.cert).fingerprint256).toBe(cert.fingerprint256);
    again.close();
  });
});
