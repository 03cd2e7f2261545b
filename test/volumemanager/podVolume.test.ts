/**
 * One pod volume's actor: set-up, back-off (500 ms doubling up to 2 m 2 s), refresh, teardown, and
 * an operation under way never cut off by a teardown request. Effects are test doubles; the clock
 * is simulated, so a retry comes only when the test moves it.
 */
import { describe, expect, it } from 'vitest';
import { SimulatedClock, createActor, waitFor } from 'xstate';
import type { PodVolumeRef } from '../../src/events.ts';
import { MAX_RETRY_MS, podVolumeMachineWith, podVolumeSummary, retryDelayMs } from '../../src/volumemanager/podVolume.ts';

const ref: PodVolumeRef = { id: 'u1/data', uid: 'u1', pod: 'shop/web-0', outerName: 'data', uniqueName: 'kubernetes.io/local-volume/pv-1', specName: 'pv-1', kind: 'localPV' };

/** Effects whose every call waits for the test to settle it. */
function heldEffects() {
  const calls: { op: 'mount' | 'unmount' | 'expand'; settle(error?: Error): void }[] = [];
  const held = (op: 'mount' | 'unmount' | 'expand') => () =>
    new Promise<void>((resolve, reject) => calls.push({ op, settle: (error) => (error ? reject(error) : resolve()) }));
  return { calls, effects: { mount: held('mount'), unmount: held('unmount'), expand: held('expand') } };
}

const settled = () => new Promise((resolve) => setTimeout(resolve, 0));

describe('retryDelayMs', () => {
  it.each([
    [1, 500],
    [2, 1_000],
    [3, 2_000],
    [8, 64_000],
    [9, MAX_RETRY_MS],
    [30, MAX_RETRY_MS],
  ])('after %i failures in a row: %i ms', (failures, ms) => {
    expect(retryDelayMs(failures)).toBe(ms);
  });
});

