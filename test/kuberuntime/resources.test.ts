/** A container's CPU and memory settings for the runtime (resources.ts), from tables. */
import { describe, expect, it } from 'vitest';
import type { Container, Pod } from '../../src/api/types.ts';
import { containerResources, milliCpuToQuota, milliCpuToShares, oomScoreAdj } from '../../src/kuberuntime/resources.ts';
import { container, makePod } from '../support/pods.ts';

const GiB = 2 ** 30;
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
    expect(containerResources(...withResources({ requests: { cpu: '50m', memory: '32Mi' }, limits: { cpu: '100m', memory: '64Mi' } }), 8 * GiB)).toEqual({
      cpuShares: 51,
      cpuQuota: 10_000,
      cpuPeriod: 100_000,
      memoryLimitInBytes: 67_108_864,
      oomScoreAdj: 997,
    });
  });

  it('nothing asked: the minimum shares, no quota, no memory limit', () => {
    expect(containerResources(...withResources(undefined), 8 * GiB)).toEqual({ cpuShares: 2, cpuQuota: 0, cpuPeriod: 100_000, memoryLimitInBytes: 0, oomScoreAdj: 1000 });
  });

  it('a CPU limit alone gives the shares too (the request defaults to it)', () => {
    expect(containerResources(...withResources({ limits: { cpu: '1' } }), 8 * GiB)).toMatchObject({ cpuShares: 1024, cpuQuota: 100_000 });
  });
});
