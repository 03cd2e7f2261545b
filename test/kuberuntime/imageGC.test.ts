/**
 * Image garbage collection (src/kuberuntime/imageGC.ts; pkg/kubelet/images/image_gc_manager.go):
 * the decisions from tables (which images are in use, the records a look leaves, the eviction
 * order, the images too old, the usage and the amount to free, the images to free for an amount,
 * the size in the FreeDiskSpaceFailed message), then the manager over a fake runtime: the periodic
 * round (GarbageCollect) and the eviction manager's reclaim (DeleteUnusedImages).
 */
import { describe, expect, it } from 'vitest';
import {
  type ImageGcDeps,
  type ImageGcPolicy,
  type ImageRecord,
  ImageGcManager,
  containerImageReferences,
  evictionOrder,
  formatSize,
  imageFsUsage,
  imageGcOff,
  imagesInUse,
  imagesTooOld,
  imagesToFree,
  updatedRecords,
} from '../../src/kuberuntime/imageGC.ts';
import { nodeReference } from '../../src/eventrecorder/recorder.ts';
import { type Container, CriError, type ImageInfo } from '../../src/runtime/types.ts';

const MIN = 60_000;
const Mi = 2 ** 20;
const Gi = 2 ** 30;

function image(id: string, repoTags: string[] = [], repoDigests: string[] = [], pinned?: boolean, size = 1_000_000): ImageInfo {
  return { id, repoTags, repoDigests, size, ...(pinned !== undefined ? { pinned } : {}) };
}

const busybox = image('sha256:b0b', ['docker.io/library/busybox:1.36'], ['docker.io/library/busybox@sha256:b1b']);
const use = (image: string, imageRef: string) => ({ image, imageRef });

describe('imageGcOff (StartGarbageCollection)', () => {
  it.each([
    [85, 0, false],
    [100, 0, true],
    [100, 60 * MIN, false],
    [99, 0, false],
  ])('high threshold %d %%, maximum age %d ms: off %s', (highThresholdPercent, maxAgeMs, off) => {
    expect(imageGcOff({ highThresholdPercent, maxAgeMs })).toBe(off);
  });
});

describe('imagesInUse', () => {
  it.each<[string, ImageInfo, { image: string; imageRef: string }[], boolean]>([
    ['no container at all', busybox, [], false],
    ['a container of another image', busybox, [use('docker.io/library/nginx:1.25', 'sha256:n9n')], false],
    ['a container whose imageRef is the image id', busybox, [use('docker.io/library/busybox:latest', 'sha256:b0b')], true],
    ['a container whose image is one of its tags', busybox, [use('docker.io/library/busybox:1.36', 'sha256:elsewhere')], true],
    ['a container whose image is its digest', busybox, [use('docker.io/library/busybox@sha256:b1b', 'sha256:elsewhere')], true],
    ['a container whose imageRef is its digest', busybox, [use('busybox', 'docker.io/library/busybox@sha256:b1b')], true],
    ['a container naming a different tag of the same repository', busybox, [use('docker.io/library/busybox:1.37', 'sha256:other')], false],
    ['an untagged image, another in use', image('sha256:d0d'), [use('docker.io/library/busybox:1.36', 'sha256:b0b')], false],
  ])('%s: in use %s', (_case, img, containers, inUse) => {
    expect(imagesInUse([img], containerImageReferences(containers)).has(img.id)).toBe(inUse);
  });

  it.each<[string, string | undefined, boolean]>([
    ['named by tag', 'registry.k8s.io/pause:3.10', true],
    ['named by id', 'sha256:p0p', true],
    ['not named', undefined, false],
    ['another image named', 'registry.k8s.io/pause:3.9', false],
  ])("counts the runtime's sandbox image, unpinned and unused (containerd 1.6), %s: in use %s", (_case, sandboxImage, inUse) => {
    const pause = image('sha256:p0p', ['registry.k8s.io/pause:3.10']);
    expect(imagesInUse([pause], sandboxImage ? [sandboxImage] : []).has(pause.id)).toBe(inUse);
  });

  it('finds the images of containers in any state, by id, tag or digest, and no other', () => {
    const nginx = image('sha256:n9n', ['docker.io/library/nginx:1.25']);
    const redis = image('sha256:r3r', ['docker.io/library/redis:7'], ['docker.io/library/redis@sha256:r4r']);
    const alpine = image('sha256:a1a', ['docker.io/library/alpine:3.20']);
    const containers = [use('docker.io/library/busybox:1.36', 'sha256:b0b'), use('docker.io/library/nginx:1.25', 'sha256:unrelated'), use('docker.io/library/redis@sha256:r4r', 'sha256:unrelated-2')];
    expect(imagesInUse([alpine, busybox, nginx, redis], containerImageReferences(containers))).toEqual(new Set(['sha256:b0b', 'sha256:n9n', 'sha256:r3r']));
  });
});

