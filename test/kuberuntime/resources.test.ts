/**
 * A container's CPU, memory, huge page and swap settings for the runtime (resources.ts), from
 * tables worked out from pkg/kubelet/kuberuntime/kuberuntime_container_linux.go
 * generateLinuxContainerResources, calculateLinuxResources and GetHugepageLimitsFromResources,
 * pkg/kubelet/cm/helpers_linux.go MilliCPUToShares and MilliCPUToQuota, and
 * pkg/kubelet/qos/policy.go GetContainerOOMScoreAdjust.
 */
import { describe, expect, it } from 'vitest';
import type { Container, Pod } from '../../src/api/types.ts';
import {
  type ContainerResourcesNode,
  containerResources,
  hugePageSizeName,
  hugePageSizeOfResource,
  hugepageLimits,
  milliCpuToQuota,
  milliCpuToShares,
  oomScoreAdj,
} from '../../src/kuberuntime/resources.ts';
import { container, makePod } from '../support/pods.ts';

const GiB = 2 ** 30;
const MiB = 2 ** 20;
/** An 8 GiB machine on cgroup v1 without swap accounting or huge pages: CPU and memory settings only. */
const PLAIN: ContainerResourcesNode = { memoryCapacityBytes: 8 * GiB, cgroupVersion: 1, swapController: false, hugePageSizes: [] };
const withResources = (resources: Container['resources'], extra: Partial<Pod['spec']> = {}): [Pod, Container] => {
  const app = container('app', resources ? { resources } : {});
  return [makePod('web', { containers: [app], ...extra }), app];
};

describe('CFS shares and quota', () => {
  it.each([
    [0, 2],
    [1, 2],
    [100, 102],
    [1000, 1024],
    [500_000, 262_144],
  ])('%d millicores: %d shares', (milli, shares) => expect(milliCpuToShares(milli)).toBe(shares));

  it.each([
    [0, 0],
    [5, 1000],
    [100, 10_000],
    [1500, 150_000],
  ])('%d millicores: a quota of %d µs per 100 ms', (milli, quota) => expect(milliCpuToQuota(milli)).toBe(quota));
});

describe('OOM score', () => {
  it.each<[string, Container['resources'], Partial<Pod['spec']>, number]>([
    ['Guaranteed', { requests: { cpu: '100m', memory: '64Mi' }, limits: { cpu: '100m', memory: '64Mi' } }, {}, -997],
    ['BestEffort', undefined, {}, 1000],
    ['Burstable, a quarter of the memory', { requests: { memory: '2Gi' } }, {}, 750],
    ['Burstable, a tiny request', { requests: { cpu: '10m', memory: '1Ki' } }, {}, 999],
    ['Burstable, all the memory', { requests: { memory: '8Gi' } }, {}, 3],
    ['node-critical, whatever it asks', undefined, { priorityClassName: 'system-node-critical' }, -997],
  ])('%s: %d', (_case, resources, extra, score) => {
    const [pod, app] = withResources(resources, extra);
    expect(oomScoreAdj(pod, app, 8 * GiB)).toBe(score);
  });
});

describe('the resources sent to the runtime', () => {
  it('limits: shares from the request, quota from the CPU limit, the memory limit in bytes', () => {
    expect(containerResources(...withResources({ requests: { cpu: '50m', memory: '32Mi' }, limits: { cpu: '100m', memory: '64Mi' } }), PLAIN)).toEqual({
      cpuShares: 51,
      cpuQuota: 10_000,
      cpuPeriod: 100_000,
      memoryLimitInBytes: 67_108_864,
      oomScoreAdj: 997,
    });
  });

  it('nothing asked: the minimum shares, no quota, no memory limit', () => {
    expect(containerResources(...withResources(undefined), PLAIN)).toEqual({ cpuShares: 2, cpuQuota: 0, cpuPeriod: 100_000, memoryLimitInBytes: 0, oomScoreAdj: 1000 });
  });

  it('a CPU limit alone gives the shares too (the request defaults to it)', () => {
    expect(containerResources(...withResources({ limits: { cpu: '1' } }), PLAIN)).toMatchObject({ cpuShares: 1024, cpuQuota: 100_000 });
  });
});

describe('huge page sizes as runc and the CRI name them (HugePageUnitSizeFromByteSize)', () => {
  it.each<[number, string | null]>([
    [2 * MiB, '2MB'],
    [GiB, '1GB'],
    [64 * 1024, '64KB'],
    [32 * MiB, '32MB'],
    [16 * GiB, '16GB'],
    [1536 * 1024, null],
    [0, null],
  ])('%d bytes: %s', (bytes, name) => expect(hugePageSizeName(bytes)).toBe(name));

  it.each<[string, string | null]>([
    ['hugepages-2Mi', '2MB'],
    ['hugepages-1Gi', '1GB'],
    ['hugepages-2048Ki', '2MB'],
    ['hugepages-64Ki', '64KB'],
    ['memory', null],
    ['hugepages-', null],
    ['hugepages-lots', null],
  ])('%s: %s', (resource, size) => expect(hugePageSizeOfResource(resource)).toBe(size));
});

