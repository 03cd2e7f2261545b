/**
 * The client over @kubernetes/client-node against a small HTTP server: how a watch's refusal is
 * classified. client-go's reflector lists again on 410 Gone however it comes (an ERROR event in
 * the stream, as the API server's watch cache sends it, or the request's own status), so the
 * agent must see the status either way.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { KubeConfig } from '@kubernetes/client-node';
import { afterEach, describe, expect, it, vi } from 'vitest';
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

describe('pods as the node keeps them', () => {
  it('come from a watch and a list with their kind, without managedFields (the apply bookkeeping no node reads) and without null members', async () => {
    const managedFields = [{ manager: 'kube-controller-manager', operation: 'Update', apiVersion: 'v1', fieldsType: 'FieldsV1', fieldsV1: { 'f:spec': { 'f:containers': {} } } }];
    const pod = {
      metadata: { name: 'web', namespace: 'ns-1', uid: 'u1', resourceVersion: '9', labels: { app: 'web' }, managedFields },
      spec: { nodeName: 'n', containers: [] },
      status: { conditions: [{ type: 'Ready', status: 'True', lastProbeTime: null, lastTransitionTime: '2026-11-27T10:00:00Z' }] },
    };
    const api = await clientOf(200, `${JSON.stringify({ type: 'ADDED', object: pod })}\n`);
    const seen: unknown[] = [];
    await new Promise<void>((resolve) => api.watchPods('spec.nodeName=n', '5', { onEvent: (_type, object) => void seen.push(object), onBookmark: () => {}, onEnd: () => resolve() }));
    const { managedFields: _, ...metadata } = pod.metadata;
    expect(seen).toStrictEqual([
      { apiVersion: 'v1', kind: 'Pod', metadata, spec: pod.spec, status: { conditions: [{ type: 'Ready', status: 'True', lastTransitionTime: '2026-11-27T10:00:00Z' }] } },
    ]);
  });
});

describe('the writes of every pod start (its status, its events), sent as plain JSON', () => {
  interface Seen {
    method: string;
    url: string;
    headers: Record<string, string | string[] | undefined>;
    body: string;
  }
  /** A client of a server that records each request and answers it with `answer`. */
  async function recordingClient(answer: (seen: Seen) => Answer, serverPath = '') {
    const seen: Seen[] = [];
    let connections = 0;
    server = createServer((req, res) => {
      let body = '';
      req.on('data', (chunk: Buffer) => (body += chunk.toString()));
      req.on('end', () => {
        const request = { method: req.method ?? '', url: req.url ?? '', headers: req.headers, body };
        seen.push(request);
        const { status, body: text, headers } = answer(request);
        res.writeHead(status, { 'content-type': 'application/json', ...headers });
        res.end(text);
      });
    });
    server.on('connection', () => connections++);
    await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
    const config = new KubeConfig();
    config.loadFromOptions({
      clusters: [{ name: 'test', server: `http://127.0.0.1:${(server.address() as AddressInfo).port}${serverPath}`, skipTLSVerify: true }],
      users: [{ name: 'node', token: 'node-token' }],
      contexts: [{ name: 'test', cluster: 'test', user: 'node' }],
      currentContext: 'test',
    });
    return { api: createKubeClient(config, { requestTimeoutMs: 5_000, userAgent: 'statelet-test' }), seen, connections: () => connections, config };
  }

  it('patch a pod\'s status as a strategic merge patch with the node\'s credentials, give back the pod the server answered, and delete it', async () => {
    const pod = { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'web', namespace: 'ns-1', uid: 'u1' }, spec: { containers: [] }, status: { phase: 'Running' } };
    const { api, seen } = await recordingClient(() => ({ status: 200, body: JSON.stringify(pod) }));
    const patch = { metadata: { uid: 'u1' }, status: { phase: 'Running', conditions: [{ type: 'Ready', status: 'True', reason: null }] } };
    expect(await api.patchPodStatus('ns-1', 'web', patch)).toEqual(pod);
    expect(seen[0]).toMatchObject({ method: 'PATCH', url: '/api/v1/namespaces/ns-1/pods/web/status' });
    expect(seen[0]!.headers).toMatchObject({ 'content-type': 'application/strategic-merge-patch+json', authorization: 'Bearer node-token', 'user-agent': 'statelet-test' });
    expect(JSON.parse(seen[0]!.body)).toEqual(patch);
    // Deleted with grace 0 and the UID as precondition (a new pod of the same name is left alone).
    await api.deletePod('ns-1', 'web', { gracePeriodSeconds: 0, uid: 'u1' });
    expect(seen[1]).toMatchObject({ method: 'DELETE', url: '/api/v1/namespaces/ns-1/pods/web' });
    expect(JSON.parse(seen[1]!.body)).toEqual({ apiVersion: 'v1', kind: 'DeleteOptions', gracePeriodSeconds: 0, preconditions: { uid: 'u1' } });
  });

  it('ask the library for the credentials once for many requests, and again after a 401 (a renewed token)', async () => {
    let unauthorized = false;
    const { api, seen, config } = await recordingClient((req) =>
      unauthorized ? { status: 401, body: JSON.stringify({ kind: 'Status', code: 401, reason: 'Unauthorized', message: 'Unauthorized' }) } : { status: 201, body: req.body },
    );
    const asked = vi.spyOn(config, 'applySecurityAuthentication');
    const event = { apiVersion: 'v1', kind: 'Event', metadata: { name: 'e1', namespace: 'ns-1' }, reason: 'Started', message: 'Started container app' };
    for (let i = 0; i < 3; i++) await api.createEvent(event as never);
    expect(asked).toHaveBeenCalledTimes(1);
    unauthorized = true;
    await expect(api.createEvent(event as never)).rejects.toMatchObject({ status: 401 });
    unauthorized = false;
    (config.getCurrentUser() as { token: string }).token = 'renewed-token';
    await api.createEvent(event as never);
    expect(asked).toHaveBeenCalledTimes(2);
    expect(seen.map((s) => s.headers.authorization)).toEqual(['Bearer node-token', 'Bearer node-token', 'Bearer node-token', 'Bearer node-token', 'Bearer renewed-token']);
  });

  it('create and patch events; a refusal is an ApiError with the Status\'s reason; Retry-After is honoured; the connection is shared', async () => {
    let n = 0;
    const { api, seen, connections } = await recordingClient((req) => {
      n++;
      if (n === 1) return { status: 429, body: 'slow down', headers: { 'retry-after': '0' } };
      if (req.method === 'PATCH') return { status: 404, body: JSON.stringify({ kind: 'Status', code: 404, reason: 'NotFound', message: 'events "e1" not found' }) };
      return { status: 201, body: req.body };
    });
    const event = { apiVersion: 'v1', kind: 'Event', metadata: { name: 'e1', namespace: 'ns-1' }, reason: 'Started', message: 'Started container app' };
    expect(await api.createEvent(event as never)).toEqual(event);
    expect(seen.map((s) => `${s.method} ${s.url}`)).toEqual(['POST /api/v1/namespaces/ns-1/events', 'POST /api/v1/namespaces/ns-1/events']);
    await expect(api.patchEvent('ns-1', 'e1', { count: 2 })).rejects.toMatchObject({ status: 404, reason: 'NotFound', message: 'PATCH events ns-1/e1: 404 NotFound: events "e1" not found' });
    expect(seen[2]!.headers['content-type']).toBe('application/merge-patch+json');
    expect(connections()).toBe(1);
  });
  it('every other call: its method, path and content type, under the path of a server URL that has one (a proxy in front of the API server)', async () => {
    const { api, seen } = await recordingClient((req) => {
      if (req.url.endsWith('/token')) return { status: 201, body: JSON.stringify({ spec: { expirationSeconds: 600 }, status: { token: 't', expirationTimestamp: '2026-01-01T00:00:00Z' } }) };
      if (req.url.endsWith('/tokenreviews')) return { status: 201, body: JSON.stringify({ status: { authenticated: true, user: { username: 'u', groups: ['g'] } } }) };
      if (req.url.endsWith('/subjectaccessreviews')) return { status: 201, body: JSON.stringify({ status: { allowed: true } }) };
      if (req.method === 'GET' && req.url.includes('/pods?')) return { status: 200, body: JSON.stringify({ items: [], metadata: { resourceVersion: '7' } }) };
      return { status: 200, body: JSON.stringify({ metadata: { name: 'x', namespace: 'ns' } }) };
    }, '/k8s/clusters/c-1/');
    const node = { apiVersion: 'v1', kind: 'Node', metadata: { name: 'n 1' } };
    const lease = { apiVersion: 'coordination.k8s.io/v1', kind: 'Lease', metadata: { name: 'n', namespace: 'kube-node-lease' }, spec: {} };
    await api.createNode(node as never);
    await api.getNode('n 1');
    await api.patchNode('n', { metadata: { labels: { a: 'b' } } });
    await api.patchNodeStatus('n', { status: {} });
    await api.getLease('kube-node-lease', 'n');
    await api.createLease(lease as never);
    await api.updateLease(lease as never);
    expect((await api.listPods('spec.nodeName=n')).resourceVersion).toBe('7');
    await api.getPod('ns', 'p');
    await api.getConfigMap('ns', 'cm');
    await api.getSecret('ns', 's');
    expect((await api.createServiceAccountToken('ns', 'default', { audiences: ['a'], expirationSeconds: 600, boundObjectRef: { apiVersion: 'v1', kind: 'Pod', name: 'p', uid: 'u' } })).token).toBe('t');
    expect(await api.createTokenReview('tok')).toEqual({ authenticated: true, user: { username: 'u', groups: ['g'] } });
    expect(await api.createSubjectAccessReview({ user: { username: 'u', groups: ['g'] }, verb: 'get', resource: 'nodes', subresource: 'log', name: 'n' })).toEqual({ allowed: true });
    const prefix = '/k8s/clusters/c-1';
    expect(seen.map((r) => [r.method, r.url.slice(prefix.length), r.headers['content-type'] ?? null])).toEqual([
      ['POST', '/api/v1/nodes', 'application/json'],
      ['GET', '/api/v1/nodes/n%201', null],
      ['PATCH', '/api/v1/nodes/n', 'application/merge-patch+json'],
      ['PATCH', '/api/v1/nodes/n/status', 'application/strategic-merge-patch+json'],
      ['GET', '/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/n', null],
      ['POST', '/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases', 'application/json'],
      ['PUT', '/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/n', 'application/json'],
      ['GET', '/api/v1/pods?fieldSelector=spec.nodeName%3Dn', null],
      ['GET', '/api/v1/namespaces/ns/pods/p', null],
      ['GET', '/api/v1/namespaces/ns/configmaps/cm', null],
      ['GET', '/api/v1/namespaces/ns/secrets/s', null],
      ['POST', '/api/v1/namespaces/ns/serviceaccounts/default/token', 'application/json'],
      ['POST', '/apis/authentication.k8s.io/v1/tokenreviews', 'application/json'],
      ['POST', '/apis/authorization.k8s.io/v1/subjectaccessreviews', 'application/json'],
    ]);
    expect(seen.every((r) => r.url.startsWith(prefix) && r.headers.authorization === 'Bearer node-token')).toBe(true);
    expect(JSON.parse(seen[12]!.body)).toEqual({ apiVersion: 'authentication.k8s.io/v1', kind: 'TokenReview', spec: { token: 'tok' } });
    expect(JSON.parse(seen[13]!.body).spec.resourceAttributes).toEqual({ verb: 'get', resource: 'nodes', subresource: 'log', name: 'n', version: 'v1' });
  });
});
