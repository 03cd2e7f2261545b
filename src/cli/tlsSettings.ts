/**
 * The kubelet's TLS settings of its :10250 server (`tlsCipherSuites`/--tls-cipher-suites,
 * `tlsMinVersion`/--tls-min-version) as Go names, and what they are in Node's TLS (OpenSSL names,
 * `minVersion` strings). Validation happens at start, as the kubelet's
 * (cmd/kubelet/app/server.go InitializeTLS); the server applies the mapped values.
 */

import tls from 'node:tls';

/**
 * Every cipher suite name the kubelet accepts (k8s.io/component-base/cli/flag/ciphersuites_flag.go:
 * Go's `tls.CipherSuites()` and `tls.InsecureCipherSuites()` plus two legacy names) with its OpenSSL
 * name (from `openssl ciphers -stdname`, which maps the IANA names the Go names are). TLS 1.3 suites
 * are listed because Go accepts their names, but neither Go nor statelet lets them be chosen.
 */
export const GO_CIPHER_SUITES: Readonly<Record<string, { openssl: string; insecure: boolean; tls13: boolean }>> = {
  TLS_AES_128_GCM_SHA256: { openssl: 'TLS_AES_128_GCM_SHA256', insecure: false, tls13: true },
  TLS_AES_256_GCM_SHA384: { openssl: 'TLS_AES_256_GCM_SHA384', insecure: false, tls13: true },
  TLS_CHACHA20_POLY1305_SHA256: { openssl: 'TLS_CHACHA20_POLY1305_SHA256', insecure: false, tls13: true },
  TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA: { openssl: 'ECDHE-ECDSA-AES128-SHA', insecure: false, tls13: false },
  TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA: { openssl: 'ECDHE-ECDSA-AES256-SHA', insecure: false, tls13: false },
  TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA: { openssl: 'ECDHE-RSA-AES128-SHA', insecure: false, tls13: false },
  TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA: { openssl: 'ECDHE-RSA-AES256-SHA', insecure: false, tls13: false },
  TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256: { openssl: 'ECDHE-ECDSA-AES128-GCM-SHA256', insecure: false, tls13: false },
  TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384: { openssl: 'ECDHE-ECDSA-AES256-GCM-SHA384', insecure: false, tls13: false },
  TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256: { openssl: 'ECDHE-RSA-AES128-GCM-SHA256', insecure: false, tls13: false },
  TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384: { openssl: 'ECDHE-RSA-AES256-GCM-SHA384', insecure: false, tls13: false },
  TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256: { openssl: 'ECDHE-RSA-CHACHA20-POLY1305', insecure: false, tls13: false },
  TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256: { openssl: 'ECDHE-ECDSA-CHACHA20-POLY1305', insecure: false, tls13: false },
  // The legacy names ciphersuites_flag.go keeps "for backward compatibility".
  TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305: { openssl: 'ECDHE-RSA-CHACHA20-POLY1305', insecure: false, tls13: false },
  TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305: { openssl: 'ECDHE-ECDSA-CHACHA20-POLY1305', insecure: false, tls13: false },
  TLS_RSA_WITH_RC4_128_SHA: { openssl: 'RC4-SHA', insecure: true, tls13: false },
  TLS_RSA_WITH_3DES_EDE_CBC_SHA: { openssl: 'DES-CBC3-SHA', insecure: true, tls13: false },
  TLS_RSA_WITH_AES_128_CBC_SHA: { openssl: 'AES128-SHA', insecure: true, tls13: false },
  TLS_RSA_WITH_AES_256_CBC_SHA: { openssl: 'AES256-SHA', insecure: true, tls13: false },
  TLS_RSA_WITH_AES_128_CBC_SHA256: { openssl: 'AES128-SHA256', insecure: true, tls13: false },
  TLS_RSA_WITH_AES_128_GCM_SHA256: { openssl: 'AES128-GCM-SHA256', insecure: true, tls13: false },
  TLS_RSA_WITH_AES_256_GCM_SHA384: { openssl: 'AES256-GCM-SHA384', insecure: true, tls13: false },
  TLS_ECDHE_ECDSA_WITH_RC4_128_SHA: { openssl: 'ECDHE-ECDSA-RC4-SHA', insecure: true, tls13: false },
  TLS_ECDHE_RSA_WITH_RC4_128_SHA: { openssl: 'ECDHE-RSA-RC4-SHA', insecure: true, tls13: false },
  TLS_ECDHE_RSA_WITH_3DES_EDE_CBC_SHA: { openssl: 'ECDHE-RSA-DES-CBC3-SHA', insecure: true, tls13: false },
  TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA256: { openssl: 'ECDHE-ECDSA-AES128-SHA256', insecure: true, tls13: false },
  TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256: { openssl: 'ECDHE-RSA-AES128-SHA256', insecure: true, tls13: false },
};

/** The TLS versions --tls-min-version takes (ciphersuites_flag.go `versions`), with Node's `minVersion` for each. */
export const TLS_VERSIONS = {
  VersionTLS10: 'TLSv1',
  VersionTLS11: 'TLSv1.1',
  VersionTLS12: 'TLSv1.2',
  VersionTLS13: 'TLSv1.3',
} as const satisfies Record<string, tls.SecureVersion>;

export type TlsVersionName = keyof typeof TLS_VERSIONS;

/** ciphersuites_flag.go DefaultTLSVersion: what an empty tlsMinVersion means. */
export const DEFAULT_TLS_MIN_VERSION: TlsVersionName = 'VersionTLS12';

/**
 * Why a cipher suite name cannot be used, or null. Unknown to Go: the kubelet's own message
 * (ciphersuites_flag.go TLSCipherSuites). Known but missing from Node's OpenSSL (RC4 and 3DES
 * suites in current builds): refused, since serving without it would not be what was asked.
 */
export function cipherSuiteProblem(name: string, available: ReadonlySet<string> = nodeCiphers()): string | null {
  const suite = GO_CIPHER_SUITES[name];
  if (suite === undefined) return `Cipher suite ${name} not supported or doesn't exist`;
  if (!suite.tls13 && !available.has(suite.openssl.toLowerCase())) {
    return `cipher suite ${name} (OpenSSL ${suite.openssl}) is not available in this Node.js's OpenSSL ${process.versions.openssl}`;
  }
  return null;
}

/** Node's cipher names, lowercased as `tls.getCiphers()` gives them. */
function nodeCiphers(): ReadonlySet<string> {
  return new Set(tls.getCiphers());
}

/**
 * The OpenSSL cipher list for Node's `ciphers` option from Go names (validated already), in the
 * given order, without duplicates. TLS 1.3 suites are left out: as in Go, they are not configurable.
 */
export function opensslCipherList(goNames: readonly string[]): string {
  const names = goNames.flatMap((name) => {
    const suite = GO_CIPHER_SUITES[name];
    return suite === undefined || suite.tls13 ? [] : [suite.openssl];
  });
  return [...new Set(names)].join(':');
}
