import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ImagePuller, classifyPullError, effectivePullPolicy, ensureImage, goDuration, normalizeImage, pullErrorText } from '../../src/kuberuntime/images.ts';
import { CriError, type CriErrorCode } from '../../src/runtime/types.ts';
import { TestRuntime } from '../support/testRuntime.ts';
import { type SimOverGrpc, simOverGrpc } from '../runtime/support.ts';

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

  it('fails a pull over --registry-qps at once with "pull QPS exceeded" (ErrImagePull, backed off), and pulls again once a token is back', async () => {
    const runtime = new TestRuntime();
    let now = 0;
    const puller = new ImagePuller(runtime, 1, { qps: 1, burst: 1, now: () => now });
    expect((await ensureImage(input(runtime, puller, 'one:1'))).ok).toBe(true);
    const refused = await ensureImage(input(runtime, puller, 'two:1'));
    expect(refused).toMatchObject({ ok: false, reason: 'ErrImagePull', message: expect.stringContaining('pull QPS exceeded') });
    expect(runtime.callLog('pullImage')).toHaveLength(1);
    now = 1_000;
    expect((await ensureImage(input(runtime, puller, 'two:1'))).ok).toBe(true);
    expect(runtime.callLog('pullImage')).toHaveLength(2);
  });

  it('reports ErrImagePull, then ImagePullBackOff until the backoff ends', async () => {
    const { runtime, puller } = setup();
    runtime.failPull('missing:1');
    const first = await ensureImage(input(runtime, puller, 'missing:1'));
    expect(first).toMatchObject({ ok: false, reason: 'ErrImagePull', retryAfterMs: 10_000 });
    const second = await ensureImage({ ...input(runtime, puller, 'missing:1'), backoff: first.backoff, nowMs: 5_000 });
    // The back-off repeats the failure it waits on (image_manager.go prevPullErrMsg).
    expect(second).toMatchObject({ ok: false, reason: 'ImagePullBackOff', message: `Back-off pulling image "missing:1": ErrImagePull: ${first.ok ? '' : first.message}`, retryAfterMs: 6_000 });
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

/**
 * Failed pulls as real runtimes answer them, through gRPC: each case is the status code and
 * description the runtime sends, the waiting reason and message the container gets, and the text
 * of the `Failed` event. The kubelet's CRI client drops the `rpc error: code = Unknown desc = `
 * of an Unknown status (k8s.io/cri-client remote_image.go) and its image manager looks only at the
 * start of what remains (image_manager.go evalCRIPullErr).
 */
describe('a failed pull, as the runtime words it over gRPC', () => {
  const app = 'registry.invalid/team/app:1';
  const unpack = `failed to pull and unpack image "${app}": failed to resolve reference "${app}": `;
  const cases: { name: string; code: CriErrorCode; desc: string; reason: string; message: string; event: string }[] = [
    {
      name: 'containerd, registry host unknown (no such host)',
      code: 'UNKNOWN',
      desc: `${unpack}failed to do request: Head "https://registry.invalid/v2/team/app/manifests/1": dial tcp: lookup registry.invalid on 127.0.0.53:53: no such host`,
      reason: 'ErrImagePull',
      message: `${unpack}failed to do request: Head "https://registry.invalid/v2/team/app/manifests/1": dial tcp: lookup registry.invalid on 127.0.0.53:53: no such host`,
      event: `Failed to pull image "${app}": ${unpack}failed to do request: Head "https://registry.invalid/v2/team/app/manifests/1": dial tcp: lookup registry.invalid on 127.0.0.53:53: no such host`,
    },
    {
      name: 'containerd, registry down (connection refused)',
      code: 'UNKNOWN',
      desc: `${unpack}failed to do request: Head "https://registry.invalid/v2/team/app/manifests/1": dial tcp 10.0.0.5:443: connect: connection refused`,
      reason: 'ErrImagePull',
      message: `${unpack}failed to do request: Head "https://registry.invalid/v2/team/app/manifests/1": dial tcp 10.0.0.5:443: connect: connection refused`,
      event: `Failed to pull image "${app}": ${unpack}failed to do request: Head "https://registry.invalid/v2/team/app/manifests/1": dial tcp 10.0.0.5:443: connect: connection refused`,
    },
    {
      name: 'containerd, no such image (NotFound keeps gRPC\'s prefix)',
      code: 'NOT_FOUND',
      desc: `${unpack}${app}: not found`,
      reason: 'ErrImagePull',
      message: `rpc error: code = NotFound desc = ${unpack}${app}: not found`,
      event: `Failed to pull image "${app}": rpc error: code = NotFound desc = ${unpack}${app}: not found`,
    },
    {
      name: 'containerd, access denied',
      code: 'UNKNOWN',
      desc: `${unpack}pull access denied, repository does not exist or may require authorization: server message: insufficient_scope: authorization failed`,
      reason: 'ErrImagePull',
      message: `${unpack}pull access denied, repository does not exist or may require authorization: server message: insufficient_scope: authorization failed`,
      event: `Failed to pull image "${app}": ${unpack}pull access denied, repository does not exist or may require authorization: server message: insufficient_scope: authorization failed`,
    },
    {
      name: 'a runtime naming the registry unavailable (CRI-O)',
      code: 'UNKNOWN',
      desc: 'RegistryUnavailable: pinging container registry registry.invalid: Get "https://registry.invalid/v2/": dial tcp: lookup registry.invalid: no such host',
      reason: 'RegistryUnavailable',
      message: `image pull failed for ${app} because the registry is unavailable: pinging container registry registry.invalid: Get "https://registry.invalid/v2/": dial tcp: lookup registry.invalid: no such host`,
      event: `Failed to pull image "${app}": RegistryUnavailable: pinging container registry registry.invalid: Get "https://registry.invalid/v2/": dial tcp: lookup registry.invalid: no such host`,
    },
    {
      name: 'a runtime naming a failed signature validation',
      code: 'UNKNOWN',
      desc: 'SignatureValidationFailed: Source image rejected: A signature was required, but no signature exists',
      reason: 'SignatureValidationFailed',
      message: `image pull failed for ${app} because the signature validation failed: Source image rejected: A signature was required, but no signature exists`,
      event: `Failed to pull image "${app}": SignatureValidationFailed: Source image rejected: A signature was required, but no signature exists`,
    },
    {
      name: 'RegistryUnavailable under another code is not read as such (the prefix stays)',
      code: 'UNAVAILABLE',
      desc: 'RegistryUnavailable: registry.invalid: connection reset by peer',
      reason: 'ErrImagePull',
      message: 'rpc error: code = Unavailable desc = RegistryUnavailable: registry.invalid: connection reset by peer',
      event: `Failed to pull image "${app}": rpc error: code = Unavailable desc = RegistryUnavailable: registry.invalid: connection reset by peer`,
    },
    {
      name: 'a pull past its deadline',
      code: 'DEADLINE_EXCEEDED',
      desc: 'context deadline exceeded',
      reason: 'ErrImagePull',
      message: 'rpc error: code = DeadlineExceeded desc = context deadline exceeded',
      event: `Failed to pull image "${app}": rpc error: code = DeadlineExceeded desc = context deadline exceeded`,
    },
  ];

  let grpc: SimOverGrpc;
  /** How the runtime answers the next PullImage. */
  let failure = { code: 'UNKNOWN' as CriErrorCode, desc: '' };
  beforeAll(async () => {
    grpc = await simOverGrpc('statelet-pull-errors-', {
      intercept: async (call, _args, proceed) => {
        if (call.method === 'pullImage') throw new CriError(call.rpc, failure.code, failure.desc);
        return proceed();
      },
    });
  });
  afterAll(() => grpc.close());

  it.each(cases)('$name ⇒ $reason', async ({ code, desc, reason, message, event }) => {
    failure = { code, desc };
    const events: string[] = [];
    const result = await ensureImage({
      images: grpc.client,
      puller: new ImagePuller(grpc.client, 1),
      podUid: 'uid',
      container: { name: 'c', image: app, imagePullPolicy: 'Always' },
      backoff: {},
      nowMs: 1_000,
      record: (_type, why, text) => void events.push(`${why} ${text}`),
    });
    expect(result).toMatchObject({ ok: false, reason, message, retryAfterMs: 10_000 });
    expect(events).toContain(`Failed ${event}`);
    // While the pull backs off, its waiting message names the failure it waits on.
    const backingOff = await ensureImage({
      images: grpc.client,
      puller: new ImagePuller(grpc.client, 1),
      podUid: 'uid',
      container: { name: 'c', image: app, imagePullPolicy: 'Always' },
      backoff: result.backoff,
      nowMs: 2_000,
    });
    expect(backingOff).toMatchObject({ ok: false, reason: 'ImagePullBackOff', message: `Back-off pulling image "${app}": ${reason}: ${message}` });
  });

  it.each([
    ['a CriError with code Unknown: its description', new CriError('PullImage', 'UNKNOWN', 'RegistryUnavailable: x'), 'RegistryUnavailable: x'],
    ['a CriError with another code: Go\'s status text', new CriError('PullImage', 'NOT_FOUND', 'x: not found'), 'rpc error: code = NotFound desc = x: not found'],
    ['Go\'s text for Unknown, passed on by a proxy', new Error('rpc error: code = Unknown desc = RegistryUnavailable: x'), 'RegistryUnavailable: x'],
    ['Go\'s text for another code, as it is', new Error('rpc error: code = Unavailable desc = connection refused'), 'rpc error: code = Unavailable desc = connection refused'],
    ['any other error: its message', new Error('socket hang up'), 'socket hang up'],
  ])('pullErrorText: %s', (_name, err, text) => {
    expect(pullErrorText(err)).toBe(text);
  });

  it.each([
    ['RegistryUnavailable', { reason: 'RegistryUnavailable', message: 'image pull failed for app:1 because the registry is unavailable' }],
    ['RegistryUnavailable: no route', { reason: 'RegistryUnavailable', message: 'image pull failed for app:1 because the registry is unavailable: no route' }],
    ['SignatureValidationFailed: bad', { reason: 'SignatureValidationFailed', message: 'image pull failed for app:1 because the signature validation failed: bad' }],
    ['failed to pull: RegistryUnavailable: x', { reason: 'ErrImagePull', message: 'failed to pull: RegistryUnavailable: x' }],
    ['dial tcp: lookup registry: no such host', { reason: 'ErrImagePull', message: 'dial tcp: lookup registry: no such host' }],
  ])('classifyPullError(%j)', (text, expected) => {
    expect(classifyPullError('app:1', text)).toEqual(expected);
  });
});

describe('ImagePuller', () => {
  it('shares one pull between pods that need the same image at once', async () => {
    const runtime = new TestRuntime();
    const hold = runtime.holdCalls('pullImage');
    const puller = new ImagePuller(runtime, 1);
    const pulls = [puller.pull('app:1', []), puller.pull('app:1', []), puller.pull('app:1', [])];
    await hold.whenPending(1);
    hold.releaseAll();
    const refs = await Promise.all(pulls);
    expect(new Set(refs).size).toBe(1);
    expect(runtime.callLog('pullImage')).toHaveLength(1);
  });

  it('pulls different images one at a time by default, and says which are being pulled or wait their turn until each is done (for image GC)', async () => {
    const runtime = new TestRuntime();
    const hold = runtime.holdCalls('pullImage');
    const puller = new ImagePuller(runtime, 1);
    const a = puller.pull('a:1', []);
    const b = puller.pull('b:1', []);
    await hold.whenPending(1);
    expect(hold.pending).toBe(1);
    expect(puller.pulling()).toEqual(['a:1', 'b:1']);
    hold.releaseNext();
    await a;
    expect(puller.pulling()).toEqual(['b:1']);
    await hold.whenPending(1);
    hold.releaseAll();
    await b;
    expect(puller.pulling()).toEqual([]);
    expect(runtime.callLog('pullImage')).toEqual(['pullImage(a:1)', 'pullImage(b:1)']);
  });
});

describe('goDuration', () => {
  it.each([
    [850, '850ms'],
    [1_200, '1.2s'],
    [123_500, '2m3.5s'],
    [3_600_000, '1h0m0s'],
    [3_723_004, '1h2m3.004s'],
    [7 * 86_400_000, '168h0m0s'],
  ])('%d ms is %s, as Go prints a Duration', (ms, text) => expect(goDuration(ms)).toBe(text));
});
