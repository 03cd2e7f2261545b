/**
 * The certificate signing requests a node sends, built as the kubelet builds them: an ECDSA P-256
 * key (client-go util/certificate/certificate_manager.go generateCSR; keyutil.LoadOrGenerateKeyFile
 * on the bootstrap path), a PKCS#10 request for a template's subject and SANs signed with
 * ECDSA-SHA256 (util/cert/csr.go MakeCSRFromTemplate), the usages of its signer, and the name of a
 * bootstrap request (pkg/kubelet/certificate/bootstrap/bootstrap.go digestedName). Pure but for
 * the key generation; node-forge only makes RSA requests, so the request is assembled with its
 * ASN.1 module and signed with node:crypto.
 */
import { createHash, createPrivateKey, createPublicKey, generateKeyPairSync, type KeyObject, sign, verify } from 'node:crypto';
import net from 'node:net';
import forge from 'node-forge';

import type { CertificateTemplate } from '../api/cluster.ts';

export type { CertificateTemplate };

/** Key usages as `certificates.k8s.io/v1` names them. */
export type KeyUsage = 'digital signature' | 'key encipherment' | 'client auth' | 'server auth';

export const CLIENT_SIGNER = 'kubernetes.io/kube-apiserver-client-kubelet';
export const SERVING_SIGNER = 'kubernetes.io/kubelet-serving';

/** The node's client certificate's subject (pkg/kubelet/certificate/kubelet.go NewKubeletClientCertificateManager). */
export function clientTemplate(nodeName: string): CertificateTemplate {
  return { commonName: `system:node:${nodeName}`, organizations: ['system:nodes'], dnsNames: [], ipAddresses: [] };
}

/**
 * Usages of a request made by a certificate manager for an ECDSA key: the kubelet adds
 * `key encipherment` for RSA keys only (pkg/kubelet/certificate/kubelet.go
 * DefaultKubeletClientGetUsages, DefaultKubeletServingGetUsages), and its keys are ECDSA.
 */
export const ROTATION_USAGES: Record<'client' | 'serving', readonly KeyUsage[]> = {
  client: ['digital signature', 'client auth'],
  serving: ['digital signature', 'server auth'],
};

/** Usages of the bootstrap request, whatever the key (bootstrap.go requestNodeCertificate). */
export const BOOTSTRAP_USAGES: readonly KeyUsage[] = ['digital signature', 'key encipherment', 'client auth'];

/** A fresh ECDSA P-256 private key, PEM `EC PRIVATE KEY` (SEC 1), as keyutil writes it. */
export function generateNodeKey(): string {
  const { privateKey } = generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
  return privateKey.export({ type: 'sec1', format: 'pem' }).toString();
}

const { asn1 } = forge;
const { Class, Type } = asn1;

const OID_ECDSA_WITH_SHA256 = '1.2.840.10045.4.3.2';
const OID_EXTENSION_REQUEST = '1.2.840.113549.1.9.14';
const OID_SUBJECT_ALT_NAME = '2.5.29.17';
const OID_ORGANIZATION = '2.5.4.10';
const OID_COMMON_NAME = '2.5.4.3';

const oid = (id: string) => asn1.create(Class.UNIVERSAL, Type.OID, false, asn1.oidToDer(id).getBytes());

