/**
 * Image garbage collection on thresholds, the same story on sim:// and on containerd, through the
 * whole node (composeNode: the garbage collector loop, the image GC manager, the stats provider
 * measuring the image filesystem): an image filesystem on a small tmpfs, a container using the
 * busybox image, five unused images filling it past the high threshold; the node's first round
 * (kubelet.go StartGarbageCollection runs one at once) removes unused images, least recently used
 * first, until what it freed covers the amount down to the low threshold (image_gc_manager.go
 * GarbageCollect, freeSpace), and keeps the image in use and the sandbox image.
 *
 * The thresholds are computed from the filesystem as filled, so the story holds whatever
 * containerd's own files weigh: the high one just under the usage, the low one where the amount
 * to free is two and a half unused images, which takes three of them.
 *
 * On sim:// the images are declared sizes (`sim.example/filler:16Mi`) that the node takes from the
 * disk's free space (imageFsSimulated); on containerd they are real layers of random bytes. Needs
 * root (tmpfs); under CI nothing here is skipped.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { SimulatedClock, type AnyActorRef, waitFor } from 'xstate';
import { agentDefaults } from '../../src/cli/config.ts';
import { composeNode } from '../../src/kubelet/composeNode.ts';
import { silentLogger } from '../../src/log.ts';
import type { NodeConfig } from '../../src/nodeloop/parts.ts';
import { CriClient } from '../../src/runtime/cri/client.ts';
import { SimEngine } from '../../src/runtime/sim/engine.ts';
import { type ImageService, NamespaceMode, type RuntimeService } from '../../src/runtime/types.ts';
import { StatsProvider } from '../../src/stats/provider.ts';
import { diskOnly } from '../../src/volumes/mounter.ts';
import { BUSYBOX_IMAGE, startContainerd } from '../containerd/harness.ts';
import { containerConfig, networkNamespace, podSandboxConfig } from '../runtime/support.ts';
import { inProcessRuntime } from '../support/inProcessRuntime.ts';
import { NO_MEMORY_FEATURES } from '../support/pods.ts';
import { type SmallFilesystem, mountSmallFilesystem, rootOrSkip } from '../support/smallFilesystem.ts';

const Mi = 2 ** 20;
const FILLERS = 5;
const FILLER_BYTES = 16 * Mi;

interface RuntimeUnderTest {
  name: string;
  runtime: RuntimeService;
  images: ImageService;
  /** Where the node's --root-dir goes. */
  rootDir: string;
  /** The image in use and the sandbox image, as the runtime names them. */
  inUse: string;
  sandboxImage: string;
  /** The runtime's files only counted, not written (sim://). */
  imageFsSimulated: boolean;
  /** Puts an unused image of `bytes` in the runtime's store. */
  addFiller(name: string, bytes: number): Promise<void>;
  fillerName(i: number): string;
  close(): Promise<void>;
}

/** A pod of the runtime's own, not the node's (no pod labels): its container keeps its image in use. */
async function runContainerOf(runtime: RuntimeService, image: string): Promise<void> {
  const sandbox = podSandboxConfig('user', { linux: networkNamespace(NamespaceMode.POD) });
  const id = await runtime.runPodSandbox(sandbox);
  await runtime.createContainer(id, containerConfig('user', { image: { image }, command: ['sleep', '3600'] }), sandbox);
}

