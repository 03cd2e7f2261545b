/**
 * Cgroups made, set and removed through the cgroup filesystem (the kubelet's cgroupfs driver:
 * cm/cgroup_manager_linux.go, cgroup_v1_manager_linux.go, cgroup_v2_manager_linux.go), on cgroup
 * v1 or v2 as the mount shows:
 *
 *   v1  the same relative path under every controller's hierarchy (`cpu/`, `memory/`, `pids/`, …);
 *       settings in `cpu.shares`, `cpu.cfs_quota_us`, `cpu.cfs_period_us`,
 *       `memory.limit_in_bytes`, `pids.max`, `hugetlb.<size>.limit_in_bytes`; a new cpuset
 *       cgroup gets its parent's CPUs and memory nodes, without which no process could join it.
 *   v2  one path under the unified mount, the controllers enabled down to it through each
 *       parent's `cgroup.subtree_control`; settings in `cpu.weight` (the shares converted as the
 *       kubelet converts them), `cpu.max`, `memory.max`, `pids.max`, `hugetlb.<size>.max`.
 *
 * A setting of a controller the host does not have (v1: no hierarchy mounted for it; v2: not in
 * the root's `cgroup.controllers`) is not written: hugetlb is optional to the kubelet too.
 *
 * Removal kills what still runs in the cgroup (`cgroup.kill`, else each process), then removes
 * it and its children deepest first. The mount may also be a plain directory tree laid out as v2
 * (sim://'s simulated cgroups, and tests): there files are written as they are and removal
 * removes the files too.
 */
