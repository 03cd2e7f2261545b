import { describe, expect, it } from 'vitest';
import { ManualClock } from '../support/manualClock.ts';
import { createProbeScheduler } from '../../src/prober/scheduler.ts';

describe('probe scheduler', () => {
  it('jitters first runs within the period while young, then runs each period, with one timer', async () => {
    const fake = new ManualClock(0);
    let r = 0;
    const randoms = [0.5, 0.1];
    const scheduler = createProbeScheduler({ clock: fake, random: () => randoms[r++] ?? 0, maxConcurrent: 32 });
    const runs: [string, number][] = [];
    scheduler.add('a', 10_000, async () => (runs.push(['a', fake.now()]), true));
    scheduler.add('b', 10_000, async () => (runs.push(['b', fake.now()]), true));
    expect(fake.pendingTimers).toBe(1);
    await fake.settle(25_000);
    expect(runs).toEqual([
      ['b', 1_000],
      ['a', 5_000],
      ['b', 11_000],
      ['a', 15_000],
      ['b', 21_000],
      ['a', 25_000],
    ]);
    expect(fake.pendingTimers).toBe(1);
  });

  it('runs a worker added after the first period at once', async () => {
    const fake = new ManualClock(0);
    const scheduler = createProbeScheduler({ clock: fake, random: () => 0.9, maxConcurrent: 32 });
    await fake.settle(20_000);
    const runs: number[] = [];
    scheduler.add('late', 10_000, async () => (runs.push(fake.now()), true));
    await fake.settle(10_000);
    expect(runs).toEqual([20_000, 30_000]);
  });

  it('removes a worker whose run says stop, and on remove()', async () => {
    const fake = new ManualClock(0);
    const scheduler = createProbeScheduler({ clock: fake, random: () => 0, maxConcurrent: 32 });
    let a = 0;
    let b = 0;
    scheduler.add('a', 1_000, async () => (++a, a < 2));
    scheduler.add('b', 1_000, async () => (++b, true));
    await fake.settle(1_500);
    scheduler.remove('b');
    await fake.settle(5_000);
    expect([a, b]).toEqual([2, 2]);
    expect(scheduler.size).toBe(0);
    expect(fake.pendingTimers).toBe(0);
  });

  it('caps concurrent runs: 3,000 workers, 32 at a time, every one runs', async () => {
    const fake = new ManualClock(0);
    const scheduler = createProbeScheduler({ clock: fake, random: Math.random, maxConcurrent: 32 });
    let inFlight = 0;
    let peak = 0;
    const ran = new Set<string>();
    const pending: (() => void)[] = [];
    for (let i = 0; i < 3_000; i++) {
      const id = `w${i}`;
      scheduler.add(id, 10_000, () => {
        inFlight++;
        peak = Math.max(peak, inFlight);
        ran.add(id);
        return new Promise<boolean>((resolve) =>
          pending.push(() => {
            inFlight--;
            resolve(false);
          }),
        );
      });
    }
    await fake.settle(10_000);
    expect(scheduler.running).toBe(32);
    while (pending.length > 0) {
      for (const release of pending.splice(0)) release();
      await new Promise<void>((resolve) => setImmediate(resolve));
    }
    expect(peak).toBe(32);
    expect(ran.size).toBe(3_000);
    expect(scheduler.size).toBe(0);
  });

  it('skips periods missed by a long run', async () => {
    const fake = new ManualClock(0);
    const scheduler = createProbeScheduler({ clock: fake, random: () => 0, maxConcurrent: 1 });
    const runs: number[] = [];
    let release: (() => void) | undefined;
    scheduler.add('slow', 1_000, () => {
      runs.push(fake.now());
      return new Promise<boolean>((resolve) => (release = () => resolve(true)));
    });
    await fake.settle(3_500);
    release?.();
    await fake.settle(0);
    await fake.settle(1_000);
    expect(runs).toEqual([0, 4_000]);
  });
});
