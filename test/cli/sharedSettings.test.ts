import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { GO_CIPHER_SUITES, cipherSuiteProblem, opensslCipherList } from '../../src/cli/tlsSettings.ts';
import { commandLine } from '../support/commandLine.ts';

const cli = commandLine('node-a');
const run = (argv: string[]) => cli.run(argv).config;
const usageError = cli.usageError;




let dir: string;
beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'statelet-shared-'));
});
afterEach(() => {
  fs.rmSync(dir, { recursive: true, force: true });
});

function configFile(body: string): string {
  const file = path.join(dir, 'config.yaml');
  fs.writeFileSync(file, `apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n${body}`);
  return file;
}

describe('the certificate and TLS settings', () => {
  it('defaults to no bootstrap, no rotation, the default suites and TLS 1.2', () => {
    const config = run([]);
    expect(config.bootstrapKubeconfig).toBeUndefined();
    expect(config.rotateCertificates).toBe(false);
    expect(config.serverTLSBootstrap).toBe(false);
    expect(config.tlsCipherSuites).toEqual([]);
    expect(config.tlsMinVersion).toBe('VersionTLS12');
  });

  it('takes each of them at its default, from a flag or a field', () => {
    const file = configFile('rotateCertificates: false\nserverTLSBootstrap: false\ntlsCipherSuites: []\ntlsMinVersion: VersionTLS12\n');
    const config = run(['--config', file, '--rotate-certificates=false', '--rotate-server-certificates=false', '--tls-min-version', 'VersionTLS12', '--bootstrap-kubeconfig=']);
    expect(config.rotateCertificates).toBe(false);
    expect(config.tlsMinVersion).toBe('VersionTLS12');
  });

  it('takes TLS bootstrap and client certificate rotation (src/certificate), from a flag or a field, with --kubeconfig', () => {
    expect(run(['--kubeconfig=/k', '--config', configFile('rotateCertificates: true\n')]).rotateCertificates).toBe(true);
    const config = run(['--kubeconfig=/k', '--rotate-certificates', '--bootstrap-kubeconfig', '/etc/kubernetes/bootstrap-kubelet.conf']);
    expect(config.rotateCertificates).toBe(true);
    expect(config.bootstrapKubeconfig).toBe('/etc/kubernetes/bootstrap-kubelet.conf');
  });

  it('refuses them without --kubeconfig, which they are for', () => {
    expect(usageError(['--rotate-certificates'])).toMatch(/^--rotate-certificates: .*--kubeconfig/);
    expect(usageError(['--bootstrap-kubeconfig', '/b.conf'])).toMatch(/^--bootstrap-kubeconfig: .*--kubeconfig/);
  });

  it('takes serverTLSBootstrap (the authenticated API asks the API server for its certificate)', () => {
    expect(run(['--rotate-server-certificates']).serverTLSBootstrap).toBe(true);
    expect(run(['--config', configFile('serverTLSBootstrap: true\n')]).serverTLSBootstrap).toBe(true);
  });

  it('takes cipher suites and another minimum version (the authenticated API applies them)', () => {
    const config = run(['--tls-cipher-suites', 'TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256', '--tls-min-version', 'VersionTLS13']);
    expect(config.tlsCipherSuites).toEqual(['TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256']);
    expect(config.tlsMinVersion).toBe('VersionTLS13');
  });

  it('lets a flag override the file', () => {
    const file = configFile('rotateCertificates: true\n');
    expect(run(['--config', file, '--rotate-certificates=false']).rotateCertificates).toBe(false);
  });

  it("rejects a cipher suite Go does not know with the kubelet's message, and a bad TLS version", () => {
    expect(usageError(['--tls-cipher-suites', 'TLS_FOO'])).toBe('invalid value "TLS_FOO" for flag --tls-cipher-suites: Cipher suite TLS_FOO not supported or doesn\'t exist');
    expect(usageError(['--tls-min-version', 'VersionTLS14'])).toBe('invalid value "VersionTLS14" for flag --tls-min-version: unknown tls version "VersionTLS14"');
    const file = configFile('tlsCipherSuites: [TLS_FOO]\n');
    expect(() => run(['--config', file])).toThrow(/tlsCipherSuites: Cipher suite TLS_FOO not supported/);
  });

  it('reads an empty tlsMinVersion as the default, VersionTLS12', () => {
    expect(run(['--config', configFile('tlsMinVersion: ""\n')]).tlsMinVersion).toBe('VersionTLS12');
  });
});

describe('Go cipher suite names to OpenSSL', () => {
  it('maps names in order, once each, leaving TLS 1.3 suites out as Go does', () => {
    expect(opensslCipherList(['TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256', 'TLS_AES_128_GCM_SHA256', 'TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256', 'TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305'])).toBe(
      'ECDHE-RSA-AES128-GCM-SHA256:ECDHE-RSA-CHACHA20-POLY1305',
    );
  });

  it('refuses a suite Node.js has no cipher for, and takes one it has', () => {
    expect(cipherSuiteProblem('TLS_RSA_WITH_RC4_128_SHA', new Set(['aes128-sha']))).toMatch(/OpenSSL RC4-SHA\) is not available/);
    expect(cipherSuiteProblem('TLS_RSA_WITH_AES_128_CBC_SHA', new Set(['aes128-sha']))).toBeNull();
  });

  it('names every non-TLS 1.3 suite Node.js has by an OpenSSL name Node.js knows', () => {
    // Every mapped name is either present in this Node.js or one of the RC4/3DES suites OpenSSL 3 drops.
    const known = new Set((require('node:tls') as typeof import('node:tls')).getCiphers());
    for (const [name, suite] of Object.entries(GO_CIPHER_SUITES)) {
      if (suite.tls13) continue;
      const dropped = /RC4|3DES/.test(name);
      expect({ name, present: known.has(suite.openssl.toLowerCase()) }).toEqual({ name, present: !dropped });
    }
  });
});
