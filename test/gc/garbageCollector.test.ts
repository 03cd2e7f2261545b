/**
 * The garbage collector (src/gc/; pkg/kubelet/kubelet.go StartGarbageCollection): its machine with
 * fake effects and a SimulatedClock under a stand-in syncLoop (a container pass and an image round
 * at once, then each on its period after the last one ended; the image manager's look alone where
 * image GC is off; failures kept until a round succeeds; nothing sent to the parent), its effects
 * (ImageGCFailed only for a failure after a failure, ContainerGCFailed for each, the maximum age
 * counted from when it began), and its line on the visualizer.
 */
import { describe, expect, it, vi } from 'vitest';
import { type EventObject, SimulatedClock, createActor, setup } from 'xstate';
import { createGarbageCollectorEffects, type GarbageCollectorEffects, type TimedImageGcRound } from '../../src/gc/effects.ts';
import { IMAGE_GC_PERIOD_MS, type GarbageCollectorInput, garbageCollectorMachine, garbageCollectorMachineWith } from '../../src/gc/garbageCollector.ts';
import { garbageCollectorLoop } from '../../src/gc/loop.ts';
import type { ImageGcRound } from '../../src/kuberuntime/imageGC.ts';
import { CriError } from '../../src/runtime/types.ts';

const T0 = Date.parse('2026-03-01T12:00:00Z');
const MIN = 60_000;
const Mi = 2 ** 20;

const settle = async () => {
  for (let i = 0; i < 10; i++) await new Promise<void>((resolve) => setImmediate(resolve));
};

const round = (fields: Partial<ImageGcRound> = {}): ImageGcRound => ({ removed: [], usagePercent: 50, amountToFree: null, failure: null, ...fields });

/** The collector under a stand-in syncLoop that records what it is sent; each effect answers from its script, the last entry repeating. */
function harness(options: { input?: Partial<GarbageCollectorInput>; images?: (ImageGcRound | Error)[]; containers?: (Error | null)[]; holdImages?: boolean }) {
  const clock = new SimulatedClock();
  clock.set(T0);
  let imageCalls = 0;
  let containerCalls = 0;
  let release: () => void = () => {};
  const effects = {
    collectImages: vi.fn(async (): Promise<TimedImageGcRound> => {
      const at = clock.now();
      if (options.holdImages) await new Promise<void>((resolve) => (release = resolve));
      const script = options.images ?? [round()];
      const next = script[Math.min(imageCalls++, script.length - 1)]!;
      if (next instanceof Error) throw next;
      return { ...next, at };
    }),
    detectImages: vi.fn(async () => {}),
    collectContainers: vi.fn(async () => {
      const script = options.containers ?? [null];
      const failure = script[Math.min(containerCalls++, script.length - 1)];
      if (failure) throw failure;
    }),
  } satisfies GarbageCollectorEffects;
  const input: GarbageCollectorInput = { containerGcPeriodMs: MIN, imageGcOn: true, highThresholdPercent: 85, lowThresholdPercent: 80, ...options.input };
  const sent: EventObject[] = [];
  const parentMachine = setup({ types: { children: {} as { garbageCollector: 'garbageCollector' } }, actors: { garbageCollector: garbageCollectorMachineWith(effects) } }).createMachine({
    invoke: { id: 'garbageCollector', src: 'garbageCollector', input },
    on: { '*': { actions: ({ event }) => sent.push(event) } },
  });
  const parent = createActor(parentMachine, { clock }).start();
  const collector = parent.getSnapshot().children.garbageCollector!;
  return {
    effects,
    sent,
    context: () => collector.getSnapshot().context,
    state: () => collector.getSnapshot().value,
    release: () => release(),
    async advance(ms: number) {
      for (let left = ms; left > 0; left -= Math.min(left, 10_000)) {
        clock.increment(Math.min(left, 10_000));
        await settle();
      }
    },
    settle,
    stop: () => parent.stop(),
  };
}

