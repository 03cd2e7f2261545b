import { describe, expect, it } from 'vitest';
import type { CertificateSigningRequest } from '../../src/api/cluster.ts';
import { ApiError, type WatchHandlers } from '../../src/client/api.ts';
import { clientTemplate, generateNodeKey, makeCsr } from '../../src/certificate/csr.ts';
import { requestCertificate, waitForCertificate } from '../../src/certificate/csrClient.ts';
import { issuanceOf } from '../../src/certificate/issuance.ts';
import { testCa } from '../support/csrSigner.ts';
import { FakeCsrApi } from '../support/fakeCsrApi.ts';
import { ManualClock } from '../support/manualClock.ts';

const csr = (conditions: { type: string; reason?: string; message?: string }[], certificate?: string, uid = 'u1'): CertificateSigningRequest => ({
  metadata: { name: 'csr-a', uid },
  spec: { request: '', signerName: 's', usages: [] },
  status: { conditions, ...(certificate ? { certificate: Buffer.from(certificate).toString('base64') } : {}) },
});

describe('issuanceOf (csr.go WaitForCertificate)', () => {
  it.each([
    { name: 'pending', event: 'ADDED' as const, object: csr([]), expected: null },
    { name: 'approved, not yet signed', event: 'MODIFIED' as const, object: csr([{ type: 'Approved' }]), expected: null },
    { name: 'issued', event: 'MODIFIED' as const, object: csr([{ type: 'Approved' }], 'PEM'), expected: { issued: 'PEM' } },
    { name: 'a certificate without approval', event: 'MODIFIED' as const, object: csr([], 'PEM'), expected: null },
    { name: 'denied', event: 'MODIFIED' as const, object: csr([{ type: 'Denied', reason: 'R', message: 'M' }]), expected: { refused: 'certificate signing request is denied, reason: R, message: M' } },
    { name: 'failed', event: 'MODIFIED' as const, object: csr([{ type: 'Approved' }, { type: 'Failed', reason: 'SignerValidationFailure', message: 'bad' }]), expected: { refused: 'certificate signing request failed, reason: SignerValidationFailure, message: bad' } },
    { name: 'replaced (another UID)', event: 'MODIFIED' as const, object: csr([], undefined, 'u2'), expected: { refused: 'csr "csr-a" changed UIDs' } },
    { name: 'deleted', event: 'DELETED' as const, object: csr([]), expected: { refused: 'csr "csr-a" was deleted' } },
  ])('$name', ({ event, object, expected }) => {
    expect(issuanceOf(event, object, 'csr-a', 'u1')).toEqual(expected);
  });
});

describe('waitForCertificate', () => {
  it('resumes a watch the server closed, lists again after a 410 and a second after another failure', async () => {
    const ca = testCa();
    const api = new FakeCsrApi(ca);
    const key = generateNodeKey();
    const request = await requestCertificate(api, { request: makeCsr(key, clientTemplate('n1')), signerName: 's', usages: ['client auth'], keyPem: key, template: clientTemplate('n1') });
    // Each watch the fake opens ends at once, in turn: closed by the server, 410, 500; then it stays.
    const ends: (ApiError | undefined | 'stay')[] = [undefined, new ApiError(410, 'Expired', 'too old', 'WATCH'), new ApiError(500, '', 'boom', 'WATCH'), 'stay'];
    const watch = api.watchCertificateSigningRequests.bind(api);
    const opened: string[] = [];
    api.watchCertificateSigningRequests = (selector: string, rv: string, handlers: WatchHandlers<CertificateSigningRequest>) => {
      opened.push(rv);
      const end = ends.shift();
      if (end === 'stay') return watch(selector, rv, handlers);
      queueMicrotask(() => handlers.onEnd(end));
      return { stop: () => {} };
    };
    const clock = new ManualClock(0);
    const issued = waitForCertificate(api, request, clock, new AbortController().signal);
    await expect.poll(() => opened.length).toBe(3);
    clock.advance(1_000); // the retry after the 500
    await expect.poll(() => opened.length).toBe(4);
    api.issue(request.name, 3_600_000);
    expect(await issued).toMatch(/^-----BEGIN CERTIFICATE-----/);
  });

  it('stops waiting when aborted, with the reason', async () => {
    const api = new FakeCsrApi(testCa());
    const key = generateNodeKey();
    const request = await requestCertificate(api, { request: makeCsr(key, clientTemplate('n1')), signerName: 's', usages: ['client auth'], keyPem: key, template: clientTemplate('n1') });
    const stop = new AbortController();
    const waiting = waitForCertificate(api, request, new ManualClock(0), stop.signal);
    await expect.poll(() => api.openWatches).toBe(1);
    stop.abort(new Error('timed out waiting for the condition'));
    await expect(waiting).rejects.toThrow('timed out waiting for the condition');
    expect(api.openWatches).toBe(0);
  });

  it('refuses an existing request of the same name made with another key (ensureCompatible)', async () => {
    const api = new FakeCsrApi(testCa());
    const first = generateNodeKey();
    const template = clientTemplate('n1');
    await requestCertificate(api, { request: makeCsr(first, template), name: 'node-csr-x', signerName: 's', usages: [], keyPem: first, template });
    const other = generateNodeKey();
    await expect(requestCertificate(api, { request: makeCsr(other, template), name: 'node-csr-x', signerName: 's', usages: [], keyPem: other, template })).rejects.toThrow(/^retrieved csr is not compatible/);
    expect(await requestCertificate(api, { request: makeCsr(first, template), name: 'node-csr-x', signerName: 's', usages: [], keyPem: first, template })).toMatchObject({ name: 'node-csr-x' });
  });
});
