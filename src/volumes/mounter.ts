/**
 * Memory-backed volumes (emptyDir `medium: Memory`, secret, downwardAPI, projected) on tmpfs, as
 * the kubelet wraps them (pkg/volume/emptydir/empty_dir.go setupTmpfs), emptyDirs on huge pages on
 * hugetlbfs (setupHugepages), local persistent volumes bind-mounted into their pods' directories
 * (pkg/volume/local local.go SetUpAt), and their unmounting at teardown. The agent mounts with the
 * system's `mount`/`umount`; where it may not (not root), it says so once, keeps the memory-backed
 * volumes on disk under the pod's directory (mode 0750) and gives containers a local volume's own
 * path, which are the differences a container can see. What is mounted is learnt from /proc/self/mountinfo once,
 * before the first mount (an agent restarted over running pods knows their mounts: under the pods
 * directory, but for a CSI driver's, which the driver unmounts, local volumes' device mounts, and
 * raw block devices' bind mounts onto their global map files),
 * and kept in memory, so a pod sync never reads the mount table; teardown reads it, to unmount everything
 * under a pod.
 */
import { execFile } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';

export interface Mounter {
  /** Mounts a tmpfs at `dir` (made already) unless one is there; false: this node cannot mount. */
  mountTmpfs(dir: string, sizeBytes: number | undefined): Promise<boolean>;
  /**
   * Mounts a hugetlbfs of `pageSize` pages (`2Mi`) at `dir` (made already) unless one is there
   * (empty_dir.go setupHugepages); rejects with the mount's error: a volume on huge pages is never
   * put on disk instead.
   */
  mountHugetlbfs(dir: string, pageSize: string): Promise<void>;
  /**
   * Bind-mounts `source` at `target` (made already) unless something is mounted there, read-only
   * with `readOnly` (mount-utils mount_linux.go: a bind, then a remount with `ro` and the options);
   * false: this node cannot mount (not root), and the caller uses `source` itself.
   */
  bindMount(source: string, target: string, options: { readOnly: boolean; mountOptions?: readonly string[] }): Promise<boolean>;
  /**
   * Mounts a block device's filesystem at `target` (made already) unless something is mounted
   * there, formatting the device first when it holds none (mount-utils SafeFormatAndMount: blkid
   * finds no filesystem or partition table, then `mkfs.<fsType>`); a read-only mount never formats.
   * Rejects where this node cannot mount (not root): a device has no other way in.
   */
  formatAndMount(device: string, target: string, options: { fsType: string; readOnly: boolean; mountOptions: readonly string[] }): Promise<void>;
  /** Unmounts `target` if the agent mounted it; false: nothing was mounted there. */
  unmount(target: string): Promise<boolean>;
  /** What is mounted at or under `dir` now, whoever mounted it (the mount table read afresh), deepest first. */
  mountedUnder(dir: string): Promise<string[]>;
  /** Unmounts every mount at or under `dir`, deepest first; returns their paths. */
  unmountUnder(dir: string): Promise<string[]>;
  /** The tmpfs mounts the agent knows under its pods directory. */
  readonly mounted: number;
}

/** Where local volumes on block devices are mounted for their pods (local.go generateBlockDeviceBaseGlobalPath), beside the pods directory. */
export function localDeviceMountsDir(podsDir: string): string {
  return path.join(path.dirname(podsDir), 'plugins', 'kubernetes.io', 'local-volume', 'mounts');
}

/**
 * A raw block device's bind mount onto its global map file (blockMap.ts), the agent's own, beside
 * the pods directory: a local volume's `plugins/kubernetes.io~local-volume/volumeDevices/<pv>/<uid>`
 * or a CSI volume's `plugins/kubernetes.io/csi/volumeDevices/<pv>/dev/<uid>` (not the driver's
 * `…/staging/<pv>` or `…/publish/<pv>/<uid>`).
 */
function isBlockGlobalMap(podsDir: string, point: string): boolean {
  const plugins = path.join(path.dirname(podsDir), 'plugins');
  const local = path.relative(path.join(plugins, 'kubernetes.io~local-volume', 'volumeDevices'), point).split(path.sep);
  if (local.length === 2 && local[0] !== '..') return true;
  const csi = path.relative(path.join(plugins, 'kubernetes.io', 'csi', 'volumeDevices'), point).split(path.sep);
  return csi.length === 3 && csi[0] !== '..' && csi[1] === 'dev';
}

