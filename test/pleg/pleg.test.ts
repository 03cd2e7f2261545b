/**
 * The PLEG machine on the TestRuntime with a SimulatedClock: relisting alone, and the evented
 * mode (the runtime's container event stream, with relisting as a slower safety net), its
 * fallbacks, and the rule that a change is told once.
 */
import { describe, expect, it, vi } from 'vitest';
import { type EventObject, SimulatedClock, createActor, setup, waitFor } from 'xstate';
import { createRelister } from '../../src/pleg/relister.ts';
import { type PlegInput, plegMachineWith } from '../../src/pleg/pleg.ts';
import { TestRuntime } from '../support/testRuntime.ts';
import { LossyRuntime, plegLines, startPod } from '../support/plegFixtures.ts';

/** The PLEG's settings besides its relist period. */
type PlegOptions = Omit<PlegInput, 'periodMs'>;

const evented: PlegOptions = { evented: { relistPeriodMs: 10_000 } };

function plegHarness(options: PlegOptions = evented, runtime: TestRuntime = new TestRuntime()) {
  const clock = new SimulatedClock();
  clock.set(Date.parse('2026-01-01T00:00:00Z'));
  const now = () => clock.now();
  // The runtime stamps events with its own clock; the PLEG does not read them.
  runtime.addImage('busybox');
  const plegMachine = plegMachineWith(createRelister(runtime, now));
  /** Stands in for the syncLoop: invokes the PLEG and records what it reports. */
  const reports: EventObject[] = [];
  const parentMachine = setup({ types: { children: {} as { pleg: 'pleg' } }, actors: { pleg: plegMachine } }).createMachine({
    invoke: { id: 'pleg', src: 'pleg', input: { periodMs: 1_000, ...options } },
    on: { '*': { actions: ({ event }) => reports.push(event) } },
  });
  const parent = createActor(parentMachine, { clock });
  parent.start();
  const pleg = parent.getSnapshot().children.pleg!;
  type Snapshot = ReturnType<typeof pleg.getSnapshot>;
  const until = (predicate: (s: Snapshot) => boolean) => waitFor(pleg, predicate);
  const relists = () => pleg.getSnapshot().context.relists;
  return {
    clock,
    runtime,
    parent,
    pleg,
    until,
    relists,
    /** The PLEG container events the parent received, as `TYPE uid/id`. */
    events: () => plegLines(reports),
    relistedReports: () => reports.filter((r) => r.type === 'PLEG.RELISTED').length,
    waiting: () => until((s) => s.matches({ relist: 'waiting' })),
    streaming: () => until((s) => s.matches({ relist: 'waiting', events: { watching: 'streaming' } })),
    /** Advances the clock by `ms` and waits for the relist that must follow to have finished. */
    async relistAfter(ms: number) {
      const before = relists();
      clock.increment(ms);
      await until((s) => s.context.relists > before && s.matches({ relist: 'waiting' }));
    },
  };
}

describe('pleg: relisting only', () => {
  it('never opens the event stream without the evented option, and relists every period', async () => {
    const h = plegHarness({});
    await h.waiting();
    expect(h.pleg.getSnapshot().matches({ events: 'disabled' })).toBe(true);
    const { uid, containerId } = await startPod(h.runtime, 'a');
    expect(h.events()).toEqual([]);
    await h.relistAfter(1_000);
    expect(h.events()).toContain(`PLEG.CONTAINER_STARTED ${uid}/${containerId}`);
    expect(h.runtime.callLog('containerEvents')).toEqual([]);
  });
});

