/**
 * The client over @kubernetes/client-node against a small HTTP server: how a watch's refusal is
 * classified. client-go's reflector lists again on 410 Gone however it comes (an ERROR event in
 * the stream, as the API server's watch cache sends it, or the request's own status), so the
 * agent must see the status either way.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { KubeConfig } from '@kubernetes/client-node';
import { afterEach, describe, expect, it } from 'vitest';
import { type ApiError, isForbidden, isGone } from '../../src/client/api.ts';
import { createKubeClient } from '../../src/client/kubeClient.ts';

let server: Server | undefined;

afterEach(async () => {
  server?.closeAllConnections();
  await new Promise((resolve) => server?.close(resolve));
});

/** A client of a server that answers every request with `status` and `body`. */
async function clientOf(status: number, body: string) {
  server = createServer((_, res) => {
    res.writeHead(status, { 'content-type': 'application/json' });
    res.end(body);
  });
  await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
  const config = new KubeConfig();
  config.loadFromOptions({
    clusters: [{ name: 'test', server: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, skipTLSVerify: true }],
    users: [{ name: 'node' }],
    contexts: [{ name: 'test', cluster: 'test', user: 'node' }],
    currentContext: 'test',
  });
  return createKubeClient(config, { requestTimeoutMs: 5_000, userAgent: 'statelet-test' });
}

/** Watches pods from version 5: how the watch ended. */
function watchEnd(api: Awaited<ReturnType<typeof clientOf>>): Promise<ApiError | undefined> {
  return new Promise((resolve) => api.watchPods('spec.nodeName=n', '5', { onEvent: () => {}, onEnd: resolve }));
}

const expired = JSON.stringify({ kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message: 'too old resource version: 5 (9)', reason: 'Expired', code: 410 });

describe('a refused watch', () => {
  it('is Gone when the API server says so in an ERROR event', async () => {
    const err = await watchEnd(await clientOf(200, `{"type":"ERROR","object":${expired}}\n`));
    expect(isGone(err)).toBe(true);
  });

  it('is Gone when the request itself is answered 410', async () => {
    const err = await watchEnd(await clientOf(410, expired));
    expect(err).toMatchObject({ status: 410, call: 'WATCH pods spec.nodeName=n' });
    expect(isGone(err)).toBe(true);
  });

  it('keeps any other status of the request: a 403 is the node identity refused', async () => {
    const err = await watchEnd(await clientOf(403, '{"kind":"Status","code":403,"reason":"Forbidden"}'));
    expect(err?.status).toBe(403);
    expect(isForbidden(err)).toBe(true);
  });
});