/** A CSI driver's mount under a pod's directory (`<uid>/volumes/kubernetes.io~csi/…`): the driver's to unmount, through NodeUnpublishVolume. */
function isCsiDriverMount(podsDir: string, point: string): boolean {
  const [, volumes, plugin] = path.relative(podsDir, point).split(path.sep);
  return volumes === 'volumes' && plugin === 'kubernetes.io~csi';
}

/** The mount points of a /proc/self/mountinfo text at or under `dir` (pure; octal escapes decoded). */
export function mountPointsUnder(mountinfo: string, dir: string): string[] {
  const root = path.resolve(dir);
  const points: string[] = [];
  for (const line of mountinfo.split('\n')) {
    const field = line.split(' ')[4];
    if (!field) continue;
    const point = field.replace(/\\([0-7]{3})/g, (_, octal: string) => String.fromCharCode(parseInt(octal, 8)));
    if (point === root || point.startsWith(`${root}/`)) points.push(point);
  }
  // Deepest first, so a mount inside another comes off before it.
  return [...new Set(points)].sort((a, b) => b.length - a.length);
}

/** The size of a memory-backed volume's tmpfs (calculateEmptyDirMemorySize): allocatable, lowered to the pod's limit and the volume's sizeLimit. */
export function tmpfsSizeBytes(allocatableMemory: number | undefined, podMemoryLimit: number | undefined, sizeLimit: number | undefined): number | undefined {
  let size = allocatableMemory;
  for (const lower of [podMemoryLimit, sizeLimit]) {
    if (lower !== undefined && lower > 0 && (size === undefined || lower <= size)) size = lower;
  }
  return size;
}

type Run = (file: string, args: string[]) => Promise<unknown>;

/** A mount the system refuses this process (not root, no `mount`): the node then mounts nothing. */
const isRefusal = (message: string) => /permission denied|only root|must be superuser|operation not permitted|ENOENT/i.test(message);

/** A failed mount as the kubelet's mounter words it (mount-utils mount_linux.go doMount). */
const mountFailure = (message: string, args: readonly string[]) => new Error(`mount failed: ${message.trim()}\nMounting command: mount\nMounting arguments: ${args.join(' ')}`);
type Log = (level: 'warn' | 'info', message: string, fields?: Record<string, unknown>) => void;

const run: Run = (file, args) => promisify(execFile)(file, args);

/**
 * The system's mounter for pods under `podsDir`. `exec` and `mountinfo` (read once, before the
 * first mount or unmount) are the only ways it touches the system (a test gives its own).
 */
