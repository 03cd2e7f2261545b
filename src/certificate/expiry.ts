/**
 * The client transport's check of the certificate it presents (pkg/kubelet/certificate/transport.go
 * addCertRotation, run every 10 s with exitAfter 5 min by server.go buildKubeletClientConfig):
 * an expired certificate, or none for 5 minutes, ends the process when the API server answers —
 * a restart can bootstrap again — and is only logged when it does not.
 */
import type { Clock, TimerHandle } from '../clock.ts';
import type { Logger } from '../log.ts';
import type { CertificateSource } from './source.ts';

export const EXPIRY_CHECK_PERIOD_MS = 10_000;
export const EXIT_AFTER_MS = 5 * 60_000;

export type ExpiryVerdict = { fatal: false } | { fatal: true; ifResponsive: string; otherwise: string };

/**
 * What one check finds: the certificate is usable, or the process must end if the server
 * answers (with the kubelet's messages). `lastAvailable`: when a usable certificate was last seen.
 */
export function expiryVerdict(current: { notAfter: Date } | null, lastAvailable: number, now: number): ExpiryVerdict {
  if (current === null) {
    if (now <= lastAvailable + EXIT_AFTER_MS) return { fatal: false };
    return {
      fatal: true,
      ifResponsive: 'It has been 5m0s since a valid client cert was found and the server is responsive, exiting.',
      otherwise: 'It has been 5m0s since a valid client cert was found, but the server is not responsive. A restart may be necessary to retrieve new initial credentials.',
    };
  }
  if (now <= current.notAfter.getTime()) return { fatal: false };
  return {
    fatal: true,
    ifResponsive: 'The currently active client certificate has expired and the server is responsive, exiting.',
    otherwise: 'The currently active client certificate has expired, but the server is not responsive. A restart may be necessary to retrieve new initial credentials.',
  };
}

export interface ExpiryCheckOptions {
  source: CertificateSource;
  clock: Clock;
  log: Logger;
  serverResponds(): Promise<boolean>;
  /** Ends the process (klog.Fatalf). */
  exit(message: string): void;
}

/** Checks every 10 s until stopped. */
export function startExpiryCheck(options: ExpiryCheckOptions): { stop(): void } {
  const { clock, source } = options;
  let lastAvailable = clock.now();
  let timer: TimerHandle | undefined;
  let stopped = false;
  const check = async () => {
    const current = source.current();
    const now = clock.now();
    const verdict = expiryVerdict(current, lastAvailable, now);
    if (current && !verdict.fatal) lastAvailable = now;
    if (verdict.fatal) {
      if (await options.serverResponds()) {
        if (!stopped) options.exit(verdict.ifResponsive);
      } else options.log('error', verdict.otherwise);
    }
    if (!stopped) timer = clock.setTimeout(() => void check(), EXPIRY_CHECK_PERIOD_MS);
  };
  timer = clock.setTimeout(() => void check(), EXPIRY_CHECK_PERIOD_MS);
  return {
    stop: () => {
      stopped = true;
      if (timer !== undefined) clock.clearTimeout(timer);
    },
  };
}