import { constants } from 'node:fs';
import { access, mkdir, readFile, readdir, realpath, rm, rmdir, statfs, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { CgroupConfig } from './podResources.ts';

/** statfs magic numbers of the cgroup filesystems (linux/magic.h). */
const CGROUP_SUPER_MAGIC = 0x27e0eb;
const CGROUP2_SUPER_MAGIC = 0x63677270;

/** The v2 controllers the kubelet needs at each level (cgroupV2impl.Validate), as far as the root offers them. */
const V2_CONTROLLERS = ['cpuset', 'cpu', 'io', 'memory', 'hugetlb', 'pids'];
/** v1 hierarchies that are not a controller of ours: the v2 one of a hybrid host, and systemd's named one. */
const V1_SKIPPED = new Set(['unified', 'systemd']);

export interface Cgroups {
  version: 1 | 2;
  /** The mount (`/sys/fs/cgroup`, or sim://'s tree). */
  mount: string;
  exists(cgroup: string): Promise<boolean>;
  /** Makes the cgroup (and its parents) and applies `config`. */
  create(cgroup: string, config: CgroupConfig): Promise<void>;
  update(cgroup: string, config: CgroupConfig): Promise<void>;
  /** Kills what runs in it, removes it and its children; a missing cgroup is fine. */
  destroy(cgroup: string): Promise<void>;
  /** The names of the cgroup's child cgroups (none when it does not exist). */
  children(cgroup: string): Promise<string[]>;
  /** One setting's file as the kernel shows it (`memory.max`), for tests and the visualizer. */
  read(cgroup: string, file: string): Promise<string>;
}

const exists = (file: string) => access(file, constants.F_OK).then(() => true, () => false);

/** cm/cgroup_manager_linux.go CpuSharesToCpuWeight: 2…262144 shares onto 1…10000. */
export function sharesToWeight(shares: number): number {
  return 1 + Math.floor(((shares - 2) * 9999) / 262142);
}

/** The files and values of a config on `version`, by controller (v1) or all in one place (v2). */
export function cgroupFiles(version: 1 | 2, config: CgroupConfig): { controller: string; file: string; value: string }[] {
  const out: { controller: string; file: string; value: string }[] = [];
  const period = config.cpuPeriod ?? 100_000;
  const hasQuota = config.cpuQuota !== undefined && config.cpuQuota !== 0;
  if (version === 1) {
    if (config.cpuShares !== undefined) out.push({ controller: 'cpu', file: 'cpu.shares', value: String(config.cpuShares) });
    if (config.cpuPeriod !== undefined) out.push({ controller: 'cpu', file: 'cpu.cfs_period_us', value: String(period) });
    if (hasQuota) out.push({ controller: 'cpu', file: 'cpu.cfs_quota_us', value: String(config.cpuQuota) });
    if (config.memoryLimitBytes !== undefined) out.push({ controller: 'memory', file: 'memory.limit_in_bytes', value: config.memoryLimitBytes > 0 ? String(config.memoryLimitBytes) : '-1' });
    if (config.pidsLimit !== undefined) out.push({ controller: 'pids', file: 'pids.max', value: config.pidsLimit > 0 ? String(config.pidsLimit) : 'max' });
    for (const [size, bytes] of Object.entries(config.hugePageLimits ?? {})) out.push({ controller: 'hugetlb', file: `hugetlb.${size}.limit_in_bytes`, value: String(bytes) });
    return out;
  }
  if (config.cpuShares !== undefined) out.push({ controller: 'cpu', file: 'cpu.weight', value: String(sharesToWeight(config.cpuShares)) });
  if (hasQuota || config.cpuPeriod !== undefined) out.push({ controller: 'cpu', file: 'cpu.max', value: `${hasQuota && config.cpuQuota! > 0 ? config.cpuQuota : 'max'} ${period}` });
  if (config.memoryLimitBytes !== undefined) out.push({ controller: 'memory', file: 'memory.max', value: config.memoryLimitBytes > 0 ? String(config.memoryLimitBytes) : 'max' });
  if (config.pidsLimit !== undefined) out.push({ controller: 'pids', file: 'pids.max', value: config.pidsLimit > 0 ? String(config.pidsLimit) : 'max' });
  for (const [size, bytes] of Object.entries(config.hugePageLimits ?? {})) out.push({ controller: 'hugetlb', file: `hugetlb.${size}.max`, value: String(bytes) });
  return out;
}

/**
 * The cgroup version of `mount`: 2 when it has `cgroup.controllers` (the unified hierarchy, or a
 * plain tree laid out as one), 1 otherwise (one hierarchy per controller directory).
 */
export async function cgroupVersion(mount: string): Promise<1 | 2> {
  return (await exists(path.join(mount, 'cgroup.controllers'))) ? 2 : 1;
}

/**
 * The kubelet's refusal to start on a cgroup v1 host with failCgroupV1, word for word, or null
 * (pkg/kubelet/apis/config/validation validation_linux.go validateKubeletOSConfiguration).
 */
export function cgroupV1Refusal(failCgroupV1: boolean, version: 1 | 2): string | null {
  return failCgroupV1 && version === 1 ? 'kubelet is configured to not run on a host using cgroup v1. cgroup v1 support is unsupported and will be removed in a future release' : null;
}

/** The cgroups under `mount`, of the version cgroupVersion finds. */
export async function openCgroups(mount: string): Promise<Cgroups> {
  if ((await cgroupVersion(mount)) === 2) return v2Cgroups(mount, await isCgroupFs(mount));
  const hierarchies = await v1Hierarchies(mount);
  const first = [...hierarchies.values()][0];
  return v1Cgroups(mount, hierarchies, first !== undefined && (await isCgroupFs(first)));
}

/** A real cgroup filesystem (rmdir takes a cgroup with its control files), not a plain directory tree. */
async function isCgroupFs(dir: string): Promise<boolean> {
  const type = (await statfs(dir)).type;
  return type === CGROUP2_SUPER_MAGIC || type === CGROUP_SUPER_MAGIC;
}

/** Each v1 controller hierarchy under the mount once (`cpu` and `cpuacct` may be one, linked). */
async function v1Hierarchies(mount: string): Promise<Map<string, string>> {
  const byController = new Map<string, string>();
  for (const name of await readdir(mount)) {
    if (V1_SKIPPED.has(name) || name.includes(',')) continue;
    const dir = await realpath(path.join(mount, name)).catch(() => null);
    if (dir && (await exists(path.join(dir, 'cgroup.procs')))) byController.set(name, dir);
  }
  return byController;
}

async function writeSetting(file: string, value: string): Promise<void> {
  await writeFile(file, value);
}

/** What the kernel shows in a new cgroup's files, which a plain tree must be given (no limits, default weights). */
const KERNEL_DEFAULTS: Record<1 | 2, { controller: string; file: string; value: string }[]> = {
  1: [
    { controller: 'cpu', file: 'cpu.shares', value: '1024' },
    { controller: 'cpu', file: 'cpu.cfs_quota_us', value: '-1' },
    { controller: 'cpu', file: 'cpu.cfs_period_us', value: '100000' },
    { controller: 'memory', file: 'memory.limit_in_bytes', value: '9223372036854771712' },
    { controller: 'pids', file: 'pids.max', value: 'max' },
  ],
  2: [
    { controller: 'cpu', file: 'cpu.weight', value: '100' },
    { controller: 'cpu', file: 'cpu.max', value: 'max 100000' },
    { controller: 'memory', file: 'memory.max', value: 'max' },
    { controller: 'pids', file: 'pids.max', value: 'max' },
  ],
};

/** Kills what runs in the cgroup dir: `cgroup.kill` where the kernel has it, else each listed process. */
async function killProcesses(dir: string): Promise<void> {
  if (await exists(path.join(dir, 'cgroup.kill'))) {
    await writeFile(path.join(dir, 'cgroup.kill'), '1').catch(() => undefined);
    return;
  }
  const procs = await readFile(path.join(dir, 'cgroup.procs'), 'utf8').catch(() => '');
  for (const pid of procs.split('\n').filter(Boolean)) {
    try {
      process.kill(Number(pid), 'SIGKILL');
    } catch {
      // gone already
    }
  }
}

/**
 * Removes a cgroup directory and its children, deepest first (cgroupfs lets rmdir take a cgroup
 * whose control files remain). As runc's RemovePath (libcontainer/cgroups/utils.go), which the
 * kubelet's cgroup manager calls: rmdir at once, which takes a cgroup without children (a pod's,
 * once the runtime has removed its containers'); only when the kernel refuses are its children
 * looked for — a cgroup directory lists its dozens of control files too.
 */
async function removeTree(dir: string, real: boolean): Promise<void> {
  if (!real) return rm(dir, { recursive: true, force: true });
  let childrenRemoved = false;
  // A cgroup whose last process is still exiting is busy for a moment: the kubelet tries 5 times.
  for (let attempt = 1; ; attempt++) {
    try {
      await rmdir(dir);
      return;
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === 'ENOENT') return;
      if (code !== 'EBUSY' || attempt >= 5) throw err;
      if (!childrenRemoved) {
        childrenRemoved = true;
        const entries = await readdir(dir, { withFileTypes: true }).catch(() => []);
        const children = entries.filter((entry) => entry.isDirectory());
        for (const child of children) await removeTree(path.join(dir, child.name), real);
        // Busy with children: tried again at once, the attempt not counted.
        if (children.length > 0) {
          attempt--;
          continue;
        }
      }
      await killProcesses(dir);
      await new Promise((resolve) => setTimeout(resolve, 20 * attempt));
    }
  }
}

