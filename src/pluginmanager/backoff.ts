/**
 * The plugin operations' back-off, per socket (the plugin manager's operation executor runs on a
 * goroutinemap with exponentialBackOffOnError: pkg/util/goroutinemap/goroutinemap.go, its
 * exponentialbackoff package): after a failure no operation on that socket starts before the wait
 * is over; the wait starts at 500 ms and doubles on each failure up to 2 m 2 s; a success forgets it.
 */

/** exponential_backoff.go initialDurationBeforeRetry, maxDurationBeforeRetry. */
export const INITIAL_DURATION_BEFORE_RETRY_MS = 500;
export const MAX_DURATION_BEFORE_RETRY_MS = 2 * 60_000 + 2_000;

export interface OperationBackoff {
  /** When the last failure happened (ms, on the node's clock). */
  lastErrorAt: number;
  durationBeforeRetryMs: number;
}

/** The back-off after a failure at `now`, from the one before it (none: the first failure). */
export function afterFailure(previous: OperationBackoff | undefined, now: number): OperationBackoff {
  const durationBeforeRetryMs = previous ? Math.min(previous.durationBeforeRetryMs * 2, MAX_DURATION_BEFORE_RETRY_MS) : INITIAL_DURATION_BEFORE_RETRY_MS;
  return { lastErrorAt: now, durationBeforeRetryMs };
}

/** Whether an operation may start at `now` (exponential_backoff.go SafeToRetry). */
export function safeToRetry(backoff: OperationBackoff | undefined, now: number): boolean {
  return !backoff || now >= backoff.lastErrorAt + backoff.durationBeforeRetryMs;
}
