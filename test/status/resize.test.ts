/**
 * What a resize shows in the status, as tables: `containerStatuses[].resources` from the runtime's
 * report or the actuated record (kubelet_pods_test.go TestConvertToAPIContainerStatusesForResources
 * is the model), the resize conditions as the status manager keeps them
 * (status_manager_test.go TestPodResizeConditions), the events' messages, the conditions in a
 * generated status and in the patch that clears them in the API.
 */
import { describe, expect, it } from 'vitest';
import type { Container, ContainerStatus, PodCondition, PodStatus } from '../../src/api/types.ts';
import type { LinuxContainerResources } from '../../src/runtime/types.ts';
import { statusPatch, statusToWrite } from '../../src/status/apiStatus.ts';
import { generatePodStatus } from '../../src/status/generate.ts';
import {
  backfillConditions,
  clearInProgress,
  containerStatusResources,
  formatBinaryBytes,
  formatMilliCpu,
  pendingReason,
  quotaToMilliCpu,
  reportedResources,
  resizeConditionList,
  resizeEventMessage,
  setInProgress,
  setPending,
  sharesToMilliCpu,
} from '../../src/status/resize.ts';
import { T0, basePod, baseRuntime, ctr } from '../support/podFixtures.ts';

const linux = (cpuShares: number, cpuQuota: number, memoryLimitInBytes: number): LinuxContainerResources => ({ cpuShares, cpuQuota, cpuPeriod: 100_000, memoryLimitInBytes, oomScoreAdj: 0 });
const MiB = 2 ** 20;

describe('the runtime\'s resources read back (toKubeContainerResources, SharesToMilliCPU, QuotaToMilliCPU)', () => {
  it.each([
    [2, 2],
    [20, 20],
    [102, 100],
    [256, 250],
    [1024, 1000],
    [1, 0],
  ])('%i shares are %im', (shares, milli) => expect(sharesToMilliCpu(shares)).toBe(milli));
  it.each([
    [-1, 0],
    [3000, 30],
    [1000, 10],
    [50_000, 500],
  ])('a quota of %i µs per 100 ms is %im', (quota, milli) => expect(quotaToMilliCpu(quota, 100_000)).toBe(milli));

  it.each([
    ['all reported', linux(256, 50_000, 128 * MiB), undefined, { cpuRequest: 250, cpuLimit: 500, memoryLimit: 128 * MiB }],
    ['no quota, no memory limit: left out', linux(256, 0, 0), undefined, { cpuRequest: 250 }],
    ['the memory request from the record', linux(256, 0, 0), { requests: { memory: '64Mi' } }, { cpuRequest: 250, memoryRequest: 64 * MiB }],
    ['nothing reported: the record', undefined, { requests: { cpu: '250m', memory: '64Mi' }, limits: { cpu: '500m' } }, { cpuRequest: 250, memoryRequest: 64 * MiB, cpuLimit: 500 }],
    ['neither', undefined, undefined, undefined],
  ] as const)('%s', (_name, reported, actuated, want) => {
    expect(reportedResources(reported, actuated)).toEqual(want);
  });

  it('prints quantities as resource.Quantity does', () => {
    expect([formatMilliCpu(250), formatMilliCpu(1000), formatMilliCpu(1500)]).toEqual(['250m', '1', '1500m']);
    expect([formatBinaryBytes(128 * MiB), formatBinaryBytes(1536), formatBinaryBytes(1000), formatBinaryBytes(2 ** 30), formatBinaryBytes(100_000_000), formatBinaryBytes(0)]).toEqual([
      '128Mi',
      '1536',
      '1k',
      '1Gi',
      '100M',
      '0',
    ]);
  });
});

