/**
 * The stats provider (src/stats/provider.ts, served by src/server/statsRoutes.ts) over the simulated runtime on a manual clock:
 * CPU rates between requests, samples forgotten with their containers, the fallback to container
 * stats, log usage, the runtime's errors as the kubelet reports them, the image filesystem
 * (ImageFsInfo and statfs of its mountpoint, a real directory here), and the node read alone.
 */
import { mkdir, mkdtemp, rm, stat, statfs } from 'node:fs/promises';
import type { ServerResponse } from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { Label } from '../../src/kuberuntime/labels.ts';
import { type LogFields, type LogLevel, silentLogger } from '../../src/log.ts';
import { CriError, type ImageFsInfo } from '../../src/runtime/types.ts';
import { PROCESS_BASE_BYTES } from '../../src/runtime/sim/usage.ts';
import { type HostUsage, summaryJson } from '../../src/stats/summary.ts';
import { StatsProvider } from '../../src/stats/provider.ts';
import { serveStats } from '../../src/server/statsRoutes.ts';
import { ManualClock } from '../support/manualClock.ts';
import { TestRuntime } from '../support/testRuntime.ts';
import { containerConfig, podSandboxConfig } from '../runtime/support.ts';

const HOST: HostUsage = { bootTime: Date.UTC(2024, 0, 1), cpuNanoseconds: 1e9, memTotalBytes: 4 << 30, memFreeBytes: 2 << 30, inactiveFileBytes: 0, swapTotalBytes: 0, swapFreeBytes: 0 };

let dir: string;
let clock: ManualClock;
let runtime: TestRuntime;
let provider: StatsProvider;

beforeEach(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'statelet-stats-'));
  clock = new ManualClock();
  runtime = new TestRuntime({ clock });
  provider = new StatsProvider({ nodeName: 'node-a', runtime, podLogsDir: dir, now: () => clock.now(), log: silentLogger, readHost: async () => HOST });
});

afterEach(async () => {
  await runtime.close();
  await rm(dir, { recursive: true, force: true });
});

/** A pod `web` in `shop` whose containers log where the agent puts logs (`<dir>/shop_web_u1/<name>/0.log`). */
async function runPod(containers: Record<string, string>): Promise<{ sandboxId: string; ids: string[] }> {
  const metadata = { name: 'web', namespace: 'shop', uid: 'u1', attempt: 0 };
  const labels = { [Label.podName]: 'web', [Label.podNamespace]: 'shop', [Label.podUid]: 'u1' };
  const sandbox = podSandboxConfig('web', { metadata, labels, logDirectory: path.join(dir, 'shop_web_u1') });
  const sandboxId = await runtime.runPodSandbox(sandbox);
  const ids: string[] = [];
  for (const [name, script] of Object.entries(containers)) {
    const config = containerConfig(name, { command: ['sh', '-c', script], labels: { ...labels, [Label.containerName]: name } });
    const id = await runtime.createContainer(sandboxId, config, sandbox);
    await runtime.startContainer(id);
    ids.push(id);
  }
  return { sandboxId, ids };
}

/** The response serveStats writes, caught. */
function response(): { res: ServerResponse; sent: Promise<{ status: number; body: string }> } {
  let resolve!: (value: { status: number; body: string }) => void;
  const sent = new Promise<{ status: number; body: string }>((r) => (resolve = r));
  let status = 0;
  const res = {
    writeHead: (code: number) => (status = code),
    end: (body: string) => resolve({ status, body }),
  } as unknown as ServerResponse;
  return { res, sent };
}