export function systemMounter(podsDir: string, log: Log, exec: Run = run, mountinfo = () => readFile('/proc/self/mountinfo', 'utf8')): Mounter & { adopt(): Promise<number> } {
  const known = new Set<string>();
  let refused: string | null = null;
  let bindRefusalTold = false;
  // Learnt once, before the first mount: a pod synced right after a restart must not get a second
  // tmpfs over the one its container already sees.
  let adopted: Promise<void> | undefined;
  const adopt = () =>
    (adopted ??= mountinfo()
      .catch(() => '')
      .then((text) => {
        for (const point of mountPointsUnder(text, podsDir)) if (!isCsiDriverMount(podsDir, point)) known.add(point);
        for (const point of mountPointsUnder(text, localDeviceMountsDir(podsDir))) known.add(point);
        for (const point of mountPointsUnder(text, path.join(path.dirname(podsDir), 'plugins'))) if (isBlockGlobalMap(podsDir, point)) known.add(point);
      }));
  return {
    get mounted() {
      return known.size;
    },
    async adopt() {
      await adopt();
      return known.size;
    },
    async mountTmpfs(dir, sizeBytes) {
      await adopt();
      if (known.has(dir)) return true;
      if (refused !== null) return false;
      try {
        await exec('mount', ['-t', 'tmpfs', '-o', sizeBytes !== undefined ? `size=${sizeBytes}` : 'defaults', 'tmpfs', dir]);
      } catch (err) {
        const message = err instanceof Error ? err.message : String(err);
        if (!isRefusal(message)) throw new Error(`mount tmpfs at ${dir}: ${message.trim()}`);
        refused = message.trim();
        log('warn', 'Cannot mount tmpfs here: memory-backed volumes (secrets, projected tokens, emptyDir medium Memory) stay on disk', { err: refused });
        return false;
      }
      known.add(dir);
      return true;
    },
    async bindMount(source, target, { readOnly, mountOptions = [] }) {
      await adopt();
      if (known.has(target)) return true;
      if (refused !== null) {
        // Refused already (a tmpfs first, say): what it means for persistent volumes is said once too.
        if (!bindRefusalTold) log('warn', 'Cannot bind-mount here: persistent volumes are used at their own paths', { err: refused });
        bindRefusalTold = true;
        return false;
      }
      const args = ['--bind', source, target];
      try {
        await exec('mount', args);
      } catch (err) {
        const message = err instanceof Error ? err.message : String(err);
        if (isRefusal(message)) {
          refused = message.trim();
          bindRefusalTold = true;
          log('warn', 'Cannot bind-mount here: persistent volumes are used at their own paths', { err: refused });
          return false;
        }
        throw mountFailure(message, args);
      }
      known.add(target);
      // A bind mount takes its flags from a second, remounting call (mount-utils MakeBindOpts).
      if (readOnly || mountOptions.length > 0) {
        const remount = ['-o', ['remount', 'bind', ...(readOnly ? ['ro'] : []), ...mountOptions].join(','), target];
        try {
          await exec('mount', remount);
        } catch (err) {
          await exec('umount', [target]).catch(() => {});
          known.delete(target);
          throw mountFailure(err instanceof Error ? err.message : String(err), remount);
        }
      }
      return true;
    },
    async formatAndMount(device, target, { fsType, readOnly, mountOptions }) {
      await adopt();
      if (known.has(target)) return;
      if (refused !== null) throw new Error(`cannot mount ${device}: this node may not mount (${refused})`);
      // blkid exits 2 when it finds no filesystem and no partition table (mount-utils getDiskFormat).
      const blank = await exec('blkid', ['-p', '-s', 'TYPE', '-s', 'PTTYPE', '-o', 'export', device]).then(
        () => false,
        (err: { code?: number; message?: string }) => {
          if (err.code === 2) return true;
          throw new Error(`blkid ${device}: ${err.message ?? String(err)}`);
        },
      );
      if (blank) {
        if (readOnly) throw new Error(`cannot format ${device} for a read-only mount`);
        const args = fsType.startsWith('ext') ? ['-F', '-m0', device] : [device];
        await exec(`mkfs.${fsType}`, args).catch((err: unknown) => {
          throw new Error(`format of disk "${device}" failed: type:("${fsType}") target:("${target}") options:("defaults") errcode:(${err instanceof Error ? err.message.trim() : String(err)})`);
        });
      }
      const args = ['-t', fsType, '-o', [...(readOnly ? ['ro'] : ['defaults']), ...mountOptions].join(','), device, target];
      await exec('mount', args).catch((err: unknown) => {
        throw mountFailure(err instanceof Error ? err.message : String(err), args);
      });
      known.add(target);
    },
    async unmount(target) {
      await adopt();
      if (!known.has(target)) return false;
      await exec('umount', [target]);
      known.delete(target);
      return true;
    },
    async mountHugetlbfs(dir, pageSize) {
      await adopt();
      if (known.has(dir)) return;
      const args = ['-t', 'hugetlbfs', '-o', `pagesize=${pageSize}`, 'nodev', dir];
      try {
        await exec('mount', args);
      } catch (err) {
        throw mountFailure(err instanceof Error ? err.message : String(err), args);
      }
      known.add(dir);
    },
    async mountedUnder(dir) {
      return mountPointsUnder(await mountinfo().catch(() => ''), dir);
    },
    // The mounts under the pods directory are the ones found at start and the ones made since:
    // nothing else mounts there, so a pod's teardown does not read the mount table again (with a
    // mount per pod, the table grows with the node and reading it was a tenth of a deletion).
    async unmountUnder(dir) {
      await adopt();
      const root = path.resolve(dir);
      const points = [...known].filter((point) => point === root || point.startsWith(`${root}/`)).sort((a, b) => b.length - a.length);
      for (const point of points) {
        await exec('umount', [point]);
        known.delete(point);
      }
      return points;
    },
  };
}

/** A node that mounts nothing: memory-backed volumes on disk (unit tests, and nodes told so). */
export const diskOnly: Mounter = {
  mounted: 0,
  mountTmpfs: async () => false,
  mountHugetlbfs: async (dir, pageSize) => {
    throw new Error(`mount failed: this node mounts nothing (hugetlbfs with pagesize=${pageSize} at ${dir})`);
  },
  bindMount: async () => false,
  formatAndMount: async (device) => {
    throw new Error(`cannot mount ${device}: this node mounts nothing`);
  },
  unmount: async () => false,
  mountedUnder: async () => [],
  unmountUnder: async () => [],
};
