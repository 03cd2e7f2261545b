/**
 * A certificate and its key as the node holds them: the PEM texts, and what the managers read
 * of the leaf (its lifetime, subject and SANs). Parsed with node:crypto (node-forge reads no
 * ECDSA certificates).
 */
import { createPrivateKey, X509Certificate } from 'node:crypto';

export interface CertificateLeaf {
  notBefore: Date;
  notAfter: Date;
  commonName: string;
  organizations: string[];
  dnsNames: string[];
  ipAddresses: string[];
}

export interface CertificatePair {
  /** The certificate chain, leaf first (PEM). */
  cert: string;
  /** The private key (PEM). */
  key: string;
  leaf: CertificateLeaf;
}

const PEM_BLOCK = /-----BEGIN ([A-Z0-9 ]+)-----[\s\S]*?-----END \1-----\n?/g;

/** The PEM blocks of a text, by their type. */
export function pemBlocks(text: string): { type: string; pem: string }[] {
  return [...text.matchAll(PEM_BLOCK)].map((match) => ({ type: match[1]!, pem: match[0].endsWith('\n') ? match[0] : `${match[0]}\n` }));
}

/** Values of one attribute in an X509Certificate subject (`O=a\nCN=b`). */
function subjectValues(subject: string, attribute: string): string[] {
  return subject
    .split('\n')
    .filter((line) => line.startsWith(`${attribute}=`))
    .map((line) => line.slice(attribute.length + 1));
}

/** The leaf's dates, subject and SANs. */
export function readLeaf(certPem: string): CertificateLeaf {
  const leaf = new X509Certificate(certPem);
  const sans = (leaf.subjectAltName ?? '').split(', ').filter(Boolean);
  return {
    notBefore: new Date(leaf.validFrom),
    notAfter: new Date(leaf.validTo),
    commonName: subjectValues(leaf.subject, 'CN')[0] ?? '',
    organizations: subjectValues(leaf.subject, 'O'),
    dnsNames: sans.filter((san) => san.startsWith('DNS:')).map((san) => san.slice(4)),
    ipAddresses: sans.filter((san) => san.startsWith('IP Address:')).map((san) => san.slice(11).toLowerCase()),
  };
}

/**
 * The pair in a certificate text and a key text (one file may hold both, as the store writes
 * them): the certificates in order, then the one private key, which must be the leaf's.
 */
export function parsePair(certText: string, keyText: string): CertificatePair {
  const certs = pemBlocks(certText).filter((block) => block.type === 'CERTIFICATE');
  if (certs.length === 0) throw new Error('no certificate found');
  const key = pemBlocks(keyText).find((block) => block.type.endsWith('PRIVATE KEY'));
  if (!key) throw new Error('no private key found');
  const leafCert = new X509Certificate(certs[0]!.pem);
  if (!leafCert.checkPrivateKey(createPrivateKey(key.pem))) throw new Error('the private key does not match the certificate');
  return { cert: certs.map((block) => block.pem).join(''), key: key.pem, leaf: readLeaf(certs[0]!.pem) };
}
