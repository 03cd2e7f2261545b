/**
 * sim:// stats over gRPC (ContainerStats, ListContainerStats, PodSandboxStats, ListPodSandboxStats,
 * ImageFsInfo): the figures are what the simulated containers really use and what its image store
 * holds (src/runtime/sim/usage.ts), read through the same CriClient the agent uses for containerd.
 */
import { stat } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { CriClient } from '../../src/runtime/cri/client.ts';
import type { SimRuntime } from '../../src/runtime/sim/server.ts';
import { IMAGE_BYTES_PER_INODE, PROCESS_BASE_BYTES } from '../../src/runtime/sim/usage.ts';
import { NamespaceMode, type ContainerStats, type PodSandboxConfig } from '../../src/runtime/types.ts';
import type { ManualClock } from '../support/manualClock.ts';
import { type SimOverGrpc, containerConfig, networkNamespace, podSandboxConfig, rejection, simOverGrpc } from './support.ts';

let grpc: SimOverGrpc;
let clock: ManualClock;
let sim: SimRuntime;
let client: CriClient;

beforeEach(async () => {
  grpc = await simOverGrpc('statelet-sim-stats-');
  ({ clock, sim, client } = grpc);
});

afterEach(() => grpc.close());

async function runPod(name: string): Promise<{ pod: PodSandboxConfig; sandboxId: string }> {
  const pod = podSandboxConfig(name, { labels: { 'io.kubernetes.pod.uid': `uid-${name}` }, linux: networkNamespace(NamespaceMode.POD) });
  return { pod, sandboxId: await client.runPodSandbox(pod) };
}

async function runContainer(pod: PodSandboxConfig, sandboxId: string, name: string, script: string): Promise<string> {
  const config = containerConfig(name, { command: ['sh', '-c', script], labels: { 'io.kubernetes.pod.uid': pod.metadata.uid } });
  const id = await client.createContainer(sandboxId, config, pod);
  await client.startContainer(id);
  return id;
}

const cpu = (stats: ContainerStats) => stats.cpu?.usageCoreNanoSeconds ?? Number.NaN;
const memory = (stats: ContainerStats) => stats.memory?.workingSetBytes ?? Number.NaN;

