/** What a sim:// container reads of its cgroup and OOM score (cgroup.ts), as runc writes them under cgroup v2. */
import { describe, expect, it } from 'vitest';
import { cgroupFiles, sharesToWeight } from '../../src/runtime/sim/cgroup.ts';

describe('sim:// cgroup files', () => {
  it('show the limits the runtime was given', () => {
    expect(cgroupFiles({ cpuShares: 102, cpuQuota: 10_000, cpuPeriod: 100_000, memoryLimitInBytes: 67_108_864, oomScoreAdj: -997 })).toEqual({
      '/sys/fs/cgroup/cpu.max': '10000 100000\n',
      '/sys/fs/cgroup/cpu.weight': '4\n',
      '/sys/fs/cgroup/memory.max': '67108864\n',
      '/proc/self/oom_score_adj': '-997\n',
    });
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
