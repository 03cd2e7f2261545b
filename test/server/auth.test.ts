/** Who may call the authenticated API (auth.ts): the kubelet's request attributes, authentication order, caches and messages. */
import { describe, expect, it } from 'vitest';
import { ApiError } from '../../src/client/api.ts';
import { RequestAuth, certificateUser, requestAttributes } from '../../src/server/auth.ts';
import { MemoryApi } from '../support/memoryApi.ts';

describe('requestAttributes', () => {
  it.each<[string, string, unknown]>([
    ['GET', '/containerLogs/ns/p/c', { verb: 'get', subresource: 'proxy' }],
    ['POST', '/exec/ns/p/c', { verb: 'create', subresource: 'proxy' }],
    ['GET', '/pods', { verb: 'get', subresource: 'proxy' }],
    ['GET', '/metrics/resource', { verb: 'get', subresource: 'metrics' }],
    ['GET', '/stats/summary', { verb: 'get', subresource: 'stats' }],
    ['GET', '/logs/', { verb: 'get', subresource: 'log' }],
    ['GET', '/metricsfoo', { verb: 'get', subresource: 'proxy' }],
    ['OPTIONS', '/pods', { verb: '', subresource: 'proxy' }],
  ])('%s %s', (method, path, expected) => expect(requestAttributes(method, path)).toEqual(expected));
});

describe('certificateUser', () => {
  it('takes CN as the user and O as groups', () => {
    expect(certificateUser({ CN: 'kube-apiserver-kubelet-client', O: 'system:masters' })).toEqual({ username: 'kube-apiserver-kubelet-client', groups: ['system:masters'] });
    expect(certificateUser({ CN: 'x', O: ['a', 'b'] })?.groups).toEqual(['a', 'b']);
    expect(certificateUser({})).toBeNull();
  });
});

describe('RequestAuth', () => {
  const setUp = (anonymous = false) => {
    let now = 0;
    const api = new MemoryApi();
    api.users.set('good', { username: 'ana', groups: ['devs'] });
    const auth = new RequestAuth({ anonymous, tokenReview: api, accessReview: api, nodeName: 'node-a', now: () => now });
    return { api, auth, advance: (ms: number) => (now += ms) };
  };

  it('accepts a certificate user first, then a token the API server vouches for (asked once in 2 min); anything else is 401', async () => {
    const { api, auth, advance } = setUp();
    expect(await auth.authenticate({ username: 'cert', groups: [] }, 'Bearer good')).toEqual({ user: { username: 'cert', groups: [] } });
    expect(await auth.authenticate(null, 'Bearer good')).toEqual({ user: { username: 'ana', groups: ['devs'] } });
    await auth.authenticate(null, 'Bearer good');
    expect(api.count('createTokenReview')).toBe(1);
    advance(120_001);
    await auth.authenticate(null, 'Bearer good');
    expect(api.count('createTokenReview')).toBe(2);
    expect(await auth.authenticate(null, 'Bearer bad')).toEqual({ status: 401, message: 'Unauthorized' });
    expect(await auth.authenticate(null, undefined)).toEqual({ status: 401, message: 'Unauthorized' });
    api.failNext('createTokenReview', new ApiError(0, '', 'ECONNREFUSED', 'POST tokenreviews'));
    expect(await auth.authenticate(null, 'Bearer other')).toEqual({ status: 401, message: 'Unauthorized' });
  });

  it('lets requests without credentials in as system:anonymous only when told', async () => {
    expect(await setUp(true).auth.authenticate(null, undefined)).toEqual({ user: { username: 'system:anonymous', groups: ['system:unauthenticated'] } });
  });

  it('asks SubjectAccessReview for nodes/<subresource>, keeps allowed answers 5 min and denials 30 s, and names what was refused', async () => {
    const { api, auth, advance } = setUp();
    const ana = { username: 'ana', groups: ['devs'] };
    expect(await auth.authorize(ana, 'GET', '/containerLogs/a/b/c')).toEqual({ status: 403, message: 'Forbidden (user=ana, verb=get, resource=nodes, subresource=proxy)' });
    api.grants.add('ana get proxy');
    expect(await auth.authorize(ana, 'GET', '/containerLogs/a/b/c')).toMatchObject({ status: 403 });
    advance(30_001);
    expect(await auth.authorize(ana, 'GET', '/containerLogs/a/b/c')).toEqual({ user: ana });
    api.grants.delete('ana get proxy');
    advance(299_000);
    expect(await auth.authorize(ana, 'GET', '/pods')).toEqual({ user: ana });
    expect(api.count('createSubjectAccessReview')).toBe(2);
    api.failNext('createSubjectAccessReview', new ApiError(0, '', 'ECONNREFUSED', 'POST subjectaccessreviews'));
    expect(await auth.authorize(ana, 'GET', '/metrics')).toEqual({ status: 500, message: 'Authorization error (user=ana, verb=get, resource=nodes, subresource=metrics)' });
  });
});