describe('sim:// stats', () => {
  it('charges CPU to the container whose script runs, and none to one that waits', async () => {
    const { pod, sandboxId } = await runPod('work');
    // A loop that never blocks yields 1 ms of clock every 10,000 iterations (README "Clock and cost").
    const busy = await runContainer(pod, sandboxId, 'busy', 'while true; do echo x > /tmp/f; done');
    const idle = await runContainer(pod, sandboxId, 'idle', 'sleep infinity');
    const before = { busy: await client.containerStats(busy), idle: await client.containerStats(idle) };
    clock.advance(5);
    const after = { busy: await client.containerStats(busy), idle: await client.containerStats(idle) };

    expect(cpu(after.busy)).toBeGreaterThan(cpu(before.busy));
    expect(cpu(after.idle)).toBe(cpu(before.idle));
    expect(after.busy.cpu?.timestamp).toBe(clock.now());
    // The runtime reports a cumulative figure only; the rate is the agent's to compute.
    expect(after.busy.cpu?.usageNanoCores).toBeUndefined();
  });

  it('charges the time a container server spends answering', async () => {
    const { pod, sandboxId } = await runPod('web');
    const id = await runContainer(pod, sandboxId, 'httpd', 'mkdir -p /www; echo ok > /www/index.html; httpd -f -p 18080 -h /www');
    await sim.engine.whenListening(id, 18080);
    const before = cpu(await client.containerStats(id));
    const ip = (await client.podSandboxStatus(sandboxId)).network?.ip;
    expect(await (await fetch(`http://${ip}:18080/`)).text()).toBe('ok\n');
    expect(cpu(await client.containerStats(id))).toBeGreaterThan(before);
  });

  it('counts the bytes and inodes a container writes, and a base per live process', async () => {
    const { pod, sandboxId } = await runPod('files');
    const id = await runContainer(pod, sandboxId, 'main', 'sleep infinity');
    const before = await client.containerStats(id);
    expect(memory(before)).toBe(PROCESS_BASE_BYTES + (before.writableLayer?.usedBytes ?? Number.NaN));

    const exec = await client.execSync(id, ['sh', '-c', 'mkdir -p /data; echo 0123456789 > /data/f'], 0);
    expect(exec.exitCode).toBe(0);
    const after = await client.containerStats(id);
    expect(memory(after) - memory(before)).toBe(11);
    expect((after.writableLayer?.usedBytes ?? 0) - (before.writableLayer?.usedBytes ?? 0)).toBe(11);
    expect((after.writableLayer?.inodesUsed ?? 0) - (before.writableLayer?.inodesUsed ?? 0)).toBe(2);
    // Files are not the processes' own memory: RSS stays one process's base.
    expect(after.memory?.rssBytes).toBe(PROCESS_BASE_BYTES);
  });

  it("reports a sandbox's figures as its containers' and its pause process's, keeping what exited containers used", async () => {
    const { pod, sandboxId } = await runPod('sum');
    const a = await runContainer(pod, sandboxId, 'a', 'while true; do echo x > /tmp/f; done');
    const b = await runContainer(pod, sandboxId, 'b', 'echo hello > /tmp/g; sleep infinity');
    clock.advance(3);

    const [stats] = await client.listPodSandboxStats({ id: sandboxId });
    const containers = stats?.linux?.containers ?? [];
    expect(containers.map((c) => c.attributes.metadata.name).sort()).toEqual(['a', 'b']);
    expect(stats?.attributes.metadata).toEqual(pod.metadata);
    expect(stats?.linux?.cpu?.usageCoreNanoSeconds).toBe(containers.reduce((sum, c) => sum + cpu(c), 0));
    expect(stats?.linux?.memory?.workingSetBytes).toBe(PROCESS_BASE_BYTES + containers.reduce((sum, c) => sum + memory(c), 0));
    expect(stats?.linux?.process?.processCount).toBe(3);

    const used = cpu(await client.containerStats(a));
    sim.engine.crashContainer(a, 1);
    const [later] = await client.listPodSandboxStats({ id: sandboxId });
    expect(later?.linux?.containers.map((c) => c.attributes.id)).toEqual([b]);
    expect(later?.linux?.cpu?.usageCoreNanoSeconds).toBeGreaterThanOrEqual(used);
    expect(memory((await client.containerStats(a)))).toBe(0);
  });

  it('lists running containers and ready sandboxes only, by the filter', async () => {
    const one = await runPod('one');
    const two = await runPod('two');
    const running = await runContainer(one.pod, one.sandboxId, 'running', 'sleep infinity');
    await runContainer(one.pod, one.sandboxId, 'done', 'exit 0');
    const other = await runContainer(two.pod, two.sandboxId, 'other', 'sleep infinity');

    expect((await client.listContainerStats()).map((s) => s.attributes.id).sort()).toEqual([running, other].sort());
    expect((await client.listContainerStats({ podSandboxId: one.sandboxId })).map((s) => s.attributes.id)).toEqual([running]);
    expect((await client.listContainerStats({ labelSelector: { 'io.kubernetes.pod.uid': 'uid-two' } })).map((s) => s.attributes.id)).toEqual([other]);

    await client.stopPodSandbox(two.sandboxId);
    expect((await client.listPodSandboxStats()).map((s) => s.attributes.id)).toEqual([one.sandboxId]);
    expect((await client.podSandboxStats(two.sandboxId)).linux?.containers).toEqual([]);
  });

  it('names the unknown container or sandbox', async () => {
    const container = await rejection(client.containerStats('nope'));
    expect([container.call, container.code, container.detail]).toEqual(['ContainerStats', 'NOT_FOUND', 'container "nope" not found']);
    const sandbox = await rejection(client.podSandboxStats('gone'));
    expect([sandbox.call, sandbox.code, sandbox.detail]).toEqual(['PodSandboxStats', 'NOT_FOUND', 'pod sandbox "gone" not found']);
  });
});

