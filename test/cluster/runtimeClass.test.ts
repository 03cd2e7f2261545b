/**
 * RuntimeClass and user namespaces through a real kube-apiserver + etcd, statelet as the node, on
 * sim:// and on a private containerd 1.6 (whose config has a second runtime handler,
 * `test-handler`, scripts/containerd/up.sh):
 *   - a pod whose RuntimeClass names `test-handler` runs, its sandbox on that handler (the
 *     runtime's PodSandboxStatus says so);
 *   - a pod whose class names a handler the runtime does not have stays Pending with the
 *     runtime's error in the same event;
 *   - a pod whose class does not exist gets no sandbox, with the kubelet's
 *     FailedCreatePodSandBox event (`runtimeclass.node.k8s.io "…" not found`). The API server's
 *     RuntimeClass admission refuses such a pod, so it is a static pod here, as it reaches a
 *     kubelet: its mirror pod is refused, and the event names the pod all the same;
 *   - the Node reports the runtime's handlers (sim://) or none (containerd 1.6);
 *   - a pod with `hostUsers: false` runs in a user namespace of its own on sim:// (its
 *     /proc/self/uid_map, through `kubectl exec`) and does not start on containerd 1.6, which
 *     reports no handlers (kubelet_getters.go HandlerSupportsUserNamespaces: `the handler "" is
 *     not known`).
 * Outside CI the containerd part skips loudly where containerd or root is missing.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { CoreV1Event, V1Node, V1Pod } from '@kubernetes/client-node';
import { afterAll, describe, expect, it } from 'vitest';
import { simSocketPath } from '../../src/agent/agent.ts';
import { CriClient } from '../../src/runtime/cri/client.ts';
import { clusterNode } from '../support/clusterNode.ts';
import { type ControlPlane, nodes, pods, waitFor } from '../support/controlPlane.ts';
import { BUSYBOX_IMAGE, TEST_RUNTIME_HANDLER, startContainerd } from '../containerd/harness.ts';

const longRunning = "trap 'exit 0' TERM; while true; do sleep 1; done";
const MISSING_CLASS = 'not-there';

interface Runtime {
  name: string;
  node: string;
  image: string;
  /** The runtime's CRI endpoint, to read the sandbox's handler from. */
  endpoint(agentRootDir: string): string;
  /** What the Node reports of the runtime's handlers. */
  nodeHandlers: NonNullable<V1Node['status']>['runtimeHandlers'];
  /** Whether a pod with hostUsers: false runs there; else the reason it does not. */
  userNamespaces: true | string;
}

/** A static pod naming a class no one created (the API server would refuse it as an API pod). */
function staticPods(image: string): string {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'statelet-runtimeclass-static-'));
  writeFileSync(
    path.join(dir, 'missing-class.yaml'),
    `apiVersion: v1\nkind: Pod\nmetadata: {name: missing-class, namespace: default}\nspec:\n  runtimeClassName: ${MISSING_CLASS}\n  containers:\n  - {name: app, image: ${image}, command: [sh, -c, "${longRunning}"]}\n`,
  );
  return dir;
}

