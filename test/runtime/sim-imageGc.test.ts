/**
 * Image GC on sim://, the story a containerd node tells with real files on its root: the image
 * filesystem filled past the high threshold by images of declared sizes (nothing written), the
 * node reading sim's usage as taken from the disk's free space (StatsProvider `imageFsSimulated`),
 * and the image GC removing the unused images, least recently used first, until the low
 * threshold is met, keeping the image a container uses. Over gRPC, with the agent's CRI client.
 */
import { statfs } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { nodeReference } from '../../src/eventrecorder/recorder.ts';
import { ImageGcManager } from '../../src/kuberuntime/imageGC.ts';
import { silentLogger } from '../../src/log.ts';
import { StatsProvider } from '../../src/stats/provider.ts';
import { NamespaceMode } from '../../src/runtime/types.ts';
import { type SimOverGrpc, containerConfig, networkNamespace, podSandboxConfig, simOverGrpc } from './support.ts';

const Mi = 2 ** 20;
const MIN = 60_000;

let own: SimOverGrpc;
beforeEach(async () => {
  own = await simOverGrpc('statelet-sim-imagegc-', { ownDir: true });
});
afterEach(() => own.close());

function node(imageFsSimulated: boolean) {
  const { client, clock, dir } = own;
  const now = () => clock.now();
  const stats = new StatsProvider({ nodeName: 'node-a', runtime: client, images: client, rootDir: dir, podLogsDir: dir, now, log: silentLogger, imageFsSimulated });
  const events: string[] = [];
  const imageGc = new ImageGcManager({
    runtime: client,
    images: client,
    imageFs: () => stats.imageFs(),
    pulling: () => [],
    policy: { highThresholdPercent: 85, lowThresholdPercent: 80, minAgeMs: 2 * MIN, maxAgeMs: 0 },
    now,
    log: silentLogger,
    recorder: { event: (_object, _type, reason, message) => void events.push(`${reason}: ${message}`) },
    node: nodeReference('node-a'),
  });
  return { stats, imageGc, events };
}

describe('sim:// image filesystem, filled', () => {
  it('is filled past the high threshold by declared image sizes, and image GC frees the unused ones down to the low threshold', async ({ skip }) => {
    const { client, clock } = own;
    const disk = await statfs(join(own.dir, 'sim'));
    const capacity = disk.blocks * disk.bsize;
    const available = disk.bavail * disk.bsize;
    // Filled to 95 % whatever the host's disk holds besides, so that freeing down to 80 % (15 %)
    // takes images: a disk more than 75 % full leaves images too small for the story.
    if (available < 0.25 * capacity) return skip();
    const mib = (bytes: number) => `${Math.round(bytes / Mi)}Mi`;
    // Three unused images (8 %, 8 %, 1 %) and the one in use for the rest of the 95 %.
    const inUse = mib(available - 0.05 * capacity - 0.17 * capacity);
    const names = [
      `sim.example/unused-1:${mib(0.08 * capacity)}`,
      `sim.example/unused-2:${mib(0.08 * capacity)}`,
      `sim.example/unused-3:${mib(0.01 * capacity)}`,
    ];
    for (const name of [...names, `sim.example/app:${inUse}`]) await client.pullImage(name);
    const pod = podSandboxConfig('app', { linux: networkNamespace(NamespaceMode.POD) });
    const sandbox = await client.runPodSandbox(pod);
    await client.createContainer(sandbox, containerConfig('app', { image: { image: `sim.example/app:${inUse}` }, command: ['sleep', 'infinity'] }), pod);

    // A real runtime's figures would leave the disk as statfs finds it; sim's fill it.
    const { stats, imageGc, events } = node(true);
    expect(((await node(false).stats.imageFs())?.availableBytes ?? 0) / capacity).toBeGreaterThan(0.2);
    const filled = (await stats.imageFs())!;
    expect(100 - Math.trunc((filled.availableBytes! * 100) / capacity)).toBeGreaterThanOrEqual(94);

    // First seen now: too young to go until imageMinimumGCAge has passed, so nothing can be freed.
    const first = await imageGc.garbageCollect(clock.now());
    expect(first.removed).toEqual([]);
    expect(first.failure).toMatch(/^Insufficient free disk space on the node's image filesystem \(9\d% of [\d.]+ [KMGT]iB used\)\. Failed to free sufficient space by deleting unused images \(freed 0 bytes\)\. /);
    clock.advance(3 * MIN);
    const round = await imageGc.garbageCollect(clock.now());
    expect(round.failure).toBeNull();
    expect(round.usagePercent).toBeGreaterThanOrEqual(94);
    // 15 % to free, the unused images in the order they were first seen, none ever used: sim's own
    // busybox (a few MB), then the two of 8 %; the third, the one in use and the pinned pause stay.
    expect(round.removed.map((image) => image.name)).toEqual(['docker.io/library/busybox:latest', ...names.slice(0, 2)]);
    expect((await client.listImages()).map((image) => image.repoTags[0])).toEqual(['registry.k8s.io/pause:3.9', names[2], `sim.example/app:${inUse}`]);
    // Down to the low threshold; no new event.
    const after = (await stats.imageFs())!;
    expect(100 - Math.trunc((after.availableBytes! * 100) / capacity)).toBeLessThanOrEqual(80);
    expect(events).toEqual([`FreeDiskSpaceFailed: ${first.failure}`]);
  });
});
