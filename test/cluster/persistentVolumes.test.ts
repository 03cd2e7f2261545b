/**
 * Persistent storage as a user meets it, with kubectl against a real cluster (kube-apiserver +
 * etcd, the upstream kube-scheduler and kube-controller-manager: the PersistentVolume binder, the
 * StatefulSet, ephemeral-volume and garbage collectors), statelet as the node, on sim:// and on a
 * private containerd:
 *   - a hostPath PersistentVolume bound to a claim: one pod writes a file there, the next reads it;
 *   - a pod whose claim is not bound waits in ContainerCreating with the kubelet's FailedMount
 *     event, and runs once a volume is there for the binder to bind;
 *   - a StatefulSet with volumeClaimTemplates over local PersistentVolumes (WaitForFirstConsumer,
 *     node affinity to this node): each replica keeps its data across a scale down and up and a
 *     rolling update;
 *   - a pod with a generic ephemeral volume runs on the claim the controller made for it, which
 *     goes with the pod;
 *   - a local PersistentVolume of volumeMode Block on a loop device (root only): one pod writes to
 *     the raw device at its devicePath, the next reads it back; the global map's loop devices go
 *     with the pods.
 * On containerd the agent is root and bind-mounts local volumes into the pods' directories; on
 * sim:// (not root outside CI) containers get the volume's own directory: the same files either way.
 * Outside CI the containerd part skips loudly where containerd or root is missing.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import * as k8s from '@kubernetes/client-node';
import type { CoreV1Event, V1Pod } from '@kubernetes/client-node';
import { afterAll, describe, expect, it } from 'vitest';
import { clusterNode } from '../support/clusterNode.ts';
import { type ControlPlane, pods, waitFor } from '../support/controlPlane.ts';
import { BUSYBOX_IMAGE, startContainerd } from '../containerd/harness.ts';
import { rootOrSkip } from '../support/smallFilesystem.ts';

const idle = "trap 'exit 0' TERM; while true; do sleep 1; done";

interface Runtime {
  name: string;
  node: string;
  image: string;
}

/** Writes `yaml` to a file and applies it with kubectl, as a user would. */
async function apply(cp: ControlPlane, yaml: string, namespace?: string): Promise<void> {
  const file = path.join(mkdtempSync(path.join(os.tmpdir(), 'statelet-pv-manifest-')), 'manifest.yaml');
  writeFileSync(file, yaml);
  await cp.kubectl(['apply', ...(namespace ? ['-n', namespace] : []), '-f', file]);
}

const hostDir = (label: string) => mkdtempSync(path.join(os.tmpdir(), `statelet-pv-${label}-`));

/** A hostPath PersistentVolume of 1Gi, ReadWriteOnce, in `storageClass`, made where missing. */
const hostPathVolume = (name: string, storageClass: string, dir: string) => `apiVersion: v1
kind: PersistentVolume
metadata: {name: ${name}}
spec:
  capacity: {storage: 1Gi}
  accessModes: [ReadWriteOnce]
  storageClassName: ${storageClass}
  hostPath: {path: ${dir}, type: DirectoryOrCreate}
`;

/** A StorageClass of local volumes bound when a pod uses them (no provisioner). */
const localStorageClass = (name: string) => `apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata: {name: ${name}}
provisioner: kubernetes.io/no-provisioner
volumeBindingMode: WaitForFirstConsumer
`;

/** A local PersistentVolume of 1Gi on `dir`, kept after its claim goes, usable on `node` only. */
const localVolumeOn = (name: string, storageClass: string, dir: string, node: string) => `apiVersion: v1
kind: PersistentVolume
metadata: {name: ${name}}
spec:
  capacity: {storage: 1Gi}
  accessModes: [ReadWriteOnce]
  persistentVolumeReclaimPolicy: Retain
  storageClassName: ${storageClass}
  local: {path: ${dir}}
  nodeAffinity:
    required:
      nodeSelectorTerms:
      - matchExpressions:
        - {key: kubernetes.io/hostname, operator: In, values: [${node}]}
`;

