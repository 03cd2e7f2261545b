/**
 * In-place pod resize through a real kube-apiserver + etcd (`kubectl patch pod … --subresource
 * resize`), statelet as the node, the same story on sim:// and on containerd:
 *   - a CPU resize is carried out in place: the container keeps running (no restart), its own
 *     cgroup (read with `kubectl exec … cat /sys/fs/cgroup/…`: cgroup v1 files on containerd on
 *     these machines, v2 on sim://) and its pod's cgroup on the node show the new values, and the
 *     status reports them (`allocatedResources`, `resources`, `observedGeneration`), with no resize
 *     condition left and the kubelet's events (ResizeStarted, ResizeCompleted);
 *   - a resize beyond the node's allocatable is refused by the API server itself (the
 *     PodResizeValidator admission plugin, v1.35+: Forbidden, `node didn't have enough allocatable
 *     resources`), so it never reaches the node;
 *   - one that fits the node but not beside its other pods is `PodResizePending` with reason
 *     `Deferred` and the admission's message (the v1.37 kubelet has no capacity check of its own
 *     that would make it Infeasible), and is carried out once the other pod is deleted;
 *   - so are a change of QoS class and a static pod's (its mirror pod's) resize;
 *   - a `RestartContainer` memory policy restarts the container with its new limit.
 * Outside CI the containerd part skips loudly where containerd or root is missing.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { access, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { CoreV1Event, V1Node, V1Pod } from '@kubernetes/client-node';
import { afterAll, describe, expect, it } from 'vitest';
import { amount } from '../../src/api/quantity.ts';
import { agentCgroupRoot } from '../support/agentProcess.ts';
import { clusterNode } from '../support/clusterNode.ts';
import { type ControlPlane, nodes, pods, waitFor } from '../support/controlPlane.ts';
import { BUSYBOX_IMAGE, startContainerd } from '../containerd/harness.ts';

const longRunning = "trap 'exit 0' TERM; while true; do sleep 1; done";
const condition = (pod: V1Pod | null, type: string) => pod?.status?.conditions?.find((c) => c.type === type);
const app = (pod: V1Pod | null) => pod?.status?.containerStatuses?.find((c) => c.name === 'app');

interface ResizeRuntime {
  name: string;
  node: string;
  image: string;
  /** The node's cgroup mount: sim://'s tree under --root-dir, laid out as v2; the host's (v1 here) for containerd. */
  cgroupMount(rootDir: string): string;
}

