/**
 * The one clock of the agent. Everything that reads the time or waits (the actor system's delays,
 * the probe scheduler, the visualizer's flushes, kill and hook deadlines, the simulated runtime's
 * sleeps) takes a `Clock`, so a test can run the whole node on one simulated clock.
 *
 * The shape is that of xstate's `SimulatedClock` (`now`, `setTimeout`, `clearTimeout`), so one
 * `SimulatedClock` instance can drive the actor system (`createActor(…, { clock })`) and every
 * other timer of the node at once; `realClock` is the wall clock with Node's timers.
 */

/** An opaque timer handle: whatever the clock's `setTimeout` returned. */
export type TimerHandle = unknown;

export interface Clock {
  /** Milliseconds since the epoch (a simulated clock may start anywhere). */
  now(): number;
  /** Calls `fn` once after `ms`; `fn` runs outside the caller's stack. */
  setTimeout(fn: () => void, ms: number): TimerHandle;
  clearTimeout(handle: TimerHandle): void;
}

/** Wall-clock time and Node's timers. */
export const realClock: Clock = {
  now: () => Date.now(),
  setTimeout: (fn, ms) => setTimeout(fn, Math.max(0, ms)),
  clearTimeout: (handle) => clearTimeout(handle as NodeJS.Timeout),
};

/** Resolves after `ms` on `clock`; rejects with the signal's reason once `signal` fires. */
export type Sleep = (ms: number, signal?: AbortSignal) => Promise<void>;

export function sleepOn(clock: Clock): Sleep {
  return (ms, signal) =>
    new Promise<void>((resolve, reject) => {
      if (signal?.aborted) return reject(signal.reason ?? new Error('aborted'));
      const onAbort = () => {
        clock.clearTimeout(handle);
        reject(signal?.reason ?? new Error('aborted'));
      };
      const handle = clock.setTimeout(() => {
        signal?.removeEventListener('abort', onAbort);
        resolve();
      }, ms);
      signal?.addEventListener('abort', onAbort, { once: true });
    });
}