function story(open: () => Promise<RuntimeUnderTest | null>): void {
  const opened: RuntimeUnderTest[] = [];
  afterAll(async () => {
    for (const r of opened) await r.close();
  }, 180_000);

  it('removes unused images, least recently used first, until what it freed reaches the low threshold; keeps the image in use and the sandbox image', async ({ skip }) => {
    const r = await open();
    if (!r) return skip();
    opened.push(r);
    await runContainerOf(r.runtime, r.inUse);
    for (let i = 0; i < FILLERS; i++) await r.addFiller(r.fillerName(i), FILLER_BYTES);

    // The image filesystem as the node measures it, filled.
    const stats = new StatsProvider({ nodeName: 'node-gc', runtime: r.runtime, images: r.images, rootDir: r.rootDir, podLogsDir: r.rootDir, now: Date.now, log: silentLogger, imageFsSimulated: r.imageFsSimulated });
    const fs = (await stats.imageFs())!;
    const capacity = fs.capacityBytes!;
    const usage = 100 - Math.trunc((fs.availableBytes! * 100) / capacity);
    const fillerSize = (await r.images.listImages()).find((image) => image.repoTags.includes(r.fillerName(0)))!.size;
    const high = usage - 5;
    // amountToFree = capacity·(100 − low)/100 − available: two and a half fillers as the runtime sizes them.
    const low = 100 - Math.ceil(((fs.availableBytes! + 2.5 * fillerSize) * 100) / capacity);
    expect(low).toBeLessThan(high);
    expect(low).toBeGreaterThan(0);

    const clock = new SimulatedClock();
    clock.set(Date.now());
    const config: NodeConfig = {
      ...agentDefaults(),
      nodeName: 'node-gc',
      rootDir: r.rootDir,
      podLogsDir: path.join(r.rootDir, 'logs'),
      eventedPleg: false,
      imageGcHighThresholdPercent: high,
      imageGcLowThresholdPercent: low,
      imageMinimumGcAgeMs: 0,
    };
    const events: string[] = [];
    const node = composeNode({
      config,
      runtime: r.runtime,
      images: r.images,
      runtimeName: r.name,
      clock,
      log: (_level, message, fields) => void (message === 'FreeDiskSpaceFailed' && events.push(String(fields?.['message']))),
      mounter: diskOnly,
      memoryFeatures: NO_MEMORY_FEATURES,
      imageFsSimulated: r.imageFsSimulated,
      sandboxImage: r.sandboxImage,
    });
    node.start();
    try {
      const collector = (node.syncLoop.getSnapshot().children as Record<string, AnyActorRef | undefined>)['garbageCollector']!;
      const done = await waitFor(collector, (s) => s.context.lastImageRound !== null, { timeout: 60_000 });
      expect(done.context.imageFailure).toBeNull();
      const left = (await r.images.listImages()).flatMap((image) => image.repoTags);
      const fillersLeft = Array.from({ length: FILLERS }, (_, i) => r.fillerName(i)).filter((name) => left.includes(name));
      // Three fillers cover two and a half; the other two stay, as do the images in use.
      expect(done.context.imagesRemoved).toBe(3);
      expect(fillersLeft).toHaveLength(FILLERS - 3);
      expect(left).toEqual(expect.arrayContaining([r.inUse, r.sandboxImage]));
      const after = (await stats.imageFs())!;
      expect(100 - Math.trunc((after.availableBytes! * 100) / capacity)).toBeLessThanOrEqual(low);
      expect(events).toEqual([]);
    } finally {
      node.stop();
    }
  }, 180_000);
}

describe('image GC on sim://', () => {
  story(async () => {
    if (!rootOrSkip('image GC on sim:// (its image filesystem on a tmpfs)')) return null;
    const rootDir = await mkdtemp(path.join(os.tmpdir(), 'statelet-gc-sim-'));
    const small: SmallFilesystem = await mountSmallFilesystem(path.join(rootDir, 'sim'), { sizeMiB: 256, inodes: 65_536 });
    const engine = new SimEngine({ pullDelayMs: 0, stateDir: small.dir });
    const runtime = inProcessRuntime(engine);
    // As the containerd of the other story holds them: the busybox the container uses and the sandbox image.
    engine.images.remove('docker.io/library/busybox:latest');
    engine.images.load('statelet.local/busybox:1');
    return {
      name: 'sim',
      runtime,
      images: runtime,
      rootDir,
      inUse: 'statelet.local/busybox:1',
      sandboxImage: 'registry.k8s.io/pause:3.9',
      imageFsSimulated: true,
      addFiller: async (name) => void (await runtime.pullImage(name)),
      fillerName: (i) => `sim.example/filler-${i}:${FILLER_BYTES / Mi}Mi`,
      close: async () => {
        await engine.close();
        await small.remove();
        await rm(rootDir, { recursive: true, force: true });
      },
    };
  });
});

describe('image GC on containerd', () => {
  story(async () => {
    const containerd = await startContainerd({ rootSize: '256m' });
    if (!containerd) return null;
    const client = new CriClient(containerd.endpoint, { requestTimeoutMs: 60_000 });
    return {
      name: 'containerd',
      runtime: client,
      images: client,
      rootDir: path.join(containerd.workDir, 'node'),
      inUse: BUSYBOX_IMAGE,
      sandboxImage: (await client.status({ verbose: true })).sandboxImage ?? 'statelet.local/pause:1',
      imageFsSimulated: false,
      addFiller: (name, bytes) => containerd.importFillerImage(name, bytes),
      fillerName: (i) => `statelet.local/filler-${i}:1`,
      close: async () => {
        client.close();
        await containerd.stop();
      },
    };
  });
});
