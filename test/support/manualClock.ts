/**
 * The tests' manual clock, for code that takes a `Clock` (src/clock.ts) and needs time stepped
 * precisely: `advance(ms)` fires every timer that falls due, in due order (ties in creation
 * order), synchronously, moving `now()` to each timer's due time as it fires, so that a timer set
 * by a callback is scheduled from the right instant (xstate's SimulatedClock jumps to the end
 * first). `settle(ms)` does the same but lets the promise chains each timer started run before the
 * next one fires. Where a test drives actors, xstate's SimulatedClock is the clock to use.
 */
import type { Clock, TimerHandle } from '../../src/clock.ts';

interface Timer {
  dueAt: number;
  seq: number;
  fn: () => void;
}

const settled = () => new Promise<void>((resolve) => setImmediate(resolve));

export class ManualClock implements Clock {
  private current: number;
  private seq = 0;
  private readonly timers = new Set<Timer>();

  constructor(startMs = Date.UTC(2024, 0, 1)) {
    this.current = startMs;
  }

  now(): number {
    return this.current;
  }

  setTimeout(fn: () => void, ms: number): TimerHandle {
    const timer: Timer = { dueAt: this.current + Math.max(0, ms), seq: this.seq++, fn };
    this.timers.add(timer);
    return timer;
  }

  clearTimeout(handle: TimerHandle): void {
    this.timers.delete(handle as Timer);
  }

  /** Timers not yet fired or cleared. */
  get pendingTimers(): number {
    return this.timers.size;
  }

  /** Moves time forward by `ms`, firing due timers (including ones they set) on the way. */
  advance(ms: number): void {
    const target = this.current + ms;
    for (let next = this.earliest(target); next; next = this.earliest(target)) this.fire(next);
    this.current = target;
  }

  /** Fires the timers due now (delay 0) without moving time. */
  runDue(): void {
    this.advance(0);
  }

  /** As `advance`, letting the promise chains each timer started run before the next fires. */
  async settle(ms: number): Promise<void> {
    const target = this.current + ms;
    for (let next = this.earliest(target); next; next = this.earliest(target)) {
      this.fire(next);
      await settled();
    }
    this.current = target;
    await settled();
  }

  private fire(timer: Timer): void {
    this.timers.delete(timer);
    this.current = Math.max(this.current, timer.dueAt);
    timer.fn();
  }

  /** The earliest timer due by `limit`, if any. */
  private earliest(limit: number): Timer | undefined {
    let best: Timer | undefined;
    for (const timer of this.timers) {
      if (timer.dueAt > limit) continue;
      if (!best || timer.dueAt < best.dueAt || (timer.dueAt === best.dueAt && timer.seq < best.seq)) best = timer;
    }
    return best;
  }
}