const record = (id: string, fields: Partial<ImageRecord> = {}): ImageRecord => ({ id, name: id, firstDetected: 0, lastUsed: -Infinity, size: 100, pinned: false, ...fields });

describe('updatedRecords (detectImages)', () => {
  it('records a new image as first detected at the look, and one in use as last used now', () => {
    const records = updatedRecords(new Map(), [busybox, image('sha256:d0d')], new Set(['sha256:b0b']), 1_000, 1_005);
    expect([...records.values()]).toEqual([
      { id: 'sha256:b0b', name: 'docker.io/library/busybox:1.36', firstDetected: 1_000, lastUsed: 1_005, size: 1_000_000, pinned: false },
      { id: 'sha256:d0d', name: 'sha256:d0d', firstDetected: 1_000, lastUsed: -Infinity, size: 1_000_000, pinned: false },
    ]);
  });

  it('keeps when an image was first seen and last used, takes its size and pinning anew, and forgets the images gone', () => {
    const before = new Map([
      ['sha256:b0b', record('sha256:b0b', { firstDetected: 10, lastUsed: 20 })],
      ['sha256:gone', record('sha256:gone')],
    ]);
    const after = updatedRecords(before, [image('sha256:b0b', ['busybox:1'], [], true, 7)], new Set(), 500, 500);
    expect([...after.values()]).toEqual([{ id: 'sha256:b0b', name: 'busybox:1', firstDetected: 10, lastUsed: 20, size: 7, pinned: true }]);
  });
});

describe('evictionOrder (imagesInEvictionOrder, byLastUsedAndDetected)', () => {
  it('leaves out the images in use and the pinned ones; least recently used first, then first detected first, then as recorded', () => {
    const records = [
      record('used', { lastUsed: 50 }),
      record('recent', { lastUsed: 40, firstDetected: 0 }),
      record('pinned', { pinned: true }),
      record('old', { lastUsed: 10, firstDetected: 5 }),
      record('older-seen', { lastUsed: 10, firstDetected: 1 }),
      record('never-b', { firstDetected: 30 }),
      record('never-a', { firstDetected: 30 }),
    ];
    expect(evictionOrder(records, new Set(['used'])).map((r) => r.id)).toEqual(['never-b', 'never-a', 'older-seen', 'old', 'recent']);
  });
});

describe('imagesTooOld (freeOldImages)', () => {
  const candidates = [record('never'), record('long-ago', { lastUsed: 0 }), record('lately', { lastUsed: 95 * MIN })];
  it.each<[string, number, number, string[]]>([
    ['no maximum age: never', 0, 200 * MIN, []],
    ['the collector has not run longer than the maximum age', 60 * MIN, 60 * MIN, []],
    ['past it: those unused longer than it, and those never seen in use', 60 * MIN, 100 * MIN, ['never', 'long-ago']],
    ['exactly the maximum age unused is not too old', 100 * MIN, 101 * MIN, ['never', 'long-ago']],
  ])('%s', (_case, maxAgeMs, freeTime, ids) => {
    expect(imagesTooOld(candidates, { maxAgeMs }, freeTime, 0).map((r) => r.id)).toEqual(ids);
  });
});

