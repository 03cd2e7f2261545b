/** What a sim:// container reads of its cgroup and OOM score (cgroup.ts), as runc writes them under cgroup v2: CPU, memory, swap, the OOM group, huge pages. */
import { describe, expect, it } from 'vitest';
import { cgroupFiles, sharesToWeight } from '../../src/runtime/sim/cgroup.ts';

describe('sim:// cgroup files', () => {
  it('show the limits the runtime was given', () => {
    expect(cgroupFiles({ cpuShares: 102, cpuQuota: 10_000, cpuPeriod: 100_000, memoryLimitInBytes: 67_108_864, oomScoreAdj: -997 })).toEqual({
      '/sys/fs/cgroup/cpu.max': '10000 100000\n',
      '/sys/fs/cgroup/cpu.weight': '4\n',
      '/sys/fs/cgroup/memory.max': '67108864\n',
      '/sys/fs/cgroup/memory.swap.max': 'max\n',
      '/sys/fs/cgroup/memory.oom.group': '0\n',
      '/proc/self/oom_score_adj': '-997\n',
    });
  });

  it('show the huge page limits, and the unified files written over the rest (NoSwap, the OOM group)', () => {
    const files = cgroupFiles({
      cpuShares: 102,
      cpuQuota: 10_000,
      cpuPeriod: 100_000,
      memoryLimitInBytes: 67_108_864,
      oomScoreAdj: -997,
      hugepageLimits: [
        { pageSize: '1GB', limit: 0 },
        { pageSize: '2MB', limit: 8_388_608 },
      ],
      unified: { 'memory.oom.group': '1', 'memory.swap.max': '0' },
    });
    expect(files).toMatchObject({
      '/sys/fs/cgroup/hugetlb.1GB.max': '0\n',
      '/sys/fs/cgroup/hugetlb.2MB.max': '8388608\n',
      '/sys/fs/cgroup/memory.swap.max': '0\n',
      '/sys/fs/cgroup/memory.oom.group': '1\n',
    });
  });

  it.each<[string, number, number, string]>([
    ['memory+swap equal to memory: no swap', 67_108_864, 67_108_864, '0'],
    ['memory+swap above memory: the difference', 67_108_864, 100_663_296, '33554432'],
    ['no memory limit: max', 0, 67_108_864, 'max'],
  ])('a v1 memory+swap limit, as runc converts it on v2: %s', (_case, memory, memsw, swapMax) => {
    const files = cgroupFiles({ cpuShares: 2, cpuQuota: 0, cpuPeriod: 100_000, memoryLimitInBytes: memory, oomScoreAdj: 0, memorySwapLimitInBytes: memsw });
    expect(files['/sys/fs/cgroup/memory.swap.max']).toBe(`${swapMax}\n`);
  });

  it('a unified key that is no cgroup file name is not written', () => {
    const files = cgroupFiles({ cpuShares: 2, cpuQuota: 0, cpuPeriod: 100_000, memoryLimitInBytes: 0, oomScoreAdj: 0, unified: { '../etc/passwd': 'x', 'memory.high': '1000' } });
    expect(Object.keys(files).filter((f) => !/^\/(sys\/fs\/cgroup\/[a-z0-9_.]+|proc\/self\/oom_score_adj)$/.test(f))).toEqual([]);
    expect(files['/sys/fs/cgroup/memory.high']).toBe('1000\n');
  });

  it('say max where nothing is limited', () => {
    const files = cgroupFiles({ cpuShares: 2, cpuQuota: 0, cpuPeriod: 100_000, memoryLimitInBytes: 0, oomScoreAdj: 1000 });
    expect(files['/sys/fs/cgroup/cpu.max']).toBe('max 100000\n');
    expect(files['/sys/fs/cgroup/memory.max']).toBe('max\n');
  });

  it.each([
    [2, 1],
    [1024, 39],
    [262_144, 10_000],
  ])('weight of %d shares: %d', (shares, weight) => expect(sharesToWeight(shares)).toBe(weight));
});