describe('hugepageLimits (GetHugepageLimitsFromResources): one per host size, denied unless the container asks', () => {
  const HOST = ['1GB', '2MB'];
  it.each<[string, Container['resources'], readonly string[], { pageSize: string; limit: number }[]]>([
    ['nothing asked: every host size 0', undefined, HOST, [{ pageSize: '1GB', limit: 0 }, { pageSize: '2MB', limit: 0 }]],
    ['2Mi pages asked: that size, the other 0', { limits: { 'hugepages-2Mi': '100Mi', memory: '1Gi' } }, HOST, [{ pageSize: '1GB', limit: 0 }, { pageSize: '2MB', limit: 100 * MiB }]],
    ['both sizes', { limits: { 'hugepages-2Mi': '4Mi', 'hugepages-1Gi': '2Gi' } }, HOST, [{ pageSize: '1GB', limit: 2 * GiB }, { pageSize: '2MB', limit: 4 * MiB }]],
    ['only requests: no limit, so 0 (the API requires limits for huge pages)', { requests: { 'hugepages-2Mi': '4Mi' } }, HOST, [{ pageSize: '1GB', limit: 0 }, { pageSize: '2MB', limit: 0 }]],
    ['a size the host lacks: dropped', { limits: { 'hugepages-32Mi': '64Mi' } }, ['2MB'], [{ pageSize: '2MB', limit: 0 }]],
    ['a host without huge pages: none', { limits: { 'hugepages-2Mi': '4Mi' } }, [], []],
  ])('%s', (_case, resources, host, limits) => {
    const [, app] = withResources(resources);
    expect(hugepageLimits(app, host)).toEqual(limits);
  });
});

describe('huge pages, swap and the OOM group by cgroup version (NoSwap)', () => {
  const limited = withResources({ requests: { cpu: '50m', memory: '32Mi' }, limits: { cpu: '100m', memory: '64Mi', 'hugepages-2Mi': '8Mi' } });
  const unlimited = withResources({ requests: { cpu: '50m', memory: '32Mi' } });
  const node = (features: Omit<ContainerResourcesNode, 'memoryCapacityBytes'>): ContainerResourcesNode => ({ memoryCapacityBytes: 8 * GiB, ...features });
  it.each<[string, [Pod, Container], ContainerResourcesNode, object]>([
    [
      'v1 with swap accounting (memory.memsw.*): memory+swap = the memory limit, no unified',
      limited,
      node({ cgroupVersion: 1, swapController: true, hugePageSizes: ['1GB', '2MB'] }),
      { memorySwapLimitInBytes: 64 * MiB, hugepageLimits: [{ pageSize: '1GB', limit: 0 }, { pageSize: '2MB', limit: 8 * MiB }] },
    ],
    ['v1 with swap accounting, no memory limit: nothing to equal, no swap limit', unlimited, node({ cgroupVersion: 1, swapController: true, hugePageSizes: [] }), {}],
    ['v1 without swap accounting: no swap limit (it cannot be enforced)', limited, node({ cgroupVersion: 1, swapController: false, hugePageSizes: [] }), {}],
    ['v2 with the swap controller: memory.swap.max 0 and memory.oom.group 1', limited, node({ cgroupVersion: 2, swapController: true, hugePageSizes: [] }), { unified: { 'memory.oom.group': '1', 'memory.swap.max': '0' } }],
    ['v2 with the swap controller, no memory limit: no swap all the same', unlimited, node({ cgroupVersion: 2, swapController: true, hugePageSizes: [] }), { unified: { 'memory.oom.group': '1', 'memory.swap.max': '0' } }],
    ['v2 without the swap controller: the OOM group only', limited, node({ cgroupVersion: 2, swapController: false, hugePageSizes: ['2MB'] }), { unified: { 'memory.oom.group': '1' }, hugepageLimits: [{ pageSize: '2MB', limit: 8 * MiB }] }],
  ])('%s', (_case, [pod, app], features, extra) => {
    const resources = containerResources(pod, app, features);
    const { cpuShares, cpuQuota, cpuPeriod, memoryLimitInBytes, oomScoreAdj: score, ...rest } = resources;
    expect({ cpuShares, cpuQuota, cpuPeriod, score }).toEqual({ cpuShares: 51, cpuQuota: app.resources?.limits?.['cpu'] ? 10_000 : 0, cpuPeriod: 100_000, score: 997 });
    expect(memoryLimitInBytes).toBe(app.resources?.limits?.['memory'] ? 64 * MiB : 0);
    expect(rest).toEqual(extra);
  });
});
