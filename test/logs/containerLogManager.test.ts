/** The container log manager's machine: a pass each interval, failures kept, never stopping. */
import { SimulatedClock, createActor, waitFor } from 'xstate';
import { describe, expect, it } from 'vitest';
import { containerLogManagerMachineWith } from '../../src/logs/containerLogManager.ts';

describe('containerLogManager', () => {
  it('runs a rotation pass every interval, counting rotations and keeping the last failures', async () => {
    const clock = new SimulatedClock();
    const passes = [
      async () => ({ checked: 2, rotated: 1, failures: [] }),
      async () => Promise.reject(new Error('ListContainers: UNAVAILABLE')),
      async () => ({ checked: 2, rotated: 2, failures: [{ pod: 'shop/web', container: 'app', path: '/logs/shop_web_u1/app/0.log', error: 'EACCES: permission denied', cause: 'EACCES open' }] }),
    ];
    let i = 0;
    const actor = createActor(containerLogManagerMachineWith({ rotate: () => passes[i++]!() }), { clock, input: { monitorIntervalMs: 10_000 } }).start();
    clock.increment(9_999);
    expect(actor.getSnapshot().context.passes).toBe(0);
    clock.increment(1);
    await waitFor(actor, (s) => s.matches('waiting') && s.context.passes === 1);
    clock.increment(10_000);
    await waitFor(actor, (s) => s.matches('waiting') && s.context.passes === 2);
    expect(actor.getSnapshot().context.lastFailures).toEqual(['ListContainers: UNAVAILABLE']);
    clock.increment(10_000);
    await waitFor(actor, (s) => s.matches('waiting') && s.context.passes === 3);
    expect(actor.getSnapshot().context).toMatchObject({ rotated: 3, lastFailures: ['/logs/shop_web_u1/app/0.log: EACCES: permission denied'] });
    actor.stop();
  });
});