function v1Cgroups(mount: string, hierarchies: Map<string, string>, real: boolean): Cgroups {
  const dirs = (cgroup: string) => [...new Set(hierarchies.values())].map((root) => path.join(root, cgroup));
  const apply = async (cgroup: string, config: CgroupConfig) => {
    for (const { controller, file, value } of cgroupFiles(1, config)) {
      const root = hierarchies.get(controller);
      if (root) await writeSetting(path.join(root, cgroup, file), value);
    }
  };
  return {
    version: 1,
    mount,
    exists: async (cgroup) => {
      for (const dir of dirs(cgroup)) if (!(await exists(dir))) return false;
      return true;
    },
    async create(cgroup, config) {
      for (const dir of dirs(cgroup)) await mkdir(dir, { recursive: true });
      if (!real) {
        for (const { controller, file, value } of KERNEL_DEFAULTS[1]) {
          const root = hierarchies.get(controller);
          if (root && !(await exists(path.join(root, cgroup, file)))) await writeSetting(path.join(root, cgroup, file), value);
        }
      }
      const cpuset = hierarchies.get('cpuset');
      if (cpuset) await inheritCpuset(cpuset, cgroup);
      await apply(cgroup, config);
    },
    update: apply,
    async destroy(cgroup) {
      const memory = hierarchies.get('memory');
      if (memory) await killProcesses(path.join(memory, cgroup));
      for (const dir of dirs(cgroup)) await removeTree(dir, real);
    },
    async children(cgroup) {
      const memory = hierarchies.get('memory') ?? [...hierarchies.values()][0];
      if (!memory) return [];
      const entries = await readdir(path.join(memory, cgroup), { withFileTypes: true }).catch(() => []);
      return entries.filter((e) => e.isDirectory()).map((e) => e.name);
    },
    read: async (cgroup, file) => {
      const root = hierarchies.get(file.split('.')[0]!) ?? mount;
      return (await readFile(path.join(root, cgroup, file), 'utf8')).trim();
    },
  };
}

