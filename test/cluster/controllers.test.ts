/**
 * The test control plane with its controllers (`controllers: true`): the upstream
 * kube-controller-manager and kube-scheduler of the same release beside the API server, as the
 * node conformance suite needs them. No node runs here, so pods stay Pending, unschedulable.
 */
import * as k8s from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ControlPlane, startControlPlane, waitFor } from '../support/controlPlane.ts';

let cp: ControlPlane | null = null;

// The first run builds kube-scheduler and kube-controller-manager (minutes), then they are cached.
beforeAll(async () => {
  cp = await startControlPlane({ nodeNames: [], controllers: true });
}, 30 * 60_000);

afterAll(async () => {
  await cp?.close();
});

/** `waitFor`, failing with the controllers' logs (and `seen()`) of that moment. */
async function eventually(check: () => Promise<boolean>, what: string, seen: () => unknown = () => undefined): Promise<void> {
  try {
    await waitFor(check, what);
  } catch (err) {
    const logs = (['kube-controller-manager', 'kube-scheduler'] as const).map((name) => `--- ${name}:\n${cp!.output(name).slice(-3000)}`);
    throw new Error([String(err), `saw: ${JSON.stringify(seen())}`, ...logs].join('\n'));
  }
}

describe('test control plane with controllers', () => {
  it('gives a new namespace its default ServiceAccount and kube-root-ca.crt', async ({ skip }) => {
    if (!cp) return skip();
    const namespace = `ctl-sa-${process.pid}`;
    await cp.core.createNamespace({ body: { metadata: { name: namespace } } });
    await eventually(async () => !!(await cp!.core.readNamespacedServiceAccount({ namespace, name: 'default' }).catch(() => null)), 'the default ServiceAccount');
    let ca: k8s.V1ConfigMap | null = null;
    await eventually(async () => !!(ca = await cp!.core.readNamespacedConfigMap({ namespace, name: 'kube-root-ca.crt' }).catch(() => null)), 'kube-root-ca.crt');
    expect(ca!.data?.['ca.crt']).toContain('-----BEGIN CERTIFICATE-----');
  });

  it('runs a Deployment of 2 replicas as a ReplicaSet and 2 pods, which the scheduler finds no node for; deleting it collects them', async ({ skip }) => {
    if (!cp) return skip();
    const namespace = await cp.namespace('ctl-deploy');
    const apps = cp.admin.makeApiClient(k8s.AppsV1Api);
    const labels = { app: 'web' };
    await apps.createNamespacedDeployment({
      namespace,
      body: {
        metadata: { name: 'web' },
        spec: {
          replicas: 2,
          selector: { matchLabels: labels },
          template: { metadata: { labels }, spec: { containers: [{ name: 'c', image: 'registry.k8s.io/pause:3.10.2' }] } },
        },
      },
    });

    let replicaSets: k8s.V1ReplicaSet[] = [];
    await eventually(async () => {
      replicaSets = (await apps.listNamespacedReplicaSet({ namespace })).items;
      return replicaSets.length === 1;
    }, "the Deployment's ReplicaSet");
    expect(replicaSets[0]!.metadata?.ownerReferences?.[0]).toMatchObject({ kind: 'Deployment', name: 'web', controller: true });

    let pods: k8s.V1Pod[] = [];
    const unschedulable = (pod: k8s.V1Pod) => pod.status?.conditions?.some((c) => c.type === 'PodScheduled' && c.status === 'False' && c.reason === 'Unschedulable');
    await eventually(
      async () => {
        pods = (await cp!.core.listNamespacedPod({ namespace })).items;
        return pods.length === 2 && pods.every(unschedulable);
      },
      '2 pods the scheduler marked Unschedulable',
      () => pods.map((pod) => pod.status),
    );
    for (const pod of pods) {
      expect(pod.metadata?.ownerReferences?.[0]).toMatchObject({ kind: 'ReplicaSet', name: replicaSets[0]!.metadata?.name });
      expect(pod.spec?.nodeName).toBeUndefined();
      expect(pod.status?.phase).toBe('Pending');
      // The ServiceAccount admission plugin, fed by the controller-manager's ServiceAccount.
      expect(pod.spec?.serviceAccountName).toBe('default');
    }

    // The garbage collector removes the ReplicaSet and the pods after their owner.
    await apps.deleteNamespacedDeployment({ namespace, name: 'web' });
    await eventually(
      async () => (await apps.listNamespacedReplicaSet({ namespace })).items.length === 0 && (await cp!.core.listNamespacedPod({ namespace })).items.length === 0,
      'garbage collection of the ReplicaSet and pods',
    );
  });
});
