/**
 * The node's stats provider (pkg/kubelet/stats): reads what the Summary is made of (the runtime's
 * CRI stats, the host's /proc figures, the containers' log directories) and hands it to the pure
 * functions of summary.ts, which keep the CPU samples between reads. The server's
 * `/stats/summary` and `/metrics/resource` (src/server/statsRoutes.ts) read it, and so may any
 * node loop that needs the node's usage.
 */
import { readFile, readdir, stat, statfs } from 'node:fs/promises';
import path from 'node:path';
import type { Logger } from '../log.ts';
import { type Container, type FilesystemUsage, type ImageService, type RuntimeService, definedOnly } from '../runtime/types.ts';
import { containerLogPath } from '../kuberuntime/configs.ts';
import type { MountedVolume } from '../volumes/world.ts';
import {
  type FsStats,
  type HostUsage,
  type RlimitStats,
  type VolumeStats,
  type RuntimeStats,
  type Summary,
  CpuRates,
  nodeSummary,
  parseMeminfo,
  parseProcStat,
  podSummaries,
  removeTerminatedContainers,
  resourceMetricsText,
} from './summary.ts';

interface StatsSource {
  nodeName: string;
  runtime: Pick<RuntimeService, 'listPodSandbox' | 'listContainers' | 'listPodSandboxStats' | 'listContainerStats'>;
  /** Where the containers' logs are (`--pod-logs-dir`), for their usage in the full summary. */
  podLogsDir: string;
  now(): number;
  log: Logger;
  /** The node's usage; /proc by default. */
  readHost?(): Promise<HostUsage>;
  /** The machine's memory when it is not the host's (sim:// simulates its machine's): it replaces /proc/meminfo's. */
  machineMemory?: () => { totalBytes: number; freeBytes: number };
  /** --root-dir: its filesystem is the node's (nodefs). */
  rootDir?: string;
  /** Where the pods' volumes are (`<root-dir>/pods`), for their local volumes' usage. */
  podsDir?: string;
  /** The volumes the volume manager set up, by pod: the claim-backed ones' usage (volume_stat_calculator.go). */
  volumes?: { mountedVolumes(uid: string): ReadonlyMap<string, MountedVolume> };
  /** The runtime's image service: its ImageFsInfo names the image filesystem (imagefs) of the full summary. */
  images?: Pick<ImageService, 'imageFsInfo'>;
  /**
   * What the runtime counts on its image filesystem is simulated, not written there (sim://, whose
   * images have a size and no files, and whose writable layers are in memory): its used bytes and
   * inodes are taken from what statfs finds free, as if written. A real runtime's are on the disk
   * already, and already out of statfs's figures.
   */
  imageFsSimulated?: boolean;
}

/** The directory of a pod's emptyDir volumes (the volume plugin's, `kubernetes.io/empty-dir`). */
const EMPTY_DIR_PLUGIN = 'kubernetes.io~empty-dir';

async function readProcHost(): Promise<HostUsage> {
  const [procStat, meminfo] = await Promise.all([readFile('/proc/stat', 'utf8'), readFile('/proc/meminfo', 'utf8')]);
  return { ...parseProcStat(procStat), ...parseMeminfo(meminfo) };
}

/**
 * A directory's files as `du` counts them (512-byte blocks) and its inodes, itself included;
 * `recursive`: its subdirectories' too (a volume), else only its own entries (a log directory).
 */
export async function directoryUsage(dir: string, time: number, recursive = false): Promise<FsStats | undefined> {
  let names: string[];
  try {
    names = await readdir(dir);
  } catch {
    return undefined;
  }
  let usedBytes = 0;
  let inodesUsed = 1;
  for (const name of names) {
    const file = await stat(path.join(dir, name)).catch(() => undefined);
    if (recursive && file?.isDirectory()) {
      const below = await directoryUsage(path.join(dir, name), time, true);
      usedBytes += below?.usedBytes ?? 0;
      inodesUsed += below?.inodesUsed ?? 0;
      continue;
    }
    usedBytes += (file?.blocks ?? 0) * 512;
    inodesUsed++;
  }
  return { time, usedBytes, inodesUsed };
}