describe('garbageCollector: rounds', () => {
  it('runs a container pass and an image round at once, then each on its period, counting what the image rounds removed', async () => {
    const removed = (id: string, size: number) => ({ id, name: id, size, reason: 'space' as const });
    const h = harness({ images: [round({ usagePercent: 91, amountToFree: 100 * Mi, removed: [removed('a', 60 * Mi), removed('b', 40 * Mi)] }), round({ usagePercent: 79 })] });
    await h.settle();
    expect(h.effects.collectContainers).toHaveBeenCalledTimes(1);
    expect(h.effects.collectImages).toHaveBeenCalledTimes(1);
    expect(h.context()).toMatchObject({ imageRounds: 1, imagesRemoved: 2, bytesFreed: 100 * Mi, lastImageRound: { at: T0, usagePercent: 91 }, containerRounds: 1 });

    await h.advance(MIN);
    expect(h.effects.collectContainers).toHaveBeenCalledTimes(2);
    await h.advance(IMAGE_GC_PERIOD_MS - MIN - 10_000);
    expect(h.effects.collectImages).toHaveBeenCalledTimes(1);
    await h.advance(10_000);
    expect(h.effects.collectImages).toHaveBeenCalledTimes(2);
    expect(h.effects.collectContainers).toHaveBeenCalledTimes(6);
    expect(h.context()).toMatchObject({ imageRounds: 2, imagesRemoved: 2, bytesFreed: 100 * Mi, lastImageRound: { at: T0 + IMAGE_GC_PERIOD_MS, usagePercent: 79 } });
    expect(h.effects.detectImages).not.toHaveBeenCalled();
    expect(h.sent).toEqual([]);
    h.stop();
  });

  it('waits its period after a slow round ends: rounds never overlap', async () => {
    const h = harness({ holdImages: true });
    await h.advance(2 * IMAGE_GC_PERIOD_MS);
    expect(h.effects.collectImages).toHaveBeenCalledTimes(1);
    h.release();
    await h.settle();
    await h.advance(IMAGE_GC_PERIOD_MS - 10_000);
    expect(h.effects.collectImages).toHaveBeenCalledTimes(1);
    await h.advance(10_000);
    expect(h.effects.collectImages).toHaveBeenCalledTimes(2);
    h.stop();
  });

  it('keeps the last failure of each region until a round of it succeeds', async () => {
    const h = harness({
      images: [round({ failure: 'imageFs information is unavailable', usagePercent: null }), round()],
      containers: [new CriError('ListContainers', 'UNAVAILABLE', 'connection refused'), null],
    });
    await h.settle();
    expect(h.context()).toMatchObject({ imageFailure: 'imageFs information is unavailable', containerFailure: 'CRI ListContainers failed (UNAVAILABLE): connection refused', imageRounds: 1, containerRounds: 1 });
    await h.advance(IMAGE_GC_PERIOD_MS);
    expect(h.context()).toMatchObject({ imageFailure: null, containerFailure: null, lastImageRound: { usagePercent: 50 } });
    h.stop();
  });

  it('where image GC is off, only looks at the images every 5 minutes, and still collects containers', async () => {
    const h = harness({ input: { imageGcOn: false, highThresholdPercent: 100 } });
    await h.settle();
    expect(h.effects.detectImages).toHaveBeenCalledTimes(1);
    await h.advance(IMAGE_GC_PERIOD_MS);
    expect(h.effects.detectImages).toHaveBeenCalledTimes(2);
    expect(h.effects.collectImages).not.toHaveBeenCalled();
    expect(h.effects.collectContainers).toHaveBeenCalledTimes(6);
    expect(h.state()).toEqual({ containers: 'waiting', images: 'idle' });
    h.stop();
  });

  it('as drawn, with no effect given, says so in its failures and goes on', async () => {
    const actor = createActor(garbageCollectorMachine, { input: { containerGcPeriodMs: MIN, imageGcOn: true, highThresholdPercent: 85, lowThresholdPercent: 80 } }).start();
    await settle();
    expect(actor.getSnapshot().context.imageFailure).toMatch(/collectImages is not provided/);
    expect(actor.getSnapshot().context.containerFailure).toMatch(/collectContainers is not provided/);
    actor.stop();
  });
});

