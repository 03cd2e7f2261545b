import { execFileSync } from 'node:child_process';
import { createHash, createPublicKey, generateKeyPairSync } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import forge from 'node-forge';
import { describe, expect, it } from 'vitest';
import { BOOTSTRAP_USAGES, clientTemplate, csrMatches, digestedName, generateNodeKey, makeCsr } from '../../src/certificate/csr.ts';

const { asn1 } = forge;

/** The request's parts, read back with node-forge's ASN.1 parser. */
function parseRequest(pem: string) {
  const der = Buffer.from(pem.replace(/-----[^-]+-----/g, '').replace(/\s+/g, ''), 'base64');
  const request = asn1.fromDer(forge.util.createBuffer(der.toString('binary')));
  const [info, algorithm] = request.value as forge.asn1.Asn1[];
  const [version, subject, spki, attributes] = info!.value as forge.asn1.Asn1[];
  const names = (subject!.value as forge.asn1.Asn1[]).map((set) => {
    const [type, value] = ((set.value as forge.asn1.Asn1[])[0]!.value as forge.asn1.Asn1[]);
    return [asn1.derToOid(type!.value as string), value!.value as string];
  });
  const algorithmOid = asn1.derToOid(((algorithm!.value as forge.asn1.Asn1[])[0]!.value) as string);
  const sans: { dns: string[]; ips: string[] } = { dns: [], ips: [] };
  const attrs = attributes!.value as forge.asn1.Asn1[];
  if (attrs.length > 0) {
    const [attrOid, values] = attrs[0]!.value as forge.asn1.Asn1[];
    expect(asn1.derToOid(attrOid!.value as string)).toBe('1.2.840.113549.1.9.14');
    const extension = (((values!.value as forge.asn1.Asn1[])[0]!.value as forge.asn1.Asn1[])[0]!.value) as forge.asn1.Asn1[];
    expect(asn1.derToOid(extension[0]!.value as string)).toBe('2.5.29.17');
    const general = asn1.fromDer(forge.util.createBuffer(extension[1]!.value as string));
    for (const name of general.value as forge.asn1.Asn1[]) {
      if (name.type === 2) sans.dns.push(name.value as string);
      else sans.ips.push(ipText(name.value as string));
    }
  }
  return { version: (version!.value as string).charCodeAt(0), names, spki: Buffer.from(asn1.toDer(spki!).getBytes(), 'binary'), algorithmOid, sans };
}

/** An IP address from its 4 or 16 bytes (IPv6 in node's canonical form). */
function ipText(bytes: string): string {
  const b = Buffer.from(bytes, 'binary');
  if (b.length === 4) return [...b].join('.');
  return new URL(`http://[${Array.from({ length: 8 }, (_, i) => b.readUInt16BE(i * 2).toString(16)).join(':')}]`).hostname.slice(1, -1);
}

describe('makeCsr', () => {
  it('writes the client request: O then CN, no SANs, ECDSA-SHA256 over the P-256 key', () => {
    const key = generateNodeKey();
    expect(key).toMatch(/^-----BEGIN EC PRIVATE KEY-----/);
    const parsed = parseRequest(makeCsr(key, clientTemplate('node-a')));
    expect(parsed.version).toBe(0);
    expect(parsed.names).toEqual([
      ['2.5.4.10', 'system:nodes'],
      ['2.5.4.3', 'system:node:node-a'],
    ]);
    expect(parsed.algorithmOid).toBe('1.2.840.10045.4.3.2');
    expect(parsed.sans).toEqual({ dns: [], ips: [] });
    expect(parsed.spki.equals(createPublicKey(key).export({ type: 'spki', format: 'der' }))).toBe(true);
  });

  it.each([
    { dnsNames: ['node-a'], ipAddresses: ['10.0.0.5'] },
    { dnsNames: [], ipAddresses: ['10.0.0.5', 'fd00::1'] },
    { dnsNames: ['a.example', 'b.example'], ipAddresses: ['192.168.1.1'] },
  ])('carries the serving SANs $dnsNames $ipAddresses', (sans) => {
    const parsed = parseRequest(makeCsr(generateNodeKey(), { ...clientTemplate('node-a'), ...sans }));
    expect(parsed.sans).toEqual({ dns: sans.dnsNames, ips: sans.ipAddresses });
  });

  it('passes `openssl req -verify` and openssl reads the subject and SANs', (ctx) => {
    let openssl = true;
    try {
      execFileSync('openssl', ['version']);
    } catch {
      openssl = false;
    }
    if (!openssl) {
      if (process.env.CI) throw new Error('openssl is needed in CI');
      console.warn('SKIPPED: openssl is not installed');
      return ctx.skip();
    }
    const dir = mkdtempSync(path.join(os.tmpdir(), 'csr-'));
    const file = path.join(dir, 'req.pem');
    writeFileSync(file, makeCsr(generateNodeKey(), { ...clientTemplate('node-a'), dnsNames: ['node-a'], ipAddresses: ['10.0.0.5'] }));
    const out = execFileSync('openssl', ['req', '-in', file, '-noout', '-verify', '-text'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
    expect(out).toMatch(/O\s*=\s*system:nodes, CN\s*=\s*system:node:node-a/);
    expect(out).toMatch(/DNS:node-a, IP Address:10\.0\.0\.5/);
  });

  it('refuses a key that is not ECDSA', () => {
    const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 1024, privateKeyEncoding: { type: 'pkcs8', format: 'pem' }, publicKeyEncoding: { type: 'spki', format: 'pem' } });
    expect(() => makeCsr(privateKey, clientTemplate('n'))).toThrow(/ECDSA, not rsa/);
  });
});

describe('digestedName', () => {
  it('hashes base64url(public key), CN, O and usages, each followed by "|" (bootstrap.go digestedName)', () => {
    const key = generateNodeKey();
    const spki = createPublicKey(key).export({ type: 'spki', format: 'der' });
    const stream = [spki, Buffer.from('system:node:n1'), Buffer.from('system:nodes'), ...BOOTSTRAP_USAGES.map((u) => Buffer.from(u))]
      .map((part) => `${part.toString('base64url')}|`)
      .join('');
    const expected = `node-csr-${createHash('sha512-256').update(stream).digest('base64url')}`;
    expect(digestedName(key, clientTemplate('n1'), BOOTSTRAP_USAGES)).toBe(expected);
    expect(expected).not.toContain('=');
  });

  it('differs with the key, the node and the usages', () => {
    const key = generateNodeKey();
    const name = digestedName(key, clientTemplate('n1'), BOOTSTRAP_USAGES);
    expect(digestedName(generateNodeKey(), clientTemplate('n1'), BOOTSTRAP_USAGES)).not.toBe(name);
    expect(digestedName(key, clientTemplate('n2'), BOOTSTRAP_USAGES)).not.toBe(name);
    expect(digestedName(key, clientTemplate('n1'), ['digital signature', 'client auth'])).not.toBe(name);
  });
});

describe('csrMatches', () => {
  it('accepts the request of the same key and subject only', () => {
    const key = generateNodeKey();
    const request = makeCsr(key, clientTemplate('n1'));
    expect(csrMatches(request, key, clientTemplate('n1'))).toBe(true);
    expect(csrMatches(request, generateNodeKey(), clientTemplate('n1'))).toBe(false);
    expect(csrMatches(request, key, clientTemplate('n2'))).toBe(false);
    expect(csrMatches('garbage', key, clientTemplate('n1'))).toBe(false);
  });
});
