/**
 * Which certificate the authenticated port presents, from the settings alone (cmd/kubelet/app/server.go
 * InitializeTLS, pkg/kubelet/kubelet.go NewMainKubelet):
 * - `manager`: serverTLSBootstrap with gate RotateKubeletServerCertificate on: the certificate
 *   manager's pair, issued through a kubernetes.io/kubelet-serving CSR; none until it is;
 * - `files`: --tls-cert-file/--tls-private-key-file (reloaded when they change while gate
 *   ReloadKubeletServerCertificateFile is on, read once otherwise);
 * - `self-signed`: neither serverTLSBootstrap nor files: `<cert-dir>/kubelet.crt`/`kubelet.key`;
 * - `none`: serverTLSBootstrap with the gate off and no files: the kubelet then has no certificate
 *   and every handshake fails, and so does statelet's port.
 */
export type ServingCertificateMode = 'manager' | 'files' | 'self-signed' | 'none';

export interface ServingModeSettings {
  serverTLSBootstrap: boolean;
  /** Gate RotateKubeletServerCertificate. */
  rotateKubeletServerCertificate: boolean;
  tlsCertFile?: string;
  tlsPrivateKeyFile?: string;
}

/** The mode, or throws when only one of the pair's files is named (the kubelet would serve nothing). */
export function servingCertificateMode(settings: ServingModeSettings): ServingCertificateMode {
  const files = [settings.tlsCertFile, settings.tlsPrivateKeyFile].filter(Boolean).length;
  if (files === 1) throw new Error('--tls-cert-file and --tls-private-key-file (tlsCertFile, tlsPrivateKeyFile) go together: one names no pair');
  if (settings.serverTLSBootstrap && settings.rotateKubeletServerCertificate) return 'manager';
  if (files === 2) return 'files';
  return settings.serverTLSBootstrap ? 'none' : 'self-signed';
}