describe('garbageCollector: effects', () => {
  function effectsWith(rounds: ImageGcRound[], containerFailures: (Error | null)[] = [null]) {
    let now = T0;
    const lines: string[] = [];
    const events: string[] = [];
    let i = 0;
    let j = 0;
    const imageGc = { garbageCollect: vi.fn(async (_beganGc: number) => rounds[Math.min(i++, rounds.length - 1)]!), detectImages: vi.fn(async () => {}) };
    const containerGc = {
      collect: async () => {
        const failure = containerFailures[Math.min(j++, containerFailures.length - 1)];
        if (failure) throw failure;
      },
    };
    const effects = createGarbageCollectorEffects({
      imageGc,
      containerGc,
      nodeName: 'node-a',
      recorder: { event: (object, type, reason, message) => void events.push(`${object.kind}/${object.name} ${type} ${reason}: ${message}`) },
      now: () => now,
      log: (level, message) => void lines.push(`${level} ${message}`),
    });
    return { effects, imageGc, lines, events, later: (ms: number) => void (now += ms) };
  }

  it("records ImageGCFailed only for a round that fails after a failed one, as kubelet.go; the maximum age counts from when it began", async () => {
    const failed = round({ failure: 'invalid capacity 0 on image filesystem' });
    const e = effectsWith([failed, failed, round(), failed]);
    e.later(7 * MIN);
    expect(await e.effects.collectImages()).toEqual({ ...failed, at: T0 + 7 * MIN });
    expect(e.imageGc.garbageCollect).toHaveBeenCalledWith(T0);
    expect(e.events).toEqual([]);
    await e.effects.collectImages();
    expect(e.events).toEqual(['Node/node-a Warning ImageGCFailed: invalid capacity 0 on image filesystem']);
    await e.effects.collectImages();
    await e.effects.collectImages();
    expect(e.events).toHaveLength(1);
    expect(e.lines).toEqual([
      'error Image garbage collection failed once. Stats initialization may not have completed yet',
      'error Image garbage collection failed multiple times in a row',
      'info Image garbage collection succeeded',
      'error Image garbage collection failed once. Stats initialization may not have completed yet',
    ]);
  });

  it('records ContainerGCFailed for each failed container pass, and says the success that ends them', async () => {
    const down = new CriError('ListContainers', 'UNAVAILABLE', 'connection refused');
    const e = effectsWith([round()], [null, down, down, null]);
    await e.effects.collectContainers();
    await expect(e.effects.collectContainers()).rejects.toBe(down);
    await expect(e.effects.collectContainers()).rejects.toBe(down);
    await e.effects.collectContainers();
    expect(e.events).toEqual([
      'Node/node-a Warning ContainerGCFailed: CRI ListContainers failed (UNAVAILABLE): connection refused',
      'Node/node-a Warning ContainerGCFailed: CRI ListContainers failed (UNAVAILABLE): connection refused',
    ]);
    expect(e.lines).toEqual(['debug Container garbage collection succeeded', 'error Container garbage collection failed', 'error Container garbage collection failed', 'info Container garbage collection succeeded']);
  });
});

describe("the garbage collector's line on the visualizer", () => {
  // The machine's own context before any round (its actor never started).
  const base = createActor(garbageCollectorMachine, { input: { containerGcPeriodMs: MIN, imageGcOn: true, highThresholdPercent: 85, lowThresholdPercent: 80 } }).getSnapshot().context;
  const at = Date.parse('2026-11-25T14:02:11Z');
  it.each([
    ['before any round', base, '0 images removed (0 B) · 85 % high, 80 % low'],
    ['after rounds', { ...base, imageRounds: 4, imagesRemoved: 3, bytesFreed: 412 * Mi, lastImageRound: { at, usagePercent: 91 } }, '3 images removed (412.0 MiB) · last 14:02, 91 % used · 85 % high, 80 % low'],
    [
      'failing',
      { ...base, imageRounds: 1, lastImageRound: { at, usagePercent: null }, imageFailure: 'imageFs information is unavailable', containerFailure: 'CRI ListContainers failed (UNAVAILABLE): connection refused' },
      '0 images removed (0 B) · last 14:02 · 85 % high, 80 % low · imageFs information is unavailable · container GC: CRI ListContainers failed (UNAVAILABLE): connection refused',
    ],
    ['image GC off', { ...base, imageGcOn: false, highThresholdPercent: 100 }, 'image GC off (100 % high, no maximum age)'],
  ])('%s', (_case, context, line) => expect(garbageCollectorLoop.summary(context)).toBe(line));
});
