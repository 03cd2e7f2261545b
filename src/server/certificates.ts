/**
 * The authenticated API's serving certificate: `--tls-cert-file`/`--tls-private-key-file` when
 * given; otherwise the kubelet's fallback, a self-signed certificate for the node's name and
 * addresses kept in `--cert-dir` (`kubelet.crt`, `kubelet.key` 0600) and reused by the next start.
 * (The API server does not check the kubelet's certificate unless it is told a CA for it.)
 */
import { generateKeyPairSync } from 'node:crypto';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import type forgeTypes from 'node-forge';
import net from 'node:net';
import path from 'node:path';

export interface ServingCertificate {
  cert: string;
  key: string;
}

export async function servingCertificate(options: { certFile?: string; keyFile?: string; certDir: string; nodeName: string; addresses: string[]; now: Date }): Promise<ServingCertificate> {
  if (options.certFile || options.keyFile) {
    if (!options.certFile || !options.keyFile) throw new Error('--tls-cert-file and --tls-private-key-file go together');
    return { cert: await readFile(options.certFile, 'utf8'), key: await readFile(options.keyFile, 'utf8') };
  }
  const certFile = path.join(options.certDir, 'kubelet.crt');
  const keyFile = path.join(options.certDir, 'kubelet.key');
  const [cert, key] = await Promise.all([readFile(certFile, 'utf8').catch(() => null), readFile(keyFile, 'utf8').catch(() => null)]);
  if (cert && key) return { cert, key };
  const made = await selfSigned(options.nodeName, options.addresses, options.now);
  await mkdir(options.certDir, { recursive: true, mode: 0o700 });
  await writeFile(keyFile, made.key, { mode: 0o600 });
  await writeFile(certFile, made.cert, { mode: 0o644 });
  return made;
}

/**
 * A self-signed serving certificate for one year, for the name and addresses given. The X.509
 * library is loaded only to make one: an agent that finds its certificate in --cert-dir (every
 * start but the first) does not hold it in memory.
 */
export async function selfSigned(nodeName: string, addresses: string[], now: Date): Promise<ServingCertificate> {
  const { default: forge } = await import('node-forge');
  const { publicKey, privateKey } = generateKeyPairSync('rsa', {
    modulusLength: 2048,
    publicKeyEncoding: { type: 'spki', format: 'pem' },
    privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
  });
  const cert = forge.pki.createCertificate();
  cert.publicKey = forge.pki.publicKeyFromPem(publicKey);
  cert.serialNumber = now.getTime().toString(16);
  cert.validity.notBefore = new Date(now.getTime() - 60_000);
  cert.validity.notAfter = new Date(now.getTime() + 365 * 24 * 3_600_000);
  // UTF8String: `@` is not allowed in the PrintableString form, and Go's parser holds to that.
  const subject = [{ name: 'commonName', value: `${nodeName}@${Math.floor(now.getTime() / 1000)}`, valueTagClass: forge.asn1.Type.UTF8 as unknown as forgeTypes.asn1.Class }];
  cert.setSubject(subject);
  cert.setIssuer(subject);
  const altNames = [{ type: 2, value: nodeName }, ...[...new Set(addresses)].filter((a) => net.isIP(a)).map((ip) => ({ type: 7, ip }))];
  cert.setExtensions([
    { name: 'basicConstraints', cA: false },
    { name: 'keyUsage', digitalSignature: true, keyEncipherment: true },
    { name: 'extKeyUsage', serverAuth: true },
    { name: 'subjectAltName', altNames },
  ]);
  cert.sign(forge.pki.privateKeyFromPem(privateKey), forge.md.sha256.create());
  return { cert: forge.pki.certificateToPem(cert), key: privateKey };
}