/** The filesystem holding `dir`: capacity, available (to unprivileged users, as df shows) and inodes. */
export async function filesystemStats(dir: string, time: number): Promise<FsStats | undefined> {
  try {
    const fs = await statfs(dir);
    return {
      time,
      availableBytes: fs.bavail * fs.bsize,
      capacityBytes: fs.blocks * fs.bsize,
      usedBytes: (fs.blocks - fs.bfree) * fs.bsize,
      inodesFree: fs.ffree,
      inodes: fs.files,
      inodesUsed: fs.files - fs.ffree,
    };
  } catch {
    return undefined;
  }
}

/**
 * The node's process limit and count (the kubelet's rlimit stats: pid_max, and sysinfo's count of
 * tasks, which /proc/loadavg's fourth field also gives).
 */
async function readRlimit(time: number): Promise<RlimitStats | undefined> {
  try {
    const [pidMax, loadavg] = await Promise.all([readFile('/proc/sys/kernel/pid_max', 'utf8'), readFile('/proc/loadavg', 'utf8')]);
    const tasks = Number(/\d+\/(\d+)/.exec(loadavg)?.[1]);
    const maxpid = Number(pidMax.trim());
    return Number.isFinite(tasks) && maxpid > 0 ? { time, maxpid, curproc: tasks } : undefined;
  } catch {
    return undefined;
  }
}

export class StatsProvider {
  private readonly rates = new CpuRates();
  private podStatsFailureTold = false;
  /** Whether the image filesystem's absence has been said since it was last measured. */
  private imageFsFailureTold = false;

  constructor(private readonly source: StatsSource) {}

  /**
   * The Summary (GetCPUAndMemoryStats when `cpuAndMemoryOnly`): one ListPodSandbox, ListContainers
   * and ListPodSandboxStats, falling back to ListContainerStats. Rejects with the runtime's error,
   * which names the CRI call.
   */
  async summary(cpuAndMemoryOnly: boolean): Promise<Summary> {
    const { runtime, now } = this.source;
    const [sandboxes, containers, stats, node] = await Promise.all([
      runtime.listPodSandbox(),
      runtime.listContainers(),
      this.podStats(),
      cpuAndMemoryOnly ? this.readHost().then((host) => ({ node: nodeSummary(this.source.nodeName, host, now(), this.rates) })) : this.readNode(),
    ]);
    const input: RuntimeStats = { sandboxes, containers, stats };
    const logs = cpuAndMemoryOnly ? new Map<string, FsStats>() : await this.logUsage(containers);
    const time = now();
    const summary: Summary = { ...node, pods: podSummaries(input, this.rates, { onlyCpuAndMemory: cpuAndMemoryOnly, now: time, logs: (c) => logs.get(c.id) }) };
    const { podsDir } = this.source;
    if (!cpuAndMemoryOnly && podsDir) {
      await Promise.all(
        summary.pods.map(async (pod) => {
          const volumes = [...(await this.emptyDirUsage(path.join(podsDir, pod.podRef.uid, 'volumes', EMPTY_DIR_PLUGIN), time)), ...(await this.claimedVolumeUsage(pod.podRef.uid, time))];
          if (volumes.length > 0) pod.volume = volumes;
        }),
      );
    }
    return summary;
  }

