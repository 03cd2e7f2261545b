/** A manual clock for the probe scheduler: timers fire only when `advance` passes them. */
import type { SchedulerClock } from '../../src/prober/scheduler.ts';

export function fakeClock(start = 0) {
  let now = start;
  let nextId = 0;
  const timers = new Map<number, { at: number; callback: () => void }>();
  const clock: SchedulerClock = {
    now: () => now,
    setTimeout: (callback, ms) => {
      const id = nextId++;
      timers.set(id, { at: now + ms, callback });
      return id;
    },
    clearTimeout: (handle) => void timers.delete(handle as number),
  };
  // Lets the promise chains a fired timer started run before the next timer fires.
  const flush = () => new Promise<void>((resolve) => setImmediate(resolve));
  return {
    clock,
    timers,
    now: () => now,
    async advance(ms: number) {
      const end = now + ms;
      for (;;) {
        const next = [...timers.entries()].sort((a, b) => a[1].at - b[1].at)[0];
        if (!next || next[1].at > end) break;
        timers.delete(next[0]);
        now = next[1].at;
        next[1].callback();
        await flush();
      }
      now = end;
      await flush();
    },
  };
}
