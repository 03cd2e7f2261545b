/**
 * The resize part of a sync's plan, table-driven like the kubelet's TestComputePodActionsForPodResize
 * (pkg/kubelet/kuberuntime/kuberuntime_manager_test.go): a pod whose containers run, the resources
 * they were last given (actuated), and per case the allocated resources and the expected plan; and
 * the pure pieces of doPodResizeAction (the order of cgroup steps, the values sent per resource, the
 * memory-decrease check).
 */
import { describe, expect, it } from 'vitest';
import type { Container, Pod, ResourceRequirements } from '../../src/api/types.ts';
import { computePodActions } from '../../src/kuberuntime/computePodActions.ts';
import {
  type ActuatedResources,
  type ContainerUpdate,
  containerUpdateResources,
  isPodResizeInProgress,
  memoryDecreaseErrors,
  memoryDecreases,
  planPodResize,
  resizeAmounts,
  resizeSteps,
  withoutZeros,
} from '../../src/kuberuntime/podResize.ts';
import { basePod, baseRuntime, ctr, exited, rc, setContainer, sidecar } from '../support/podFixtures.ts';

const r = (requests: Record<string, string>, limits?: Record<string, string>): ResourceRequirements => ({ requests, ...(limits ? { limits } : {}) });
const cpu = (request: string, limit?: string) => r({ cpu: request }, limit ? { cpu: limit } : undefined);
const both = (c: string, m: string) => r({ cpu: c, memory: m }, { cpu: c, memory: m });
const restartOn = (...resources: string[]): Container['resizePolicy'] =>
  (['cpu', 'memory'] as const).map((resourceName) => ({ resourceName, restartPolicy: resources.includes(resourceName) ? 'RestartContainer' : 'NotRequired' }));

interface Plan {
  /** `<name>:<desired value>` per resource, in update order. */
  memory: string[];
  cpu: string[];
  updatePod: boolean;
  start: number[];
  init: number[];
  /** `<id>:<reason>`. */
  kill: string[];
}

function plan(pod: Pod, actuated: ActuatedResources, mutateRuntime?: (status: ReturnType<typeof baseRuntime>) => void): Plan {
  const status = baseRuntime(pod);
  for (const [i, c] of (pod.spec.initContainers ?? []).entries()) if (c.restartPolicy === 'Always') setContainer(status, c.name, rc(c, { createdAt: 1000 + i }));
  mutateRuntime?.(status);
  const { actions, resize } = planPodResize(pod, status, computePodActions(pod, status), actuated);
  const value = (resource: 'cpu' | 'memory') => (u: ContainerUpdate) => {
    const d = u.desired;
    const changedLimit = resource === 'cpu' ? d.cpuLimit !== u.current.cpuLimit : d.memoryLimit !== u.current.memoryLimit;
    return `${u.name}:${resource === 'cpu' ? (changedLimit ? d.cpuLimit : d.cpuRequest) : changedLimit ? d.memoryLimit : d.memoryRequest}`;
  };
  return {
    memory: resize.containersToUpdate.memory.map(value('memory')),
    cpu: resize.containersToUpdate.cpu.map(value('cpu')),
    updatePod: resize.updatePodResources,
    start: actions.containersToStart,
    init: actions.initContainersToStart,
    kill: actions.containersToKill.map((k) => `${k.id}:${k.reason}`),
  };
}

const none: Plan = { memory: [], cpu: [], updatePod: false, start: [], init: [], kill: [] };
const MiB = 2 ** 20;