describe('StatsProvider', () => {
  it("gives a working container's CPU rate from the previous request's sample", async () => {
    const { ids } = await runPod({ busy: 'while true; do echo x > /tmp/f; done' });
    const first = await provider.summary(true);
    const before = await runtime.containerStats(ids[0]!);
    clock.advance(50);
    const after = await runtime.containerStats(ids[0]!);
    const second = await provider.summary(true);

    expect(first.pods[0]?.containers[0]?.cpu?.usageNanoCores).toBeUndefined();
    const cpu = second.pods[0]?.containers[0]?.cpu;
    // Nothing ran between the reads and the summary: the clock stood still.
    expect(cpu?.usageCoreNanoSeconds).toBe(after.cpu?.usageCoreNanoSeconds);
    expect(cpu?.usageNanoCores).toBe(Math.floor((((after.cpu?.usageCoreNanoSeconds ?? 0) - (before.cpu?.usageCoreNanoSeconds ?? 0)) * 1000) / 50));
    expect(cpu?.usageNanoCores).toBeGreaterThan(0);
  });

  it('forgets the samples of a pod once it is gone', async () => {
    const { sandboxId } = await runPod({ a: 'sleep infinity', b: 'sleep infinity' });
    await provider.summary(false);
    expect(provider.samplesKept).toBe(4); // two containers, their sandbox, the node
    await runtime.removePodSandbox(sandboxId);
    expect((await provider.summary(false)).pods).toEqual([]);
    expect(provider.samplesKept).toBe(1);
  });

  it("sums the containers' stats into the pod's when ListPodSandboxStats fails", async () => {
    await runPod({ a: 'sleep infinity', b: 'echo hi > /tmp/x; sleep infinity' });
    const fromSandbox = (await provider.summary(true)).pods[0];
    runtime.failAlways('listPodSandboxStats', 'UNKNOWN', 'failed to get cgroup metrics for sandbox: cgroupPath is empty');
    const summed = (await provider.summary(true)).pods[0];

    const containers = (summed?.containers ?? []).reduce((sum, c) => sum + (c.memory?.workingSetBytes ?? 0), 0);
    expect(summed?.memory?.workingSetBytes).toBe(containers);
    // The sandbox's own figure also counts its pause process.
    expect(fromSandbox?.memory?.workingSetBytes).toBe(containers + PROCESS_BASE_BYTES);
    expect(runtime.callLog('listContainerStats')).toHaveLength(1);
  });

  it("measures each running container's log directory in the full summary only", async () => {
    await runPod({ app: 'echo hello; sleep infinity' });
    await runtime.engine.flushLogs();
    const logs = (await provider.summary(false)).pods[0]?.containers[0]?.logs;
    expect(logs?.usedBytes).toBeGreaterThan(0);
    expect(logs?.inodesUsed).toBe(2); // the directory and 0.log
    expect((await provider.summary(true)).pods[0]?.containers[0]?.logs).toBeUndefined();
  });

  it("answers a runtime failure with the kubelet's 500 and resource_scrape_error 1", async () => {
    await runPod({ app: 'sleep infinity' });
    runtime.failAlways('listContainers', 'UNAVAILABLE', 'connection refused');

    const { res, sent } = response();
    expect(await serveStats(provider, res, '/stats/summary', new URLSearchParams())).toBe(true);
    expect(await sent).toEqual({ status: 500, body: 'Internal Error: CRI ListContainers failed (UNAVAILABLE): connection refused' });
    expect(await provider.resourceMetrics()).toMatch(/^resource_scrape_error 1$/m);

    runtime.clearFailures();
    expect(await provider.resourceMetrics()).toMatch(/^pod_memory_working_set_bytes\{namespace="shop",pod="web"\} \d+ \d+$/m);
  });
});

