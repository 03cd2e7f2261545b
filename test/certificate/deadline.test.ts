import { describe, expect, it } from 'vitest';
import { clientTemplate } from '../../src/certificate/csr.ts';
import { nextRotationDeadline, retryDelayMs, templateMismatch } from '../../src/certificate/deadline.ts';
import type { CertificateLeaf } from '../../src/certificate/pair.ts';

const HOUR = 3_600_000;
const leaf = (over: Partial<CertificateLeaf> = {}): CertificateLeaf => ({
  notBefore: new Date(0),
  notAfter: new Date(100 * HOUR),
  commonName: 'system:node:n1',
  organizations: ['system:nodes'],
  dnsNames: [],
  ipAddresses: [],
  ...over,
});
const serving = { ...clientTemplate('n1'), dnsNames: ['n1'], ipAddresses: ['10.0.0.1'] };

describe('nextRotationDeadline', () => {
  it.each([
    { random: 0, percent: 70 },
    { random: 0.5, percent: 80 },
    { random: 0.999999, percent: 90 },
  ])('is $percent % of the lifetime from NotBefore for random $random', ({ random, percent }) => {
    const deadline = nextRotationDeadline(leaf({ notBefore: new Date(10 * HOUR), notAfter: new Date(110 * HOUR) }), clientTemplate('n1'), 0, random);
    expect(deadline).toBeCloseTo(10 * HOUR + percent * HOUR, -3);
  });

  it('stays within [70 %, 90 %) for any random in [0, 1)', () => {
    for (let i = 0; i < 1000; i++) {
      const d = nextRotationDeadline(leaf(), clientTemplate('n1'), 0, i / 1000);
      expect(d).toBeGreaterThanOrEqual(70 * HOUR);
      expect(d).toBeLessThan(90 * HOUR);
    }
  });

  it.each([
    { name: 'no certificate', current: null },
    { name: 'another CN', current: leaf({ commonName: 'system:node:n2' }) },
    { name: 'a missing O', current: leaf({ organizations: [] }) },
  ])('is now with $name', ({ current }) => {
    expect(nextRotationDeadline(current, clientTemplate('n1'), 5, 0.5)).toBe(5);
  });

  it('is now when the serving template asks for a SAN the certificate lacks; extra SANs are fine', () => {
    expect(nextRotationDeadline(leaf({ dnsNames: ['n1'] }), serving, 5, 0.5)).toBe(5);
    expect(nextRotationDeadline(leaf({ dnsNames: ['n1', 'extra'], ipAddresses: ['10.0.0.1', '10.0.0.2'] }), serving, 5, 0.5)).toBeGreaterThan(5);
  });
});

describe('templateMismatch', () => {
  it.each([
    { current: leaf({ commonName: 'x' }), message: 'Current certificate CN (x) does not match requested CN (system:node:n1)' },
    { current: leaf({ ipAddresses: ['10.0.0.1'] }), message: 'Current certificate is missing requested DNS names [n1]' },
    { current: leaf({ dnsNames: ['n1'] }), message: 'Current certificate is missing requested IP addresses [10.0.0.1]' },
    { current: leaf({ dnsNames: ['n1'], ipAddresses: ['10.0.0.1'], organizations: ['other'] }), message: 'Current certificate is missing requested orgs [system:nodes]' },
    { current: leaf({ dnsNames: ['n1'], ipAddresses: ['10.0.0.1'] }), message: null },
  ])('$message', ({ current, message }) => {
    expect(templateMismatch(current, serving)).toBe(message);
  });
});

describe('retryDelayMs', () => {
  it.each([
    { failures: 1, min: 2_000, max: 2_200 },
    { failures: 2, min: 4_000, max: 4_400 },
    { failures: 3, min: 8_000, max: 8_800 },
    { failures: 4, min: 16_000, max: 17_600 },
    { failures: 5, min: 32_000, max: 32_000 },
    { failures: 50, min: 32_000, max: 32_000 },
  ])('after $failures failures waits $min–$max ms', ({ failures, min, max }) => {
    expect(retryDelayMs(failures, 0)).toBe(min);
    expect(retryDelayMs(failures, 0.999999)).toBeCloseTo(max, -1);
  });
});