/** PrintableString where the value allows it, else UTF8String, as Go's asn1 marshals a string. */
function directoryString(value: string): forge.asn1.Asn1 {
  const printable = /^[A-Za-z0-9 '()+,\-./:=?]*$/.test(value);
  return asn1.create(Class.UNIVERSAL, printable ? Type.PRINTABLESTRING : Type.UTF8, false, printable ? value : forge.util.encodeUtf8(value));
}

/** One RDN per attribute, organizations before the common name (pkix.Name.ToRDNSequence's order). */
function subjectName(template: CertificateTemplate): forge.asn1.Asn1 {
  const rdn = (type: string, value: string) =>
    asn1.create(Class.UNIVERSAL, Type.SET, true, [asn1.create(Class.UNIVERSAL, Type.SEQUENCE, true, [oid(type), directoryString(value)])]);
  return asn1.create(Class.UNIVERSAL, Type.SEQUENCE, true, [
    ...template.organizations.map((o) => rdn(OID_ORGANIZATION, o)),
    ...(template.commonName ? [rdn(OID_COMMON_NAME, template.commonName)] : []),
  ]);
}

/** The 4 or 16 bytes of an IP address, as a binary string. */
function ipBytes(ip: string): string {
  if (net.isIPv4(ip)) return String.fromCharCode(...ip.split('.').map(Number));
  if (!net.isIPv6(ip)) throw new Error(`not an IP address: ${ip}`);
  const [head = '', tail] = ip.split('::');
  const groups = (part: string) => (part ? part.split(':') : []);
  const words = tail === undefined ? groups(head) : [...groups(head), ...Array<string>(8 - groups(head).length - groups(tail).length).fill('0'), ...groups(tail)];
  return words.map((word) => String.fromCharCode(parseInt(word, 16) >> 8, parseInt(word, 16) & 0xff)).join('');
}

/** DER (a binary string) parsed without looking into BIT STRINGs, so that it encodes back to the same bytes. */
export function parseDer(der: string): forge.asn1.Asn1 {
  return (asn1.fromDer as unknown as (bytes: forge.util.ByteStringBuffer, options: { decodeBitStrings: boolean }) => forge.asn1.Asn1)(forge.util.createBuffer(der), { decodeBitStrings: false });
}

/** The `[0]` attributes: an extensionRequest with the SANs when there are any, else empty (x509.CreateCertificateRequest). */
function attributes(template: CertificateTemplate): forge.asn1.Asn1 {
  if (template.dnsNames.length === 0 && template.ipAddresses.length === 0) return asn1.create(Class.CONTEXT_SPECIFIC, 0, true, []);
  const generalNames = asn1.create(Class.UNIVERSAL, Type.SEQUENCE, true, [
    ...template.dnsNames.map((name) => asn1.create(Class.CONTEXT_SPECIFIC, 2, false, name)),
    ...template.ipAddresses.map((ip) => asn1.create(Class.CONTEXT_SPECIFIC, 7, false, ipBytes(ip))),
  ]);
  const extension = asn1.create(Class.UNIVERSAL, Type.SEQUENCE, true, [
    oid(OID_SUBJECT_ALT_NAME),
    asn1.create(Class.UNIVERSAL, Type.OCTETSTRING, false, asn1.toDer(generalNames).getBytes()),
  ]);
  const extensionRequest = asn1.create(Class.UNIVERSAL, Type.SEQUENCE, true, [
    oid(OID_EXTENSION_REQUEST),
    asn1.create(Class.UNIVERSAL, Type.SET, true, [asn1.create(Class.UNIVERSAL, Type.SEQUENCE, true, [extension])]),
  ]);
  return asn1.create(Class.CONTEXT_SPECIFIC, 0, true, [extensionRequest]);
}

/** The PEM `CERTIFICATE REQUEST` for `template`, signed with the ECDSA key `keyPem`. */
export function makeCsr(keyPem: string, template: CertificateTemplate): string {
  const key = createPrivateKey(keyPem);
  if (key.asymmetricKeyType !== 'ec') throw new Error(`the node's keys are ECDSA, not ${key.asymmetricKeyType}`);
  const spki = createPublicKey(key).export({ type: 'spki', format: 'der' });
  const info = asn1.create(Class.UNIVERSAL, Type.SEQUENCE, true, [
    asn1.create(Class.UNIVERSAL, Type.INTEGER, false, '\x00'),
    subjectName(template),
    parseDer(spki.toString('binary')),
    attributes(template),
  ]);
  const infoDer = Buffer.from(asn1.toDer(info).getBytes(), 'binary');
  const signature = sign('sha256', infoDer, key); // DER ECDSA-Sig-Value
  const request = asn1.create(Class.UNIVERSAL, Type.SEQUENCE, true, [
    info,
    asn1.create(Class.UNIVERSAL, Type.SEQUENCE, true, [oid(OID_ECDSA_WITH_SHA256)]),
    asn1.create(Class.UNIVERSAL, Type.BITSTRING, false, `\x00${signature.toString('binary')}`),
  ]);
  const der = Buffer.from(asn1.toDer(request).getBytes(), 'binary');
  return `-----BEGIN CERTIFICATE REQUEST-----\n${der.toString('base64').replace(/(.{64})/g, '$1\n').replace(/\n$/, '')}\n-----END CERTIFICATE REQUEST-----\n`;
}

/** The public key of a private key, DER SubjectPublicKeyInfo (x509.MarshalPKIXPublicKey). */
function publicKeyDer(keyPem: string | KeyObject): Buffer {
  return createPublicKey(keyPem).export({ type: 'spki', format: 'der' });
}

/**
 * The bootstrap request's name: `node-csr-` and the unpadded base64url SHA-512/256 of the public
 * key, the CN, each O and each usage, each written base64url-encoded and followed by `|`
 * (bootstrap.go digestedName), so a restart with the same key finds the same request.
 */
export function digestedName(keyPem: string, template: Pick<CertificateTemplate, 'commonName' | 'organizations'>, usages: readonly KeyUsage[]): string {
  const hash = createHash('sha512-256');
  const write = (data: Buffer) => {
    hash.update(data.toString('base64url'));
    hash.update('|');
  };
  write(publicKeyDer(keyPem));
  write(Buffer.from(template.commonName));
  for (const o of template.organizations) write(Buffer.from(o));
  for (const usage of usages) write(Buffer.from(usage));
  return `node-csr-${hash.digest('base64url')}`;
}

/** Whether a request (PEM) has the same subject and is signed by `keyPem` (csr.go ensureCompatible). */
export function csrMatches(requestPem: string, keyPem: string, template: Pick<CertificateTemplate, 'commonName' | 'organizations'>): boolean {
  const body = /-----BEGIN CERTIFICATE REQUEST-----([\s\S]*?)-----END CERTIFICATE REQUEST-----/.exec(requestPem)?.[1];
  if (!body) return false;
  try {
    const request = parseDer(Buffer.from(body.replace(/\s+/g, ''), 'base64').toString('binary'));
    const [info, , signatureBits] = request.value as forge.asn1.Asn1[];
    const [, subject, spki] = (info!.value as forge.asn1.Asn1[]);
    const expectedSubject = asn1.toDer(subjectName({ ...template, dnsNames: [], ipAddresses: [] })).getBytes();
    if (asn1.toDer(subject!).getBytes() !== expectedSubject) return false;
    if (Buffer.from(asn1.toDer(spki!).getBytes(), 'binary').compare(publicKeyDer(keyPem)) !== 0) return false;
    const signature = Buffer.from((signatureBits!.value as string).slice(1), 'binary');
    return verify('sha256', Buffer.from(asn1.toDer(info!).getBytes(), 'binary'), createPublicKey(keyPem), signature);
  } catch {
    return false;
  }
}
