/**
 * The agent's authenticated port as the command line sets it up (agent.ts with server/*): the
 * pair of --tls-cert-file/--tls-private-key-file presented and replaced when the files change,
 * --tls-min-version applied, and serverTLSBootstrap refused without an API server to ask.
 */
import { X509Certificate } from 'node:crypto';
import { mkdtemp, rename, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import tls from 'node:tls';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type CheckedPair, selfSignedPair } from '../../src/server/certificates.ts';
import { freePort } from '../support/agentProcess.ts';
import { waitFor } from '../support/controlPlane.ts';
import { type SimAgent, startSimAgent } from '../support/inProcessAgent.ts';

let dir: string;
let pairs: CheckedPair[];

beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'statelet-agent-serving-'));
  pairs = await Promise.all([0, 1].map(() => selfSignedPair('serving-node', ['127.0.0.1'], new Date())));
});

afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

function presented(url: string, options: tls.ConnectionOptions = {}): Promise<string> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = tls.connect({ host: hostname, port: Number(port), rejectUnauthorized: false, ...options }, () => {
      resolve(socket.getPeerX509Certificate()!.fingerprint256);
      socket.destroy();
    });
    socket.on('error', reject);
  });
}

const fingerprint = (pair: CheckedPair) => new X509Certificate(pair.cert).fingerprint256;

describe("the agent's serving certificate", () => {
  let node: SimAgent | undefined;
  afterAll(async () => node?.stop());

  it('presents --tls-cert-file, takes the new pair when the files change, and holds to --tls-min-version', async () => {
    const certFile = path.join(dir, 'serving.crt');
    const keyFile = path.join(dir, 'serving.key');
    await writeFile(certFile, pairs[0]!.cert);
    await writeFile(keyFile, pairs[0]!.key);
    node = await startSimAgent('serving-node', ['--port', String(await freePort()), '--tls-cert-file', certFile, '--tls-private-key-file', keyFile, '--tls-min-version', 'VersionTLS13']);
    const url = node.agent.kubeletUrl!;
    expect(await presented(url)).toBe(fingerprint(pairs[0]!));
    await expect(presented(url, { maxVersion: 'TLSv1.2' })).rejects.toThrow(/protocol version|alert/);

    await writeFile(`${keyFile}.new`, pairs[1]!.key);
    await writeFile(`${certFile}.new`, pairs[1]!.cert);
    await rename(`${keyFile}.new`, keyFile);
    await rename(`${certFile}.new`, certFile);
    await waitFor(async () => (await presented(url)) === fingerprint(pairs[1]!), 'the new pair presented', 10_000);
  });

  it('refuses serverTLSBootstrap without --kubeconfig: there is no API server to ask', async () => {
    await expect(startSimAgent('lonely-node', ['--port', String(await freePort()), '--rotate-server-certificates'])).rejects.toThrow(
      'serverTLSBootstrap (--rotate-server-certificates) requests the serving certificate from the API server: it needs --kubeconfig',
    );
  });
});