/** A claim of 1Gi, ReadWriteOnce, in `storageClass`. */
const claimOf = (name: string, namespace: string, storageClass: string) => `apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: ${name}, namespace: ${namespace}}
spec:
  storageClassName: ${storageClass}
  accessModes: [ReadWriteOnce]
  resources: {requests: {storage: 1Gi}}
`;

function definePersistentVolumeScenarios(runtime: Runtime, cluster: ReturnType<typeof clusterNode>): void {
  const events = async (cp: ControlPlane, namespace: string): Promise<CoreV1Event[]> => (await cp.core.listNamespacedEvent({ namespace })).items;
  const phase = (p: V1Pod | null) => p?.status?.phase;
  const running = (p: V1Pod | null) => p?.status?.containerStatuses?.every((c) => !!c.state?.running) === true && phase(p) === 'Running';
  const uniq = `${runtime.node}-${process.pid}`;

  describe(`persistent volumes on ${runtime.name} (a real cluster)`, () => {
    it('mounts a hostPath PersistentVolume bound to a claim: one pod writes a file, the next reads it back', { timeout: 240_000 }, async ({ skip }) => {
      const cp = cluster.cp;
      if (!cp) return skip();
      const namespace = await cp.namespace('pv-hostpath');
      const dir = path.join(hostDir('hostpath'), 'data');
      const storageClass = `manual-${uniq}`;
      await apply(cp, `${hostPathVolume(`hostpath-${uniq}`, storageClass, dir)}---\n${claimOf('data', namespace, storageClass)}`);
      const pod = (name: string, command: string): V1Pod => ({
        metadata: { name },
        spec: {
          nodeName: runtime.node,
          restartPolicy: 'Never',
          terminationGracePeriodSeconds: 1,
          containers: [{ name: 'app', image: runtime.image, command: ['sh', '-c', command], volumeMounts: [{ name: 'data', mountPath: '/data' }] }],
          volumes: [{ name: 'data', persistentVolumeClaim: { claimName: 'data' } }],
        },
      });
      await cp.core.createNamespacedPod({ namespace, body: pod('writer', 'echo hello from the writer > /data/greeting') });
      await cp.waitFor<V1Pod>(pods(namespace), 'writer', (p) => phase(p) === 'Succeeded', 150_000);
      expect(readFileSync(path.join(dir, 'greeting'), 'utf8')).toBe('hello from the writer\n');

      await cp.core.createNamespacedPod({ namespace, body: pod('reader', 'cat /data/greeting') });
      await cp.waitFor<V1Pod>(pods(namespace), 'reader', (p) => phase(p) === 'Succeeded', 90_000);
      expect(await cp.kubectl(['logs', '-n', namespace, 'reader'])).toBe('hello from the writer\n');
    });

    it('maps a local PersistentVolume of volumeMode Block: one pod writes to the raw device at its devicePath, the next reads it back', { timeout: 240_000 }, async ({ skip }) => {
      const cp = cluster.cp;
      if (!cp) return skip();
      if (!rootOrSkip(`a raw block volume on ${runtime.name} (a loop device)`)) return skip();
      const image = path.join(hostDir('block'), 'disk.img');
      execFileSync('truncate', ['-s', '1M', image]);
      const device = execFileSync('losetup', ['-f', '--show', image], { encoding: 'utf8' }).trim();
      try {
        const namespace = await cp.namespace('pv-block');
        const storageClass = `block-${uniq}`;
        const blockVolume = localVolumeOn(`block-${uniq}`, storageClass, device, runtime.node).replace('  local:', '  volumeMode: Block\n  local:');
        const blockClaim = claimOf('data', namespace, storageClass).replace('  accessModes:', '  volumeMode: Block\n  accessModes:');
        await apply(cp, `${localStorageClass(storageClass)}---\n${blockVolume}---\n${blockClaim}`);
        const pod = (name: string, command: string): V1Pod => ({
          metadata: { name },
          spec: {
            restartPolicy: 'Never',
            terminationGracePeriodSeconds: 1,
            affinity: { nodeAffinity: { requiredDuringSchedulingIgnoredDuringExecution: { nodeSelectorTerms: [{ matchExpressions: [{ key: 'kubernetes.io/hostname', operator: 'In', values: [runtime.node] }] }] } } },
            containers: [{ name: 'app', image: runtime.image, command: ['sh', '-c', command], volumeDevices: [{ name: 'data', devicePath: '/dev/xvda' }] }],
            volumes: [{ name: 'data', persistentVolumeClaim: { claimName: 'data' } }],
          },
        });
        await cp.core.createNamespacedPod({ namespace, body: pod('writer', 'echo raw-block-data > /tmp/block && dd if=/tmp/block of=/dev/xvda bs=15 count=1') });
        await cp.waitFor<V1Pod>(pods(namespace), 'writer', (p) => phase(p) === 'Succeeded', 150_000);
        // The bytes are on the device itself: nothing formatted it, nothing mounted it.
        expect(readFileSync(device).subarray(0, 15).toString()).toBe('raw-block-data\n');
        await cp.core.createNamespacedPod({ namespace, body: pod('reader', 'dd if=/dev/xvda of=/tmp/back bs=15 count=1 && grep -q raw-block-data /tmp/back') });
        await cp.waitFor<V1Pod>(pods(namespace), 'reader', (p) => phase(p) === 'Succeeded', 90_000);
        await cp.core.deleteNamespacedPod({ namespace, name: 'writer' });
        await cp.core.deleteNamespacedPod({ namespace, name: 'reader' });
        await waitFor(async () => !execFileSync('losetup', ['-a'], { encoding: 'utf8' }).includes('volumeDevices'), 'the loop devices of the global map detached', 60_000);
      } finally {
        execFileSync('losetup', ['-d', device]);
      }
    });

    it("keeps a pod whose claim is not bound in ContainerCreating with the kubelet's FailedMount, and runs it once the claim is bound", { timeout: 240_000 }, async ({ skip }) => {
      const cp = cluster.cp;
      if (!cp) return skip();
      const namespace = await cp.namespace('pv-unbound');
      const storageClass = `later-${uniq}`;
      await apply(cp, claimOf('later', namespace, storageClass));
      await cp.core.createNamespacedPod({
        namespace,
        body: {
          metadata: { name: 'waiting' },
          spec: {
            nodeName: runtime.node,
            terminationGracePeriodSeconds: 1,
            containers: [{ name: 'app', image: runtime.image, command: ['sh', '-c', idle], volumeMounts: [{ name: 'data', mountPath: '/data' }] }],
            volumes: [{ name: 'data', persistentVolumeClaim: { claimName: 'later' } }],
          },
        },
      });
      const message = `Unable to attach or mount volumes: unmounted volumes=[data], unattached volumes=[], failed to process volumes=[data]: error processing PVC ${namespace}/later: PVC is not bound`;
      await waitFor(async () => (await events(cp, namespace)).some((e) => e.reason === 'FailedMount' && e.type === 'Warning' && e.message === message), 'the FailedMount event', 90_000);
      const stuck = await cp.core.readNamespacedPod({ namespace, name: 'waiting' });
      expect(phase(stuck)).toBe('Pending');
      expect(stuck.status?.containerStatuses?.[0]?.state?.waiting?.reason).toBe('ContainerCreating');

      await apply(cp, hostPathVolume(`later-${uniq}`, storageClass, path.join(hostDir('later'), 'data')));
      await cp.waitFor<V1Pod>(pods(namespace), 'waiting', running, 150_000);
    });

    it('runs a StatefulSet on local PersistentVolumes: each replica keeps its data across a scale down and up and a rolling update', { timeout: 420_000 }, async ({ skip }) => {
      const cp = cluster.cp;
      if (!cp) return skip();
      const namespace = await cp.namespace('pv-statefulset');
      const storageClass = `local-${uniq}`;
      const disks = [hostDir('disk-0'), hostDir('disk-1')];
      const volumes = disks.map((disk, index) => localVolumeOn(`local-${uniq}-${index}`, storageClass, disk, runtime.node));
      await apply(cp, [localStorageClass(storageClass), ...volumes].join('---\n'));
      const statefulSet = (version: string) => `apiVersion: apps/v1
kind: StatefulSet
metadata: {name: web}
spec:
  serviceName: web
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      terminationGracePeriodSeconds: 1
      containers:
      - name: app
        image: ${runtime.image}
        env:
        - {name: VERSION, value: "${version}"}
        - {name: POD_NAME, valueFrom: {fieldRef: {fieldPath: metadata.name}}}
        - {name: POD_UID, valueFrom: {fieldRef: {fieldPath: metadata.uid}}}
        command: [sh, -c, "if test ! -f /data/id; then echo $POD_NAME $POD_UID > /data/id; fi; ${idle}"]
        volumeMounts: [{name: data, mountPath: /data}]
  volumeClaimTemplates:
  - metadata: {name: data}
    spec:
      storageClassName: ${storageClass}
      accessModes: [ReadWriteOnce]
      resources: {requests: {storage: 1Gi}}
`;
      await apply(cp, statefulSet('1'), namespace);
      const readIds = async () => Promise.all(['web-0', 'web-1'].map((name) => cp.kubectl(['exec', '-n', namespace, name, '-c', 'app', '--', 'cat', '/data/id'])));
      for (const name of ['web-0', 'web-1']) await cp.waitFor<V1Pod>(pods(namespace), name, running, 180_000);
      // Each replica's first pod wrote its name and UID; later pods of the replica find the file and leave it.
      const ids = await readIds();
      expect(ids.map((id) => id.split(' ')[0])).toEqual(['web-0', 'web-1']);
      // The data is on the node's disks, one per replica.
      expect(disks.map((disk) => readFileSync(path.join(disk, 'id'), 'utf8')).sort()).toEqual([...ids].sort());
      // Each replica's volume is measured by its filesystem, named by its claim, in /stats/summary and /metrics
      // (the node's read-only port: the API server's node proxy refuses this node's loopback address).
      const readOnly = `http://127.0.0.1:${cluster.agent!.readOnlyPort}`;
      const summary = (await (await fetch(`${readOnly}/stats/summary`)).json()) as {
        pods: { podRef: { name: string; namespace: string }; volume?: { name: string; pvcRef?: { name: string; namespace: string }; capacityBytes?: number }[] }[];
      };
      const web0 = summary.pods.find((p) => p.podRef.namespace === namespace && p.podRef.name === 'web-0');
      expect(web0?.volume?.find((v) => v.name === 'data')).toMatchObject({ pvcRef: { name: 'data-web-0', namespace }, capacityBytes: expect.any(Number) });
      const metrics = await (await fetch(`${readOnly}/metrics`)).text();
      for (const claim of ['data-web-0', 'data-web-1']) {
        expect(metrics).toMatch(new RegExp(`^kubelet_volume_stats_capacity_bytes\\{namespace="${namespace}",persistentvolumeclaim="${claim}"\\} [1-9]`, 'm'));
      }

      const apps = cp.admin.makeApiClient(k8s.AppsV1Api);
      const scale = async (replicas: number) => apps.patchNamespacedStatefulSetScale({ namespace, name: 'web', body: { spec: { replicas } } }, k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch));
      const gone = async (name: string) => waitFor(async () => !(await cp.core.readNamespacedPod({ namespace, name }).catch(() => null)), `${name} gone`, 120_000);
      await scale(1);
      await gone('web-1');
      await scale(2);
      await cp.waitFor<V1Pod>(pods(namespace), 'web-1', running, 180_000);
      expect(await readIds()).toEqual(ids);

      const before = (await cp.core.readNamespacedPod({ namespace, name: 'web-0' })).metadata!.uid;
      await apply(cp, statefulSet('2'), namespace);
      await waitFor(
        async () => {
          const list = (await cp.core.listNamespacedPod({ namespace })).items;
          return list.length === 2 && list.every((p) => running(p) && p.spec?.containers[0]?.env?.[0]?.value === '2');
        },
        'both replicas rolled to version 2',
        240_000,
      );
      expect((await cp.core.readNamespacedPod({ namespace, name: 'web-0' })).metadata!.uid).not.toBe(before);
      expect(await readIds()).toEqual(ids);
    });

    it("runs a pod with a generic ephemeral volume on the claim made for it, which goes with the pod", { timeout: 300_000 }, async ({ skip }) => {
      const cp = cluster.cp;
      if (!cp) return skip();
      const namespace = await cp.namespace('pv-ephemeral');
      const storageClass = `scratch-${uniq}`;
      await apply(cp, `${localStorageClass(storageClass)}---\n${localVolumeOn(`scratch-${uniq}`, storageClass, hostDir('scratch'), runtime.node)}`);
      await cp.core.createNamespacedPod({
        namespace,
        body: {
          metadata: { name: 'scratchy' },
          spec: {
            terminationGracePeriodSeconds: 1,
            containers: [{ name: 'app', image: runtime.image, command: ['sh', '-c', `echo kept > /scratch/file; ${idle}`], volumeMounts: [{ name: 'scratch', mountPath: '/scratch' }] }],
            volumes: [{ name: 'scratch', ephemeral: { volumeClaimTemplate: { spec: { storageClassName: storageClass, accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } } } } } }],
          },
        },
      });
      await cp.waitFor<V1Pod>(pods(namespace), 'scratchy', running, 180_000);
      expect(await cp.kubectl(['exec', '-n', namespace, 'scratchy', '-c', 'app', '--', 'cat', '/scratch/file'])).toBe('kept\n');
      const claim = await cp.core.readNamespacedPersistentVolumeClaim({ namespace, name: 'scratchy-scratch' });
      expect(claim.metadata?.ownerReferences?.[0]).toMatchObject({ kind: 'Pod', name: 'scratchy', controller: true });

      await cp.core.deleteNamespacedPod({ namespace, name: 'scratchy' });
      await waitFor(async () => !(await cp.core.readNamespacedPersistentVolumeClaim({ namespace, name: 'scratchy-scratch' }).catch(() => null)), 'the claim collected with its pod', 120_000);
    });
  });
}

const SIM_NODE = 'node-pv-sim';
describe('persistent volumes on sim://', () => {
  // The API server reaches the node's authenticated API (kubectl exec, logs) with its kubelet client certificate.
  const cluster = clusterNode({ node: SIM_NODE, controllers: true, args: () => ['--container-runtime-endpoint=sim://', `--client-ca-file=${cluster.cp!.kubeletClientCaFile}`] });
  definePersistentVolumeScenarios({ name: 'sim://', node: SIM_NODE, image: 'busybox' }, cluster);
});

const CONTAINERD_NODE = 'node-pv-containerd';
const containerd = await startContainerd();
if (!containerd) {
  it.skip('persistent volumes on containerd (containerd not available here; see the message above)', () => {});
} else {
  afterAll(() => containerd.stop(), 180_000);
  describe('persistent volumes on containerd', () => {
    const cluster = clusterNode({ node: CONTAINERD_NODE, controllers: true, args: () => [`--container-runtime-endpoint=${containerd.endpoint}`, `--client-ca-file=${cluster.cp!.kubeletClientCaFile}`] });
    definePersistentVolumeScenarios({ name: 'containerd', node: CONTAINERD_NODE, image: BUSYBOX_IMAGE }, cluster);
  });
}
