/**
 * serverTLSBootstrap on a real HTTPS server on loopback (server/servingCertificateManager.ts):
 * the port is up but every handshake fails until the kubelet-serving CSR is approved and issued;
 * then the issued certificate (the node's name and addresses) is presented, and its renewal at the
 * deadline is presented to the next handshake. The CSR API is a fake with a test CA (no
 * controller approves serving requests anyway); the clock is the test's.
 */
import { X509Certificate } from 'node:crypto';
import { type Actor, createActor } from 'xstate';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import tls from 'node:tls';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Logger } from '../../src/log.ts';
import { AgentMetrics } from '../../src/server/metrics.ts';
import { type ServingCertificateManager, prepareServingCertificateManager } from '../../src/server/servingCertificateManager.ts';
import { NO_SERVING_CERTIFICATE } from '../../src/server/servingTls.ts';
import { testCa } from '../support/csrSigner.ts';
import { FakeCsrApi } from '../support/fakeCsrApi.ts';
import { type TestKubeletServer, startTestKubeletServer } from '../support/kubeletServerFixture.ts';
import { ManualClock } from '../support/manualClock.ts';
import { noStreaming } from '../support/noStreaming.ts';

const HOUR = 3_600_000;
let dir: string;
let server: TestKubeletServer;
let manager: ServingCertificateManager;
let actor: Actor<ServingCertificateManager['logic']> | undefined;
const clock = new ManualClock(Date.now());
const api = new FakeCsrApi(testCa());
const metrics = new AgentMetrics('node-a');
const lines: { message: string; fields?: Record<string, unknown> }[] = [];
const log: Logger = (_level, message, fields) => void lines.push({ message, ...(fields ? { fields } : {}) });

beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'statelet-serving-manager-'));
  manager = await prepareServingCertificateManager({
    certDir: path.join(dir, 'pki'),
    nodeName: 'node-a',
    addresses: [
      { type: 'InternalIP', address: '127.0.0.1' },
      { type: 'Hostname', address: 'node-a' },
    ],
    csrApi: () => api,
    metrics,
    clock,
    log,
  });
  // As the node's servingCertificateManager loop starts it.
  actor = createActor(manager.logic, { clock, input: manager.input });
  actor.start();
  server = await startTestKubeletServer(dir, { pods: () => [], runtime: { containerStatus: async () => null, listContainers: async () => [], ...noStreaming } as never, log, tls: { certificate: manager.source, settings: { minVersion: 'TLSv1.2' } } });
});

afterAll(async () => {
  actor?.stop();
  await server?.close();
  await rm(dir, { recursive: true, force: true });
});

function handshake(): Promise<X509Certificate> {
  return new Promise((resolve, reject) => {
    const socket = tls.connect({ host: '127.0.0.1', port: server.server.port, rejectUnauthorized: false }, () => {
      resolve(socket.getPeerX509Certificate()!);
      socket.destroy();
    });
    socket.on('error', reject);
  });
}

/** Runs the timers due now and lets the manager's effects run until `check` holds. */
async function until(check: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 1000; i++) {
    clock.runDue();
    if (check()) return;
    await new Promise((resolve) => setImmediate(resolve));
  }
  throw new Error(`never: ${what}`);
}

describe('serverTLSBootstrap', () => {
  it('fails every handshake until the kubelet-serving CSR is issued, then presents the certificate issued for the node', async () => {
    await until(() => api.names().length === 1, 'a CSR sent');
    const [name] = api.names();
    const csr = api.csrs.get(name!)!;
    expect(csr.spec.signerName).toBe('kubernetes.io/kubelet-serving');
    expect(csr.spec.usages).toEqual(['digital signature', 'server auth']);

    await expect(handshake()).rejects.toThrow();
    expect(await metrics.render()).toContain('kubelet_certificate_manager_server_ttl_seconds +Inf');
    expect(lines.find((line) => line.message === 'http: TLS handshake error')?.fields).toMatchObject({ err: NO_SERVING_CERTIFICATE });

    const changed = new Promise<void>((resolve) => manager.source.onChange(resolve));
    api.issue(name!, 10 * HOUR, new Date(clock.now()));
    await changed;
    const presented = await handshake();
    expect(presented.subject).toBe('O=system:nodes\nCN=system:node:node-a');
    expect(presented.issuer).toBe('CN=statelet-test-ca');
    expect(presented.subjectAltName).toBe('DNS:node-a, IP Address:127.0.0.1');
    expect(await metrics.render()).toContain(`kubelet_certificate_manager_server_ttl_seconds ${Math.trunc((new Date(presented.validTo).getTime() - clock.now()) / 1000)}`);
  });

  it('presents the renewed certificate to the next handshake once the deadline has passed and the new CSR is issued', async () => {
    const before = (await handshake()).fingerprint256;
    // The deadline is within 70–90 % of the ten hours.
    clock.advance(9 * HOUR);
    await until(() => api.names().length === 2, 'a second CSR sent');
    expect(await handshake().then((cert) => cert.fingerprint256)).toBe(before);
    const changed = new Promise<void>((resolve) => manager.source.onChange(resolve));
    api.issue(api.names()[1]!, 10 * HOUR, new Date(clock.now()));
    await changed;
    expect((await handshake()).fingerprint256).not.toBe(before);
  });
});