  /**
   * The node's own figures and none of its pods' (what the eviction manager's signals are made of):
   * memory and CPU from the host, nodefs (--root-dir's filesystem), its processes, and the image
   * filesystem with whether it is dedicated. No runtime list and no walk of the pods' directories:
   * a node at rest is read each round for a few files and one ImageFsInfo.
   */
  async readNode(): Promise<Omit<Summary, 'pods'>> {
    const host = await this.readHost();
    const time = this.source.now();
    const node = nodeSummary(this.source.nodeName, host, time, this.rates);
    const [fs, rlimit, imageFs] = await Promise.all([this.source.rootDir ? filesystemStats(this.source.rootDir, time) : undefined, readRlimit(time), this.imageFsStats(time)]);
    if (fs) node.fs = fs;
    if (rlimit) node.rlimit = rlimit;
    if (!imageFs) return { node };
    node.runtime = { imageFs: imageFs.stats, containerFs: { ...imageFs.stats } };
    return imageFs.dedicated !== undefined ? { node, dedicatedImageFs: imageFs.dedicated } : { node };
  }

  /**
   * The image filesystem alone (the kubelet's ImageFsStats, which its image GC reads each round):
   * its size, free space and what the runtime uses of it; undefined when it cannot be measured.
   */
  async imageFs(): Promise<FsStats | undefined> {
    return (await this.imageFsStats(this.source.now()))?.stats;
  }

  /**
   * The pod's claim-backed volumes that measure their usage, with the claim as `pvcRef`: a local
   * PersistentVolume by its filesystem (local.go's MetricsStatFS); a hostPath one measures none
   * (MetricsNil), as the kubelet's. A mapped raw block volume has no filesystem to measure (the
   * kubelet's MetricsBlock, the device's size alone, is not built): none.
   */
  async claimedVolumeUsage(uid: string, time: number): Promise<VolumeStats[]> {
    const measured = [...(this.source.volumes?.mountedVolumes(uid).values() ?? [])].filter((v) => v.claim && v.kind === 'localPV' && !v.mapped);
    const usage = await Promise.all(measured.map(async (v) => ({ volume: v, fs: await filesystemStats(v.path, time) })));
    return usage.filter((u) => u.fs !== undefined).map(({ volume, fs }) => ({ name: volume.outerName, pvcRef: { name: volume.claim!.name, namespace: volume.claim!.namespace }, ...fs! }));
  }

  /** Each emptyDir volume of a pod, by what its directory holds. */
  private async emptyDirUsage(dir: string, time: number): Promise<VolumeStats[]> {
    const names = await readdir(dir).catch(() => [] as string[]);
    const volumes: VolumeStats[] = [];
    for (const name of names) {
      const usage = await directoryUsage(path.join(dir, name), time, true);
      if (usage) volumes.push({ name, ...usage });
    }
    return volumes;
  }

  private async readHost(): Promise<HostUsage> {
    const host = await (this.source.readHost ?? readProcHost)();
    const machine = this.source.machineMemory?.();
    return machine ? { ...host, memTotalBytes: machine.totalBytes, memFreeBytes: machine.freeBytes, inactiveFileBytes: 0 } : host;
  }

  /** `/metrics/resource`; a failed read is `resource_scrape_error 1`, logged with its cause. */
  async resourceMetrics(): Promise<string> {
    try {
      return resourceMetricsText(await this.summary(true));
    } catch (err) {
      this.source.log('error', 'Error getting summary for resourceMetric prometheus endpoint', { err });
      return resourceMetricsText(null);
    }
  }

  /** The number of CPU samples kept (containers, sandboxes and the node), for tests. */
  get samplesKept(): number {
    return this.rates.size;
  }

  /**
   * The pods' stats from ListPodSandboxStats, or the containers' from ListContainerStats when it
   * fails. The kubelet falls back only on UNIMPLEMENTED (cri_stats_provider.go
   * listPodStatsStrictlyFromCRI; its default, with PodAndContainerStatsFromCRI off, is
   * ListContainerStats). containerd 1.6 answers ListPodSandboxStats only for sandboxes with a
   * cgroup parent: with --cgroups-per-qos=false (or where the agent cannot make cgroups) it fails
   * every call with UNKNOWN "failed to get cgroup metrics for sandbox …: cgroupPath is empty",
   * while its ListContainerStats works: so any failure falls back, said once in the log. A runtime
   * that is down fails ListContainerStats as well.
   */
  private async podStats(): Promise<RuntimeStats['stats']> {
    try {
      return { sandboxes: await this.source.runtime.listPodSandboxStats() };
    } catch (err) {
      if (!this.podStatsFailureTold) {
        this.podStatsFailureTold = true;
        this.source.log('info', 'The runtime gives no pod sandbox stats; pod figures are its containers summed (ListContainerStats)', { err });
      }
      return { containers: await this.source.runtime.listContainerStats() };
    }
  }

