/**
 * Where the serving pair comes from without a certificate manager (server/servingSources.ts):
 * --tls-cert-file/--tls-private-key-file reloaded when they change, a bad pair logged and kept
 * out; the self-signed pair in --cert-dir made, kept, and renewed on the clock.
 */
import { X509Certificate } from 'node:crypto';
import { mkdtemp, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { CertificateSource } from '../../src/certificate/source.ts';
import type { Logger } from '../../src/log.ts';
import { type CheckedPair, selfSignedPair, selfSignedRenewalAt } from '../../src/server/certificates.ts';
import { type ClosableCertificateSource, selfSignedServingPair, servingPairFromFiles } from '../../src/server/servingSources.ts';
import { FILE_REFRESH_MS } from '../../src/server/watchedFiles.ts';
import { ManualClock } from '../support/manualClock.ts';

let dir: string;
let pairs: CheckedPair[];
const sources: ClosableCertificateSource[] = [];

beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'statelet-serving-sources-'));
  pairs = await Promise.all([0, 1].map(() => selfSignedPair('node-a', [], new Date())));
});

afterEach(() => {
  for (const source of sources.splice(0)) source.close();
});

afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

const fingerprint = (pem: string) => new X509Certificate(pem).fingerprint256;
const nextChange = (source: CertificateSource) => new Promise<void>((resolve) => source.onChange(resolve));

/** A logger that resolves `refused` at the first refusal of new content. */
function refusalLog(): { log: Logger; refused: Promise<unknown> } {
  let resolve!: (err: unknown) => void;
  const refused = new Promise<unknown>((r) => (resolve = r));
  return { refused, log: (_level, message, fields) => void (message.startsWith('Refused new content') && resolve(fields?.['err'])) };
}

/** Replaces `file` whole (written aside, renamed over it), as a careful writer does. */
async function replace(file: string, text: string): Promise<void> {
  await writeFile(`${file}.new`, text);
  await rename(`${file}.new`, file);
}

/** `tls.crt` and `tls.key` in a new folder, holding `cert` and `key`. */
async function pairFiles(prefix: string, cert: string, key: string): Promise<{ certFile: string; keyFile: string }> {
  const folder = await mkdtemp(path.join(dir, prefix));
  const files = { certFile: path.join(folder, 'tls.crt'), keyFile: path.join(folder, 'tls.key') };
  await writeFile(files.certFile, cert);
  await writeFile(files.keyFile, key);
  return files;
}

describe('--tls-cert-file/--tls-private-key-file (ReloadKubeletServerCertificateFile)', () => {
  it('reads the pair at start, takes a new pair when the files change, and keeps a bad pair out', async () => {
    const { certFile, keyFile } = await pairFiles('files-', pairs[0]!.cert, pairs[0]!.key);
    const { log, refused } = refusalLog();
    const clock = new ManualClock();
    const source = await servingPairFromFiles(certFile, keyFile, { clock, log, reload: true });
    sources.push(source);
    expect(fingerprint(source.current()!.cert)).toBe(fingerprint(pairs[0]!.cert));
    expect(source.current()!.notAfter).toEqual(pairs[0]!.notAfter);

    // The new certificate without its key: refused, the old pair stays.
    await replace(certFile, pairs[1]!.cert);
    expect(String(await refused)).toMatch(/private key does not match public key/);
    expect(fingerprint(source.current()!.cert)).toBe(fingerprint(pairs[0]!.cert));

    // Its key arrives: the new pair is taken.
    const changed = nextChange(source);
    await replace(keyFile, pairs[1]!.key);
    await changed;
    expect(fingerprint(source.current()!.cert)).toBe(fingerprint(pairs[1]!.cert));
    expect(source.current()!.key).toBe(pairs[1]!.key);
  });

  it('keeps a check of the files on the clock every minute, besides the file events', async () => {
    const { certFile, keyFile } = await pairFiles('minute-', pairs[0]!.cert, pairs[0]!.key);
    const clock = new ManualClock();
    const source = await servingPairFromFiles(certFile, keyFile, { clock, log: () => {}, reload: true });
    sources.push(source);
    expect(clock.pendingTimers).toBe(1);
    clock.advance(FILE_REFRESH_MS);
    expect(clock.pendingTimers).toBe(1);
  });

  it('reads them once with the gate off, and refuses at start a pair that does not parse', async () => {
    const { certFile, keyFile } = await pairFiles('once-', pairs[0]!.cert, pairs[1]!.key);
    const clock = new ManualClock();
    await expect(servingPairFromFiles(certFile, keyFile, { clock, log: () => {}, reload: false })).rejects.toThrow(`serving certificate files ${certFile}, ${keyFile}: private key does not match public key`);
    await writeFile(keyFile, pairs[0]!.key);
    const source = await servingPairFromFiles(certFile, keyFile, { clock, log: () => {}, reload: false });
    sources.push(source);
    expect(clock.pendingTimers).toBe(0);
  });
});