describe('podVolume', () => {
  it('backs off after each failed set-up, keeps the last error for the visualizer, and clears it once mounted', async () => {
    const clock = new SimulatedClock();
    const { calls, effects } = heldEffects();
    const actor = createActor(podVolumeMachineWith(effects), { input: ref, clock }).start();
    calls[0]!.settle(new Error('MountVolume.SetUp failed for volume "pv-1" : path "/mnt/a" does not exist'));
    await waitFor(actor, (s) => s.matches('backingOff'));
    expect(actor.getSnapshot().context).toMatchObject({ failures: 1, lastError: 'MountVolume.SetUp failed for volume "pv-1" : path "/mnt/a" does not exist' });
    clock.increment(499);
    expect(calls).toHaveLength(1);
    clock.increment(1);
    await waitFor(actor, (s) => s.matches('mounting'));
    calls[1]!.settle(new Error('again'));
    await waitFor(actor, (s) => s.matches('backingOff'));
    clock.increment(999);
    expect(calls).toHaveLength(2);
    clock.increment(1);
    await waitFor(actor, (s) => s.matches('mounting'));
    calls[2]!.settle();
    await waitFor(actor, (s) => s.matches('mounted'));
    expect(actor.getSnapshot().context).toMatchObject({ failures: 0, lastError: null });
    actor.stop();
  });

  it('refreshes a mounted volume and stays mounted whatever the refresh gives', async () => {
    const { calls, effects } = heldEffects();
    const actor = createActor(podVolumeMachineWith(effects), { input: ref }).start();
    calls[0]!.settle();
    await waitFor(actor, (s) => s.matches('mounted'));
    actor.send({ type: 'VOLUME.REMOUNT' });
    expect(actor.getSnapshot().value).toBe('remounting');
    calls[1]!.settle(new Error('configmap "settings" not found'));
    await waitFor(actor, (s) => s.matches('mounted'));
    expect(actor.getSnapshot().context.lastError).toBe('configmap "settings" not found');
    actor.stop();
  });

  it('expands a mounted volume online, backs off after a failed expansion and tries again, staying mounted', async () => {
    const clock = new SimulatedClock();
    const { calls, effects } = heldEffects();
    const actor = createActor(podVolumeMachineWith(effects), { input: ref, clock }).start();
    calls[0]!.settle();
    await waitFor(actor, (s) => s.matches('mounted'));
    actor.send({ type: 'VOLUME.EXPAND' });
    expect(actor.getSnapshot().value).toBe('expanding');
    calls[1]!.settle(new Error('NodeExpandVolume.NodeExpandVolume failed for volume "pv-1" : Expander.NodeExpand failed to expand the volume : rpc error: code = Internal desc = disk busy'));
    await waitFor(actor, (s) => s.matches('expandBackingOff'));
    expect(podVolumeSummary('expandBackingOff', actor.getSnapshot().context)).toMatch(/backing off after 1 failure: NodeExpandVolume.NodeExpandVolume failed/);
    clock.increment(499);
    expect(calls).toHaveLength(2);
    clock.increment(1);
    await waitFor(actor, (s) => s.matches('expanding'));
    expect(calls.map((c) => c.op)).toEqual(['mount', 'expand', 'expand']);
    calls[2]!.settle();
    await waitFor(actor, (s) => s.matches('mounted'));
    expect(actor.getSnapshot().context).toMatchObject({ failures: 0, lastError: null });
    // A teardown asked for during an expansion waits for it.
    actor.send({ type: 'VOLUME.EXPAND' });
    actor.send({ type: 'VOLUME.UNMOUNT' });
    expect(actor.getSnapshot().value).toBe('expanding');
    calls[3]!.settle();
    await waitFor(actor, (s) => s.matches('unmounting'));
    calls[4]!.settle();
    await waitFor(actor, (s) => s.status === 'done');
  });

  it('lets a set-up under way finish before tearing the volume down, then ends', async () => {
    const { calls, effects } = heldEffects();
    const actor = createActor(podVolumeMachineWith(effects), { input: ref }).start();
    actor.send({ type: 'VOLUME.UNMOUNT' });
    await settled();
    expect(actor.getSnapshot().value).toBe('mounting');
    expect(calls.map((c) => c.op)).toEqual(['mount']);
    calls[0]!.settle();
    await waitFor(actor, (s) => s.matches('unmounting'));
    expect(calls.map((c) => c.op)).toEqual(['mount', 'unmount']);
    calls[1]!.settle();
    await waitFor(actor, (s) => s.status === 'done');
  });

  it('only tears down a volume found set up at start for a pod that no longer wants it (reconstruction)', async () => {
    const { calls, effects } = heldEffects();
    const actor = createActor(podVolumeMachineWith(effects), { input: { ...ref, foundOnDisk: true } }).start();
    expect(actor.getSnapshot().value).toBe('unmounting');
    expect(calls.map((c) => c.op)).toEqual(['unmount']);
    calls[0]!.settle();
    await waitFor(actor, (s) => s.status === 'done');
  });

  it('retries a failed teardown with back-off until it succeeds', async () => {
    const clock = new SimulatedClock();
    const { calls, effects } = heldEffects();
    const actor = createActor(podVolumeMachineWith(effects), { input: ref, clock }).start();
    calls[0]!.settle();
    await waitFor(actor, (s) => s.matches('mounted'));
    actor.send({ type: 'VOLUME.UNMOUNT' });
    calls[1]!.settle(new Error('umount: target is busy'));
    await waitFor(actor, (s) => s.matches('unmountBackingOff'));
    clock.increment(500);
    await waitFor(actor, (s) => s.matches('unmounting'));
    calls[2]!.settle();
    await waitFor(actor, (s) => s.status === 'done');
  });

  it('goes straight to the teardown from a back-off', async () => {
    const clock = new SimulatedClock();
    const { calls, effects } = heldEffects();
    const actor = createActor(podVolumeMachineWith(effects), { input: ref, clock }).start();
    calls[0]!.settle(new Error('no'));
    await waitFor(actor, (s) => s.matches('backingOff'));
    actor.send({ type: 'VOLUME.UNMOUNT' });
    expect(actor.getSnapshot().value).toBe('unmounting');
    calls[1]!.settle();
    await waitFor(actor, (s) => s.status === 'done');
  });
});

describe('podVolumeSummary', () => {
  const context = { ...ref, failures: 0, lastError: null, unmountRequested: false };
  it.each([
    ['mounted', context, 'shop/web-0 · data (pv-1)'],
    ['backingOff', { ...context, failures: 3, lastError: 'MountVolume.SetUp failed for volume "pv-1" : path "/mnt/a" does not exist' }, 'shop/web-0 · data (pv-1) · backing off after 3 failures: MountVolume.SetUp failed for volume "pv-1" : path "/mnt/a" does not exist'],
    ['mounted', { ...context, outerName: 'settings', specName: 'settings', lastError: 'configmap "settings" not found' }, 'shop/web-0 · settings · configmap "settings" not found'],
    ['unmountBackingOff', { ...context, pod: 'u9', outerName: 'pv-1', foundOnDisk: true as const, failures: 1, lastError: 'UnmountVolume.TearDown failed' }, 'u9 · pv-1 · found set up at start, its pod gone · backing off after 1 failure: UnmountVolume.TearDown failed'],
  ])('in %s: %j', (state, c, line) => {
    expect(podVolumeSummary(state, c)).toBe(line);
  });
});
