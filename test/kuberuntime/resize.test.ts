/**
 * doPodResizeAction's order, observed: the pod cgroup's steps and the containers' updates as they
 * happen (a recording runtime and pod cgroup), for growing and shrinking resources, what each
 * update sends, what is recorded as actuated, and a resize that fails midway or is refused before
 * it starts (a memory limit below what is in use).
 */
import { describe, expect, it } from 'vitest';
import type { Container, Pod, ResourceRequirements } from '../../src/api/types.ts';
import { computePodActions } from '../../src/kuberuntime/computePodActions.ts';
import { planPodResize } from '../../src/kuberuntime/podResize.ts';
import { type PodResizeCgroups, type PodResizeDeps, executePodResize } from '../../src/kuberuntime/resize.ts';
import type { PodCgroupResources, PodCgroupSettings } from '../../src/kuberuntime/podResize.ts';
import { podResizeConfig } from '../../src/cm/podResources.ts';
import { containerResources } from '../../src/kuberuntime/resources.ts';
import type { ContainerStats, LinuxContainerResources, RuntimeService } from '../../src/runtime/types.ts';
import { CriError } from '../../src/runtime/types.ts';
import { basePod, baseRuntime, ctr } from '../support/podFixtures.ts';
import { NO_MEMORY_FEATURES } from '../support/pods.ts';

const MiB = 2 ** 20;
const both = (cpu: string, memory: string): ResourceRequirements => ({ requests: { cpu, memory }, limits: { cpu, memory } });

function harness(options: { podCgroup: PodCgroupResources; usage?: Record<string, number>; failUpdateOf?: string } ) {
  const log: string[] = [];
  const sent = new Map<string, LinuxContainerResources>();
  const actuated = new Map<string, ResourceRequirements>();
  const runtime = {
    async updateContainerResources(id: string, resources: LinuxContainerResources) {
      const resource = sent.has(id) ? 'cpu' : 'memory';
      if (options.failUpdateOf === `${id}:${resource}`) throw new CriError('UpdateContainerResources', 'UNKNOWN', 'failed to update resources');
      sent.set(id, resources);
      log.push(`container ${id} ${resource}`);
    },
    async listContainerStats(): Promise<ContainerStats[]> {
      return Object.entries(options.usage ?? {}).map(([name, usageBytes]) => ({
        attributes: { id: `${name}-id`, metadata: { name, attempt: 0 }, labels: {}, annotations: {} },
        memory: { timestamp: 0, usageBytes },
      }));
    },
  } as unknown as RuntimeService;
  const cgroups: PodResizeCgroups = {
    podResources: async () => options.podCgroup,
    resizeConfig: (pod: Pod) => podResizeConfig(pod),
    setPodResources: async (_pod: Pod, settings: PodCgroupSettings) => void log.push(`pod ${Object.keys(settings).join('+')}`),
  };
  const deps: PodResizeDeps = {
    runtime,
    cgroups,
    actuated: { of: () => Object.fromEntries(actuated), set: (_uid, name, resources) => void actuated.set(name, resources) },
    containerResources: (pod: Pod, container: Container) => containerResources(pod, container, { memoryCapacityBytes: 8 * 2 ** 30, ...NO_MEMORY_FEATURES }),
  };
  return { log, sent, actuated, deps };
}

/** A Guaranteed pod of two containers; c1 was given 1 CPU and 1Gi. */
function resizeOf(c1: ResourceRequirements) {
  const pod = basePod({ containers: [ctr('c1', { resources: c1 }), ctr('c2', { resources: both('500m', '256Mi') })] });
  const status = baseRuntime(pod);
  const given = { c1: both('1', '1Gi'), c2: both('500m', '256Mi') };
  const { resize } = planPodResize(pod, status, computePodActions(pod, status), given);
  return { pod, status, resize };
}

/** The pod cgroup before: the sum of what its containers were given (1.5 CPU, 1.25Gi). */
const before: PodCgroupResources = { cpuShares: 1536, cpuQuota: 150_000, cpuPeriod: 100_000, memoryLimitBytes: 1280 * MiB };

describe('executePodResize (doPodResizeAction)', () => {
  it('growing: the pod cgroup first (limit, then request), then the containers; memory before CPU', async () => {
    const { pod, status, resize } = resizeOf(both('2', '2Gi'));
    const h = harness({ podCgroup: before });
    expect(await executePodResize(h.deps, pod, status, resize, {})).toBeNull();
    expect(h.log).toEqual(['pod memoryLimitBytes', 'container c1-id memory', 'pod cpuQuota+cpuPeriod', 'pod cpuShares', 'container c1-id cpu']);
    // The CPU update carries the memory just applied.
    expect(h.sent.get('c1-id')).toMatchObject({ cpuShares: 2048, cpuQuota: 200_000, memoryLimitInBytes: 2 * 2 ** 30 });
    expect(h.actuated.get('c1')).toEqual(both('2000m', String(2 * 2 ** 30)));
  });

  it('shrinking: the containers first, then the pod cgroup (request, then limit)', async () => {
    const { pod, status, resize } = resizeOf(both('500m', '512Mi'));
    const h = harness({ podCgroup: before, usage: { c1: 100 * MiB, c2: 100 * MiB } });
    expect(await executePodResize(h.deps, pod, status, resize, {})).toBeNull();
    expect(h.log).toEqual(['container c1-id memory', 'pod memoryLimitBytes', 'container c1-id cpu', 'pod cpuShares', 'pod cpuQuota+cpuPeriod']);
  });

  it('refuses a memory limit below what is in use before changing anything', async () => {
    const { pod, status, resize } = resizeOf(both('1', '512Mi'));
    const h = harness({ podCgroup: before, usage: { c1: 600 * MiB, c2: 200 * MiB } });
    expect(await executePodResize(h.deps, pod, status, resize, {})).toBe(
      `cannot decrease memory limits: [attempting to set pod memory limit (${768 * MiB}) below current usage (${800 * MiB}), attempting to set container "c1" memory limit (${512 * MiB}) below current usage (${600 * MiB})]`,
    );
    expect(h.log).toEqual([]);
  });

  it('stops at the first failure, keeping what was done recorded: the next sync resumes from there', async () => {
    const { pod, status, resize } = resizeOf(both('2', '2Gi'));
    const h = harness({ podCgroup: before, failUpdateOf: 'c1-id:cpu' });
    expect(await executePodResize(h.deps, pod, status, resize, {})).toBe('CRI UpdateContainerResources failed (UNKNOWN): failed to update resources');
    expect(h.log).toEqual(['pod memoryLimitBytes', 'container c1-id memory', 'pod cpuQuota+cpuPeriod', 'pod cpuShares']);
    expect(h.actuated.get('c1')).toEqual({ limits: { cpu: '1000m', memory: String(2 * 2 ** 30) }, requests: { cpu: '1000m', memory: String(2 * 2 ** 30) } });
  });

  it('without pod cgroups, updates the containers only', async () => {
    const { pod, status, resize } = resizeOf(both('2', '2Gi'));
    const h = harness({ podCgroup: before });
    const { cgroups: _, ...withoutCgroups } = h.deps;
    expect(await executePodResize(withoutCgroups, pod, status, resize, {})).toBeNull();
    expect(h.log).toEqual(['container c1-id memory', 'container c1-id cpu']);
  });
});