describe('the self-signed pair in --cert-dir', () => {
  it('is made when absent (key 0600), kept on the next start, and renewed on the clock at 80 % of its life', async () => {
    const certDir = path.join(await mkdtemp(path.join(dir, 'self-')), 'pki');
    const clock = new ManualClock(Date.UTC(2026, 0, 1));
    const first = await selfSignedServingPair({ certDir, host: 'node-a', addresses: ['10.0.0.7'], clock, log: () => {}, reload: false });
    sources.push(first);
    const made = first.current()!;
    expect(await readFile(path.join(certDir, 'kubelet.crt'), 'utf8')).toBe(made.cert);
    expect(await readFile(path.join(certDir, 'kubelet.key'), 'utf8')).toBe(made.key);
    expect((await stat(path.join(certDir, 'kubelet.key'))).mode & 0o777).toBe(0o600);
    expect(new X509Certificate(made.cert).subject).toBe(`CN=node-a@${Date.UTC(2026, 0, 1) / 1000}`);

    const again = await selfSignedServingPair({ certDir, host: 'node-a', addresses: ['10.0.0.7'], clock, log: () => {}, reload: false });
    sources.push(again);
    expect(again.current()!.cert).toBe(made.cert);
    again.close();

    const leaf = new X509Certificate(made.cert);
    const renewAt = selfSignedRenewalAt({ notBefore: new Date(leaf.validFrom), notAfter: new Date(leaf.validTo) }).getTime();
    clock.advance(renewAt - clock.now() - 1);
    expect(first.current()!.cert).toBe(made.cert);
    const renewed = nextChange(first);
    clock.advance(1);
    await renewed;
    const next = first.current()!;
    expect(fingerprint(next.cert)).not.toBe(fingerprint(made.cert));
    expect(new X509Certificate(next.cert).subject).toBe(`CN=node-a@${Math.floor(renewAt / 1000)}`);
    expect(next.notAfter.getTime()).toBeGreaterThan(made.notAfter.getTime());
    expect(await readFile(path.join(certDir, 'kubelet.crt'), 'utf8')).toBe(next.cert);
    expect(await readFile(path.join(certDir, 'kubelet.key'), 'utf8')).toBe(next.key);
    // The next renewal is on the clock.
    expect(clock.pendingTimers).toBe(1);
  });

  it('replaces an expired pair before serving it', async () => {
    const certDir = await mkdtemp(path.join(dir, 'expired-'));
    const clock = new ManualClock(Date.UTC(2026, 0, 1));
    const old = await selfSignedPair('node-a', [], new Date(Date.UTC(2024, 0, 1)));
    await writeFile(path.join(certDir, 'kubelet.crt'), old.cert);
    await writeFile(path.join(certDir, 'kubelet.key'), old.key);
    const source = await selfSignedServingPair({ certDir, host: 'node-a', addresses: [], clock, log: () => {}, reload: false });
    sources.push(source);
    expect(source.current()!.notAfter.getTime()).toBeGreaterThan(clock.now());
    expect(await readFile(path.join(certDir, 'kubelet.crt'), 'utf8')).toBe(source.current()!.cert);
  });

  it('refuses a certificate without its key (CanReadCertAndKey)', async () => {
    const certDir = await mkdtemp(path.join(dir, 'half-'));
    await writeFile(path.join(certDir, 'kubelet.crt'), pairs[0]!.cert);
    await expect(selfSignedServingPair({ certDir, host: 'node-a', addresses: [], clock: new ManualClock(), log: () => {}, reload: false })).rejects.toThrow(
      `error reading ${path.join(certDir, 'kubelet.key')}, certificate and key must be supplied as a pair`,
    );
  });
});
