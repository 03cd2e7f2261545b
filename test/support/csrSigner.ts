/**
 * A test-side certificate authority that signs a node's certificate signing requests (ECDSA
 * keys, which node-forge cannot put in a certificate): the request's subject, public key and SANs
 * copied into an X.509 v3 certificate for the lifetime asked, signed ECDSA-SHA256 by its own P-256
 * CA. For unit tests of the certificate machinery and for tests against the real API server's
 * CSR API where no controller-manager signs; the cluster join tests use the controller-manager.
 */
import { createPublicKey, generateKeyPairSync, randomBytes, sign, type KeyObject } from 'node:crypto';
import forge from 'node-forge';
import { parseDer } from '../../src/certificate/csr.ts';

const { asn1 } = forge;
const { Class, Type } = asn1;
type Asn1 = forge.asn1.Asn1;

const oid = (id: string) => asn1.create(Class.UNIVERSAL, Type.OID, false, asn1.oidToDer(id).getBytes());
const seq = (items: Asn1[]) => asn1.create(Class.UNIVERSAL, Type.SEQUENCE, true, items);
const ECDSA_SHA256 = () => seq([oid('1.2.840.10045.4.3.2')]);
const fromDer = (der: Buffer) => parseDer(der.toString('binary'));
const toDer = (node: Asn1) => Buffer.from(asn1.toDer(node).getBytes(), 'binary');
const pem = (type: string, der: Buffer) => `-----BEGIN ${type}-----\n${der.toString('base64').replace(/(.{64})/g, '$1\n').replace(/\n$/, '')}\n-----END ${type}-----\n`;
const pemDer = (text: string) => Buffer.from(text.replace(/-----[^-]+-----/g, '').replace(/\s+/g, ''), 'base64');

function name(cn: string, orgs: string[] = []): Asn1 {
  const rdn = (type: string, value: string) => asn1.create(Class.UNIVERSAL, Type.SET, true, [seq([oid(type), asn1.create(Class.UNIVERSAL, Type.UTF8, false, value)])]);
  return seq([...orgs.map((o) => rdn('2.5.4.10', o)), rdn('2.5.4.3', cn)]);
}

function time(at: Date): Asn1 {
  return asn1.create(Class.UNIVERSAL, Type.UTCTIME, false, asn1.dateToUtcTime(at));
}

function extension(id: string, critical: boolean, value: Asn1): Asn1 {
  return seq([oid(id), ...(critical ? [asn1.create(Class.UNIVERSAL, Type.BOOLEAN, false, '\xff')] : []), asn1.create(Class.UNIVERSAL, Type.OCTETSTRING, false, asn1.toDer(value).getBytes())]);
}

function signCertificate(options: { subject: Asn1; issuer: Asn1; spki: Asn1; notBefore: Date; notAfter: Date; extensions: Asn1[]; signer: KeyObject }): string {
  const tbs = seq([
    asn1.create(Class.CONTEXT_SPECIFIC, 0, true, [asn1.create(Class.UNIVERSAL, Type.INTEGER, false, '\x02')]),
    asn1.create(Class.UNIVERSAL, Type.INTEGER, false, `\x01${randomBytes(15).toString('binary')}`),
    ECDSA_SHA256(),
    options.issuer,
    seq([time(options.notBefore), time(options.notAfter)]),
    options.subject,
    options.spki,
    asn1.create(Class.CONTEXT_SPECIFIC, 3, true, [seq(options.extensions)]),
  ]);
  const signature = sign('sha256', toDer(tbs), options.signer);
  return pem('CERTIFICATE', toDer(seq([tbs, ECDSA_SHA256(), asn1.create(Class.UNIVERSAL, Type.BITSTRING, false, `\x00${signature.toString('binary')}`)])));
}

export interface TestCa {
  certPem: string;
  /**
   * A certificate for the request (PEM `CERTIFICATE REQUEST`): its subject, key and SANs, valid
   * from `notBefore` (default: now) for `lifetimeMs`, usages for `usage`.
   */
  sign(requestPem: string, options: { lifetimeMs: number; notBefore?: Date; usage?: 'client' | 'server' }): string;
}

export function testCa(): TestCa {
  const { privateKey } = generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
  const caName = name('statelet-test-ca');
  const now = new Date();
  const certPem = signCertificate({
    subject: caName,
    issuer: caName,
    spki: fromDer(createPublicKey(privateKey).export({ type: 'spki', format: 'der' })),
    notBefore: new Date(now.getTime() - 3_600_000),
    notAfter: new Date(now.getTime() + 10 * 365 * 24 * 3_600_000),
    extensions: [
      extension('2.5.29.19', true, seq([asn1.create(Class.UNIVERSAL, Type.BOOLEAN, false, '\xff')])),
      extension('2.5.29.15', true, asn1.create(Class.UNIVERSAL, Type.BITSTRING, false, '\x01\x86')), // digitalSignature, keyCertSign, cRLSign
    ],
    signer: privateKey,
  });
  return {
    certPem,
    sign(requestPem, options) {
      const request = fromDer(pemDer(requestPem));
      const [info] = request.value as Asn1[];
      const [, subject, spki, attributes] = info!.value as Asn1[];
      const sanExtension = ((attributes!.value as Asn1[])[0]?.value as Asn1[] | undefined)?.[1];
      const requested = sanExtension ? (((sanExtension.value as Asn1[])[0]!.value as Asn1[]) ?? []) : [];
      const notBefore = options.notBefore ?? new Date();
      const extKeyUsage = options.usage === 'server' ? '1.3.6.1.5.5.7.3.1' : '1.3.6.1.5.5.7.3.2';
      return signCertificate({
        subject: subject!,
        issuer: caName,
        spki: spki!,
        notBefore,
        notAfter: new Date(notBefore.getTime() + options.lifetimeMs),
        extensions: [
          extension('2.5.29.15', true, asn1.create(Class.UNIVERSAL, Type.BITSTRING, false, '\x07\x80')), // digitalSignature
          extension('2.5.29.37', false, seq([oid(extKeyUsage)])),
          extension('2.5.29.19', true, seq([])),
          ...requested,
        ],
        signer: privateKey,
      });
    },
  };
}