describe('planPodResize (computePodResizeAction over the plan)', () => {
  const cases: { name: string; pod: Pod; actuated: ActuatedResources; runtime?: (s: ReturnType<typeof baseRuntime>) => void; want: Partial<Plan> }[] = [
    {
      name: 'allocated equals actuated: nothing',
      pod: basePod({ containers: [ctr('foo1', { resources: both('100m', '100Mi') })] }),
      actuated: { foo1: both('100m', '100Mi') },
      want: {},
    },
    {
      name: 'equal values written differently (0.1 and 100m, 100Mi and 104857600): nothing',
      pod: basePod({ containers: [ctr('foo1', { resources: both('0.1', '104857600') })] }),
      actuated: { foo1: both('100m', '100Mi') },
      want: {},
    },
    {
      name: 'CPU up: an update in place, CPU only',
      pod: basePod({ containers: [ctr('foo1', { resources: both('200m', '100Mi') })] }),
      actuated: { foo1: both('100m', '100Mi') },
      want: { cpu: ['foo1:200'] },
    },
    {
      name: 'memory limit down: an update in place, memory only',
      pod: basePod({ containers: [ctr('foo1', { resources: both('100m', '50Mi') })] }),
      actuated: { foo1: both('100m', '100Mi') },
      want: { memory: [`foo1:${50 * MiB}`] },
    },
    {
      name: 'a CPU request alone changes (limits equal): the request is what is compared',
      pod: basePod({ containers: [ctr('foo1', { resources: cpu('300m', '1') })] }),
      actuated: { foo1: cpu('100m', '1') },
      want: { cpu: ['foo1:300'] },
    },
    {
      name: 'decreases go first, increases last, in each resource',
      pod: basePod({ containers: [ctr('foo1', { resources: both('200m', '200Mi') }), ctr('foo2', { resources: both('50m', '50Mi') }), ctr('foo3', { resources: both('300m', '300Mi') })] }),
      actuated: { foo1: both('100m', '100Mi'), foo2: both('100m', '100Mi'), foo3: both('100m', '100Mi') },
      want: { cpu: ['foo2:50', 'foo1:200', 'foo3:300'], memory: [`foo2:${50 * MiB}`, `foo1:${200 * MiB}`, `foo3:${300 * MiB}`] },
    },
    {
      name: 'RestartContainer for memory, memory changes: killed and started again, the pod cgroup follows',
      pod: basePod({ containers: [ctr('foo1', { resources: both('100m', '200Mi'), resizePolicy: restartOn('memory') })] }),
      actuated: { foo1: both('100m', '100Mi') },
      want: { kill: ['foo1-id:Resize'], start: [0], updatePod: true },
    },
    {
      name: 'RestartContainer for memory, only CPU changes: in place',
      pod: basePod({ containers: [ctr('foo1', { resources: both('200m', '100Mi'), resizePolicy: restartOn('memory') })] }),
      actuated: { foo1: both('100m', '100Mi') },
      want: { cpu: ['foo1:200'] },
    },
    {
      name: 'RestartContainer for CPU, both change: restarted, no update in place',
      pod: basePod({ containers: [ctr('foo1', { resources: both('200m', '200Mi'), resizePolicy: restartOn('cpu') })] }),
      actuated: { foo1: both('100m', '100Mi') },
      want: { kill: ['foo1-id:Resize'], start: [0], updatePod: true },
    },
    {
      name: 'a container that is not running is not resized: it starts with its allocation',
      pod: basePod({ restartPolicy: 'Never', containers: [ctr('foo1', { resources: both('200m', '100Mi') }), ctr('foo2')] }),
      actuated: { foo1: both('100m', '100Mi') },
      runtime: (s) => setContainer(s, 'foo1', exited(ctr('foo1'), 0)),
      want: {},
    },
    {
      name: 'a container started resized (it had exited): the pod cgroup is brought up first',
      pod: basePod({ containers: [ctr('foo1', { resources: both('200m', '100Mi') }), ctr('foo2')] }),
      actuated: { foo1: both('100m', '100Mi') },
      runtime: (s) => setContainer(s, 'foo1', exited(ctr('foo1'), 1)),
      want: { start: [0], updatePod: true },
    },
    {
      name: 'a container killed for another reason (spec changed) is not also resized',
      pod: basePod({ containers: [ctr('foo1', { resources: both('200m', '100Mi') })] }),
      actuated: { foo1: both('100m', '100Mi') },
      runtime: (s) => setContainer(s, 'foo1', rc(ctr('foo1'), { hash: 'old' })),
      want: { kill: ['foo1-id:SpecChanged'], start: [0], updatePod: true },
    },
    {
      name: 'no record of what it was given: every value updated (idempotent)',
      pod: basePod({ containers: [ctr('foo1', { resources: both('100m', '100Mi') })] }),
      actuated: {},
      want: { cpu: ['foo1:100'], memory: [`foo1:${100 * MiB}`] },
    },
    {
      name: 'a sidecar is resized in place like a regular container',
      pod: basePod({ initContainers: [sidecar('side', { resources: both('200m', '100Mi') })], containers: [ctr('foo1')] }),
      actuated: { side: both('100m', '100Mi'), foo1: {} },
      want: { cpu: ['side:200'] },
    },
    {
      name: 'a sidecar restarted for its resize is started again as an init container',
      pod: basePod({ initContainers: [sidecar('side', { resources: both('100m', '200Mi'), resizePolicy: restartOn('memory') })], containers: [ctr('foo1')] }),
      actuated: { side: both('100m', '100Mi'), foo1: {} },
      want: { kill: ['side-id:Resize'], init: [0], updatePod: true },
    },
    {
      name: 'a new sandbox: nothing is resized',
      pod: basePod({ containers: [ctr('foo1', { resources: both('200m', '100Mi') })] }),
      actuated: { foo1: both('100m', '100Mi') },
      runtime: (s) => void (s.sandboxes[0]!.state = 'SANDBOX_NOTREADY'),
      want: { start: [0] },
    },
  ];
  it.each(cases.map((c) => [c.name, c] as const))('%s', (_name, c) => {
    expect(plan(c.pod, c.actuated, c.runtime)).toEqual({ ...none, ...c.want });
  });
});

