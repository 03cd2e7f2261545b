/**
 * The authenticated port's TLS, kept current without restarting the listener (pkg/kubelet/kubelet.go
 * NewMainKubelet: TLSConfig.GetCertificate asks the certificate manager on every handshake, and
 * GetConfigForClient the client CA controller). Node's server takes one secure context for new
 * connections: each change of the serving pair or of the client CA bundle builds a new one and
 * hands it to the server (`setSecureContext`); connections already open keep theirs, so a log
 * being followed or an exec stream outlives the swap.
 *
 * Until a pair is issued (serverTLSBootstrap before the CSR is approved) the context has no
 * certificate and every handshake fails; each failure is logged as the kubelet's
 * ("http: TLS handshake error from …: no serving certificate available for the kubelet").
 */
import type { Server } from 'node:https';
import type { SecureContextOptions, SecureVersion } from 'node:tls';
import type { CertificateSource } from '../certificate/source.ts';
import type { Logger } from '../log.ts';

/** The cipher suites and lowest protocol version the port accepts (tlsSettings.ts). */
export interface TlsSettings {
  /** OpenSSL cipher list, TLS 1.2 suites then the fixed TLS 1.3 ones; absent: Node's default list. */
  ciphers?: string;
  minVersion: SecureVersion;
}

export interface ServingTls {
  /** The pair presented; null while none has been issued. */
  certificate: CertificateSource;
  /** The CA bundle client certificates are checked against; absent: client certificates authenticate no one. */
  clientCA?: { current(): string; onChange(listener: () => void): () => void };
  settings: TlsSettings;
}

export const NO_SERVING_CERTIFICATE = 'no serving certificate available for the kubelet';

/** The secure context's options for what the sources hold now. */
export function secureContextOptions(tls: ServingTls): SecureContextOptions {
  const pair = tls.certificate.current();
  const ca = tls.clientCA?.current();
  return {
    ...(pair ? { cert: pair.cert, key: pair.key } : {}),
    ...(ca ? { ca } : {}),
    ...(tls.settings.ciphers ? { ciphers: tls.settings.ciphers } : {}),
    minVersion: tls.settings.minVersion,
  };
}

/**
 * Swaps the server's secure context on each change of the sources and logs the handshakes that
 * fail; returns what stops it. A context that cannot be built (a pair OpenSSL refuses though it
 * parsed) is logged and the one in use stays.
 */
export function keepServingTlsCurrent(server: Server, tls: ServingTls, log: Logger): () => void {
  const swap = () => {
    try {
      server.setSecureContext(secureContextOptions(tls));
    } catch (err) {
      log('error', 'Could not use the new serving certificate or client CA; keeping the ones in use', { err });
    }
  };
  const unsubscribe = [tls.certificate.onChange(swap), ...(tls.clientCA ? [tls.clientCA.onChange(swap)] : [])];
  const onHandshakeError = (err: Error, socket: { remoteAddress?: string; remotePort?: number }) => {
    const from = `${socket.remoteAddress ?? ''}:${socket.remotePort ?? ''}`;
    if (!tls.certificate.current()) log('warn', 'http: TLS handshake error', { from, err: NO_SERVING_CERTIFICATE });
    else log('debug', 'http: TLS handshake error', { from, err: err.message });
  };
  server.on('tlsClientError', onHandshakeError);
  return () => {
    for (const stop of unsubscribe) stop();
    server.off('tlsClientError', onHandshakeError);
  };
}