describe('imageFsUsage (GarbageCollect)', () => {
  const policy = { highThresholdPercent: 85, lowThresholdPercent: 80 };
  it.each<[string, number, number, number, number | null]>([
    ['below the high threshold: nothing to free', 100 * Gi, 16 * Gi, 84, null],
    ['at the high threshold: down to the low one', 100 * Gi, 15 * Gi, 85, 5 * Gi],
    ['above it', 100 * Gi, 10 * Gi, 90, 10 * Gi],
    ['the percentage truncated as Go divides: 84.1 % used is 84', 1000, 159, 85, 41],
    ['full', 1000, 0, 100, 200],
    ['a disk past 2^53 bytes * 100, exactly', 2 ** 50, 2 ** 46, 94, Math.floor((2 ** 50 * 20) / 100) - 2 ** 46],
  ])('%s', (_case, capacity, available, usagePercent, amountToFree) => {
    expect(imageFsUsage(capacity, available, policy)).toEqual({ usagePercent, amountToFree });
  });
});

describe('imagesToFree (freeSpace)', () => {
  const candidates = [record('a', { size: 300, firstDetected: 0 }), record('young', { size: 900, firstDetected: 9 * MIN }), record('b', { size: 300, firstDetected: 1 * MIN }), record('c', { size: 300 })];
  const at = (minutes: number) => minutes * MIN;
  it.each<[string, number, number, string[]]>([
    ['in order until the amount is reached, past an image too young', 500, at(10), ['a', 'b']],
    ['exactly the amount', 600, at(10), ['a', 'b']],
    ['more than there is: all old enough', Infinity, at(10), ['a', 'b', 'c']],
    ['an amount of 0 still takes one, as the kubelet removes before it compares', 0, at(10), ['a']],
    ['only those first detected long enough ago, even short of the amount', 1000, at(2.5), ['a', 'c']],
    ['none old enough', 1000, at(1), []],
  ])('%s', (_case, bytes, freeTime, ids) => {
    expect(imagesToFree(candidates, bytes, freeTime, { minAgeMs: 2 * MIN }).map((r) => r.id)).toEqual(ids);
  });
});

describe('formatSize', () => {
  it.each([
    [0, '0 B'],
    [1023, '1023 B'],
    [1024, '1.0 KiB'],
    [1536, '1.5 KiB'],
    [10 * Mi, '10.0 MiB'],
    [28_346_117_324, '26.4 GiB'],
    [1.25 * Gi, '1.2 GiB'],
    [1.75 * Gi, '1.8 GiB'],
    [3 * 2 ** 40, '3.0 TiB'],
  ])('%d bytes: %s', (bytes, text) => expect(formatSize(bytes)).toBe(text));
});

// ---------------------------------------------------------------------------------------------

/** A runtime with images, containers, a sandbox image and an image filesystem, and what happened to it. */
function node(options: { images: ImageInfo[]; containers?: Pick<Container, 'image' | 'imageRef'>[]; sandboxImage?: string; policy?: Partial<ImageGcPolicy> }) {
  let now = 0;
  let images = [...options.images];
  const fs: { capacityBytes?: number; availableBytes?: number } | undefined = { capacityBytes: 100 * Gi, availableBytes: 50 * Gi };
  const state = {
    fs: fs as typeof fs | undefined,
    containers: options.containers ?? [],
    pulling: [] as string[],
    failing: new Map<string, Error>(),
    listFailure: null as Error | null,
    removed: [] as string[],
    events: [] as string[],
    logs: [] as string[],
    /** What each post-GC call was told: the images left, and when the round began. */
    afterFreeing: [] as { remaining: string[]; gcStart: number }[],
  };
  const deps: ImageGcDeps = {
    runtime: { listContainers: async () => state.containers as Container[] },
    ...(options.sandboxImage ? { sandboxImage: options.sandboxImage } : {}),
    images: {
      listImages: async () => {
        if (state.listFailure) throw state.listFailure;
        return images;
      },
      imageStatus: async (reference) => images.find((i) => i.id === reference || i.repoTags.includes(`docker.io/library/${reference}`)) ?? null,
      removeImage: async (id) => {
        const failure = state.failing.get(id);
        if (failure) throw failure;
        state.removed.push(id);
        const gone = images.find((i) => i.id === id);
        images = images.filter((i) => i.id !== id);
        // The disk gets the image's bytes back.
        if (state.fs && gone) state.fs.availableBytes = (state.fs.availableBytes ?? 0) + gone.size;
      },
    },
    imageFs: async () => state.fs,
    pulling: () => state.pulling,
    policy: { highThresholdPercent: 85, lowThresholdPercent: 80, minAgeMs: 2 * MIN, maxAgeMs: 0, ...options.policy },
    now: () => now,
    log: (_level, message, fields) => void state.logs.push(`${message}${fields?.['imageID'] ? ` ${String(fields['imageID'])}` : ''}`),
    recorder: { event: (object, type, reason, message) => void state.events.push(`${object.kind}/${object.name} ${type} ${reason}: ${message}`) },
    node: nodeReference('node-a'),
    afterFreeingSpace: async (remaining, gcStart) => void state.afterFreeing.push({ remaining: [...remaining].sort(), gcStart }),
  };
  return { manager: new ImageGcManager(deps), state, at: (ms: number) => void (now = ms) };
}

