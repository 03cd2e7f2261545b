/**
 * When a certificate manager asks for a new certificate, and how long it waits after a failed
 * attempt (client-go util/certificate/certificate_manager.go nextRotationDeadline,
 * jitteryDuration, certSatisfiesTemplateLocked, Start). Pure; the randomness is a parameter.
 */
import type { CertificateTemplate } from './csr.ts';
import type { CertificateLeaf } from './pair.ts';

/** How long one request is waited for before the attempt counts as failed (certificateWaitTimeout). */
export const CERTIFICATE_WAIT_TIMEOUT_MS = 15 * 60_000;

/**
 * Why the certificate does not do for the template (a missing CN, DNS name, IP or O; extra ones
 * are fine), or null when it does (certSatisfiesTemplateLocked).
 */
export function templateMismatch(leaf: CertificateLeaf, template: CertificateTemplate): string | null {
  if (leaf.commonName !== template.commonName) return `Current certificate CN (${leaf.commonName}) does not match requested CN (${template.commonName})`;
  const missing = (have: readonly string[], want: readonly string[]) => want.filter((item) => !have.includes(item)).sort();
  const dns = missing(leaf.dnsNames, template.dnsNames);
  if (dns.length) return `Current certificate is missing requested DNS names [${dns.join(' ')}]`;
  const ips = missing(leaf.ipAddresses.map(normalIp), template.ipAddresses.map(normalIp));
  if (ips.length) return `Current certificate is missing requested IP addresses [${ips.join(' ')}]`;
  const orgs = missing(leaf.organizations, template.organizations);
  if (orgs.length) return `Current certificate is missing requested orgs [${orgs.join(' ')}]`;
  return null;
}

/** Whether two templates ask for the same (reflect.DeepEqual of the requests' templates). */
export function sameTemplate(a: CertificateTemplate, b: CertificateTemplate): boolean {
  const same = (x: readonly string[], y: readonly string[]) => x.length === y.length && x.every((item, i) => item === y[i]);
  return a.commonName === b.commonName && same(a.organizations, b.organizations) && same(a.dnsNames, b.dnsNames) && same(a.ipAddresses, b.ipAddresses);
}

/** An IP as one spelling (IPv6 lower case, without a zone). */
const normalIp = (ip: string) => ip.toLowerCase();

/**
 * The time to request a new certificate: now when there is none or it does not do for the
 * template; else NotBefore + jitter(d, 0.2) − 0.3·d with d its lifetime, that is uniformly 70 %
 * to 90 % of the lifetime counted from NotBefore (nextRotationDeadline, jitteryDuration,
 * wait.Jitter: d + random·0.2·d). `random` is in [0, 1).
 */
export function nextRotationDeadline(leaf: CertificateLeaf | null, template: CertificateTemplate | null, now: number, random: number): number {
  if (!leaf || (template && templateMismatch(leaf, template) !== null)) return now;
  const notBefore = leaf.notBefore.getTime();
  const lifetime = leaf.notAfter.getTime() - notBefore;
  return notBefore + lifetime + random * 0.2 * lifetime - 0.3 * lifetime;
}

/** The back-off of Start: 2 s doubling, jitter 0.1, 5 attempts (wait.ExponentialBackoff), then every 32 s (wait.PollInfinite). */
const BACKOFF = { firstMs: 2_000, factor: 2, jitter: 0.1, steps: 5, pollMs: 32_000 };

/**
 * The wait after the `failures`-th failed attempt in a row (1 = the first): 2, 4, 8, 16 s, each
 * plus up to 10 % (wait.Backoff.Step with Jitter 0.1), then 32 s after the fifth and every later
 * one. `random` is in [0, 1).
 */
export function retryDelayMs(failures: number, random: number): number {
  if (failures >= BACKOFF.steps) return BACKOFF.pollMs;
  const base = BACKOFF.firstMs * BACKOFF.factor ** Math.max(0, failures - 1);
  return base + random * BACKOFF.jitter * base;
}