  /**
   * The image filesystem (cri_stats_provider.go ImageFsStats): the first filesystem ImageFsInfo
   * names, its used bytes and inodes as the runtime counts them, its capacity, free space and
   * inodes from statfs of its mountpoint (the kubelet asks cadvisor's GetDirFsInfo); and whether
   * it is on another device than --root-dir (provider.go HasDedicatedImageFs, comparing the two
   * filesystems' devices), unknown without --root-dir. A simulating runtime's usage is taken from
   * the free figures (`imageFsSimulated`). The kubelet fails the whole summary when the
   * runtime names no image filesystem; here it is left out, said once until it is back, and the
   * imagefs signals go unobserved for as long: the rest of the node's figures still count.
   */
  private async imageFsStats(time: number): Promise<{ stats: FsStats; dedicated?: boolean } | undefined> {
    const { images, rootDir, log } = this.source;
    if (!images) return undefined;
    const unavailable = (message: string, fields: Record<string, unknown>) => {
      if (!this.imageFsFailureTold) log('info', message, fields);
      this.imageFsFailureTold = true;
      return undefined;
    };
    let usage: FilesystemUsage | undefined;
    try {
      usage = (await images.imageFsInfo()).imageFilesystems[0];
    } catch (err) {
      return unavailable('The runtime gives no image filesystem stats; imagefs signals are not observed (ImageFsInfo)', { err });
    }
    const mountpoint = usage?.mountpoint;
    if (!usage || !mountpoint) return unavailable('The runtime names no image filesystem; imagefs signals are not observed (ImageFsInfo)', {});
    const [disk, device, rootDevice] = await Promise.all([
      filesystemStats(mountpoint, time),
      stat(mountpoint).then((s) => s.dev, () => undefined),
      rootDir ? stat(rootDir).then((s) => s.dev, () => undefined) : undefined,
    ]);
    if (!disk) return unavailable("The runtime's image filesystem cannot be measured; imagefs signals are not observed (ImageFsInfo, statfs)", { mountpoint });
    this.imageFsFailureTold = false;
    const unwritten = (free: number | undefined, used: number | undefined) => (free !== undefined && this.source.imageFsSimulated ? Math.max(0, free - (used ?? 0)) : free);
    const stats = definedOnly<FsStats>({
      time: usage.timestamp,
      availableBytes: unwritten(disk.availableBytes, usage.usedBytes),
      capacityBytes: disk.capacityBytes,
      usedBytes: usage.usedBytes,
      inodesFree: unwritten(disk.inodesFree, usage.inodesUsed),
      inodes: disk.inodes,
      inodesUsed: usage.inodesUsed,
    });
    return device !== undefined && rootDevice !== undefined ? { stats, dedicated: device !== rootDevice } : { stats };
  }

  /** Each running container's log directory on the host (the kubelet's getPodContainerLogStats). */
  private async logUsage(containers: readonly Container[]): Promise<Map<string, FsStats>> {
    const time = this.source.now();
    const usage = new Map<string, FsStats>();
    await Promise.all(
      removeTerminatedContainers(containers).map(async (container) => {
        const file = containerLogPath(this.source.podLogsDir, container);
        const logs = file === null ? undefined : await directoryUsage(path.dirname(file), time);
        if (logs) usage.set(container.id, logs);
      }),
    );
    return usage;
  }
}