describe('StatsProvider: the image filesystem', () => {
  const T = Date.UTC(2026, 2, 1, 12);
  /** What the runtime says of its image filesystem: one at `mountpoint`, 5 MB and 300 inodes used. */
  const onDisk = (mountpoint: string): ImageFsInfo => ({ imageFilesystems: [{ timestamp: T, mountpoint, usedBytes: 5_000_000, inodesUsed: 300 }], containerFilesystems: [] });

  function withImages(imageFsInfo: () => Promise<ImageFsInfo>, rootDir = dir, imageFsSimulated = false) {
    const lines: [LogLevel, string, LogFields | undefined][] = [];
    const images = { imageFsInfo: vi.fn(imageFsInfo) };
    const stats = new StatsProvider({
      nodeName: 'node-a',
      runtime,
      images,
      rootDir,
      podLogsDir: dir,
      now: () => clock.now(),
      log: (level, message, fields) => lines.push([level, message, fields]),
      readHost: async () => HOST,
      imageFsSimulated,
    });
    return { stats, images, lines };
  }

  it("fills node.runtime.imageFs in the full summary: used from the runtime, size and free space from statfs of its mountpoint", async () => {
    const mountpoint = path.join(dir, 'images');
    await mkdir(mountpoint);
    const { stats, images } = withImages(async () => onDisk(mountpoint));

    const summary = await stats.summary(false);
    const disk = await statfs(mountpoint);
    const imageFs = summary.node.runtime?.imageFs;
    expect(imageFs).toMatchObject({ time: T, usedBytes: 5_000_000, inodesUsed: 300, capacityBytes: disk.blocks * disk.bsize, inodes: disk.files });
    // Free space moves with the host's disk between the two reads; both are the mountpoint's.
    expect(imageFs?.availableBytes).toBeGreaterThan(0);
    expect(imageFs?.inodesFree).toBeGreaterThan(0);
    // The kubelet's CRI stats provider reports the writable layers' filesystem as the image filesystem.
    expect(summary.node.runtime?.containerFs).toEqual(imageFs);
    // The same disk as --root-dir: not dedicated.
    expect(summary.dedicatedImageFs).toBe(false);

    // /stats/summary shows it as the kubelet's does, and nothing of statelet's own.
    const json = JSON.parse(summaryJson(summary));
    expect(json.node.runtime.imageFs).toMatchObject({ time: '2026-03-01T12:00:00Z', usedBytes: 5_000_000, inodesUsed: 300 });
    expect(json).not.toHaveProperty('dedicatedImageFs');

    // CPU and memory only: not asked.
    expect((await stats.summary(true)).node.runtime).toBeUndefined();
    expect(images.imageFsInfo).toHaveBeenCalledTimes(1);
  });

  it("reads the node alone (the eviction manager's signals): the full summary's node figures, no runtime list", async () => {
    const mountpoint = path.join(dir, 'images');
    await mkdir(mountpoint);
    const { stats } = withImages(async () => onDisk(mountpoint));
    await runPod({ main: 'sleep 1000' });
    const lists = ['listPodSandbox', 'listContainers', 'listPodSandboxStats', 'listContainerStats'] as const;
    const spies = lists.map((name) => vi.spyOn(runtime, name));

    const node = await stats.readNode();
    expect(node).not.toHaveProperty('pods');
    for (const spy of spies) expect(spy).not.toHaveBeenCalled();

    const full = await stats.summary(false);
    expect(spies.some((spy) => spy.mock.calls.length > 0)).toBe(true);
    expect(full.pods).toHaveLength(1);
    expect(node.dedicatedImageFs).toBe(false);
    expect(full.dedicatedImageFs).toBe(false);
    // The same figures, but for free space and inodes, which move with the host's disks between the reads.
    const steady = ({ memory, rlimit, runtime: images, fs }: typeof node.node) => ({ memory, maxpid: rlimit?.maxpid, imageFsUsed: images?.imageFs?.usedBytes, fsCapacity: fs?.capacityBytes });
    expect(steady(node.node)).toEqual(steady(full.node));
    expect(node.node.fs?.capacityBytes).toBeGreaterThan(0);
  });

  it("tells a dedicated image filesystem by its device, another than --root-dir's", async ({ skip }) => {
    const shm = await stat('/dev/shm').catch(() => undefined);
    if (!shm || shm.dev === (await stat(dir)).dev) return skip();
    const mountpoint = await mkdtemp('/dev/shm/statelet-imagefs-');
    try {
      const { stats } = withImages(async () => onDisk(mountpoint));
      const summary = await stats.summary(false);
      expect(summary.dedicatedImageFs).toBe(true);
      const disk = await statfs(mountpoint);
      expect(summary.node.runtime?.imageFs?.capacityBytes).toBe(disk.blocks * disk.bsize);
    } finally {
      await rm(mountpoint, { recursive: true, force: true });
    }
  });

  it('gives the image filesystem alone, as image GC reads it: the figures of the summary', async () => {
    const mountpoint = path.join(dir, 'images');
    await mkdir(mountpoint);
    const { stats } = withImages(async () => onDisk(mountpoint));
    const disk = await statfs(mountpoint);
    expect(await stats.imageFs()).toMatchObject({ time: T, usedBytes: 5_000_000, inodesUsed: 300, capacityBytes: disk.blocks * disk.bsize, inodes: disk.files });
    expect(await withImages(async () => ({ imageFilesystems: [], containerFilesystems: [] })).stats.imageFs()).toBeUndefined();
  });

  it("takes a simulating runtime's usage (sim://) from the disk's free bytes and inodes, as if written there", async () => {
    const mountpoint = path.join(dir, 'images');
    await mkdir(mountpoint);
    const disk = await statfs(mountpoint);
    const beyond = { usedBytes: disk.blocks * disk.bsize + 1, inodesUsed: disk.files + 1 };
    const simulated = (usage: { usedBytes: number; inodesUsed: number }) => async (): Promise<ImageFsInfo> => ({ imageFilesystems: [{ timestamp: T, mountpoint, ...usage }], containerFilesystems: [] });
    // More than the disk has free: nothing left.
    expect(await withImages(simulated(beyond), dir, true).stats.imageFs()).toMatchObject({ availableBytes: 0, inodesFree: 0, capacityBytes: disk.blocks * disk.bsize, usedBytes: beyond.usedBytes });
    // A real runtime's usage is on the disk already: statfs's figures as they are.
    const real = await withImages(simulated(beyond)).stats.imageFs();
    expect(real?.availableBytes).toBeGreaterThan(0);
    expect(real?.inodesFree).toBeGreaterThan(0);
  });

  it('cannot tell dedicated or not without --root-dir, and still reports the filesystem', async () => {
    const { stats } = withImages(async () => onDisk(dir), '');
    const summary = await stats.summary(false);
    expect(summary.node.runtime?.imageFs?.usedBytes).toBe(5_000_000);
    expect(summary).not.toHaveProperty('dedicatedImageFs');
  });

  it.each<[string, (mountpoint: string) => Promise<ImageFsInfo>, string, Record<string, unknown>]>([
    [
      'ImageFsInfo fails',
      async () => {
        throw new CriError('ImageFsInfo', 'UNIMPLEMENTED', 'unknown method ImageFsInfo');
      },
      'The runtime gives no image filesystem stats; imagefs signals are not observed (ImageFsInfo)',
      { err: expect.objectContaining({ call: 'ImageFsInfo' }) },
    ],
    ['the runtime names no filesystem', async () => ({ imageFilesystems: [], containerFilesystems: [] }), 'The runtime names no image filesystem; imagefs signals are not observed (ImageFsInfo)', {}],
    [
      'its mountpoint cannot be measured',
      async (mountpoint) => onDisk(path.join(mountpoint, 'missing')),
      "The runtime's image filesystem cannot be measured; imagefs signals are not observed (ImageFsInfo, statfs)",
      { mountpoint: expect.stringMatching(/missing$/) },
    ],
  ])('leaves imageFs out when %s, says so once until it is back, and the summary goes on', async (_case, failing, message, fields) => {
    let broken = true;
    const { stats, lines } = withImages(async () => (broken ? failing(dir) : onDisk(dir)));
    for (let i = 0; i < 2; i++) {
      const summary = await stats.summary(false);
      expect(summary.node.runtime).toBeUndefined();
      expect(summary).not.toHaveProperty('dedicatedImageFs');
      expect(summary.node.fs?.capacityBytes).toBeGreaterThan(0);
    }
    expect(lines).toEqual([['info', message, fields]]);

    broken = false;
    expect((await stats.summary(false)).node.runtime?.imageFs?.usedBytes).toBe(5_000_000);
    broken = true;
    await stats.summary(false);
    expect(lines).toHaveLength(2);
  });
});
