/** The serving side's pure parts: which certificate the port presents, its TLS settings, the self-signed pair's shape and renewal time, a pair's check. */
import { X509Certificate, createPrivateKey } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { checkCaBundle, checkServingPair, selfSignedPair, selfSignedRenewalAt } from '../../src/server/certificates.ts';
import { servingCertificateMode } from '../../src/server/servingMode.ts';
import { TLS13_SUITES, servingTlsSettings } from '../../src/server/servingTlsSettings.ts';

describe('servingCertificateMode (InitializeTLS, NewMainKubelet)', () => {
  it.each([
    [{ serverTLSBootstrap: true, rotateKubeletServerCertificate: true }, 'manager'],
    [{ serverTLSBootstrap: true, rotateKubeletServerCertificate: true, tlsCertFile: '/c', tlsPrivateKeyFile: '/k' }, 'manager'],
    [{ serverTLSBootstrap: true, rotateKubeletServerCertificate: false, tlsCertFile: '/c', tlsPrivateKeyFile: '/k' }, 'files'],
    [{ serverTLSBootstrap: true, rotateKubeletServerCertificate: false }, 'none'],
    [{ serverTLSBootstrap: false, rotateKubeletServerCertificate: true, tlsCertFile: '/c', tlsPrivateKeyFile: '/k' }, 'files'],
    [{ serverTLSBootstrap: false, rotateKubeletServerCertificate: true }, 'self-signed'],
    [{ serverTLSBootstrap: false, rotateKubeletServerCertificate: false }, 'self-signed'],
  ])('%j → %s', (settings, mode) => {
    expect(servingCertificateMode(settings)).toBe(mode);
  });

  it('refuses one file of the pair without the other', () => {
    expect(() => servingCertificateMode({ serverTLSBootstrap: false, rotateKubeletServerCertificate: true, tlsCertFile: '/c' })).toThrow(/go together/);
    expect(() => servingCertificateMode({ serverTLSBootstrap: false, rotateKubeletServerCertificate: true, tlsPrivateKeyFile: '/k' })).toThrow(/go together/);
  });
});

describe('servingTlsSettings (InitializeTLS)', () => {
  const DEFAULTS = 'DEFAULT-LIST';
  it.each([
    [[], 'VersionTLS12', { minVersion: 'TLSv1.2' }],
    [[], 'VersionTLS13', { minVersion: 'TLSv1.3' }],
    [['TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256', 'TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384'], 'VersionTLS12', { ciphers: ['ECDHE-RSA-AES128-GCM-SHA256', 'ECDHE-ECDSA-AES256-GCM-SHA384', ...TLS13_SUITES].join(':'), minVersion: 'TLSv1.2' }],
    // Only TLS 1.3 names: no TLS 1.2 suite is left, as in Go.
    [['TLS_AES_128_GCM_SHA256'], 'VersionTLS12', { ciphers: TLS13_SUITES.join(':'), minVersion: 'TLSv1.2' }],
    [[], 'VersionTLS10', { ciphers: `${DEFAULTS}:@SECLEVEL=0`, minVersion: 'TLSv1' }],
    [['TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA'], 'VersionTLS11', { ciphers: ['ECDHE-RSA-AES128-SHA', ...TLS13_SUITES, '@SECLEVEL=0'].join(':'), minVersion: 'TLSv1.1' }],
  ] as const)('%j at %s', (suites, version, settings) => {
    expect(servingTlsSettings(suites, version, DEFAULTS).settings).toEqual(settings);
  });

  it("logs the kubelet's lines for an insecure suite and for suites under a TLS 1.3 minimum", () => {
    expect(servingTlsSettings(['TLS_RSA_WITH_AES_128_GCM_SHA256', 'TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256'], 'VersionTLS12', DEFAULTS).warnings).toEqual([{ message: 'Use of insecure cipher detected.', fields: { cipher: 'TLS_RSA_WITH_AES_128_GCM_SHA256' } }]);
    expect(servingTlsSettings(['TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256'], 'VersionTLS13', DEFAULTS).warnings).toEqual([{ message: 'Warning: TLS 1.3 cipher suites are not configurable, ignoring --tls-cipher-suites' }]);
    expect(servingTlsSettings([], 'VersionTLS13', DEFAULTS).warnings).toEqual([]);
  });
});