describe('containerStatuses[].resources (convertContainerStatusResources)', () => {
  const allocated = (resources: Container['resources']) => ctr('app', { resources });
  const running = { id: 'c1', state: 'CONTAINER_RUNNING' as const };
  const previous = (resources: ContainerStatus['resources'], containerID = 'sim://c1'): ContainerStatus => ({
    name: 'app',
    state: { running: {} },
    lastState: {},
    ready: true,
    restartCount: 0,
    image: '',
    imageID: '',
    containerID,
    resources,
  });
  it.each([
    [
      'running: what the runtime reports in place of the allocation',
      allocated({ requests: { cpu: '200m', memory: '64Mi' }, limits: { cpu: '1', memory: '128Mi' } }),
      running,
      { cpuRequest: 100, cpuLimit: 500, memoryLimit: 256 * MiB, memoryRequest: 64 * MiB },
      undefined,
      { requests: { cpu: '100m', memory: '64Mi' }, limits: { cpu: '500m', memory: '256Mi' } },
    ],
    [
      'not running: the allocation',
      allocated({ requests: { cpu: '200m' } }),
      { id: 'c1', state: 'CONTAINER_EXITED' as const },
      { cpuRequest: 100 },
      undefined,
      { requests: { cpu: '200m' } },
    ],
    [
      'tiny amounts stay as allocated (1m is 2 shares, 5m a 1 ms quota, as 10m is)',
      allocated({ requests: { cpu: '1m' }, limits: { cpu: '5m' } }),
      running,
      { cpuRequest: 2, cpuLimit: 10 },
      undefined,
      { requests: { cpu: '1m' }, limits: { cpu: '5m' } },
    ],
    [
      'nothing reported: what was shown before for the same instance',
      allocated({ requests: { cpu: '200m' }, limits: { memory: '1Gi' } }),
      running,
      undefined,
      previous({ requests: { cpu: '150m' }, limits: { memory: '512Mi' } }),
      { requests: { cpu: '150m' }, limits: { memory: '512Mi' } },
    ],
    [
      'nothing reported, the previous status of another instance: the allocation',
      allocated({ requests: { cpu: '200m' } }),
      running,
      undefined,
      previous({ requests: { cpu: '150m' } }, 'sim://old'),
      { requests: { cpu: '200m' } },
    ],
    ['no resources allocated: empty, nothing added', allocated(undefined), running, { cpuRequest: 2 }, undefined, {}],
    [
      'a reported value equal to the allocated one keeps its spelling (0.5 and 500m; 100M, no power of 1024)',
      allocated({ requests: { cpu: '0.5' }, limits: { memory: '100M' } }),
      running,
      { cpuRequest: 500, memoryLimit: 100_000_000 },
      undefined,
      { requests: { cpu: '0.5' }, limits: { memory: '100M' } },
    ],
    [
      'a limit the allocation does not have is not added',
      allocated({ requests: { cpu: '200m' } }),
      running,
      { cpuRequest: 200, cpuLimit: 400 },
      undefined,
      { requests: { cpu: '200m' } },
    ],
  ] as const)('%s', (_name, container, runtime, reported, prev, want) => {
    expect(containerStatusResources(container, runtime, reported, prev, 'sim')).toEqual(want);
  });
});

describe('the resize conditions (status_manager.go)', () => {
  const t1 = '2026-01-01T00:00:01Z';
  const t2 = '2026-01-01T00:00:02Z';

  it('makes any reason but Infeasible Deferred', () => {
    expect([pendingReason('Infeasible'), pendingReason('OutOfcpu'), pendingReason('Evicted')]).toEqual(['Infeasible', 'Deferred', 'Deferred']);
  });

  it('sets PodResizePending, keeps its transition time while its reason stays, and says when its reason or generation changed', () => {
    const first = setPending({}, 'OutOfcpu', 'no room', 2, t1);
    expect(first.changed).toBe(true);
    expect(first.conditions.pending).toEqual({ type: 'PodResizePending', status: 'True', reason: 'Deferred', message: 'no room', observedGeneration: 2, lastProbeTime: t1, lastTransitionTime: t1 });
    const again = setPending(first.conditions, 'OutOfmemory', 'still no room', 2, t2);
    expect(again.changed).toBe(false);
    expect(again.conditions.pending).toMatchObject({ message: 'still no room', lastProbeTime: t2, lastTransitionTime: t1 });
    expect(setPending(again.conditions, 'OutOfcpu', 'no room', 3, t2).changed).toBe(true);
    const infeasible = setPending(again.conditions, 'Infeasible', 'never', 3, t2);
    expect(infeasible.conditions.pending).toMatchObject({ reason: 'Infeasible', lastTransitionTime: t2 });
  });

  it('sets PodResizeInProgress once per generation: an Error stays until cleared, the generation until cleared', () => {
    const started = setInProgress({}, '', '', 2, t1);
    expect(started.conditions.inProgress).toEqual({ type: 'PodResizeInProgress', status: 'True', observedGeneration: 2, lastProbeTime: t1, lastTransitionTime: t1 });
    const error = setInProgress(started.conditions, 'Error', 'boom', 3, t2);
    expect(error).toMatchObject({ changed: true, generation: 2 });
    expect(error.conditions.inProgress).toMatchObject({ reason: 'Error', message: 'boom', observedGeneration: 2, lastTransitionTime: t2 });
    const still = setInProgress(error.conditions, '', '', 3, t2);
    expect(still.changed).toBe(false);
    expect(still.conditions.inProgress).toMatchObject({ reason: 'Error', message: 'boom' });
    const cleared = clearInProgress(still.conditions);
    expect(cleared).toEqual({ conditions: {}, cleared: 2 });
    expect(clearInProgress({}).cleared).toBeNull();
  });

  it('lists Pending before InProgress, and takes them up again from an API status', () => {
    const both = backfillConditions(
      {},
      [
        { type: 'PodResizeInProgress', status: 'True', observedGeneration: 4 },
        { type: 'PodResizePending', status: 'True', reason: 'Deferred', message: 'm', observedGeneration: 5 },
      ],
      t1,
    );
    expect(resizeConditionList(both).map((c) => [c.type, c.observedGeneration])).toEqual([
      ['PodResizePending', 5],
      ['PodResizeInProgress', 4],
    ]);
  });
});

