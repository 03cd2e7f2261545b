/**
 * The API client presenting a certificate manager's client certificate
 * (pkg/kubelet/certificate/transport.go addCertRotation), against a small TLS server that asks for
 * client certificates: requests present the current one; after a change new requests present the
 * new one, the old connections are closed, and an open watch ends cleanly (no error) so that its
 * reflector resumes at once from its last resourceVersion on the new certificate.
 */
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import type { TLSSocket } from 'node:tls';
import { KubeConfig } from '@kubernetes/client-node';
import { afterEach, describe, expect, it } from 'vitest';
import type { ApiError } from '../../src/client/api.ts';
import { createKubeClient } from '../../src/client/kubeClient.ts';
import { clientTemplate, generateNodeKey, makeCsr } from '../../src/certificate/csr.ts';
import { testCa } from '../support/csrSigner.ts';

const ca = testCa();
const pairFor = (node: string) => {
  const key = generateNodeKey();
  return { cert: ca.sign(makeCsr(key, clientTemplate(node)), { lifetimeMs: 3_600_000 }), key };
};

let server: Server | undefined;
afterEach(async () => {
  server?.closeAllConnections();
  await new Promise((resolve) => server?.close(resolve));
});

/** A server that records the client certificate's CN of each request, and keeps watches open. */
async function recordingServer(delayMs = 0) {
  const serverKey = generateNodeKey();
  const serverCert = ca.sign(makeCsr(serverKey, { commonName: 'apiserver', organizations: [], dnsNames: ['localhost'], ipAddresses: ['127.0.0.1'] }), { lifetimeMs: 3_600_000, usage: 'server' });
  const seen: { path: string; cn: string }[] = [];
  let closedSockets = 0;
  server = createServer({ key: serverKey, cert: serverCert, requestCert: true, rejectUnauthorized: false }, (req, res) => {
    const peer = (req.socket as TLSSocket).getPeerCertificate();
    seen.push({ path: req.url ?? '', cn: peer && 'subject' in peer && peer.subject ? String(peer.subject.CN) : '' });
    res.writeHead(200, { 'content-type': 'application/json' });
    if (req.url?.includes('watch=true')) res.write(`${JSON.stringify({ type: 'BOOKMARK', object: { metadata: { resourceVersion: '7' } } })}\n`);
    else setTimeout(() => res.end(JSON.stringify({ metadata: { name: 'n' } })), delayMs);
  });
  server.on('secureConnection', (socket) => socket.on('close', () => closedSockets++));
  await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
  return { url: `https://127.0.0.1:${(server.address() as AddressInfo).port}`, seen, closedSockets: () => closedSockets };
}

describe('the client certificate of a certificate manager', () => {
  it('is presented, and replaced on every connection when it changes; watches end cleanly and reopen with it', async () => {
    const api = await recordingServer();
    const config = new KubeConfig();
    config.loadFromOptions({
      clusters: [{ name: 'c', server: api.url, skipTLSVerify: true }],
      // The kubeconfig's own files (the not yet written kubelet-client-current.pem) are not read.
      users: [{ name: 'u', certFile: '/nonexistent/kubelet-client-current.pem', keyFile: '/nonexistent/kubelet-client-current.pem' }],
      contexts: [{ name: 'c', cluster: 'c', user: 'u' }],
      currentContext: 'c',
    });
    let pair: { cert: string; key: string } | null = null;
    const listeners = new Set<() => void>();
    const source = { current: () => pair, onChange: (l: () => void) => (listeners.add(l), () => listeners.delete(l)) };
    let rotations = 0;
    const client = createKubeClient(config, { requestTimeoutMs: 5_000, userAgent: 't', clientCertificate: source, onCertificateRotation: () => rotations++ });

    // None yet: the requests go without one (as the kubelet's, until the first is issued).
    await client.getNode('n');
    expect(api.seen.at(-1)).toEqual({ path: '/api/v1/nodes/n', cn: '' });

    pair = pairFor('n1');
    for (const listener of listeners) listener();
    await client.getNode('n');
    expect(api.seen.at(-1)?.cn).toBe('system:node:n1');

    // A watch open on the first certificate.
    const ended: (ApiError | undefined)[] = [];
    let bookmark = '';
    client.watchPods('spec.nodeName=n', '5', { onEvent: () => {}, onBookmark: (v) => (bookmark = v), onEnd: (err) => ended.push(err) });
    await expect.poll(() => bookmark).toBe('7');
    expect(api.seen.at(-1)).toMatchObject({ cn: 'system:node:n1' });
    expect(api.seen.at(-1)?.path).toContain('watch=true');

    const closedBefore = api.closedSockets();
    pair = pairFor('n2');
    for (const listener of listeners) listener();
    expect(rotations).toBe(2);
    // The watch ended without an error: a reflector resumes it at once.
    expect(ended).toEqual([undefined]);
    await expect.poll(() => api.closedSockets()).toBeGreaterThan(closedBefore);

    await client.getNode('n');
    expect(api.seen.at(-1)?.cn).toBe('system:node:n2');
    const resumed = client.watchPods('spec.nodeName=n', '7', { onEvent: () => {}, onBookmark: () => {}, onEnd: () => {} });
    await expect.poll(() => api.seen.at(-1)?.path ?? '').toContain('resourceVersion=7');
    expect(api.seen.at(-1)?.cn).toBe('system:node:n2');
    resumed.stop();
  });

  it('lets the requests in flight on the old connections finish: none fails across rotations', async () => {
    const api = await recordingServer(20);
    const config = new KubeConfig();
    config.loadFromOptions({ clusters: [{ name: 'c', server: api.url, skipTLSVerify: true }], users: [{ name: 'u' }], contexts: [{ name: 'c', cluster: 'c', user: 'u' }], currentContext: 'c' });
    let pair = pairFor('n1');
    const listeners = new Set<() => void>();
    const client = createKubeClient(config, { requestTimeoutMs: 5_000, userAgent: 't', clientCertificate: { current: () => pair, onChange: (l) => (listeners.add(l), () => listeners.delete(l)) } });
    const requests: Promise<unknown>[] = [];
    for (let rotation = 0; rotation < 5; rotation++) {
      for (let i = 0; i < 20; i++) requests.push(client.patchNodeStatus('n', {}));
      // Rotated while those are on the wire (the server answers after 20 ms).
      await new Promise((resolve) => setTimeout(resolve, 5));
      pair = pairFor(`n${rotation + 2}`);
      for (const listener of listeners) listener();
    }
    const results = await Promise.allSettled(requests);
    expect(results.filter((r) => r.status === 'rejected')).toEqual([]);
    expect(api.seen.filter((s) => s.path === '/api/v1/nodes/n/status')).toHaveLength(100);
  });
});
