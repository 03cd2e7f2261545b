import { describe, expect, it } from 'vitest';
import { EXIT_AFTER_MS, expiryVerdict, startExpiryCheck } from '../../src/certificate/expiry.ts';
import { ManualClock } from '../support/manualClock.ts';

describe('expiryVerdict (transport.go addCertRotation)', () => {
  const now = 1_000_000_000;
  it.each([
    { name: 'a certificate in its lifetime', current: { notAfter: new Date(now + 1) }, lastAvailable: now - 10 * EXIT_AFTER_MS, fatal: null },
    { name: 'an expired certificate', current: { notAfter: new Date(now - 1) }, lastAvailable: now, fatal: 'The currently active client certificate has expired and the server is responsive, exiting.' },
    { name: 'none for 5 minutes', current: null, lastAvailable: now - EXIT_AFTER_MS, fatal: null },
    { name: 'none for longer', current: null, lastAvailable: now - EXIT_AFTER_MS - 1, fatal: 'It has been 5m0s since a valid client cert was found and the server is responsive, exiting.' },
  ])('$name', ({ current, lastAvailable, fatal }) => {
    const verdict = expiryVerdict(current, lastAvailable, now);
    expect(verdict.fatal ? verdict.ifResponsive : null).toBe(fatal);
  });
});

describe('startExpiryCheck', () => {
  it('checks every 10 s; exits when the server answers, only logs when it does not', async () => {
    const clock = new ManualClock(0);
    let pair: { cert: string; key: string; notAfter: Date } | null = { cert: 'c', key: 'k', notAfter: new Date(25_000) };
    let responds = false;
    const exits: string[] = [];
    const errors: string[] = [];
    const check = startExpiryCheck({
      source: { current: () => pair, onChange: () => () => {} },
      clock,
      log: (level, message) => void (level === 'error' && errors.push(message)),
      serverResponds: async () => responds,
      exit: (message) => exits.push(message),
    });
    await clock.settle(20_000);
    expect(errors).toEqual([]);
    await clock.settle(10_000); // 30 s: expired, the server silent
    expect(errors).toEqual(['The currently active client certificate has expired, but the server is not responsive. A restart may be necessary to retrieve new initial credentials.']);
    expect(exits).toEqual([]);
    responds = true;
    await clock.settle(10_000);
    expect(exits).toEqual(['The currently active client certificate has expired and the server is responsive, exiting.']);
    pair = null;
    check.stop();
    await clock.settle(600_000);
    expect(exits).toHaveLength(1);
  });
});
