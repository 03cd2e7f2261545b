/**
 * A certificate source (src/certificate/source.ts) the test sets by hand: what a certificate
 * manager or a file watcher would hand the authenticated port, without either.
 */
import type { CertificateSource } from '../../src/certificate/source.ts';

type Pair = NonNullable<ReturnType<CertificateSource['current']>>;

export class SettableCertificateSource implements CertificateSource {
  private readonly listeners = new Set<() => void>();

  constructor(private pair: Pair | null = null) {}

  current(): Pair | null {
    return this.pair;
  }

  onChange(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => void this.listeners.delete(listener);
  }

  /** Changes the pair and tells the listeners, as a rotation does. */
  set(pair: Pair | null): void {
    this.pair = pair;
    for (const listener of [...this.listeners]) listener();
  }
}
