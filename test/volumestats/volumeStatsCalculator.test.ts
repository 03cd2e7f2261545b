/**
 * The volume stats calculator (src/volumestats/volumeStatsCalculator.ts): a round as it starts,
 * the next a period after the last ended, a failed round kept and the loop going on.
 */
import { createActor, SimulatedClock } from 'xstate';
import { describe, expect, it } from 'vitest';
import { volumeStatsCalculatorMachineWith } from '../../src/volumestats/volumeStatsCalculator.ts';

const settled = () => new Promise<void>((resolve) => setImmediate(resolve));

describe('volume stats calculator', () => {
  it('measures at start, then every period; a failed round is kept until one succeeds', async () => {
    const clock = new SimulatedClock();
    let rounds = 0;
    let fail = false;
    const machine = volumeStatsCalculatorMachineWith({
      calculate: async () => {
        rounds++;
        if (fail) throw new Error('listing the pods failed');
        return { measured: 2, failed: 1 };
      },
    });
    const actor = createActor(machine, { clock, input: { periodMs: 60_000 } }).start();
    await settled();
    expect(rounds).toBe(1);
    expect(actor.getSnapshot().context).toMatchObject({ rounds: 1, measured: 2, failed: 1, lastError: null });
    clock.increment(59_999);
    await settled();
    expect(rounds).toBe(1);
    fail = true;
    clock.increment(1);
    await settled();
    expect(rounds).toBe(2);
    expect(actor.getSnapshot().context.lastError).toBe('listing the pods failed');
    fail = false;
    clock.increment(60_000);
    await settled();
    expect(actor.getSnapshot().context).toMatchObject({ rounds: 3, lastError: null });
    actor.stop();
  });
});