const big = (name: string, size: number, pinned?: boolean) => image(`sha256:${name}`, [`docker.io/library/${name}:1`], [], pinned, size);

describe('ImageGcManager.garbageCollect (GarbageCollect)', () => {
  it('below the high threshold removes nothing, and says the usage', async () => {
    const { manager, state } = node({ images: [big('a', 10 * Gi)] });
    state.fs = { capacityBytes: 100 * Gi, availableBytes: 16 * Gi };
    expect(await manager.garbageCollect(0)).toEqual({ removed: [], usagePercent: 84, amountToFree: null, failure: null });
    expect(state.removed).toEqual([]);
  });

  it('frees the least recently used images old enough down to the low threshold, keeping those in use, pinned or young', async () => {
    const images = [big('old', 5 * Gi), big('used', 50 * Gi), big('pause', 1 * Gi, true), big('big', 3 * Gi), big('newer', 6 * Gi), big('spare', 4 * Gi)];
    const { manager, state, at } = node({ images, containers: [use('docker.io/library/old:1', 'sha256:old'), use('docker.io/library/big:1', 'sha256:big')] });
    // First look: everything new; old and big were in use then.
    await manager.garbageCollect(0);
    at(1 * MIN);
    state.containers = [use('docker.io/library/big:1', 'sha256:big')];
    await manager.detectImages();
    at(3 * MIN);
    state.containers = [use('docker.io/library/used:1', 'sha256:used')];
    images.push(big('fresh', 20 * Gi));
    state.fs = { capacityBytes: 100 * Gi, availableBytes: 10 * Gi };
    const round = await manager.garbageCollect(0);
    // 90 % used: 20Gi - 10Gi to free. Never used (newer, spare) first, then old (last used at 0),
    // then big (at 1 min); fresh is too young, used and pause stay.
    expect(round).toEqual({
      removed: [
        { id: 'sha256:newer', name: 'docker.io/library/newer:1', size: 6 * Gi, reason: 'space' },
        { id: 'sha256:spare', name: 'docker.io/library/spare:1', size: 4 * Gi, reason: 'space' },
      ],
      usagePercent: 90,
      amountToFree: 10 * Gi,
      failure: null,
    });
    expect(state.logs).toContain('Disk usage on image filesystem is over the high threshold, trying to free bytes down to the low threshold');
    expect(state.logs).toContain('Removing image to free bytes sha256:newer');

    state.fs = { capacityBytes: 100 * Gi, availableBytes: 12 * Gi };
    expect((await manager.garbageCollect(0)).removed.map((r) => r.id)).toEqual(['sha256:old', 'sha256:big']);
    expect(state.events).toEqual([]);
  });

  it('frees, in its very first round, images that round detects for the first time, where the minimum age is 0', async () => {
    const { manager, state } = node({ images: [big('a', 5 * Gi), big('b', 5 * Gi)], policy: { minAgeMs: 0 } });
    state.fs = { capacityBytes: 100 * Gi, availableBytes: 10 * Gi };
    expect((await manager.garbageCollect(0)).removed.map((r) => r.id)).toEqual(['sha256:a', 'sha256:b']);
  });

  it("records FreeDiskSpaceFailed on the Node when what it may free is not enough, in the kubelet's words", async () => {
    const { manager, state, at } = node({ images: [big('a', 1 * Gi), big('b', 1 * Gi)], containers: [use('docker.io/library/b:1', 'sha256:b')] });
    await manager.detectImages();
    at(3 * MIN);
    state.fs = { capacityBytes: 100 * Gi, availableBytes: 10 * Gi };
    const message =
      "Insufficient free disk space on the node's image filesystem (90% of 100.0 GiB used). Failed to free sufficient space by deleting unused images (freed 1073741824 bytes). " +
      'Investigate disk usage, as it could be used by active images, logs, volumes, or other data.';
    expect(await manager.garbageCollect(0)).toMatchObject({ removed: [{ id: 'sha256:a' }], usagePercent: 90, amountToFree: 10 * Gi, failure: message });
    expect(state.events).toEqual([`Node/node-a Warning FreeDiskSpaceFailed: ${message}`]);
  });

  it('goes past an image it fails to remove, and fails the round with the removal errors', async () => {
    const { manager, state, at } = node({ images: [big('a', 6 * Gi), big('b', 6 * Gi), big('c', 6 * Gi)] });
    await manager.detectImages();
    at(3 * MIN);
    state.fs = { capacityBytes: 100 * Gi, availableBytes: 10 * Gi };
    state.failing.set('sha256:a', new CriError('RemoveImage', 'UNKNOWN', 'image is in use by a container'));
    const round = await manager.garbageCollect(0);
    expect(round.removed.map((r) => r.id)).toEqual(['sha256:b', 'sha256:c']);
    expect(round.failure).toBe('wanted to free 10737418240 bytes, but freed 12884901888 bytes space with errors in image deletion: CRI RemoveImage failed (UNKNOWN): image is in use by a container');
    expect(state.events).toEqual([]);
  });

  it('removes the images unused longer than imageMaximumGCAge whatever the usage, once the collector has run that long', async () => {
    const { manager, state, at } = node({ images: [big('stale', 1 * Gi), big('lately', 1 * Gi), big('running', 1 * Gi)], containers: [use('x', 'sha256:running')], policy: { maxAgeMs: 10 * MIN } });
    expect((await manager.garbageCollect(0)).removed).toEqual([]);
    at(5 * MIN);
    state.containers = [use('docker.io/library/lately:1', 'sha256:other'), use('x', 'sha256:running')];
    await manager.detectImages();
    state.containers = [use('x', 'sha256:running')];
    at(10 * MIN);
    // Not yet: the collector has run exactly the maximum age.
    expect((await manager.garbageCollect(0)).removed).toEqual([]);
    at(11 * MIN);
    expect(await manager.garbageCollect(0)).toEqual({
      removed: [{ id: 'sha256:stale', name: 'docker.io/library/stale:1', size: 1 * Gi, reason: 'age' }],
      // Measured after the removal, which gave the disk its bytes back.
      usagePercent: 49,
      amountToFree: null,
      failure: null,
    });
    state.failing.set('sha256:lately', new Error('read-only file system'));
    at(16 * MIN);
    expect((await manager.garbageCollect(0)).failure).toBe('wanted to free images older than 10m0s, encountered errors in image deletion: read-only file system');
  });

  it('keeps an image being pulled, as the runtime resolves the name the pod gave', async () => {
    const { manager, state, at } = node({ images: [big('busybox', 8 * Gi), big('nginx', 8 * Gi)] });
    await manager.detectImages();
    at(3 * MIN);
    state.fs = { capacityBytes: 100 * Gi, availableBytes: 10 * Gi };
    state.pulling = ['busybox:1', 'redis:7'];
    expect((await manager.garbageCollect(0)).removed.map((r) => r.id)).toEqual(['sha256:nginx']);
  });

  it.each<[string, { capacityBytes?: number; availableBytes?: number } | undefined, string, string[]]>([
    ['an image filesystem that cannot be measured', undefined, 'imageFs information is unavailable', []],
    ['a capacity of 0', { capacityBytes: 0, availableBytes: 0 }, 'invalid capacity 0 on image filesystem', ['Node/node-a Warning InvalidDiskCapacity: invalid capacity 0 on image filesystem']],
    ['no figures at all, read as 0', {}, 'invalid capacity 0 on image filesystem', ['Node/node-a Warning InvalidDiskCapacity: invalid capacity 0 on image filesystem']],
  ])('fails the round on %s', async (_case, fs, failure, events) => {
    const { manager, state } = node({ images: [big('a', Gi)] });
    state.fs = fs;
    expect(await manager.garbageCollect(0)).toEqual({ removed: [], usagePercent: null, amountToFree: null, failure });
    expect(state.events).toEqual(events);
  });

  it('reads more available than capacity as full capacity available, and says so', async () => {
    const { manager, state } = node({ images: [] });
    state.fs = { capacityBytes: 100, availableBytes: 150 };
    expect(await manager.garbageCollect(0)).toMatchObject({ usagePercent: 0, failure: null });
    expect(state.logs).toContain('Availability is larger than capacity');
  });

  it('fails the round, never rejects, when the runtime cannot be listed', async () => {
    const { manager, state } = node({ images: [] });
    state.listFailure = new CriError('ListImages', 'UNAVAILABLE', 'connection refused');
    expect(await manager.garbageCollect(0)).toEqual({ removed: [], usagePercent: null, amountToFree: null, failure: 'CRI ListImages failed (UNAVAILABLE): connection refused' });
  });
});

