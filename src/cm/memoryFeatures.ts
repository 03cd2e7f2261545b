/**
 * What the node's kernel offers for containers' memory, found once when the agent starts, and
 * the kubelet's refusal to run with swap on (--fail-swap-on):
 *
 *   cgroup version   v2 when the cgroup mount has `cgroup.controllers` (cgroupfs.ts cgroupVersion)
 *   swap controller  v1: the memory hierarchy's root has `memory.memsw.limit_in_bytes` (swap
 *                    accounting on); v2: the agent's own cgroup has `memory.swap.max`, which the
 *                    root never has (kuberuntime_container_linux.go swapControllerAvailable)
 *   huge page sizes  the `hugepages-<n>kB` directories of /sys/kernel/mm/hugepages, named as runc
 *                    and the CRI name them (`2MB`, `1GB`; libcontainer HugePageSizes), by name
 *   swap on          /proc/swaps lists a device under its header (container_manager_linux.go
 *                    validateSwapConfiguration)
 *
 * sim:// simulates its machine: cgroup v2 (its tree under --root-dir and its containers' files),
 * with a swap controller and no swap device, and the host's huge page sizes (the node reports the
 * host's huge pages). The parsers are pure; only the `host…` functions read files.
 */
import { access, readFile, readdir } from 'node:fs/promises';
import path from 'node:path';
import { type MemoryFeatures, hugePageSizeName } from '../kuberuntime/resources.ts';
import { cgroupVersion } from './cgroupfs.ts';

/** Where the host's answers are; tests point these at plain trees. */
export interface HostMemoryPaths {
  cgroupMount: string;
  hugepagesDir: string;
  /** `/proc/self/cgroup`: on v2 its `0::<path>` line names the agent's own cgroup. */
  selfCgroup: string;
}

export const HOST_MEMORY_PATHS: HostMemoryPaths = {
  cgroupMount: '/sys/fs/cgroup',
  hugepagesDir: '/sys/kernel/mm/hugepages',
  selfCgroup: '/proc/self/cgroup',
};

const exists = (file: string) => access(file).then(() => true, () => false);

/** `hugepages-2048kB` → `2MB`; null for any other name. */
export function hugePageSizeOfSysfsDir(name: string): string | null {
  const kb = /^hugepages-(\d+)kB$/.exec(name)?.[1];
  return kb === undefined ? null : hugePageSizeName(Number(kb) * 1024);
}

/** The cgroup v2 path of `/proc/self/cgroup`'s unified line (`0::/user.slice/…`), or null. */
export function unifiedCgroupOf(procSelfCgroup: string): string | null {
  const line = procSelfCgroup.split('\n').find((l) => l.startsWith('0::'));
  return line === undefined ? null : line.slice(3).trim() || '/';
}

/** The huge page sizes the kernel offers, ordered by directory name as Go's ReadDir gives them. */
export async function hostHugePageSizes(dir = HOST_MEMORY_PATHS.hugepagesDir): Promise<string[]> {
  const names = await readdir(dir).catch(() => []);
  return names
    .sort()
    .map(hugePageSizeOfSysfsDir)
    .filter((size): size is string => size !== null);
}

/** The host's cgroup version, swap controller and huge page sizes. Nothing here fails: a file that cannot be read means "not there". */
export async function hostMemoryFeatures(paths: HostMemoryPaths = HOST_MEMORY_PATHS): Promise<MemoryFeatures> {
  const version = await cgroupVersion(paths.cgroupMount);
  let swapFile: string | null = path.join(paths.cgroupMount, 'memory', 'memory.memsw.limit_in_bytes');
  if (version === 2) {
    const own = unifiedCgroupOf(await readFile(paths.selfCgroup, 'utf8').catch(() => ''));
    swapFile = own === null ? null : path.join(paths.cgroupMount, own, 'memory.swap.max');
  }
  return {
    cgroupVersion: version,
    swapController: swapFile !== null && (await exists(swapFile)),
    hugePageSizes: await hostHugePageSizes(paths.hugepagesDir),
  };
}

/** sim://'s machine: cgroup v2 with the swap controller, and the page sizes given (the host's). */
export function simMemoryFeatures(hugePageSizes: readonly string[]): MemoryFeatures {
  return { cgroupVersion: 2, swapController: true, hugePageSizes };
}

/**
 * The kubelet's refusal to start with swap on, word for word, or null: /proc/swaps (`text`; null
 * when the file does not exist, which means no swap) lists a device under its header and
 * --fail-swap-on is true.
 */
export function swapOnRefusal(failSwapOn: boolean, text: string | null): string | null {
  if (!failSwapOn || text === null) return null;
  const lines = text.trim().split('\n');
  if (lines.length <= 1) return null;
  return `running with swap on is not supported, please disable swap! or set --fail-swap-on flag to false. /proc/swaps contained: [${lines.join(' ')}]`;
}

/** /proc/swaps, or null where the kernel has none (no swap support: nothing is on). */
export async function readProcSwaps(file = '/proc/swaps'): Promise<string | null> {
  try {
    return await readFile(file, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw err;
  }
}
