/**
 * In-place pod resize through the whole node (composeNode on the TestRuntime, sim://'s engine): a
 * pod's CPU and memory changed by a CONFIG.UPDATE (what `kubectl patch --subresource resize`
 * reaches the node as) are admitted, applied to the running container without a restart
 * (UpdateContainerResources: the container's cgroup files change), and shown in its status
 * (`allocatedResources`, `resources`); a `RestartContainer` policy restarts it; a resize that
 * does not fit beside the other pods is PodResizePending/Deferred until one leaves; a memory limit
 * below what is in use is refused (PodResizeInProgress/Error). The node has no pod cgroups here
 * (test/kuberuntime/resize.test.ts has the pod cgroup's steps; test/cluster/resize.test.ts both on
 * both runtimes through a real API server).
 */
import { describe, expect, it, vi } from 'vitest';
import type { Container, Pod, PodStatus } from '../../src/api/types.ts';
import { testMachine } from '../support/machine.ts';
import { startFakeNode } from '../support/fakeNode.ts';
import { container, makePod } from '../support/pods.ts';
import { Label } from '../../src/kuberuntime/labels.ts';

/**
 * Waits for a resize's effects: a container restart goes through the simulated runtime's stop and
 * start, which under the full suite's load takes longer than waitFor's default second.
 */
const eventually = <T>(check: () => T | Promise<T>) => vi.waitFor(check, { timeout: 15_000, interval: 20 });

const machine = testMachine({ cpuCores: 2, memoryBytes: 4 * 2 ** 30, ephemeralStorageBytes: 50 * 2 ** 30 });

/** A pod of the API server (a generation, the api source), its one container with `resources`. */
function apiPod(name: string, resources: Container['resources'], extra: Partial<Container> = {}, generation = 1): Pod {
  const pod = makePod(name, { containers: [container('app', { command: ['sh', '-c', "trap 'exit 0' TERM; while true; do sleep 1; done"], resources, ...extra })] });
  pod.metadata = { ...pod.metadata, generation, creationTimestamp: '2026-01-01T00:00:00Z', annotations: { 'kubernetes.io/config.source': 'api' } };
  return pod;
}

/** The same pod at the next generation with other resources (what the API server sends after a resize). */
function resized(pod: Pod, resources: Container['resources']): Pod {
  const next = structuredClone(pod);
  next.metadata.generation = (pod.metadata.generation ?? 1) + 1;
  next.spec.containers[0]!.resources = resources;
  return next;
}

const appStatus = (status: PodStatus | undefined) => status?.containerStatuses?.find((c) => c.name === 'app');
const condition = (status: PodStatus | undefined, type: string) => status?.conditions?.find((c) => c.type === type);

async function cat(node: ReturnType<typeof startFakeNode>, uid: string, file: string): Promise<string> {
  const [running] = await node.runtime.listContainers({ labelSelector: { [Label.podUid]: uid }, state: 'CONTAINER_RUNNING' });
  const result = await node.runtime.execSync(running!.id, ['cat', file], 5);
  return result.stdout.toString().trim();
}

