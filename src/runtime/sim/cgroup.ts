/**
 * What a sim:// container reads of its own cgroup, from its CRI resources, in the cgroup v2 layout
 * runc gives a container under the unified hierarchy (`/sys/fs/cgroup/cpu.max`, `memory.max`,
 * `cpu.weight`), and its OOM score (`/proc/self/oom_score_adj`). On a cgroup v1 host containerd
 * shows the same values in v1 files (`cpu/cpu.cfs_quota_us`, `memory/memory.limit_in_bytes`);
 * docs/boundaries.md lists both.
 */
import type { LinuxContainerResources } from '../types.ts';

/** runc's conversion of CFS shares (2…262144) to a cgroup v2 weight (1…10000). */
export function sharesToWeight(shares: number): number {
  if (shares <= 0) return 100;
  return 1 + Math.floor(((shares - 2) * 9999) / 262142);
}

/** The files, by path in the container, and their content. */
export function cgroupFiles(resources: LinuxContainerResources | undefined): Record<string, string> {
  const period = resources?.cpuPeriod || 100_000;
  return {
    '/sys/fs/cgroup/cpu.max': `${resources?.cpuQuota ? resources.cpuQuota : 'max'} ${period}\n`,
    '/sys/fs/cgroup/cpu.weight': `${sharesToWeight(resources?.cpuShares ?? 0)}\n`,
    '/sys/fs/cgroup/memory.max': `${resources?.memoryLimitInBytes ? resources.memoryLimitInBytes : 'max'}\n`,
    '/proc/self/oom_score_adj': `${resources?.oomScoreAdj ?? 0}\n`,
  };
}
