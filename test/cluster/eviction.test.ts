/**
 * Eviction under node pressure, against a real kube-apiserver + etcd with the node's own identity:
 *   - on sim:// with a simulated machine of 1 GiB: a BestEffort pod fills 700 MB of it, the node
 *     reports MemoryPressure, the pod is evicted (Failed/Evicted with the kubelet's message, its
 *     DisruptionTarget condition and event) while a Guaranteed pod keeps running, a new BestEffort
 *     pod is refused while the pressure lasts, and the condition clears after the transition period;
 *   - on containerd with --root-dir on a 128 MiB filesystem: a pod fills its emptyDir, the node
 *     reports DiskPressure and evicts that pod (its emptyDir removed), refuses any new pod
 *     meanwhile, keeps the other running, and the condition clears. containerd's image filesystem
 *     (its own root) is then on another disk than --root-dir (dedicated), so under nodefs pressure
 *     nothing of the node's is reclaimed (containers and images free nothing on nodefs) and pods
 *     are ranked by their logs and local volumes, as the kubelet does.
 * Outside CI the containerd part skips loudly where containerd or root is missing.
 */
import type { CoreV1Event, V1Node, V1Pod } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { quantityValue } from '../../src/api/quantity.ts';
import { clusterNode } from '../support/clusterNode.ts';
import { nodes, pods, waitFor } from '../support/controlPlane.ts';
import { BUSYBOX_IMAGE, startContainerd } from '../containerd/harness.ts';
import { type SmallFilesystem, mountSmallFilesystem, rootOrSkip } from '../support/smallFilesystem.ts';
import { mkdtemp, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';

const NODE = 'node-eviction';
const TRANSITION_S = 20;

const condition = (node: V1Node | null, type: string) => node?.status?.conditions?.find((c) => c.type === type);
const memoryPressure = (node: V1Node | null) => condition(node, 'MemoryPressure');

describe('eviction under memory pressure (sim://, a real API server)', () => {
  const cluster = clusterNode({
    node: NODE,
    args: () => ['--container-runtime-endpoint=sim://?memory=1Gi', '--eviction-hard=memory.available<400Mi', `--eviction-pressure-transition-period=${TRANSITION_S}s`],
  });

  it('reports MemoryPressure, evicts the pod over its request, keeps the others, refuses BestEffort pods meanwhile, and clears after the transition period', { timeout: 180_000 }, async ({ skip }) => {
    const cp = cluster.cp;
    if (!cp) return skip();
    const namespace = await cp.namespace('evict');
    const node = (await cp.waitFor<V1Node>(nodes, NODE, (n) => n?.status?.conditions?.find((c) => c.type === 'Ready')?.status === 'True'))!;
    // The Node reports the simulated machine, and leaves the hard threshold out of allocatable.
    expect(quantityValue(node.status?.capacity?.memory)).toBe(2 ** 30);
    expect(quantityValue(node.status?.allocatable?.memory)).toBe((1024 - 400) * 2 ** 20);
    expect(memoryPressure(node)).toMatchObject({ status: 'False', reason: 'KubeletHasSufficientMemory' });

    await cp.core.createNamespacedPod({
      namespace,
      body: {
        metadata: { name: 'calm' },
        spec: { nodeName: NODE, containers: [{ name: 'app', image: 'busybox', command: ['sleep', '3600'], resources: { limits: { cpu: '100m', memory: '64Mi' } } }] },
      },
    });
    await cp.waitFor<V1Pod>(pods(namespace), 'calm', (p) => p?.status?.phase === 'Running');
    await cp.core.createNamespacedPod({
      namespace,
      body: {
        metadata: { name: 'hog' },
        spec: { nodeName: NODE, containers: [{ name: 'hog', image: 'busybox', command: ['sh', '-c', 'dd if=/dev/zero of=/tmp/fill bs=1M count=700 && sleep 3600'] }] },
      },
    });

    const pressed = (await cp.waitFor<V1Node>(nodes, NODE, (n) => memoryPressure(n)?.status === 'True', 60_000))!;
    expect(memoryPressure(pressed)).toMatchObject({ reason: 'KubeletHasInsufficientMemory', message: 'kubelet has insufficient memory available' });

    // While the condition holds, a BestEffort pod is refused; a Burstable one would be admitted.
    await cp.core.createNamespacedPod({
      namespace,
      body: { metadata: { name: 'late' }, spec: { nodeName: NODE, containers: [{ name: 'app', image: 'busybox', command: ['sleep', '3600'] }] } },
    });
    const late = (await cp.waitFor<V1Pod>(pods(namespace), 'late', (p) => p?.status?.phase === 'Failed'))!;
    expect(late.status).toMatchObject({ reason: 'Evicted', message: 'Pod was rejected: The node had condition: [MemoryPressure]. ' });

    // Failed from the moment its termination starts, its container stopped soon after.
    const hog = (await cp.waitFor<V1Pod>(pods(namespace), 'hog', (p) => p?.status?.phase === 'Failed' && !!p.status.containerStatuses?.[0]?.state?.terminated, 60_000))!;
    expect(hog.status?.reason).toBe('Evicted');
    expect(hog.status?.message).toMatch(
      /^The node was low on resource: memory\. Threshold quantity: 400Mi, available: \d+(Ki|Mi)?\. Container hog was using \d+(Ki|Mi)?, request is 0, has larger consumption of memory\. $/,
    );
    expect(hog.status?.conditions?.find((c) => c.type === 'DisruptionTarget')).toMatchObject({ status: 'True', reason: 'TerminationByKubelet', message: hog.status?.message });
    const events = async (): Promise<CoreV1Event[]> => (await cp.core.listNamespacedEvent({ namespace })).items;
    await waitFor(async () => (await events()).some((e) => e.reason === 'Evicted' && e.involvedObject.name === 'hog'), 'the Evicted event of the hog pod');
    const nodeEvents = async (): Promise<CoreV1Event[]> => (await cp.core.listNamespacedEvent({ namespace: 'default' })).items;
    await waitFor(async () => (await nodeEvents()).some((e) => e.reason === 'EvictionThresholdMet' && e.message === 'Attempting to reclaim memory'), 'the EvictionThresholdMet event of the node');

    // The Guaranteed pod was not touched.
    const calm = (await cp.core.readNamespacedPod({ namespace, name: 'calm' })) as V1Pod;
    expect(calm.status?.phase).toBe('Running');
    expect(calm.status?.containerStatuses?.[0]?.restartCount).toBe(0);

    // Once the memory is back, the condition holds for the transition period and then clears.
    const cleared = (await cp.waitFor<V1Node>(nodes, NODE, (n) => memoryPressure(n)?.status === 'False', (TRANSITION_S + 40) * 1000))!;
    expect(memoryPressure(cleared)?.reason).toBe('KubeletHasSufficientMemory');
    const described = await cp.kubectl(['describe', 'node', NODE]);
    expect(described).toMatch(/MemoryPressure\s+False/);
    expect(described).toMatch(/NodeHasInsufficientMemory/);
  });

  it('kills the process that outgrows the whole machine: its container OOMKilled, SystemOOM on the Node', { timeout: 60_000 }, async ({ skip }) => {
    const cp = cluster.cp;
    if (!cp) return skip();
    const namespace = await cp.namespace('system-oom');
    // No limit of its own: 2 GiB is more than the simulated machine has free.
    await cp.core.createNamespacedPod({
      namespace,
      body: { metadata: { name: 'greedy' }, spec: { nodeName: NODE, restartPolicy: 'Never', containers: [{ name: 'dd', image: 'busybox', command: ['dd', 'if=/dev/zero', 'of=/dev/null', 'bs=2G', 'count=1'] }] } },
    });
    const greedy = (await cp.waitFor<V1Pod>(pods(namespace), 'greedy', (p) => p?.status?.phase === 'Failed'))!;
    expect(greedy.status?.containerStatuses?.[0]?.state?.terminated).toMatchObject({ reason: 'OOMKilled', exitCode: 137 });
    const nodeEvents = async (): Promise<CoreV1Event[]> => (await cp.core.listNamespacedEvent({ namespace: 'default' })).items;
    await waitFor(async () => (await nodeEvents()).some((e) => e.reason === 'SystemOOM' && e.involvedObject.name === NODE && /^System OOM encountered, victim process: dd, pid: \d+$/.test(e.message ?? '')), 'the SystemOOM event of the node');
  });
});

const DISK_NODE = 'node-eviction-disk';
const containerd = rootOrSkip('eviction under disk pressure') ? await startContainerd() : null;

describe.runIf(containerd !== null)('eviction under disk pressure (containerd, --root-dir on a small filesystem, a real API server)', () => {
  let disk: SmallFilesystem | undefined;
  const cluster = clusterNode({
    node: DISK_NODE,
    args: () => [`--container-runtime-endpoint=${containerd!.endpoint}`, '--eviction-hard=nodefs.available<48Mi', `--eviction-pressure-transition-period=${TRANSITION_S}s`],
    prepare: async () => {
      disk = await mountSmallFilesystem(await mkdtemp(path.join(os.tmpdir(), 'statelet-evict-disk-')), { sizeMiB: 128, inodes: 20_000 });
      return { rootDir: disk.dir };
    },
    // The containers' logs are on the small filesystem: containerd and its shims let go of them first.
    cleanUp: async () => {
      await containerd?.stop();
      await disk?.remove();
    },
  });

  it('reports DiskPressure, evicts the pod that filled its emptyDir, refuses new pods meanwhile, and clears once the disk is freed', { timeout: 180_000 }, async ({ skip }) => {
    const cp = cluster.cp;
    if (!cp) return skip();
    const namespace = await cp.namespace('evict-disk');
    await cp.waitFor<V1Node>(nodes, DISK_NODE, (n) => condition(n, 'Ready')?.status === 'True');
    // Two disks: nodefs is the small filesystem, imagefs containerd's own (ImageFsInfo, statfs of its mountpoint).
    type FsFigures = { capacityBytes?: number; availableBytes?: number; usedBytes?: number };
    const stats = (await (await fetch(`http://127.0.0.1:${cluster.agent!.readOnlyPort}/stats/summary`)).json()) as { node: { fs?: FsFigures; runtime?: { imageFs?: FsFigures } } };
    expect(stats.node.fs?.capacityBytes).toBeLessThanOrEqual(128 * 2 ** 20);
    expect(stats.node.runtime?.imageFs).toMatchObject({ capacityBytes: expect.any(Number), availableBytes: expect.any(Number), usedBytes: expect.any(Number) });
    expect(stats.node.runtime?.imageFs?.capacityBytes).not.toBe(stats.node.fs?.capacityBytes);
    await cp.core.createNamespacedPod({
      namespace,
      body: {
        metadata: { name: 'calm' },
        spec: { nodeName: DISK_NODE, terminationGracePeriodSeconds: 1, containers: [{ name: 'app', image: BUSYBOX_IMAGE, command: ['sleep', '3600'], resources: { limits: { cpu: '100m', memory: '64Mi' } } }] },
      },
    });
    await cp.waitFor<V1Pod>(pods(namespace), 'calm', (p) => p?.status?.phase === 'Running');
    await cp.core.createNamespacedPod({
      namespace,
      body: {
        metadata: { name: 'filler' },
        spec: {
          nodeName: DISK_NODE,
          volumes: [{ name: 'scratch', emptyDir: {} }],
          containers: [
            { name: 'filler', image: BUSYBOX_IMAGE, command: ['sh', '-c', 'dd if=/dev/zero of=/scratch/fill bs=1M count=100 && sleep 3600'], volumeMounts: [{ name: 'scratch', mountPath: '/scratch' }] },
          ],
        },
      },
    });

    const pressed = (await cp.waitFor<V1Node>(nodes, DISK_NODE, (n) => condition(n, 'DiskPressure')?.status === 'True', 60_000))!;
    expect(condition(pressed, 'DiskPressure')).toMatchObject({ reason: 'KubeletHasDiskPressure', message: 'kubelet has disk pressure' });
    // Under disk pressure no pod is admitted, whatever its QoS class.
    await cp.core.createNamespacedPod({
      namespace,
      body: { metadata: { name: 'late' }, spec: { nodeName: DISK_NODE, containers: [{ name: 'app', image: BUSYBOX_IMAGE, command: ['sleep', '3600'], resources: { limits: { cpu: '100m', memory: '64Mi' } } }] } },
    });
    const late = (await cp.waitFor<V1Pod>(pods(namespace), 'late', (p) => p?.status?.phase === 'Failed'))!;
    expect(late.status).toMatchObject({ reason: 'Evicted', message: 'Pod was rejected: The node had condition: [DiskPressure]. ' });

    const filler = (await cp.waitFor<V1Pod>(pods(namespace), 'filler', (p) => p?.status?.phase === 'Failed' && !!p.status.containerStatuses?.[0]?.state?.terminated, 60_000))!;
    expect(filler.status?.reason).toBe('Evicted');
    expect(filler.status?.message).toMatch(
      /^The node was low on resource: ephemeral-storage\. Threshold quantity: 48Mi, available: \d+(Ki|Mi)?\. (Container filler was using \d+(Ki|Mi)?, request is 0, has larger consumption of ephemeral-storage\. )?$/,
    );
    expect(filler.status?.conditions?.find((c) => c.type === 'DisruptionTarget')).toMatchObject({ status: 'True', reason: 'TerminationByKubelet' });
    const events = async (): Promise<CoreV1Event[]> => (await cp.core.listNamespacedEvent({ namespace: 'default' })).items;
    await waitFor(async () => (await events()).some((e) => e.reason === 'EvictionThresholdMet' && e.message === 'Attempting to reclaim ephemeral-storage'), 'the EvictionThresholdMet event of the node');

    const calm = (await cp.core.readNamespacedPod({ namespace, name: 'calm' })) as V1Pod;
    expect(calm.status?.phase).toBe('Running');
    const cleared = (await cp.waitFor<V1Node>(nodes, DISK_NODE, (n) => condition(n, 'DiskPressure')?.status === 'False', (TRANSITION_S + 40) * 1000))!;
    expect(condition(cleared, 'DiskPressure')?.reason).toBe('KubeletHasNoDiskPressure');
    // No image was removed (nodefs pressure reclaims nothing beside a dedicated image filesystem): a new pod starts.
    await cp.core.createNamespacedPod({
      namespace,
      body: { metadata: { name: 'after' }, spec: { nodeName: DISK_NODE, containers: [{ name: 'app', image: BUSYBOX_IMAGE, command: ['sleep', '3600'], resources: { limits: { cpu: '100m', memory: '64Mi' } } }] } },
    });
    await cp.waitFor<V1Pod>(pods(namespace), 'after', (p) => p?.status?.phase === 'Running');
  });

  it("records SystemOOM on the Node when the host's kernel reports an OOM of the whole machine", { timeout: 60_000 }, async ({ skip }) => {
    const cp = cluster.cp;
    if (!cp) return skip();
    // The kernel's lines of a global OOM, written into the host's kernel log (root may): the agent follows it.
    const pid = 400_000 + Math.floor(Math.random() * 90_000);
    await writeFile('/dev/kmsg', 'statelet-e2e invoked oom-killer: gfp_mask=0xcc0(GFP_KERNEL), order=0, oom_score_adj=0\n');
    await writeFile('/dev/kmsg', `oom-kill:constraint=CONSTRAINT_NONE,nodemask=(null),cpuset=/,mems_allowed=0,global_oom,task_memcg=/statelet-e2e,task=statelet-e2e,pid=${pid},uid=0\n`);
    const events = async (): Promise<CoreV1Event[]> => (await cp.core.listNamespacedEvent({ namespace: 'default' })).items;
    await waitFor(
      async () => (await events()).some((e) => e.reason === 'SystemOOM' && e.involvedObject.name === DISK_NODE && e.message === `System OOM encountered, victim process: statelet-e2e, pid: ${pid}`),
      'the SystemOOM event of the node',
    );
  });
});
