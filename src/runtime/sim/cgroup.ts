/**
 * What a sim:// container reads of its own cgroup, from its CRI resources, in the cgroup v2 layout
 * runc gives a container under the unified hierarchy (`/sys/fs/cgroup/cpu.max`, `memory.max`,
 * `cpu.weight`, `memory.swap.max`, `memory.oom.group`, `hugetlb.<size>.max` for each page size it
 * was given), and its OOM score (`/proc/self/oom_score_adj`). Each `unified` entry is written to its
 * file as runc writes it, over what the other fields gave. On a cgroup v1 host containerd shows the
 * same values in v1 files (`cpu/cpu.cfs_quota_us`, `memory/memory.limit_in_bytes`,
 * `memory/memory.memsw.limit_in_bytes`); docs/boundaries.md lists both.
 */
import type { LinuxContainerResources } from '../types.ts';

/** runc's conversion of CFS shares (2…262144) to a cgroup v2 weight (1…10000). */
export function sharesToWeight(shares: number): number {
  if (shares <= 0) return 100;
  return 1 + Math.floor(((shares - 2) * 9999) / 262142);
}

/**
 * memory.swap.max from a v1-style memory+swap limit, as runc converts it on v2
 * (ConvertMemorySwapToCgroupV2Value): the swap beyond the memory limit; `max` when unset.
 */
function swapMax(resources: LinuxContainerResources | undefined): string {
  const memsw = resources?.memorySwapLimitInBytes ?? 0;
  const memory = resources?.memoryLimitInBytes ?? 0;
  return memsw > 0 && memory > 0 ? String(Math.max(0, memsw - memory)) : 'max';
}

/** The files, by path in the container, and their content. */
export function cgroupFiles(resources: LinuxContainerResources | undefined): Record<string, string> {
  const period = resources?.cpuPeriod || 100_000;
  const files: Record<string, string> = {
    '/sys/fs/cgroup/cpu.max': `${resources?.cpuQuota ? resources.cpuQuota : 'max'} ${period}\n`,
    '/sys/fs/cgroup/cpu.weight': `${sharesToWeight(resources?.cpuShares ?? 0)}\n`,
    '/sys/fs/cgroup/memory.max': `${resources?.memoryLimitInBytes ? resources.memoryLimitInBytes : 'max'}\n`,
    '/sys/fs/cgroup/memory.swap.max': `${swapMax(resources)}\n`,
    '/sys/fs/cgroup/memory.oom.group': '0\n',
    '/proc/self/oom_score_adj': `${resources?.oomScoreAdj ?? 0}\n`,
  };
  for (const { pageSize, limit } of resources?.hugepageLimits ?? []) files[`/sys/fs/cgroup/hugetlb.${pageSize}.max`] = `${limit}\n`;
  for (const [file, value] of Object.entries(resources?.unified ?? {})) {
    if (/^[a-z0-9_]+\.[a-z0-9_.]+$/.test(file)) files[`/sys/fs/cgroup/${file}`] = `${value}\n`;
  }
  return files;
}
