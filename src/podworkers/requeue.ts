/**
 * When a pod is due again after a sync (pkg/kubelet/pod_workers.go completeWork), pure:
 *   the sync succeeded            the sync frequency (`resyncInterval`, 1 m) × [1, 1.5);
 *   it failed, and its error says "network is not ready" (pkg/kubelet/errors.go
 *   NetworkNotReadyErrorMsg, anywhere in the text: the kubelet's strings.Contains; the pod's
 *   sync fails so while the runtime's network is not ready, src/pod/network.ts)
 *                                 `backOffOnTransientErrorPeriod`, 1 s × [1, 1.5): the network
 *                                 may be ready soon;
 *   it failed otherwise           the error back-off (`backOffPeriod`, 10 s) × [1, 1.5).
 * The jitter is wait.Jitter's: the period plus up to half of it again (workerResyncIntervalJitterFactor,
 * workerBackOffPeriodJitterFactor, both 0.5). A back-off the sync met that ends sooner (a crash
 * loop's, an image pull's, the active deadline) brings the pod forward to when it ends, unjittered:
 * statelet's way of the kubelet's MinBackoffExpiration, which also applies to syncs that succeed.
 */

import { NETWORK_NOT_READY } from '../pod/network.ts';

export { NETWORK_NOT_READY };

/** pod_workers.go backOffOnTransientErrorPeriod. */
export const TRANSIENT_ERROR_BACKOFF_MS = 1_000;

/** wait.Jitter's factor for every requeue period of the pod workers. */
const JITTER_FACTOR = 0.5;

export interface SyncReport {
  ok: boolean;
  /** What the failed sync met (its errors, joined); absent when it succeeded. */
  error?: string;
  /** When a back-off the sync met ends, from now. */
  retryAfterMs?: number;
}

export interface RequeuePeriods {
  syncFrequencyMs: number;
  errorBackoffMs: number;
}

/** How long from now until the pod is due again; `random` is one draw in [0, 1). */
export function requeueDelayMs(report: SyncReport, periods: RequeuePeriods, random: number): number {
  const base = report.ok
    ? periods.syncFrequencyMs
    : (report.error ?? '').includes(NETWORK_NOT_READY)
      ? TRANSIENT_ERROR_BACKOFF_MS
      : periods.errorBackoffMs;
  const jittered = base * (1 + JITTER_FACTOR * random);
  return Math.min(jittered, report.retryAfterMs ?? Infinity);
}