describe('after a round that freed space (runPostGCHooks: the pulled-image records pruned)', () => {
  it('tells the images left, those in use included, and when the round began; not below the high threshold', async () => {
    const images = [big('a', 10 * Gi), big('b', 10 * Gi), big('used', 10 * Gi)];
    const { manager, state, at } = node({ images, containers: [use('docker.io/library/used:1', 'sha256:used')], policy: { minAgeMs: 0 } });
    state.fs = { capacityBytes: 100 * Gi, availableBytes: 16 * Gi };
    await manager.garbageCollect(0);
    expect(state.afterFreeing).toEqual([]);
    at(7 * MIN);
    state.fs = { capacityBytes: 100 * Gi, availableBytes: 10 * Gi };
    expect((await manager.garbageCollect(0)).removed.map((r) => r.id)).toEqual(['sha256:a']);
    expect(state.afterFreeing).toEqual([{ remaining: ['sha256:b', 'sha256:used'], gcStart: 7 * MIN }]);
  });

  it('is not told after a round whose removals failed, as the kubelet returns first', async () => {
    const { manager, state } = node({ images: [big('a', 30 * Gi)], policy: { minAgeMs: 0 } });
    state.failing.set('sha256:a', new Error('image is in use by a container'));
    state.fs = { capacityBytes: 100 * Gi, availableBytes: 10 * Gi };
    expect((await manager.garbageCollect(0)).failure).toMatch(/image is in use/);
    expect(state.afterFreeing).toEqual([]);
  });
});

describe('ImageGcManager.deleteUnusedImages (DeleteUnusedImages)', () => {
  it('removes every unused image first seen at least imageMinimumGCAge ago, whatever the usage, and says how many bytes', async () => {
    const { manager, state, at } = node({ images: [big('a', 100), big('b', 200), big('used', 400), big('pause', 800, true)], containers: [use('y', 'sha256:used')] });
    expect(await manager.deleteUnusedImages()).toBe(0);
    at(2 * MIN);
    expect(await manager.deleteUnusedImages()).toBe(300);
    expect(state.removed).toEqual(['sha256:a', 'sha256:b']);
    expect(state.logs[0]).toBe('Attempting to delete unused images');
  });

  it('rejects with the removal errors after removing the others', async () => {
    const { manager, state, at } = node({ images: [big('a', 100), big('b', 200)] });
    await manager.detectImages();
    at(2 * MIN);
    state.failing.set('sha256:a', new Error('device busy'));
    await expect(manager.deleteUnusedImages()).rejects.toThrow('wanted to free 9223372036854775807 bytes, but freed 200 bytes space with errors in image deletion: device busy');
    expect(state.removed).toEqual(['sha256:b']);
  });
});