function defineResizeScenarios(runtime: ResizeRuntime, cluster: ReturnType<typeof clusterNode>): void {
  const resizePatch = (resources: object) => JSON.stringify({ spec: { containers: [{ name: 'app', resources }] } });
  const patch = (cp: ControlPlane, namespace: string, name: string, resources: object) =>
    cp.kubectl(['patch', 'pod', name, '-n', namespace, '--subresource', 'resize', '--type', 'strategic', '-p', resizePatch(resources)]);
  const exec = (cp: ControlPlane, namespace: string, name: string, command: string) => cp.kubectl(['exec', '-n', namespace, name, '-c', 'app', '--', 'sh', '-c', command]);

  /** The container's own cgroup file, as the container sees it (v1: under the controller's directory). */
  const containerFile = async (cp: ControlPlane, namespace: string, name: string, v1: string, v2: string) => {
    const isV2 = (await exec(cp, namespace, name, 'test -e /sys/fs/cgroup/cpu.max && echo 2 || echo 1')).trim() === '2';
    return (await exec(cp, namespace, name, `cat ${isV2 ? `/sys/fs/cgroup/${v2}` : `/sys/fs/cgroup/${v1.split('.')[0]}/${v1}`}`)).trim();
  };

  /** The pod's cgroup file on the node. */
  const podFile = async (pod: V1Pod, qos: string, v1: string, v2: string) => {
    const mount = runtime.cgroupMount(cluster.agent!.rootDir);
    const isV2 = await access(path.join(mount, 'cgroup.controllers')).then(() => true, () => false);
    const cgroup = `${agentCgroupRoot(cluster.agent!.rootDir).slice(1)}/kubepods${qos}/pod${pod.metadata!.uid}`;
    return (await readFile(isV2 ? path.join(mount, cgroup, v2) : path.join(mount, v1.split('.')[0]!, cgroup, v1), 'utf8')).trim();
  };

  const resized = (p: V1Pod | null, cpu: string) =>
    (p?.status?.observedGeneration ?? 0) >= (p?.metadata?.generation ?? 1) &&
    app(p)?.allocatedResources?.['cpu'] === cpu &&
    app(p)?.resources?.requests?.['cpu'] === cpu &&
    !condition(p, 'PodResizeInProgress') &&
    !condition(p, 'PodResizePending');

  describe(`in-place pod resize on ${runtime.name} (a real API server)`, () => {
    it('resizes CPU in place: the container\'s and the pod\'s cgroups change, the status says so, nothing restarts', { timeout: 180_000 }, async ({ skip }) => {
      const cp = cluster.cp;
      if (!cp) return skip();
      const namespace = await cp.namespace('resize');
      await cp.waitFor<V1Node>(nodes, runtime.node, (n) => n?.status?.conditions?.find((c) => c.type === 'Ready')?.status === 'True');
      await cp.core.createNamespacedPod({
        namespace,
        body: {
          metadata: { name: 'web' },
          spec: {
            nodeName: runtime.node,
            terminationGracePeriodSeconds: 1,
            containers: [{ name: 'app', image: runtime.image, command: ['sh', '-c', longRunning], resources: { requests: { cpu: '100m', memory: '32Mi' }, limits: { cpu: '200m', memory: '64Mi' } } }],
          },
        },
      });
      const running = (await cp.waitFor<V1Pod>(pods(namespace), 'web', (p) => !!app(p)?.state?.running && !!app(p)?.resources))!;
      expect(app(running)?.allocatedResources).toEqual({ cpu: '100m', memory: '32Mi' });
      expect(app(running)?.resources).toEqual({ requests: { cpu: '100m', memory: '32Mi' }, limits: { cpu: '200m', memory: '64Mi' } });
      expect(await containerFile(cp, namespace, 'web', 'cpu.cfs_quota_us', 'cpu.max')).toMatch(/^20000( 100000)?$/);

      await patch(cp, namespace, 'web', { requests: { cpu: '300m' }, limits: { cpu: '400m' } });
      const done = (await cp.waitFor<V1Pod>(pods(namespace), 'web', (p) => resized(p, '300m'), 60_000))!;
      expect(done.metadata?.generation).toBe(2);
      expect(app(done)?.resources).toEqual({ requests: { cpu: '300m', memory: '32Mi' }, limits: { cpu: '400m', memory: '64Mi' } });
      expect(app(done)?.restartCount).toBe(0);
      expect(app(done)?.containerID).toBe(app(running)?.containerID);
      // The container's cgroup: the quota of 400m, the shares of 300m (307; weight 12 on v2), memory untouched.
      expect(await containerFile(cp, namespace, 'web', 'cpu.cfs_quota_us', 'cpu.max')).toMatch(/^40000( 100000)?$/);
      expect(await containerFile(cp, namespace, 'web', 'cpu.shares', 'cpu.weight')).toMatch(/^(307|12)$/);
      expect(await containerFile(cp, namespace, 'web', 'memory.limit_in_bytes', 'memory.max')).toBe(String(64 * 2 ** 20));
      // Its pod's cgroup on the node (every container has CPU and memory limits: the pod has them too).
      expect((await podFile(done, '/burstable', 'cpu.cfs_quota_us', 'cpu.max')).split(' ')[0]).toBe('40000');
      expect(await podFile(done, '/burstable', 'cpu.shares', 'cpu.weight')).toMatch(/^(307|12)$/);

      const events = async (): Promise<CoreV1Event[]> => (await cp.core.listNamespacedEvent({ namespace })).items;
      await waitFor(async () => (await events()).some((e) => e.reason === 'ResizeStarted' && e.message?.startsWith('Pod resize started: {"containers":[{"name":"app","resources":{"limits":{"cpu":"400m"')), 'the ResizeStarted event');
      await waitFor(async () => (await events()).some((e) => e.reason === 'ResizeCompleted' && /"generation":2/.test(e.message ?? '')), 'the ResizeCompleted event');

      // Beyond what the node can ever give: refused by the API server, before the node sees it.
      const node = (await cp.core.readNode({ name: runtime.node })) as V1Node;
      const tooMuch = `${amount('cpu', node.status?.allocatable?.['cpu']) + 1000}m`;
      const refusal = await patch(cp, namespace, 'web', { requests: { cpu: tooMuch }, limits: { cpu: tooMuch } }).then(
        () => 'accepted',
        (err: Error & { stderr?: string }) => err.stderr ?? err.message,
      );
      expect(refusal).toMatch(/Forbidden.*node didn't have enough allocatable resources: cpu, requested: \d+, allocatable: \d+/);
      // A change of QoS class (requests equal to limits would make it Guaranteed), and a static pod's mirror: refused too.
      const qos = await patch(cp, namespace, 'web', { requests: { cpu: '400m', memory: '64Mi' } }).then(() => 'accepted', (err: Error & { stderr?: string }) => err.stderr ?? err.message);
      expect(qos).toMatch(/Pod QOS Class may not change as a result of resizing/);
      const mirror = `static-app-${runtime.node}`;
      await cp.waitFor<V1Pod>(pods('default'), mirror, (p) => p !== null);
      const stat = await patch(cp, 'default', mirror, { requests: { cpu: '200m' } }).then(() => 'accepted', (err: Error & { stderr?: string }) => err.stderr ?? err.message);
      expect(stat).toMatch(/static pods cannot be resized/);
    });

    it('defers a resize that does not fit beside another pod (PodResizePending, Deferred), and carries it out once that pod is gone', { timeout: 180_000 }, async ({ skip }) => {
      const cp = cluster.cp;
      if (!cp) return skip();
      const namespace = await cp.namespace('resize-deferred');
      const node = (await cp.core.readNode({ name: runtime.node })) as V1Node;
      const allocatable = amount('cpu', node.status?.allocatable?.['cpu']);
      const body = (name: string, cpu: string) => ({
        metadata: { name },
        spec: { nodeName: runtime.node, terminationGracePeriodSeconds: 1, containers: [{ name: 'app', image: runtime.image, command: ['sh', '-c', longRunning], resources: { requests: { cpu } } }] },
      });
      await cp.core.createNamespacedPod({ namespace, body: body('small', '100m') });
      await cp.waitFor<V1Pod>(pods(namespace), 'small', (p) => p?.status?.phase === 'Running');
      // What every pod of the node asks for now, the filler taking all but 200m of the rest.
      const used = (await cp.core.listPodForAllNamespaces({ fieldSelector: `spec.nodeName=${runtime.node}` })).items
        .filter((p) => p.status?.phase === 'Running' || p.status?.phase === 'Pending')
        .reduce((sum, p) => sum + (p.spec?.containers ?? []).reduce((s, c) => s + amount('cpu', c.resources?.requests?.['cpu']), 0), 0);
      const filler = allocatable - used - 200;
      await cp.core.createNamespacedPod({ namespace, body: body('filler', `${filler}m`) });
      await cp.waitFor<V1Pod>(pods(namespace), 'filler', (p) => p?.status?.phase === 'Running');

      await patch(cp, namespace, 'small', { requests: { cpu: '500m' } });
      const pending = (await cp.waitFor<V1Pod>(pods(namespace), 'small', (p) => condition(p, 'PodResizePending')?.reason === 'Deferred', 60_000))!;
      expect(condition(pending, 'PodResizePending')).toMatchObject({
        status: 'True',
        observedGeneration: 2,
        message: expect.stringMatching(/^Node didn't have enough resource: cpu, requested: 500, used: \d+, capacity: \d+$/),
      });
      expect(app(pending)?.allocatedResources).toEqual({ cpu: '100m' });
      const events = async (): Promise<CoreV1Event[]> => (await cp.core.listNamespacedEvent({ namespace })).items;
      await waitFor(async () => (await events()).some((e) => e.reason === 'ResizeDeferred' && e.type === 'Warning' && e.message?.startsWith('Pod resize OutOfcpu: ')), 'the ResizeDeferred event');

      await cp.core.deleteNamespacedPod({ namespace, name: 'filler' });
      const done = (await cp.waitFor<V1Pod>(pods(namespace), 'small', (p) => resized(p, '500m'), 90_000))!;
      expect(app(done)?.restartCount).toBe(0);
      expect(await containerFile(cp, namespace, 'small', 'cpu.shares', 'cpu.weight')).toMatch(/^(512|20)$/);
    });

    it('restarts the container whose memory resize policy is RestartContainer, with its new limit', { timeout: 180_000 }, async ({ skip }) => {
      const cp = cluster.cp;
      if (!cp) return skip();
      const namespace = await cp.namespace('resize-restart');
      await cp.core.createNamespacedPod({
        namespace,
        body: {
          metadata: { name: 'mem' },
          spec: {
            nodeName: runtime.node,
            terminationGracePeriodSeconds: 1,
            containers: [
              {
                name: 'app',
                image: runtime.image,
                command: ['sh', '-c', longRunning],
                resources: { limits: { cpu: '100m', memory: '64Mi' } },
                resizePolicy: [{ resourceName: 'memory', restartPolicy: 'RestartContainer' }],
              },
            ],
          },
        },
      });
      await cp.waitFor<V1Pod>(pods(namespace), 'mem', (p) => !!app(p)?.state?.running);
      await patch(cp, namespace, 'mem', { requests: { memory: '96Mi' }, limits: { memory: '96Mi' } });
      const done = (await cp.waitFor<V1Pod>(
        pods(namespace),
        'mem',
        (p) => app(p)?.restartCount === 1 && !!app(p)?.state?.running && app(p)?.resources?.limits?.['memory'] === '96Mi' && !condition(p, 'PodResizeInProgress'),
        90_000,
      ))!;
      expect(app(done)?.allocatedResources).toEqual({ cpu: '100m', memory: '96Mi' });
      expect(await containerFile(cp, namespace, 'mem', 'memory.limit_in_bytes', 'memory.max')).toBe(String(96 * 2 ** 20));
    });
  });
}

const manifestDirs: string[] = [];
afterAll(async () => {
  for (const dir of manifestDirs.splice(0)) await rm(dir, { recursive: true, force: true });
});

/** A manifest directory with one static pod (its mirror cannot be resized), for a node's --pod-manifest-path. */
function staticPods(image: string): string {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'statelet-resize-manifests-'));
  manifestDirs.push(dir);
  writeFileSync(
    path.join(dir, 'static-app.yaml'),
    `apiVersion: v1\nkind: Pod\nmetadata: {name: static-app, namespace: default}\nspec:\n  containers:\n  - {name: app, image: ${image}, command: [sh, -c, "${longRunning}"], resources: {requests: {cpu: 100m}}}\n`,
  );
  return dir;
}

