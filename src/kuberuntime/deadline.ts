/**
 * Bounded waits for the kill path: a preStop hook is waited for at most the grace period, a
 * sidecar waits for its turn at most what is left of it. The sleep is derived from the node's clock
 * (`sleepOn`, src/clock.ts), so tests drive these waits with a simulated clock; every wait also
 * ends when its AbortSignal fires.
 */
import type { Sleep } from '../clock.ts';

/** Rejects with the signal's reason once it fires (never resolves). */
function whenAborted(signal: AbortSignal): { promise: Promise<never>; dispose(): void } {
  let onAbort = (): void => {};
  const promise = new Promise<never>((_, reject) => {
    onAbort = () => reject(signal.reason ?? new Error('aborted'));
    if (signal.aborted) onAbort();
    else signal.addEventListener('abort', onAbort, { once: true });
  });
  // The caller races it; a rejection nobody awaits any more must not surface as unhandled.
  promise.catch(() => {});
  return { promise, dispose: () => signal.removeEventListener('abort', onAbort) };
}

/**
 * Waits for `work` to settle (either way) for at most `ms`. Returns whether it settled in time;
 * rejects if `signal` fires first. The timer is cancelled as soon as the wait ends.
 */
export async function settlesWithin(work: Promise<unknown>, ms: number, sleep: Sleep, signal: AbortSignal): Promise<boolean> {
  const aborted = whenAborted(signal);
  const timer = new AbortController();
  const settled = work.then(
    () => true,
    () => true,
  );
  const expired = ms > 0 ? sleep(ms, timer.signal).then(() => false) : Promise.resolve(false);
  expired.catch(() => {});
  try {
    return await Promise.race([settled, expired, aborted.promise]);
  } finally {
    timer.abort();
    aborted.dispose();
  }
}