describe('the self-signed pair (certutil.GenerateSelfSignedCertKey)', () => {
  const now = new Date(Date.UTC(2026, 5, 1, 12, 0, 0));

  it('is a leaf <host>@<unix> signed by its CA <host>-ca@<unix>, both in the .crt, RSA-2048, from an hour ago for a year', async () => {
    const pair = await selfSignedPair('node-a', ['10.0.0.7', 'node-a'], now);
    const [leafPem, caPem, rest] = pair.cert.split(/(?<=-----END CERTIFICATE-----\r?\n)/);
    expect(rest).toBeUndefined();
    const leaf = new X509Certificate(leafPem!);
    const ca = new X509Certificate(caPem!);
    const unix = now.getTime() / 1000;
    expect(leaf.subject).toBe(`CN=node-a@${unix}`);
    expect(leaf.issuer).toBe(`CN=node-a-ca@${unix}`);
    expect(ca.subject).toBe(`CN=node-a-ca@${unix}`);
    expect(ca.ca).toBe(true);
    expect(leaf.ca).toBe(false);
    expect(leaf.verify(ca.publicKey)).toBe(true);
    expect(leaf.subjectAltName).toBe('DNS:node-a, IP Address:10.0.0.7');
    expect(leaf.keyUsage).toEqual(['1.3.6.1.5.5.7.3.1']);
    expect(new Date(leaf.validFrom).getTime()).toBe(now.getTime() - 3_600_000);
    expect(new Date(leaf.validTo).getTime()).toBe(now.getTime() - 3_600_000 + 365 * 24 * 3_600_000);
    expect(leaf.publicKey.asymmetricKeyDetails?.modulusLength).toBe(2048);
    expect(pair.key).toMatch(/^-----BEGIN RSA PRIVATE KEY-----/);
    expect(leaf.checkPrivateKey(createPrivateKey(pair.key))).toBe(true);
    expect(pair.notAfter).toEqual(new Date(leaf.validTo));
  });

  it('names an IP host as an IP, not a DNS name', async () => {
    const leaf = new X509Certificate((await selfSignedPair('192.168.1.9', [], now)).cert);
    expect(leaf.subjectAltName).toBe('IP Address:192.168.1.9');
  });

  it('is renewed once 80 % of its lifetime has passed', () => {
    const notBefore = new Date(Date.UTC(2026, 0, 1));
    expect(selfSignedRenewalAt({ notBefore, notAfter: new Date(notBefore.getTime() + 1000_000) })).toEqual(new Date(notBefore.getTime() + 800_000));
  });
});

describe('checkServingPair (tls.X509KeyPair) and checkCaBundle', () => {
  it('takes a matching pair and names what is wrong with the others', async () => {
    const one = await selfSignedPair('node-a', [], new Date());
    const two = await selfSignedPair('node-a', [], new Date());
    expect(checkServingPair(one.cert, one.key).notAfter).toEqual(one.notAfter);
    expect(() => checkServingPair(one.cert, two.key)).toThrow('private key does not match public key');
    expect(() => checkServingPair('', one.key)).toThrow('missing content for serving cert');
    expect(() => checkServingPair('garbage', one.key)).toThrow(/not a PEM certificate/);
    expect(() => checkServingPair(one.cert, 'garbage')).toThrow(/not a PEM private key/);
  });

  it('takes a bundle of certificates and refuses one without any', async () => {
    const { cert } = await selfSignedPair('node-a', [], new Date());
    expect(checkCaBundle(cert)).toBe(cert);
    expect(() => checkCaBundle('not a certificate')).toThrow(/no PEM certificate/);
    expect(() => checkCaBundle('-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n')).toThrow(/error loading CA bundle/);
  });
});