describe('in-place pod resize on a node', () => {
  it('resizes a running container in place: its cgroup, allocatedResources and resources follow, no restart, no condition left', async () => {
    const node = startFakeNode({ machine });
    const pod = apiPod('web', { requests: { cpu: '100m', memory: '64Mi' }, limits: { cpu: '200m', memory: '128Mi' } });
    node.syncLoop.send({ type: 'CONFIG.ADD', source: 'api', pods: [pod] });
    await eventually(() => expect(appStatus(node.statuses.get('uid-web'))?.state.running).toBeDefined());
    const first = appStatus(node.statuses.get('uid-web'))!;
    expect(first.allocatedResources).toEqual({ cpu: '100m', memory: '64Mi' });
    // The runtime's answer (shares, quota, memory limit), the memory request from what it was given.
    expect(first.resources).toEqual({ requests: { cpu: '100m', memory: '64Mi' }, limits: { cpu: '200m', memory: '128Mi' } });
    expect(await cat(node, 'uid-web', '/sys/fs/cgroup/cpu.max')).toBe('20000 100000');

    node.syncLoop.send({ type: 'CONFIG.UPDATE', source: 'api', pods: [resized(pod, { requests: { cpu: '250m', memory: '96Mi' }, limits: { cpu: '500m', memory: '256Mi' } })] });
    await eventually(() => expect(appStatus(node.statuses.get('uid-web'))?.allocatedResources).toEqual({ cpu: '250m', memory: '96Mi' }));
    await eventually(() => expect(appStatus(node.statuses.get('uid-web'))?.resources).toEqual({ requests: { cpu: '250m', memory: '96Mi' }, limits: { cpu: '500m', memory: '256Mi' } }));
    const status = node.statuses.get('uid-web')!;
    expect(appStatus(status)?.restartCount).toBe(0);
    expect(appStatus(status)?.containerID).toBe(first.containerID);
    expect(condition(status, 'PodResizeInProgress')).toBeUndefined();
    expect(condition(status, 'PodResizePending')).toBeUndefined();
    expect(status.observedGeneration).toBe(2);
    expect(await cat(node, 'uid-web', '/sys/fs/cgroup/cpu.max')).toBe('50000 100000');
    expect(await cat(node, 'uid-web', '/sys/fs/cgroup/memory.max')).toBe(String(256 * 2 ** 20));
    // 250m: 256 shares, weight 1 + (254 × 9999) / 262142.
    expect(await cat(node, 'uid-web', '/sys/fs/cgroup/cpu.weight')).toBe('10');
    // The allocation is checkpointed in the root directory.
    expect(node.allocation.allocation('uid-web')?.['app']).toEqual({ requests: { cpu: '250m', memory: '96Mi' }, limits: { cpu: '500m', memory: '256Mi' } });
    node.stop();
  });

  it('restarts the container whose resize policy says RestartContainer for the resource that changed', async () => {
    const node = startFakeNode({ machine });
    const pod = apiPod('mem', { requests: { cpu: '100m', memory: '64Mi' }, limits: { cpu: '100m', memory: '64Mi' } }, {
      resizePolicy: [
        { resourceName: 'cpu', restartPolicy: 'NotRequired' },
        { resourceName: 'memory', restartPolicy: 'RestartContainer' },
      ],
    });
    node.syncLoop.send({ type: 'CONFIG.ADD', source: 'api', pods: [pod] });
    await eventually(() => expect(appStatus(node.statuses.get('uid-mem'))?.state.running).toBeDefined());
    const before = appStatus(node.statuses.get('uid-mem'))!;

    // CPU alone: in place.
    const cpuOnly = resized(pod, { requests: { cpu: '200m', memory: '64Mi' }, limits: { cpu: '200m', memory: '64Mi' } });
    node.syncLoop.send({ type: 'CONFIG.UPDATE', source: 'api', pods: [cpuOnly] });
    await eventually(() => expect(appStatus(node.statuses.get('uid-mem'))?.resources?.limits).toEqual({ cpu: '200m', memory: '64Mi' }));
    expect(appStatus(node.statuses.get('uid-mem'))?.restartCount).toBe(0);

    // Memory: restarted, its new instance created with the new limit.
    node.syncLoop.send({ type: 'CONFIG.UPDATE', source: 'api', pods: [resized(cpuOnly, { requests: { cpu: '200m', memory: '128Mi' }, limits: { cpu: '200m', memory: '128Mi' } })] });
    await eventually(() => {
      const after = appStatus(node.statuses.get('uid-mem'));
      expect(after?.restartCount).toBe(1);
      expect(after?.state.running).toBeDefined();
      expect(after?.resources?.limits).toEqual({ cpu: '200m', memory: '128Mi' });
    });
    expect(appStatus(node.statuses.get('uid-mem'))?.containerID).not.toBe(before.containerID);
    expect(await cat(node, 'uid-mem', '/sys/fs/cgroup/memory.max')).toBe(String(128 * 2 ** 20));
    await eventually(() => expect(condition(node.statuses.get('uid-mem'), 'PodResizeInProgress')).toBeUndefined());
    node.stop();
  });

  it('defers a resize that does not fit beside the other pods, and carries it out once one of them leaves', async () => {
    const node = startFakeNode({ machine });
    const pod = apiPod('grow', { requests: { cpu: '200m' } });
    const other = apiPod('other', { requests: { cpu: '1500m' } });
    node.syncLoop.send({ type: 'CONFIG.ADD', source: 'api', pods: [pod, other] });
    await eventually(() => expect(appStatus(node.statuses.get('uid-other'))?.state.running).toBeDefined());
    await eventually(() => expect(appStatus(node.statuses.get('uid-grow'))?.state.running).toBeDefined());

    const bigger = resized(pod, { requests: { cpu: '1' } });
    node.syncLoop.send({ type: 'CONFIG.UPDATE', source: 'api', pods: [bigger] });
    await eventually(() =>
      expect(condition(node.statuses.get('uid-grow'), 'PodResizePending')).toMatchObject({
        status: 'True',
        reason: 'Deferred',
        message: "Node didn't have enough resource: cpu, requested: 1000, used: 1500, capacity: 2000",
        observedGeneration: 2,
      }),
    );
    // Still what it was admitted with.
    expect(appStatus(node.statuses.get('uid-grow'))?.allocatedResources).toEqual({ cpu: '200m' });

    node.syncLoop.send({ type: 'CONFIG.REMOVE', source: 'api', pods: [other] });
    await eventually(() => expect(appStatus(node.statuses.get('uid-grow'))?.resources).toEqual({ requests: { cpu: '1' } }));
    const status = node.statuses.get('uid-grow')!;
    expect(appStatus(status)?.allocatedResources).toEqual({ cpu: '1' });
    expect(condition(status, 'PodResizePending')).toBeUndefined();
    expect(appStatus(status)?.restartCount).toBe(0);
    node.stop();
  });

  it('drops a pending resize that is reverted: the condition goes, nothing changes', async () => {
    const node = startFakeNode({ machine });
    const pod = apiPod('back', { requests: { cpu: '500m' } });
    const other = apiPod('other', { requests: { cpu: '1200m' } });
    node.syncLoop.send({ type: 'CONFIG.ADD', source: 'api', pods: [pod, other] });
    await eventually(() => expect(appStatus(node.statuses.get('uid-back'))?.state.running).toBeDefined());
    const bigger = resized(pod, { requests: { cpu: '1' } });
    node.syncLoop.send({ type: 'CONFIG.UPDATE', source: 'api', pods: [bigger] });
    await eventually(() => expect(condition(node.statuses.get('uid-back'), 'PodResizePending')?.reason).toBe('Deferred'));
    expect(node.allocation.pending()).toEqual(['uid-back']);
    node.syncLoop.send({ type: 'CONFIG.UPDATE', source: 'api', pods: [resized(bigger, { requests: { cpu: '500m' } })] });
    await eventually(() => expect(condition(node.statuses.get('uid-back'), 'PodResizePending')).toBeUndefined());
    expect(node.allocation.pending()).toEqual([]);
    expect(appStatus(node.statuses.get('uid-back'))?.allocatedResources).toEqual({ cpu: '500m' });
    node.stop();
  });

  it('refuses to lower a memory limit below what the container uses: PodResizeInProgress with reason Error, nothing changed', async () => {
    const node = startFakeNode({ machine });
    const pod = apiPod('full', { requests: { cpu: '100m', memory: '64Mi' }, limits: { cpu: '100m', memory: '64Mi' } }, {
      command: ['sh', '-c', 'dd if=/dev/zero of=/tmp/fill bs=1M count=40; while true; do sleep 1; done'],
    });
    node.syncLoop.send({ type: 'CONFIG.ADD', source: 'api', pods: [pod] });
    await eventually(() => expect(appStatus(node.statuses.get('uid-full'))?.state.running).toBeDefined());
    await eventually(async () => expect(Number(await cat(node, 'uid-full', '/tmp/fill').then((s) => s.length))).toBeGreaterThan(0));

    node.syncLoop.send({ type: 'CONFIG.UPDATE', source: 'api', pods: [resized(pod, { requests: { cpu: '100m', memory: '16Mi' }, limits: { cpu: '100m', memory: '16Mi' } })] });
    await eventually(() =>
      expect(condition(node.statuses.get('uid-full'), 'PodResizeInProgress')).toMatchObject({
        status: 'True',
        reason: 'Error',
        message: expect.stringMatching(/^cannot decrease memory limits: attempting to set container "app" memory limit \(16777216\) below current usage \(\d+\)$/),
        observedGeneration: 2,
      }),
    );
    const status = node.statuses.get('uid-full')!;
    // Allocated, not actuated: the container runs with its old limit.
    expect(appStatus(status)?.allocatedResources).toEqual({ cpu: '100m', memory: '16Mi' });
    expect(appStatus(status)?.resources?.limits).toEqual({ cpu: '100m', memory: '64Mi' });
    expect(await cat(node, 'uid-full', '/sys/fs/cgroup/memory.max')).toBe(String(64 * 2 ** 20));
    node.stop();
  });
});