describe('pleg: evented', () => {
  it('reaches streaming after a relist that started once the stream was open', async () => {
    const h = plegHarness();
    await h.streaming();
    expect(h.runtime.openEventStreams).toBe(1);
    // One relist at start, and one asked for by the stream opening meanwhile.
    expect(h.relists()).toBe(2);
    expect(h.relistedReports()).toBe(2);
  });

  it('turns stream events into PLEG events at once, without the clock moving', async () => {
    const h = plegHarness();
    await h.streaming();
    const { uid, sandboxId, containerId } = await startPod(h.runtime, 'a');
    // The simulated runtime streams the sandbox's own start too, as containerd 1.7+ does.
    await vi.waitFor(() => expect(h.events()).toEqual([`PLEG.CONTAINER_STARTED ${uid}/${sandboxId}`, `PLEG.CONTAINER_STARTED ${uid}/${containerId}`]));
    h.runtime.exitContainer(containerId, 0);
    await vi.waitFor(() => expect(h.events()).toContain(`PLEG.CONTAINER_DIED ${uid}/${containerId}`));
    await h.runtime.removeContainer(containerId);
    await vi.waitFor(() => expect(h.events()).toContain(`PLEG.CONTAINER_REMOVED ${uid}/${containerId}`));
    // Stopped, then deleted: Died was told already, so the deletion is Removed only.
    expect(h.events().filter((e) => e.endsWith(containerId))).toEqual([
      `PLEG.CONTAINER_STARTED ${uid}/${containerId}`,
      `PLEG.CONTAINER_DIED ${uid}/${containerId}`,
      `PLEG.CONTAINER_REMOVED ${uid}/${containerId}`,
    ]);
    expect(h.pleg.getSnapshot().context.streamedEvents).toBe(4);
  });

  it('relists at the slow period while streaming, and does not tell the stream changes again', async () => {
    const h = plegHarness();
    await h.streaming();
    const { uid, sandboxId, containerId } = await startPod(h.runtime, 'a');
    h.runtime.exitContainer(containerId, 1);
    const streamed = [`PLEG.CONTAINER_STARTED ${uid}/${sandboxId}`, `PLEG.CONTAINER_STARTED ${uid}/${containerId}`, `PLEG.CONTAINER_DIED ${uid}/${containerId}`];
    await vi.waitFor(() => expect(h.events()).toEqual(streamed));
    const before = h.relists();
    h.clock.increment(9_000);
    await h.waiting();
    expect(h.relists()).toBe(before);
    await h.relistAfter(1_000);
    await h.relistAfter(10_000);
    // The stream told the sandbox and the container; the relists tell neither again.
    expect(h.events()).toEqual(streamed);
  });

  it('still catches, at the slow relist, a change the stream missed', async () => {
    const runtime = new LossyRuntime();
    const h = plegHarness(evented, runtime);
    await h.streaming();
    const { uid, containerId } = await startPod(runtime, 'a');
    await vi.waitFor(() => expect(h.events()).toContain(`PLEG.CONTAINER_STARTED ${uid}/${containerId}`));
    runtime.drop('CONTAINER_STOPPED_EVENT', containerId);
    runtime.exitContainer(containerId, 1);
    await h.relistAfter(10_000);
    expect(h.events().filter((e) => e.endsWith(containerId))).toEqual([
      `PLEG.CONTAINER_STARTED ${uid}/${containerId}`,
      `PLEG.CONTAINER_DIED ${uid}/${containerId}`,
    ]);
  });

  it('falls back to the normal period for good when the runtime has no stream (UNIMPLEMENTED)', async () => {
    const runtime = new TestRuntime();
    runtime.setEventsUnimplemented();
    const h = plegHarness(evented, runtime);
    await h.until((s) => s.matches({ relist: 'waiting', events: 'unsupported' }));
    expect(h.pleg.getSnapshot().context.lastStreamError).toMatch(/UNIMPLEMENTED/);
    const { uid, containerId } = await startPod(runtime, 'a');
    await h.relistAfter(1_000);
    expect(h.events()).toContain(`PLEG.CONTAINER_STARTED ${uid}/${containerId}`);
    h.clock.increment(5 * 60_000);
    await h.waiting();
    expect(runtime.callLog('containerEvents')).toHaveLength(1);
  });

  it('after 5 failures in a row relists at the normal period and tries the stream again a minute later', async () => {
    const runtime = new TestRuntime();
    runtime.failNext('containerEvents', 'UNAVAILABLE', 'connection refused', 5);
    const h = plegHarness(evented, runtime);
    for (let attempt = 1; attempt < 5; attempt++) {
      await h.until((s) => s.matches({ events: 'reconnecting' }) && s.context.streamFailures === attempt);
      h.clock.increment(1_000);
    }
    await h.until((s) => s.matches({ relist: 'waiting', events: 'backingOff' }));
    expect(runtime.callLog('containerEvents')).toHaveLength(5);
    // Relisting at the normal period meanwhile.
    const { uid, containerId } = await startPod(runtime, 'a');
    await h.relistAfter(1_000);
    expect(h.events()).toContain(`PLEG.CONTAINER_STARTED ${uid}/${containerId}`);
    h.clock.increment(60_000);
    await h.streaming();
    expect(runtime.callLog('containerEvents')).toHaveLength(6);
    // Still open at the next safety-net relist: the failures no longer count.
    expect(h.pleg.getSnapshot().context.streamFailures).toBe(5);
    await h.relistAfter(10_000);
    expect(h.pleg.getSnapshot().context.streamFailures).toBe(0);
  });

  it('relists at once when the stream breaks, and reconnects', async () => {
    const h = plegHarness();
    await h.streaming();
    const before = h.relists();
    h.runtime.breakEventStreams();
    await h.until((s) => s.matches({ relist: 'waiting', events: 'reconnecting' }) && s.context.relists === before + 1);
    h.clock.increment(1_000);
    await h.streaming();
    expect(h.runtime.openEventStreams).toBe(1);
  });

  it('closes the stream when it stops', async () => {
    const h = plegHarness();
    await h.streaming();
    h.parent.stop();
    await vi.waitFor(() => expect(h.runtime.openEventStreams).toBe(0));
  });
});
