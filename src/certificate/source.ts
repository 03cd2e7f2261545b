/** A certificate and key the node presents, kept current by a certificate manager (or a file watcher). */
export interface CertificateSource {
  /** The current pair (PEM), or null while none has been issued yet. */
  current(): { cert: string; key: string; notAfter: Date } | null;
  /** Called after each change of the current pair; returns the unsubscribe. */
  onChange(listener: () => void): () => void;
}