const SIM_NODE = 'node-resize-sim';
describe('resize on sim://', () => {
  // The API server reaches the node's authenticated API (kubectl exec) with its kubelet client certificate.
  const cluster = clusterNode({
    node: SIM_NODE,
    args: () => ['--container-runtime-endpoint=sim://', `--client-ca-file=${cluster.cp!.kubeletClientCaFile}`, `--pod-manifest-path=${staticPods('busybox')}`],
  });
  defineResizeScenarios({ name: 'sim://', node: SIM_NODE, image: 'busybox', cgroupMount: (rootDir) => path.join(rootDir, 'sim-cgroup') }, cluster);
});

const CONTAINERD_NODE = 'node-resize-containerd';
const containerd = await startContainerd();
if (!containerd) {
  it.skip('resize on containerd (containerd not available here; see the message above)', () => {});
} else {
  describe('resize on containerd', () => {
    const cluster = clusterNode({
      node: CONTAINERD_NODE,
      args: () => [`--container-runtime-endpoint=${containerd.endpoint}`, `--client-ca-file=${cluster.cp!.kubeletClientCaFile}`, `--pod-manifest-path=${staticPods(BUSYBOX_IMAGE)}`],
      cleanUp: () => containerd.stop(),
    });
    defineResizeScenarios({ name: 'containerd', node: CONTAINERD_NODE, image: BUSYBOX_IMAGE, cgroupMount: () => '/sys/fs/cgroup' }, cluster);
  });
}