function defineRuntimeClassScenarios(runtime: Runtime, cluster: ReturnType<typeof clusterNode>): void {
  const events = async (cp: ControlPlane, namespace: string): Promise<CoreV1Event[]> => (await cp.core.listNamespacedEvent({ namespace })).items;
  const waiting = (p: V1Pod | null) => p?.status?.containerStatuses?.[0]?.state?.waiting?.reason;
  const running = (p: V1Pod | null) => !!p?.status?.containerStatuses?.[0]?.state?.running;
  const pod = (name: string, spec: Partial<V1Pod['spec']> = {}): V1Pod => ({
    metadata: { name },
    spec: { nodeName: runtime.node, terminationGracePeriodSeconds: 1, containers: [{ name: 'app', image: runtime.image, command: ['sh', '-c', longRunning] }], ...spec },
  });

  describe(`RuntimeClass and user namespaces on ${runtime.name} (a real API server)`, () => {
    it("runs a pod on its RuntimeClass's handler, and reports the runtime's handlers on the Node", { timeout: 180_000 }, async ({ skip }) => {
      const cp = cluster.cp;
      if (!cp) return skip();
      const node = (await cp.waitFor<V1Node>(nodes, runtime.node, (n) => n?.status?.conditions?.find((c) => c.type === 'Ready')?.status === 'True'))!;
      expect(node.status?.runtimeHandlers).toEqual(runtime.nodeHandlers);

      const className = `handler-${runtime.node}`;
      const manifest = path.join(mkdtempSync(path.join(os.tmpdir(), 'statelet-runtimeclass-')), 'class.yaml');
      writeFileSync(manifest, `apiVersion: node.k8s.io/v1\nkind: RuntimeClass\nmetadata: {name: ${className}}\nhandler: ${TEST_RUNTIME_HANDLER}\n`);
      await cp.kubectl(['apply', '-f', manifest]);
      const namespace = await cp.namespace('runtimeclass');
      const created = await cp.core.createNamespacedPod({ namespace, body: pod('web', { runtimeClassName: className }) });
      await cp.waitFor<V1Pod>(pods(namespace), 'web', running, 90_000);

      const cri = new CriClient(runtime.endpoint(cluster.agent!.rootDir));
      try {
        const sandboxes = await cri.listPodSandbox({ labelSelector: { 'io.kubernetes.pod.uid': created.metadata!.uid! } });
        expect(sandboxes.map((s) => s.runtimeHandler)).toEqual([TEST_RUNTIME_HANDLER]);
        expect((await cri.podSandboxStatus(sandboxes[0]!.id)).runtimeHandler).toBe(TEST_RUNTIME_HANDLER);
      } finally {
        cri.close();
      }
      await cp.kubectl(['delete', '-f', manifest]);
    });

    it("keeps a pod whose class names a handler the runtime lacks Pending, with the runtime's error in the event", { timeout: 120_000 }, async ({ skip }) => {
      const cp = cluster.cp;
      if (!cp) return skip();
      const className = `unconfigured-${runtime.node}`;
      const manifest = path.join(mkdtempSync(path.join(os.tmpdir(), 'statelet-runtimeclass-')), 'class.yaml');
      writeFileSync(manifest, `apiVersion: node.k8s.io/v1\nkind: RuntimeClass\nmetadata: {name: ${className}}\nhandler: not-configured\n`);
      await cp.kubectl(['apply', '-f', manifest]);
      const namespace = await cp.namespace('unconfigured');
      await cp.core.createNamespacedPod({ namespace, body: pod('web', { runtimeClassName: className }) });
      await waitFor(
        async () => (await events(cp, namespace)).some((e) => e.reason === 'FailedCreatePodSandBox' && /^Failed to create pod sandbox: .*failed to get sandbox runtime: no runtime for "not-configured" is configured/.test(e.message ?? '')),
        'the FailedCreatePodSandBox event',
        90_000,
      );
      const stuck = await cp.core.readNamespacedPod({ namespace, name: 'web' });
      expect(stuck.status?.phase).toBe('Pending');
      expect(waiting(stuck)).toBe('ContainerCreating');
      await cp.kubectl(['delete', '-f', manifest]);
    });

    it('does not start a static pod whose RuntimeClass does not exist: the kubelet event, again at each sync', { timeout: 120_000 }, async ({ skip }) => {
      const cp = cluster.cp;
      if (!cp) return skip();
      const message = `Failed to create pod sandbox: runtimeclass.node.k8s.io "${MISSING_CLASS}" not found`;
      const name = `missing-class-${runtime.node}`;
      await waitFor(async () => (await events(cp, 'default')).some((e) => e.involvedObject.name === name && e.reason === 'FailedCreatePodSandBox' && e.type === 'Warning' && e.message === message), 'the FailedCreatePodSandBox event', 90_000);
      // Retried at each sync: the event is counted again.
      await waitFor(async () => (await events(cp, 'default')).some((e) => e.involvedObject.name === name && e.reason === 'FailedCreatePodSandBox' && (e.count ?? 1) >= 2), 'the event again', 90_000);
    });

    it(runtime.userNamespaces === true ? 'runs a pod with hostUsers: false in a user namespace of its own' : 'does not start a pod with hostUsers: false, with the kubelet event', { timeout: 120_000 }, async ({ skip }) => {
      const cp = cluster.cp;
      if (!cp) return skip();
      const namespace = await cp.namespace('userns');
      await cp.core.createNamespacedPod({ namespace, body: pod('own-users', { hostUsers: false }) });
      if (runtime.userNamespaces === true) {
        await cp.waitFor<V1Pod>(pods(namespace), 'own-users', running, 90_000);
        const uidMap = await cp.kubectl(['exec', '-n', namespace, 'own-users', '-c', 'app', '--', 'cat', '/proc/self/uid_map']);
        expect(uidMap.trim().split(/\s+/)).toEqual(['0', '65536', '65536']);
        return;
      }
      const message = `Failed to create pod sandbox: ${runtime.userNamespaces}`;
      await waitFor(async () => (await events(cp, namespace)).some((e) => e.reason === 'FailedCreatePodSandBox' && e.message === message), 'the FailedCreatePodSandBox event', 90_000);
      const stuck = await cp.core.readNamespacedPod({ namespace, name: 'own-users' });
      expect(stuck.status?.phase).toBe('Pending');
      expect(waiting(stuck)).toBe('ContainerCreating');
    });
  });
}

const SIM_NODE = 'node-runtimeclass-sim';
describe('RuntimeClass on sim://', () => {
  // The API server reaches the node's authenticated API (kubectl exec) with its kubelet client certificate.
  const cluster = clusterNode({
    node: SIM_NODE,
    args: () => ['--container-runtime-endpoint=sim://', `--client-ca-file=${cluster.cp!.kubeletClientCaFile}`, `--pod-manifest-path=${staticPods('busybox')}`],
  });
  const userns = { recursiveReadOnlyMounts: false, userNamespaces: true };
  defineRuntimeClassScenarios(
    {
      name: 'sim://',
      node: SIM_NODE,
      image: 'busybox',
      endpoint: (rootDir) => `unix://${simSocketPath(rootDir)}`,
      nodeHandlers: [{ name: '', features: userns }, { name: 'runc', features: userns }, { name: TEST_RUNTIME_HANDLER, features: userns }],
      userNamespaces: true,
    },
    cluster,
  );
});

const CONTAINERD_NODE = 'node-runtimeclass-containerd';
const containerd = await startContainerd();
if (!containerd) {
  it.skip('RuntimeClass on containerd (containerd not available here; see the message above)', () => {});
} else {
  afterAll(() => containerd.stop(), 180_000);
  describe('RuntimeClass on containerd', () => {
    const cluster = clusterNode({
      node: CONTAINERD_NODE,
      args: () => [`--container-runtime-endpoint=${containerd.endpoint}`, `--client-ca-file=${cluster.cp!.kubeletClientCaFile}`, `--pod-manifest-path=${staticPods(BUSYBOX_IMAGE)}`],
    });
    defineRuntimeClassScenarios(
      { name: 'containerd', node: CONTAINERD_NODE, image: BUSYBOX_IMAGE, endpoint: () => containerd.endpoint, nodeHandlers: undefined, userNamespaces: 'the handler "" is not known' },
      cluster,
    );
  });
}
