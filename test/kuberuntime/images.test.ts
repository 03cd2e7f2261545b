import { describe, expect, it } from 'vitest';
import { ImagePuller, effectivePullPolicy, ensureImage, normalizeImage } from '../../src/kuberuntime/images.ts';
import { TestRuntime } from '../support/testRuntime.ts';

describe('image names and pull policies', () => {
  it.each([
    ['busybox', 'busybox:latest'],
    ['busybox:1.36', 'busybox:1.36'],
    ['registry:5000/team/app', 'registry:5000/team/app:latest'],
    ['registry:5000/team/app:v2', 'registry:5000/team/app:v2'],
    ['app@sha256:0123456789abcdef0123456789abcdef', 'app@sha256:0123456789abcdef0123456789abcdef'],
  ])('normalizes %s to %s', (image, expected) => {
    expect(normalizeImage(image)).toBe(expected);
  });

  it.each([
    [{ image: 'busybox' }, 'Always'],
    [{ image: 'busybox:latest' }, 'Always'],
    [{ image: 'busybox:1' }, 'IfNotPresent'],
    [{ image: 'busybox:1', imagePullPolicy: 'Never' as const }, 'Never'],
  ])('defaults the pull policy of %o to %s', (container, policy) => {
    expect(effectivePullPolicy({ name: 'c', ...container })).toBe(policy);
  });
});

describe('ensureImage', () => {
  const setup = () => {
    const runtime = new TestRuntime();
    return { runtime, puller: new ImagePuller(runtime, 1) };
  };
  const input = (runtime: TestRuntime, puller: ImagePuller, image: string, policy?: 'Never' | 'Always' | 'IfNotPresent') => ({
    images: runtime,
    puller,
    podUid: 'uid',
    container: { name: 'c', image, ...(policy ? { imagePullPolicy: policy } : {}) },
    backoff: {},
    nowMs: 1_000,
  });

  it('uses a present image without pulling under IfNotPresent', async () => {
    const { runtime, puller } = setup();
    runtime.addImage('busybox:1');
    const result = await ensureImage(input(runtime, puller, 'busybox:1'));
    expect(result.ok).toBe(true);
    expect(runtime.callLog('pullImage')).toEqual([]);
  });

  it('refuses to pull under Never', async () => {
    const { runtime, puller } = setup();
    const result = await ensureImage(input(runtime, puller, 'busybox:1', 'Never'));
    expect(result).toMatchObject({ ok: false, reason: 'ErrImageNeverPull', message: 'Container image "busybox:1" is not present with pull policy of Never' });
  });

  it('reports ErrImagePull, then ImagePullBackOff until the backoff ends', async () => {
    const { runtime, puller } = setup();
    runtime.failPull('missing:1');
    const first = await ensureImage(input(runtime, puller, 'missing:1'));
    expect(first).toMatchObject({ ok: false, reason: 'ErrImagePull', retryAfterMs: 10_000 });
    const second = await ensureImage({ ...input(runtime, puller, 'missing:1'), backoff: first.backoff, nowMs: 5_000 });
    expect(second).toMatchObject({ ok: false, reason: 'ImagePullBackOff', message: 'Back-off pulling image "missing:1"', retryAfterMs: 6_000 });
    expect(runtime.callLog('pullImage')).toHaveLength(1);
    const third = await ensureImage({ ...input(runtime, puller, 'missing:1'), backoff: first.backoff, nowMs: 11_000 });
    expect(third).toMatchObject({ ok: false, reason: 'ErrImagePull', retryAfterMs: 20_000 });
  });

  it('tells a pull starting and succeeding (the pod startup SLI leaves pulls out), nothing for a present image', async () => {
    const { runtime, puller } = setup();
    const stages: string[] = [];
    const pulling = (stage: string) => void stages.push(`${stage} ${runtime.callLog('pullImage').length}`);
    runtime.failPull('missing:1');
    expect(await ensureImage({ ...input(runtime, puller, 'missing:1'), pulling })).toMatchObject({ ok: false });
    expect(await ensureImage({ ...input(runtime, puller, 'busybox:1'), pulling })).toMatchObject({ ok: true });
    expect(await ensureImage({ ...input(runtime, puller, 'busybox:1'), pulling })).toMatchObject({ ok: true });
    // Started before each pull is asked for; finished only after a pull that succeeded.
    expect(stages).toEqual(['started 0', 'started 1', 'finished 2']);
  });

  it('rejects an unparsable image name', async () => {
    const { runtime, puller } = setup();
    const result = await ensureImage(input(runtime, puller, 'Not A Valid/Image'));
    expect(result).toMatchObject({ ok: false, reason: 'InvalidImageName' });
  });
});

describe('ImagePuller', () => {
  it('shares one pull between pods that need the same image at once', async () => {
    const runtime = new TestRuntime();
    const hold = runtime.holdCalls('pullImage');
    const puller = new ImagePuller(runtime, 1);
    const pulls = [puller.pull('app:1'), puller.pull('app:1'), puller.pull('app:1')];
    await hold.whenPending(1);
    hold.releaseAll();
    const refs = await Promise.all(pulls);
    expect(new Set(refs).size).toBe(1);
    expect(runtime.callLog('pullImage')).toHaveLength(1);
  });

  it('pulls different images one at a time by default', async () => {
    const runtime = new TestRuntime();
    const hold = runtime.holdCalls('pullImage');
    const puller = new ImagePuller(runtime, 1);
    const a = puller.pull('a:1');
    const b = puller.pull('b:1');
    await hold.whenPending(1);
    expect(hold.pending).toBe(1);
    hold.releaseNext();
    await a;
    await hold.whenPending(1);
    hold.releaseAll();
    await b;
    expect(runtime.callLog('pullImage')).toEqual(['pullImage(a:1)', 'pullImage(b:1)']);
  });
});
