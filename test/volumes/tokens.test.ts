/** The token manager's refresh rule (token_manager.go requiresRefresh), table-tested, and its cache against the in-memory API. */
import { describe, expect, it } from 'vitest';
import { ApiError } from '../../src/client/api.ts';
import { TokenManager, tokenNeedsRefresh } from '../../src/volumes/tokens.ts';
import { MemoryApi } from '../support/memoryApi.ts';

const HOUR = 3_600_000;

describe('tokenNeedsRefresh', () => {
  // Issued at 0 for 600 s: due at 480 s (80 %), earlier by the jitter.
  const short = { expiresAtMs: 600_000, expirationSeconds: 600 };
  // Issued at 0 for 48 h: due at 24 h.
  const long = { expiresAtMs: 48 * HOUR, expirationSeconds: 48 * 3600 };
  it.each<[string, { expiresAtMs: number; expirationSeconds: number }, number, number, boolean]>([
    ['fresh', short, 100_000, 0, false],
    ['just before 80 %', short, 480_000, 0, false],
    ['past 80 %', short, 480_001, 0, true],
    ['before 80 %, but within the jitter', short, 471_001, 9_000, true],
    ['a 48 h token at 23 h', long, 23 * HOUR, 0, false],
    ['a 48 h token past 24 h', long, 24 * HOUR + 1, 0, true],
    ['issued in the future (the clock went back)', short, -1, 0, true],
  ])('%s', (_, token, now, jitter, due) => {
    expect(tokenNeedsRefresh(token, now, jitter)).toBe(due);
  });
});

describe('TokenManager', () => {
  const setUp = () => {
    let now = 1_000_000;
    const api = new MemoryApi();
    api.tokenClock = () => now;
    const logs: string[] = [];
    const tokens = new TokenManager(api, () => now, (_, message, fields) => logs.push(`${message} ${JSON.stringify(fields)}`), () => 0);
    return { api, tokens, logs, advance: (ms: number) => (now += ms) };
  };
  const request = (uid = 'u1') => ({ namespace: 'shop', serviceAccount: 'default', expirationSeconds: 600, pod: { name: 'web', uid } });

  it('asks the TokenRequest API once, bound to the pod, and again past 80 % of the lifetime', async () => {
    const { api, tokens, advance } = setUp();
    expect(await Promise.all([tokens.token(request()), tokens.token(request())])).toEqual(['token-1', 'token-1']);
    expect(api.tokenRequests).toEqual([{ namespace: 'shop', serviceAccount: 'default', spec: { expirationSeconds: 600, boundObjectRef: { apiVersion: 'v1', kind: 'Pod', name: 'web', uid: 'u1' } } }]);
    advance(470_000);
    expect(await tokens.token(request())).toBe('token-1');
    advance(20_000);
    expect(await tokens.token(request())).toBe('token-2');
  });

  it('passes the audience, and keeps tokens of other pods and audiences apart', async () => {
    const { api, tokens } = setUp();
    await tokens.token({ ...request(), audience: 'vault' });
    await tokens.token(request('u2'));
    expect(api.tokenRequests.map((r) => r.spec.audiences)).toEqual([['vault'], undefined]);
    expect(tokens.size).toBe(2);
  });

  it('keeps the old token while it is valid when a refresh fails, and then fails with the kubelet messages', async () => {
    const { api, tokens, logs, advance } = setUp();
    api.failNext('createServiceAccountToken', new ApiError(403, 'Forbidden', 'no', 'POST serviceaccounts/token shop/default'));
    await expect(tokens.token(request())).rejects.toThrow('failed to fetch token: POST serviceaccounts/token shop/default: 403 Forbidden: no');
    await tokens.token(request());
    advance(500_000);
    api.failNext('createServiceAccountToken', new ApiError(0, '', 'connect ECONNREFUSED', 'POST serviceaccounts/token shop/default'));
    expect(await tokens.token(request())).toBe('token-1');
    expect(logs.join('\n')).toContain("Couldn't update token");
    expect(logs.join('\n')).not.toContain('token-1');
    advance(200_000);
    api.failNext('createServiceAccountToken', new ApiError(0, '', 'connect ECONNREFUSED', 'POST serviceaccounts/token shop/default'));
    await expect(tokens.token(request())).rejects.toThrow(/^token .* expired and refresh failed: /);
  });

  it('forgets the tokens of a pod, and collects expired ones', async () => {
    const { tokens, advance } = setUp();
    await tokens.token(request('u1'));
    await tokens.token(request('u2'));
    tokens.forgetPod('u1');
    expect(tokens.size).toBe(1);
    advance(601_000);
    expect(tokens.collectExpired()).toBe(1);
    expect(tokens.size).toBe(0);
  });
});