describe('the resize events\' messages (events/resize.go)', () => {
  it('names every container with its resources, the generation and the error, as Go writes the JSON', () => {
    const pod = basePod({
      initContainers: [ctr('side', { restartPolicy: 'Always' })],
      containers: [ctr('c1', { resources: { requests: { memory: '40Mi', cpu: '25m' }, limits: { cpu: '35m' } } })],
    });
    expect(resizeEventMessage('Pod resize started', pod, 2)).toBe(
      'Pod resize started: {"initContainers":[{"name":"side","resources":{}}],"containers":[{"name":"c1","resources":{"limits":{"cpu":"35m"},"requests":{"cpu":"25m","memory":"40Mi"}}}],"generation":2}',
    );
    expect(resizeEventMessage('Pod resize OutOfcpu', basePod({ containers: [ctr('c1')] }), 3, "Node didn't have enough resource")).toBe(
      'Pod resize OutOfcpu: {"containers":[{"name":"c1","resources":{}}],"generation":3,"error":"Node didn\'t have enough resource"}',
    );
  });
});

describe('the resize conditions in the status and in the API', () => {
  const pending: PodCondition = { type: 'PodResizePending', status: 'True', reason: 'Deferred', message: 'no room', observedGeneration: 2, lastProbeTime: '2026-01-01T00:00:01Z', lastTransitionTime: '2026-01-01T00:00:01Z' };

  it('come first among the conditions the node generates, with allocatedResources and resources on each container', () => {
    const pod = basePod({ containers: [ctr('foo1', { resources: { requests: { cpu: '100m' } } })] });
    pod.metadata.generation = 2;
    const status = generatePodStatus({ pod, runtime: baseRuntime(pod), reasons: {}, podIsTerminal: false, nowMs: T0, runtimeName: 'sim', resizeConditions: [pending], actuated: { foo1: { requests: { cpu: '100m' } } } });
    expect(status.conditions?.[0]).toEqual(pending);
    expect(status.containerStatuses?.[0]).toMatchObject({ allocatedResources: { cpu: '100m' }, resources: { requests: { cpu: '100m' } } });
  });

  it('carry no generation for a pod without one (a static pod)', () => {
    const pod = basePod({ containers: [ctr('foo1')] });
    const status = generatePodStatus({ pod, runtime: baseRuntime(pod), reasons: {}, podIsTerminal: false, nowMs: T0, runtimeName: 'sim', resizeConditions: [pending] });
    expect(status.conditions?.[0]).not.toHaveProperty('observedGeneration');
  });

  it('are the kubelet\'s: written, and deleted from the API by name once cleared (the patch merges conditions by type)', () => {
    const api = { phase: 'Running' as const, conditions: [pending, { type: 'Ready', status: 'True' as const }, { type: 'example.com/gate', status: 'True' as const }] };
    const ours = { phase: 'Running' as const, conditions: [{ type: 'Ready', status: 'True' as const }] };
    const decision = statusToWrite(api, ours);
    expect(decision.write).toBe(true);
    if (!decision.write) return;
    expect(decision.status.conditions?.map((c) => c.type)).toEqual(['Ready', 'example.com/gate']);
    const conditions = (status: PodStatus | undefined) => (statusPatch('uid-1', decision.status, status) as { status: PodStatus }).status.conditions;
    expect(conditions(api)).toContainEqual({ type: 'PodResizePending', $patch: 'delete' });
    // Deleted as well when the view of the API does not show it yet (the write that set it not yet seen).
    expect(conditions(undefined)).toContainEqual({ type: 'PodResizePending', $patch: 'delete' });
  });
});
