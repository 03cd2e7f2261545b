/**
 * The authenticated port's cipher suites and lowest version from tlsCipherSuites/--tls-cipher-suites
 * and tlsMinVersion/--tls-min-version (Go names, validated at start by cli/tlsSettings.ts), as
 * cmd/kubelet/app/server.go InitializeTLS applies them:
 * - the suites named, in their order, for TLS 1.2 and below; TLS 1.3's suites are always all on
 *   (Go does not let them be chosen), so they end the list whatever it names;
 * - a suite Go calls insecure is used, with the kubelet's "Use of insecure cipher detected." line;
 * - a minimum of TLS 1.3 with suites named: the suites do not matter, with the kubelet's warning;
 * - TLS 1.0 and 1.1 sign their handshakes with SHA-1, which OpenSSL 3 refuses above security
 *   level 0: a minimum below 1.2 lowers the level, so those versions are really accepted.
 */
import { GO_CIPHER_SUITES, TLS_VERSIONS, type TlsVersionName, opensslCipherList } from '../cli/tlsSettings.ts';
import type { TlsSettings } from './servingTls.ts';

/** TLS 1.3's suites, in Node's default order. */
export const TLS13_SUITES = ['TLS_AES_256_GCM_SHA384', 'TLS_CHACHA20_POLY1305_SHA256', 'TLS_AES_128_GCM_SHA256'];

export interface ServingTlsSettings {
  settings: TlsSettings;
  /** Lines to log at start, the kubelet's. */
  warnings: { message: string; fields?: Record<string, string> }[];
}

/**
 * The settings for the Go names given. `defaultCiphers` is Node's default list (`tls.DEFAULT_CIPHERS`),
 * used when no suite is named but the security level must drop.
 */
export function servingTlsSettings(cipherSuites: readonly string[], minVersion: TlsVersionName, defaultCiphers: string): ServingTlsSettings {
  const warnings: ServingTlsSettings['warnings'] = cipherSuites.filter((name) => GO_CIPHER_SUITES[name]?.insecure).map((cipher) => ({ message: 'Use of insecure cipher detected.', fields: { cipher } }));
  if (minVersion === 'VersionTLS13' && cipherSuites.length > 0) warnings.push({ message: 'Warning: TLS 1.3 cipher suites are not configurable, ignoring --tls-cipher-suites' });
  const below12 = minVersion === 'VersionTLS10' || minVersion === 'VersionTLS11';
  const named = cipherSuites.length > 0 ? [opensslCipherList(cipherSuites), ...TLS13_SUITES].filter(Boolean).join(':') : undefined;
  const ciphers = below12 ? `${named ?? defaultCiphers}:@SECLEVEL=0` : named;
  return { settings: { ...(ciphers ? { ciphers } : {}), minVersion: TLS_VERSIONS[minVersion] }, warnings };
}
