/**
 * Key pairs and certificates for the test servers and clients (node-forge): the kubelet client
 * certificate of the control plane (kubeletClientPki.ts), the test registry's CA and serving
 * certificate (registry.ts). Valid from a minute ago for a week.
 */
import { generateKeyPairSync } from 'node:crypto';
import forge from 'node-forge';

export interface TestKeyPair {
  publicKey: forge.pki.PublicKey;
  privateKey: forge.pki.rsa.PrivateKey;
  /** The private key as PKCS#8 PEM, to write to a key file. */
  privatePem: string;
}

export function keyPair(): TestKeyPair {
  const { publicKey, privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048, publicKeyEncoding: { type: 'spki', format: 'pem' }, privateKeyEncoding: { type: 'pkcs8', format: 'pem' } });
  return { publicKey: forge.pki.publicKeyFromPem(publicKey), privateKey: forge.pki.privateKeyFromPem(privateKey) as forge.pki.rsa.PrivateKey, privatePem: privateKey };
}

export function certificate(subject: forge.pki.CertificateField[], issuer: forge.pki.CertificateField[], publicKey: forge.pki.PublicKey, signer: forge.pki.rsa.PrivateKey, serial: string, extensions: object[]): forge.pki.Certificate {
  const cert = forge.pki.createCertificate();
  cert.publicKey = publicKey;
  cert.serialNumber = serial;
  cert.validity.notBefore = new Date(Date.now() - 60_000);
  cert.validity.notAfter = new Date(Date.now() + 7 * 24 * 3_600_000);
  cert.setSubject(subject);
  cert.setIssuer(issuer);
  cert.setExtensions(extensions);
  cert.sign(signer, forge.md.sha256.create());
  return cert;
}

/** The extensions of a CA that signs certificates. */
export const CA_EXTENSIONS = [{ name: 'basicConstraints', cA: true }, { name: 'keyUsage', keyCertSign: true, digitalSignature: true }];