describe('isPodResizeInProgress', () => {
  const pod = basePod({ containers: [ctr('foo1', { resources: both('200m', '100Mi') }), ctr('foo2')] });
  it.each([
    ['actuated as allocated', { foo1: both('200m', '100Mi') }, undefined, false],
    ['a running container not yet given its allocation', { foo1: both('100m', '100Mi') }, undefined, true],
    ['the same container exited: it starts resized, nothing is in progress', { foo1: both('100m', '100Mi') }, 'exited', false],
    ['an init container that is not a sidecar never counts', { foo1: both('200m', '100Mi') }, 'init', false],
  ] as const)('%s', (_name, actuated, variant, want) => {
    const subject = variant === 'init' ? { ...pod, spec: { ...pod.spec, initContainers: [ctr('setup', { resources: both('1', '1Gi') })] } } : pod;
    const status = baseRuntime(subject);
    if (variant === 'exited') setContainer(status, 'foo1', exited(ctr('foo1'), 0));
    if (variant === 'init') setContainer(status, 'setup', rc(ctr('setup')));
    expect(isPodResizeInProgress(subject, status, actuated)).toBe(want);
  });
});

describe('resizeSteps (doPodResizeAction resizeContainers)', () => {
  it.each([
    ['both grow: pod limit, pod request, then the containers', { limit: 100, request: 10 }, { limit: 200, request: 20 }, ['podLimit', 'podRequest', 'containers']],
    ['both shrink: the containers, then the pod request, then the pod limit', { limit: 200, request: 20 }, { limit: 100, request: 10 }, ['containers', 'podRequest', 'podLimit']],
    ['limit grows, request shrinks', { limit: 100, request: 20 }, { limit: 200, request: 10 }, ['podLimit', 'containers', 'podRequest']],
    ['limit shrinks, request grows', { limit: 200, request: 10 }, { limit: 100, request: 20 }, ['podRequest', 'containers', 'podLimit']],
    ['nothing of the pod changes', { limit: 100, request: 10 }, { limit: 100, request: 10 }, ['containers']],
    ['a pod limit set where there was none (-1, no quota) is an increase', { limit: -1, request: 10 }, { limit: 5000, request: 10 }, ['podLimit', 'containers']],
    ['memory: an unlimited pod given a limit shrinks, after the containers', { limit: Number.POSITIVE_INFINITY, request: 0 }, { limit: 2 ** 30, request: 0 }, ['containers', 'podLimit']],
  ] as const)('%s', (_name, current, next, want) => {
    expect(resizeSteps(current, next, true)).toEqual(want);
  });
  it('takes no container step when no container is updated', () => {
    expect(resizeSteps({ limit: 1, request: 1 }, { limit: 2, request: 2 }, false)).toEqual(['podLimit', 'podRequest']);
  });
});

