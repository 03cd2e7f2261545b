/** The node's volume manager machine: adoption at start, token collection each minute, failures kept for the visualizer. */
import { SimulatedClock, createActor, waitFor } from 'xstate';
import { describe, expect, it } from 'vitest';
import { COLLECT_PERIOD_MS, volumeManagerMachineWith } from '../../src/volumemanager/volumeManager.ts';

const unusedVolumes = { mount: async () => {}, unmount: async () => {}, expand: async () => {} };

describe('volumeManager', () => {
  it('adopts the mounts of an earlier run, then collects expired tokens every minute', async () => {
    const clock = new SimulatedClock();
    let tokens = 5;
    const collected: number[] = [];
    const actor = createActor(
      volumeManagerMachineWith({
        adopt: async () => ({ mounts: 3, tokens: 0, reconstructed: 0 }),
        collect: async () => {
          collected.push(clock.now());
          tokens -= 2;
          return { mounts: 3, tokens, dropped: 2 };
        },
        listen: () => () => {},
      }, unusedVolumes),
      { clock },
    ).start();
    await waitFor(actor, (s) => s.matches({ upkeep: 'idle' }));
    expect(actor.getSnapshot().context).toMatchObject({ mounts: 3, tokens: 0 });
    clock.increment(COLLECT_PERIOD_MS - 1);
    expect(collected).toEqual([]);
    clock.increment(1);
    await waitFor(actor, (s) => s.matches({ upkeep: 'idle' }) && s.context.dropped === 2);
    clock.increment(COLLECT_PERIOD_MS);
    await waitFor(actor, (s) => s.matches({ upkeep: 'idle' }) && s.context.dropped === 4);
    expect(actor.getSnapshot().context).toMatchObject({ tokens: 1, dropped: 4, lastError: null });
    actor.stop();
  });

  it('keeps going after a failure, showing it until a step succeeds', async () => {
    const clock = new SimulatedClock();
    let fail = true;
    const actor = createActor(
      volumeManagerMachineWith({
        adopt: async () => {
          throw new Error('EACCES: /proc/self/mountinfo');
        },
        collect: async () => {
          if (fail) throw new Error('boom');
          return { mounts: 0, tokens: 0, dropped: 0 };
        },
        listen: () => () => {},
      }, unusedVolumes),
      { clock },
    ).start();
    await waitFor(actor, (s) => s.matches({ upkeep: 'idle' }));
    expect(actor.getSnapshot().context.lastError).toBe('reading the mount table: EACCES: /proc/self/mountinfo');
    clock.increment(COLLECT_PERIOD_MS);
    await waitFor(actor, (s) => s.matches({ upkeep: 'idle' }) && s.context.lastError === 'boom');
    fail = false;
    clock.increment(COLLECT_PERIOD_MS);
    await waitFor(actor, (s) => s.matches({ upkeep: 'idle' }) && s.context.lastError === null);
    actor.stop();
  });
});
