/**
 * The serving certificate's pure parts: a PEM pair checked as the kubelet checks one
 * (tls.X509KeyPair: the first certificate's public key is the key's), the self-signed pair of
 * certutil.GenerateSelfSignedCertKey, and when statelet renews a self-signed pair.
 */
import { X509Certificate, createPrivateKey, generateKeyPairSync } from 'node:crypto';
import type forgeTypes from 'node-forge';
import net from 'node:net';
import type { CertificateSource } from '../certificate/source.ts';

/** The pair a source hands out. */
export type ServingPair = NonNullable<ReturnType<CertificateSource['current']>>;

/** A checked pair, with the leaf's validity. */
export interface CheckedPair extends ServingPair {
  notBefore: Date;
}

/**
 * The pair if the certificate (chain, leaf first) and key are PEM and belong together; else
 * throws naming what is wrong (dynamic_serving_content.go loadCertKeyPair: missing content, then
 * tls.X509KeyPair).
 */
export function checkServingPair(cert: string, key: string): CheckedPair {
  if (cert.trim() === '' || key.trim() === '') throw new Error('missing content for serving cert');
  let leaf: X509Certificate;
  try {
    leaf = new X509Certificate(cert);
  } catch (err) {
    throw new Error(`the certificate is not a PEM certificate: ${err instanceof Error ? err.message : String(err)}`);
  }
  let privateKey;
  try {
    privateKey = createPrivateKey(key);
  } catch (err) {
    throw new Error(`the key is not a PEM private key: ${err instanceof Error ? err.message : String(err)}`);
  }
  if (!leaf.checkPrivateKey(privateKey)) throw new Error('private key does not match public key');
  return { cert, key, notBefore: new Date(leaf.validFrom), notAfter: new Date(leaf.validTo) };
}

/** The CA bundle if it holds at least one PEM certificate, else throws (dynamic_cafile_content.go newCABundleAndVerifier). */
export function checkCaBundle(bundle: string): string {
  const blocks = bundle.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g) ?? [];
  if (blocks.length === 0) throw new Error('missing content for CA bundle: no PEM certificate in it');
  for (const block of blocks) {
    try {
      new X509Certificate(block);
    } catch (err) {
      throw new Error(`error loading CA bundle: ${err instanceof Error ? err.message : String(err)}`);
    }
  }
  return bundle;
}

const YEAR_MS = 365 * 24 * 3_600_000;
const HOUR_MS = 3_600_000;

/**
 * When statelet makes a new self-signed pair: once 80 % of the old one's lifetime has passed, or
 * at once when it has expired. The kubelet never renews it (it serves an expired one until
 * someone deletes the files); statelet does, so a node that runs for a year keeps a valid one.
 */
export function selfSignedRenewalAt(pair: Pick<CheckedPair, 'notBefore' | 'notAfter'>): Date {
  const lifetime = pair.notAfter.getTime() - pair.notBefore.getTime();
  return new Date(pair.notBefore.getTime() + Math.floor(lifetime * 0.8));
}

/**
 * A self-signed serving pair in certutil.GenerateSelfSignedCertKey's shape: a CA
 * `<host>-ca@<unix>` and a leaf `<host>@<unix>` it signed, both RSA-2048, valid from an hour
 * before `now` for a year; the `.crt` holds the leaf then the CA, the key is the leaf's (PKCS#1).
 * The leaf names the host (a DNS name, or an IP if it is one) and the node's IP addresses. The
 * X.509 library is loaded only to make one: an agent that finds its pair in --cert-dir does not
 * hold it in memory.
 */
export async function selfSignedPair(host: string, addresses: readonly string[], now: Date): Promise<CheckedPair> {
  const { default: forge } = await import('node-forge');
  const newKey = () => {
    const { publicKey, privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048, publicKeyEncoding: { type: 'spki', format: 'pem' }, privateKeyEncoding: { type: 'pkcs1', format: 'pem' } });
    return { publicKey: forge.pki.publicKeyFromPem(publicKey), privateKey: forge.pki.privateKeyFromPem(privateKey), pem: privateKey };
  };
  const unix = Math.floor(now.getTime() / 1000);
  // Whole seconds, as X.509 keeps them: the dates returned are the certificate's.
  const notBefore = new Date(Math.floor((now.getTime() - HOUR_MS) / 1000) * 1000);
  const notAfter = new Date(notBefore.getTime() + YEAR_MS);
  // UTF8String: `@` is not allowed in the PrintableString form, and Go's parser holds to that.
  const name = (cn: string) => [{ name: 'commonName', value: cn, valueTagClass: forge.asn1.Type.UTF8 as unknown as forgeTypes.asn1.Class }];
  const make = (serial: string, subject: ReturnType<typeof name>, issuer: ReturnType<typeof name>, publicKey: forgeTypes.pki.PublicKey, extensions: object[]) => {
    const cert = forge.pki.createCertificate();
    cert.publicKey = publicKey;
    cert.serialNumber = serial;
    cert.validity.notBefore = notBefore;
    cert.validity.notAfter = notAfter;
    cert.setSubject(subject);
    cert.setIssuer(issuer);
    cert.setExtensions(extensions);
    return cert;
  };
  const caKey = newKey();
  const caName = name(`${host}-ca@${unix}`);
  const ca = make('01', caName, caName, caKey.publicKey, [
    { name: 'basicConstraints', cA: true, critical: true },
    { name: 'keyUsage', keyEncipherment: true, digitalSignature: true, keyCertSign: true, critical: true },
    { name: 'subjectKeyIdentifier' },
  ]);
  ca.sign(caKey.privateKey, forge.md.sha256.create());
  const leafKey = newKey();
  const ips = [...new Set([host, ...addresses])].filter((a) => net.isIP(a));
  const altNames = [...(net.isIP(host) ? [] : [{ type: 2, value: host }]), ...ips.map((ip) => ({ type: 7, ip }))];
  const leaf = make('02', name(`${host}@${unix}`), caName, leafKey.publicKey, [
    { name: 'basicConstraints', cA: false, critical: true },
    { name: 'keyUsage', keyEncipherment: true, digitalSignature: true, critical: true },
    { name: 'extKeyUsage', serverAuth: true },
    { name: 'authorityKeyIdentifier', keyIdentifier: ca.generateSubjectKeyIdentifier().getBytes() },
    { name: 'subjectAltName', altNames },
  ]);
  leaf.sign(caKey.privateKey, forge.md.sha256.create());
  return { cert: forge.pki.certificateToPem(leaf) + forge.pki.certificateToPem(ca), key: leafKey.pem, notBefore, notAfter };
}