describe('containerUpdateResources (updatePodContainerResources)', () => {
  const update = { desired: resizeAmounts(both('200m', '200Mi')), current: resizeAmounts(both('100m', '100Mi')) };
  it('sends the new memory with the CPU last applied, and the other way round', () => {
    expect(containerUpdateResources(update, 'memory')).toEqual({ limits: { cpu: '100m', memory: String(200 * MiB) }, requests: { cpu: '100m', memory: String(200 * MiB) } });
    expect(containerUpdateResources(update, 'cpu')).toEqual({ limits: { cpu: '200m', memory: String(100 * MiB) }, requests: { cpu: '200m', memory: String(100 * MiB) } });
  });
  it('writes zeros (a CPU request of 0 is the minimum shares), which the actuated record leaves out', () => {
    const sent = containerUpdateResources({ desired: resizeAmounts(cpu('100m')), current: resizeAmounts(undefined) }, 'cpu');
    expect(sent).toEqual({ limits: { cpu: '0m', memory: '0' }, requests: { cpu: '100m', memory: '0' } });
    expect(withoutZeros(sent)).toEqual({ requests: { cpu: '100m' } });
  });
});

describe('memory decreases (validateMemoryResizeAction)', () => {
  const update = (name: string, from: number, to: number): ContainerUpdate => ({
    name,
    id: `${name}-id`,
    desired: { cpuRequest: 0, cpuLimit: 0, memoryRequest: 0, memoryLimit: to },
    current: { cpuRequest: 0, cpuLimit: 0, memoryRequest: 0, memoryLimit: from },
  });
  it.each([
    ['nothing goes down', undefined, null, [update('a', 100, 200)], null],
    ['a container limit goes down', undefined, null, [update('a', 200, 100)], { containers: { a: 100 } }],
    ['a container gets a limit it did not have', undefined, null, [update('a', 0, 100)], { containers: { a: 100 } }],
    ['the pod limit goes down', 100, 200, [], { pod: 100, containers: {} }],
    ['the pod gets a limit it did not have', 100, null, [], { pod: 100, containers: {} }],
    ['the pod limit goes up', 300, 200, [], null],
  ] as const)('%s', (_name, podLimit, podCurrent, updates, want) => {
    expect(memoryDecreases(podLimit, podCurrent, [...updates])).toEqual(want);
  });

  it.each([
    ['usage below every new limit: allowed', { pod: 100, containers: { a: 50 } }, { pod: 90, containers: { a: 40 } }, null],
    ['a container at its new limit', { containers: { a: 50 } }, { containers: { a: 50 } }, 'cannot decrease memory limits: attempting to set container "a" memory limit (50) below current usage (50)'],
    ['the pod over its new limit', { pod: 100, containers: {} }, { pod: 120, containers: {} }, 'cannot decrease memory limits: attempting to set pod memory limit (100) below current usage (120)'],
    ['no pod usage to check against', { pod: 100, containers: {} }, { containers: {} }, 'cannot decrease memory limits: missing pod memory usage'],
    ['a container with stats but no memory figure', { containers: { a: 50 } }, { containers: { a: undefined } }, 'cannot decrease memory limits: missing container "a" memory usage'],
    ['a container the runtime has no stats of is not checked', { containers: { a: 50 } }, { containers: {} }, null],
    [
      'two reasons, joined as an aggregate',
      { pod: 100, containers: { a: 50 } },
      { pod: 200, containers: { a: 60 } },
      'cannot decrease memory limits: [attempting to set pod memory limit (100) below current usage (200), attempting to set container "a" memory limit (50) below current usage (60)]',
    ],
  ] as const)('%s', (_name, decreases, usage, want) => {
    expect(memoryDecreaseErrors(decreases, usage)).toBe(want);
  });
});
