/**
 * Time for the simulated runtime. Everything in the sim that waits (a `sleep`, a stop timeout, a
 * simulated image pull, an exec deadline) goes through a `SimClock`, so tests can substitute a
 * `FakeClock` and move time forward explicitly instead of sleeping.
 */

/** An opaque handle returned by `SimClock.setTimer`. */
export interface TimerHandle {
  readonly __timer: true;
}

export interface SimClock {
  /** Milliseconds since the epoch. */
  now(): number;
  /** Calls `callback` once after `delayMs`; the callback runs outside the caller's stack. */
  setTimer(delayMs: number, callback: () => void): TimerHandle;
  clearTimer(handle: TimerHandle): void;
}

interface RealTimer extends TimerHandle {
  timeout: NodeJS.Timeout;
}

/** Wall-clock time and Node timers. Timers are unref'd: a sleeping container keeps no process alive. */
export const realClock: SimClock = {
  now: () => Date.now(),
  setTimer(delayMs, callback) {
    const timeout = setTimeout(callback, Math.max(0, delayMs));
    timeout.unref();
    const handle: RealTimer = { __timer: true, timeout };
    return handle;
  },
  clearTimer(handle) {
    clearTimeout((handle as RealTimer).timeout);
  },
};

interface FakeTimer extends TimerHandle {
  dueAt: number;
  seq: number;
  callback: () => void;
}

/**
 * A manual clock: `advance(ms)` fires every timer that falls due, in due-time order (ties in
 * creation order), synchronously, moving `now()` to each timer's due time as it fires so that
 * timers created by callbacks are scheduled relative to the right instant.
 */
export class FakeClock implements SimClock {
  private current: number;
  private seq = 0;
  private readonly timers = new Set<FakeTimer>();

  constructor(startMs = Date.UTC(2024, 0, 1)) {
    this.current = startMs;
  }

  now(): number {
    return this.current;
  }

  setTimer(delayMs: number, callback: () => void): TimerHandle {
    const timer: FakeTimer = {
      __timer: true,
      dueAt: this.current + Math.max(0, delayMs),
      seq: this.seq++,
      callback,
    };
    this.timers.add(timer);
    return timer;
  }

  clearTimer(handle: TimerHandle): void {
    this.timers.delete(handle as FakeTimer);
  }

  /** Number of timers not yet fired or cleared. */
  get pendingTimers(): number {
    return this.timers.size;
  }

  /** Moves time forward by `ms`, firing due timers (including ones they schedule) on the way. */
  advance(ms: number): void {
    const target = this.current + ms;
    for (;;) {
      const next = this.earliest();
      if (!next || next.dueAt > target) break;
      this.timers.delete(next);
      this.current = Math.max(this.current, next.dueAt);
      next.callback();
    }
    this.current = target;
  }

  /** Fires timers that are due now (delay 0) without moving time. */
  runDue(): void {
    this.advance(0);
  }

  private earliest(): FakeTimer | undefined {
    let best: FakeTimer | undefined;
    for (const timer of this.timers) {
      if (!best || timer.dueAt < best.dueAt || (timer.dueAt === best.dueAt && timer.seq < best.seq)) {
        best = timer;
      }
    }
    return best;
  }
}