describe('sim:// ImageFsInfo', () => {
  it('counts an image of the size its tag declares, a test filling the image filesystem, and gives it back when removed', async () => {
    const own = await simOverGrpc('statelet-sim-imagefs-', { ownDir: true });
    try {
      const used = async () => (await own.client.imageFsInfo()).imageFilesystems[0]!;
      const before = await used();
      const filler = await own.client.imageStatus(await own.client.pullImage('sim.example/filler:3Gi'));
      expect(filler?.size).toBe(3 * 2 ** 30);
      expect(filler?.repoTags).toEqual(['sim.example/filler:3Gi']);
      // Any other tag declares nothing: a size of 1 to 10 MB, stable for the name.
      const nginx = await own.client.imageStatus(await own.client.pullImage('nginx:1.25'));
      expect(nginx!.size).toBeGreaterThanOrEqual(1_000_000);
      expect(nginx!.size).toBeLessThan(10_000_000);
      expect((await used()).usedBytes).toBe(before.usedBytes! + 3 * 2 ** 30 + nginx!.size);
      expect((await used()).inodesUsed).toBe(before.inodesUsed! + (3 * 2 ** 30) / IMAGE_BYTES_PER_INODE + Math.ceil(nginx!.size / IMAGE_BYTES_PER_INODE));

      await own.client.removeImage(filler!.id);
      expect((await used()).usedBytes).toBe(before.usedBytes! + nginx!.size);
    } finally {
      await own.close();
    }
  });

  it('names no filesystem without a directory of its own: it keeps nothing on a disk', async () => {
    expect(await client.imageFsInfo()).toEqual({ imageFilesystems: [], containerFilesystems: [] });
  });

  it('names its own directory, holding its images and the writable layers, as its image filesystem', async () => {
    const own = await simOverGrpc('statelet-sim-imagefs-', { ownDir: true });
    try {
      const images = await own.client.listImages();
      const inImages = { bytes: images.reduce((sum, i) => sum + i.size, 0), inodes: images.reduce((sum, i) => sum + Math.ceil(i.size / IMAGE_BYTES_PER_INODE), 0) };
      const before = await own.client.imageFsInfo();
      const mountpoint = join(own.dir, 'sim');
      expect(before).toEqual({
        imageFilesystems: [{ timestamp: own.clock.now(), mountpoint, usedBytes: inImages.bytes, inodesUsed: inImages.inodes }],
        containerFilesystems: [],
      });
      // A directory it made, where statfs will measure the disk.
      expect((await stat(mountpoint)).isDirectory()).toBe(true);

      const nginx = await own.client.imageStatus(await own.client.pullImage('nginx:1.25'));
      const pod = podSandboxConfig('layer', { linux: networkNamespace(NamespaceMode.POD) });
      const sandboxId = await own.client.runPodSandbox(pod);
      const id = await own.client.createContainer(sandboxId, containerConfig('main', { command: ['sh', '-c', 'echo 0123456789 > /f; sleep infinity'] }), pod);
      await own.client.startContainer(id);
      const layer = (await own.client.containerStats(id)).writableLayer!;
      const [after] = (await own.client.imageFsInfo()).imageFilesystems;
      expect(after?.usedBytes).toBe(inImages.bytes + nginx!.size + layer.usedBytes!);
      expect(after?.inodesUsed).toBe(inImages.inodes + Math.ceil(nginx!.size / IMAGE_BYTES_PER_INODE) + layer.inodesUsed!);
    } finally {
      await own.close();
    }
  });
});
