/**
 * The pod cgroup as an in-place resize reads and sets it (pod_container_manager_linux.go
 * GetPodCgroupConfig, SetPodCgroupConfig): its settings parsed from either version's files, the
 * settings a resized pod's cgroup gets (ResourceConfigForPod's CPU and memory), and both on a plain
 * tree laid out as cgroup v2 (sim://'s).
 */
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { Container, Pod } from '../../src/api/types.ts';
import { openCgroups } from '../../src/cm/cgroupfs.ts';
import { ContainerManager, createNodeCgroups } from '../../src/cm/containerManager.ts';
import { parsePodCgroupResources, podResizeConfig, weightToShares } from '../../src/cm/podResources.ts';
import { silentLogger } from '../../src/log.ts';
import { container, makePod } from '../support/pods.ts';

const Mi = 2 ** 20;
const UID = 'a1a1a1a1-0000-4000-8000-000000000001';
type Resources = NonNullable<Container['resources']>;
const podWith = (...resources: Resources[]): Pod => makePod('p', { containers: resources.map((r, i) => container(`c${i}`, { resources: r })) }, UID);
const exact = (cpu: string, memory: string): Resources => ({ requests: { cpu, memory }, limits: { cpu, memory } });

describe('parsePodCgroupResources', () => {
  it.each([
    [
      'v1 with limits',
      1,
      { 'cpu.shares': '512\n', 'cpu.cfs_quota_us': '50000\n', 'cpu.cfs_period_us': '100000\n', 'memory.limit_in_bytes': '268435456\n' },
      { cpuShares: 512, cpuQuota: 50_000, cpuPeriod: 100_000, memoryLimitBytes: 256 * Mi },
    ],
    [
      'v1 without (quota -1, the kernel\'s largest memory limit)',
      1,
      { 'cpu.shares': '2', 'cpu.cfs_quota_us': '-1', 'cpu.cfs_period_us': '100000', 'memory.limit_in_bytes': '9223372036854771712' },
      { cpuShares: 2, cpuQuota: -1, cpuPeriod: 100_000, memoryLimitBytes: null },
    ],
    ['v2 with limits (weight 20 back to 500 shares)', 2, { 'cpu.weight': '20', 'cpu.max': '50000 100000', 'memory.max': '268435456' }, { cpuShares: 500, cpuQuota: 50_000, cpuPeriod: 100_000, memoryLimitBytes: 256 * Mi }],
    ['v2 without', 2, { 'cpu.weight': '1', 'cpu.max': 'max 100000', 'memory.max': 'max' }, { cpuShares: 2, cpuQuota: -1, cpuPeriod: 100_000, memoryLimitBytes: null }],
  ] as const)('%s', (_name, version, files, want) => {
    expect(parsePodCgroupResources(version, files)).toEqual(want);
  });

  it('converts weights back to shares as the kubelet does (CpuWeightToCpuShares)', () => {
    expect([weightToShares(1), weightToShares(10), weightToShares(100), weightToShares(10_000)]).toEqual([2, 237, 2597, 262144]);
  });
});

describe('podResizeConfig (ResourceConfigForPod, CPU and memory)', () => {
  it.each([
    ['Guaranteed: shares, quota and memory of the sums', podWith(exact('250m', '64Mi'), exact('250m', '64Mi')), { cpuShares: 512, cpuQuota: 50_000, cpuPeriod: 100_000, memoryLimitBytes: 128 * Mi }],
    ['Burstable with a limit on every container', podWith({ requests: { cpu: '100m' }, limits: { cpu: '200m', memory: '64Mi' } }), { cpuShares: 102, cpuQuota: 20_000, cpuPeriod: 100_000, memoryLimitBytes: 64 * Mi }],
    ['Burstable, one container without limits: shares only', podWith({ requests: { cpu: '100m' }, limits: { cpu: '200m' } }, { requests: { cpu: '50m' } }), { cpuShares: 153 }],
    ['BestEffort: the minimum shares', podWith({}), { cpuShares: 2 }],
  ] as const)('%s', (_name, pod, want) => {
    expect(podResizeConfig(pod)).toEqual(want);
  });
});

describe('ContainerManager: a pod cgroup resized in place (cgroup v2 tree)', () => {
  const dirs: string[] = [];
  afterEach(async () => {
    for (const dir of dirs.splice(0)) await rm(dir, { recursive: true, force: true });
  });

  it('reads the pod cgroup\'s settings and sets some of them, leaving the others', async () => {
    const root = await mkdtemp(path.join(os.tmpdir(), 'statelet-cm-resize-'));
    dirs.push(root);
    await writeFile(path.join(root, 'cgroup.controllers'), 'cpuset cpu io memory hugetlb pids\n');
    const pod = podWith(exact('250m', '64Mi'));
    const settings = {
      cgroups: await openCgroups(root),
      cgroupRoot: '/',
      podPidsLimit: -1,
      hugePageSizes: [],
      enforcePods: true,
      capacity: { milliCpu: 4000, memoryBytes: 8 * 2 ** 30 },
      reserved: {},
    };
    await createNodeCgroups(settings);
    const manager = new ContainerManager({ ...settings, activePods: () => [pod], log: silentLogger });
    await manager.ensurePod(pod);
    expect(await manager.podResources(pod)).toEqual({ cpuShares: weightToShares(10), cpuQuota: 25_000, cpuPeriod: 100_000, memoryLimitBytes: 64 * Mi });

    const grown = podWith(exact('500m', '128Mi'));
    const wanted = manager.resizeConfig(grown);
    await manager.setPodResources(grown, { memoryLimitBytes: wanted.memoryLimitBytes! });
    await manager.setPodResources(grown, { cpuQuota: wanted.cpuQuota!, cpuPeriod: wanted.cpuPeriod! });
    const dir = path.join(root, 'kubepods', `pod${UID}`);
    expect((await readFile(path.join(dir, 'memory.max'), 'utf8')).trim()).toBe(String(128 * Mi));
    expect((await readFile(path.join(dir, 'cpu.max'), 'utf8')).trim()).toBe('50000 100000');
    // The shares were not part of either step.
    expect((await readFile(path.join(dir, 'cpu.weight'), 'utf8')).trim()).toBe('10');
    await manager.setPodResources(grown, { cpuShares: wanted.cpuShares! });
    expect((await readFile(path.join(dir, 'cpu.weight'), 'utf8')).trim()).toBe('20');
  });
});
