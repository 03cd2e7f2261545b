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

interface Answer {
  status: number;
  body: string;
  headers?: Record<string, string>;
}

/** A client of a server that answers every request with `status` and `body`, or the `n`th request with `answer(n)`. */
async function clientOf(status: number, body: string, answer: (n: number) => Answer = () => ({ status, body })) {
  let requests = 0;
  server = createServer((_, res) => {
    const { status, body, headers } = answer(++requests);
    res.writeHead(status, { 'content-type': 'application/json', ...headers });
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
  return new Promise((resolve) => api.watchPods('spec.nodeName=n', '5', { onEvent: () => {}, onBookmark: () => {}, onEnd: resolve }));
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

describe('a request the API server asks to retry later', () => {
  const node = JSON.stringify({ kind: 'Node', apiVersion: 'v1', metadata: { name: 'n' } });
  const tooMany = { status: 429, body: 'Too many requests, please try again later.\n', headers: { 'retry-after': '0' } };

  it('is sent again after its Retry-After, as client-go does (429, and 5xx alike)', async () => {
    const seen: number[] = [];
    const api = await clientOf(0, '', (n) => {
      seen.push(n);
      if (n === 1) return tooMany;
      if (n === 2) return { status: 503, body: '{"kind":"Status","code":503}', headers: { 'retry-after': '0' } };
      return { status: 200, body: node };
    });
    expect((await api.getNode('n')).metadata.name).toBe('n');
    expect(seen).toEqual([1, 2, 3]);
  });

  it('fails at once without Retry-After, and after 10 retries with it', async () => {
    let asked = 0;
    const refused = await clientOf(500, '{"kind":"Status","code":500,"reason":"InternalError"}', () => {
      asked++;
      return { status: 500, body: '{"kind":"Status","code":500,"reason":"InternalError"}' };
    });
    await expect(refused.getNode('n')).rejects.toMatchObject({ status: 500 });
    expect(asked).toBe(1);
    server?.closeAllConnections();
    await new Promise((resolve) => server?.close(resolve));

    let throttled = 0;
    const busy = await clientOf(0, '', () => {
      throttled++;
      return tooMany;
    });
    await expect(busy.getNode('n')).rejects.toMatchObject({ status: 429 });
    expect(throttled).toBe(11);
  });
});

describe('its connections to the API server', () => {
  it('are kept open from one call to the next (the library alone opens one per call)', async () => {
    const api = await clientOf(200, JSON.stringify({ kind: 'Node', apiVersion: 'v1', metadata: { name: 'n' } }));
    let connections = 0;
    server!.on('connection', () => connections++);
    for (let i = 0; i < 5; i++) expect((await api.getNode('n')).metadata.name).toBe('n');
    await Promise.all(Array.from({ length: 3 }, () => api.getNode('n')));
    expect(connections).toBeLessThanOrEqual(3);
    expect(connections).toBeGreaterThanOrEqual(1);
  });
});

describe('a watch BOOKMARK', () => {
  it('is passed on as its version alone, never as an object event', async () => {
    // As the API server sends it: an object of the watched kind with only metadata.resourceVersion.
    const bookmark = JSON.stringify({ type: 'BOOKMARK', object: { kind: 'Pod', apiVersion: 'v1', metadata: { resourceVersion: '12746', annotations: { 'k8s.io/initial-events-end': 'true' } } } });
    const api = await clientOf(200, `${bookmark}\n`);
    const seen: string[] = [];
    await new Promise<void>((resolve) =>
      api.watchPods('spec.nodeName=n', '5', {
        onEvent: (type) => void seen.push(`event ${type}`),
        onBookmark: (version) => void seen.push(`bookmark ${version}`),
        onEnd: () => resolve(),
      }),
    );
    expect(seen).toEqual(['bookmark 12746']);
  });
});