/** Gives each new level of `cgroup` its parent's cpuset.cpus and cpuset.mems, top down (libcontainer's cpuset ensureParent). */
async function inheritCpuset(root: string, cgroup: string): Promise<void> {
  const parts = cgroup.split('/').filter(Boolean);
  for (let i = 1; i <= parts.length; i++) {
    const dir = path.join(root, ...parts.slice(0, i));
    const parent = path.dirname(dir);
    for (const file of ['cpuset.cpus', 'cpuset.mems']) {
      const own = (await readFile(path.join(dir, file), 'utf8').catch(() => '')).trim();
      if (own) continue;
      const inherited = (await readFile(path.join(parent, file), 'utf8').catch(() => '')).trim();
      if (inherited) await writeSetting(path.join(dir, file), inherited);
    }
  }
}

/** The controllers the v2 root offers (its `cgroup.controllers`). */
async function offeredControllers(mount: string): Promise<string[]> {
  return (await readFile(path.join(mount, 'cgroup.controllers'), 'utf8').catch(() => '')).split(/\s+/).filter(Boolean);
}

function v2Cgroups(mount: string, real: boolean): Cgroups {
  const dir = (cgroup: string) => path.join(mount, cgroup);
  const apply = async (cgroup: string, config: CgroupConfig) => {
    const files = cgroupFiles(2, config);
    // Only hugetlb is optional: the others are there on any host the kubelet runs on.
    const offered = files.some((f) => f.controller === 'hugetlb') ? await offeredControllers(mount) : [];
    for (const { controller, file, value } of files) {
      if (controller === 'hugetlb' && !offered.includes(controller)) continue;
      await writeSetting(path.join(dir(cgroup), file), value);
    }
  };
  /** Makes each level down to `cgroup`, enabling in each parent the controllers the root offers. */
  const makeLevels = async (cgroup: string) => {
    const offered = await offeredControllers(mount);
    const wanted = V2_CONTROLLERS.filter((c) => offered.includes(c));
    const parts = cgroup.split('/').filter(Boolean);
    for (let i = 0; i <= parts.length; i++) {
      const level = path.join(mount, ...parts.slice(0, i));
      if (i > 0) await mkdir(level, { recursive: true });
      if (i === parts.length) break;
      const control = path.join(level, 'cgroup.subtree_control');
      // The kernel takes `+cpu +memory …` and shows `cpu memory …`; a plain tree is written as shown.
      if (real) await writeFile(control, wanted.map((c) => `+${c}`).join(' '));
      else await writeFile(control, wanted.join(' '));
    }
  };
  return {
    version: 2,
    mount,
    exists: (cgroup) => exists(dir(cgroup)),
    async create(cgroup, config) {
      await makeLevels(cgroup);
      if (!real) {
        for (const { file, value } of KERNEL_DEFAULTS[2]) if (!(await exists(path.join(dir(cgroup), file)))) await writeSetting(path.join(dir(cgroup), file), value);
      }
      await apply(cgroup, config);
    },
    update: apply,
    async destroy(cgroup) {
      await killProcesses(dir(cgroup));
      await removeTree(dir(cgroup), real);
    },
    async children(cgroup) {
      const entries = await readdir(dir(cgroup), { withFileTypes: true }).catch(() => []);
      return entries.filter((e) => e.isDirectory()).map((e) => e.name);
    },
    read: async (cgroup, file) => (await readFile(path.join(dir(cgroup), file), 'utf8')).trim(),
  };
}
