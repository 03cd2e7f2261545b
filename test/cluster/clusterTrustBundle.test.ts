/**
 * Projected clusterTrustBundle sources through a real kube-apiserver + etcd (which serves
 * certificates.k8s.io/v1 ClusterTrustBundles by default at the pinned release), statelet as the
 * node with its own identity (Node,RBAC: the system:node rules let any node get, list and watch
 * them), on sim:// and on a private containerd 1.6:
 *   - a pod's container reads the trust anchors of a bundle by name, of a signer's bundles by
 *     label selector, and of all of them (`{}`), each certificate once;
 *   - a changed bundle reaches the file at a later sync (the object cache's TTL, then a sync);
 *   - a pod naming a bundle that does not exist waits in ContainerCreating with FailedMount and
 *     the kubelet's error.
 * Outside CI the containerd part skips loudly where containerd or root is missing.
 */
import { X509Certificate } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { CoreV1Event, V1Pod } from '@kubernetes/client-node';
import forge from 'node-forge';
import { afterAll, describe, expect, it } from 'vitest';
import { clusterNode } from '../support/clusterNode.ts';
import { pods, waitFor } from '../support/controlPlane.ts';
import { CA_EXTENSIONS, certificate, keyPair } from '../support/testPki.ts';
import { BUSYBOX_IMAGE, startContainerd } from '../containerd/harness.ts';

const longRunning = "trap 'exit 0' TERM; while true; do sleep 1; done";

/** A self-signed CA certificate named `cn`, as PEM. */
function caPem(cn: string): string {
  const keys = keyPair();
  const subject = [{ name: 'commonName', value: cn }];
  return forge.pki.certificateToPem(certificate(subject, subject, keys.publicKey, keys.privateKey, '01', CA_EXTENSIONS));
}

/** The common names of the certificates in a PEM file, in file order. */
const commonNames = (text: string) => [...text.matchAll(/-----BEGIN CERTIFICATE-----[\s\S]*?-----END CERTIFICATE-----\n?/g)].map(([block]) => new X509Certificate(block).subject.replace(/^CN=/, ''));

function bundleManifest(name: string, pems: string[], signer?: { signerName: string; labels: Record<string, string> }): string {
  const labels = signer ? `\n  labels: ${JSON.stringify(signer.labels)}` : '';
  const signerName = signer ? `\n  signerName: ${signer.signerName}` : '';
  const trustBundle = pems.join('').trimEnd().split('\n').map((line) => `    ${line}`).join('\n');
  return `apiVersion: certificates.k8s.io/v1\nkind: ClusterTrustBundle\nmetadata:\n  name: ${name}${labels}\nspec:${signerName}\n  trustBundle: |\n${trustBundle}\n`;
}

function defineTrustBundleScenarios(runtime: { name: string; node: string; image: string }, cluster: ReturnType<typeof clusterNode>): void {
  const events = async (namespace: string): Promise<CoreV1Event[]> => (await cluster.cp!.core.listNamespacedEvent({ namespace })).items;
  // Each runtime's node has its own bundles (the API objects are cluster-scoped).
  const signerName = `example.com/${runtime.node}`;
  const prefix = signerName.replace('/', ':');
  const pod = (name: string, sources: object[]): V1Pod => ({
    metadata: { name },
    spec: {
      nodeName: runtime.node,
      terminationGracePeriodSeconds: 1,
      volumes: [{ name: 'trust', projected: { sources } }],
      containers: [{ name: 'app', image: runtime.image, command: ['sh', '-c', longRunning], volumeMounts: [{ name: 'trust', mountPath: '/trust' }] }],
    },
  });

  describe(`clusterTrustBundle projections on ${runtime.name} (a real API server)`, () => {
    it("puts the selected bundles' certificates in the container, each once, and follows a bundle's change", { timeout: 240_000 }, async ({ skip }) => {
      const cp = cluster.cp;
      if (!cp) return skip();
      const [a, b, c, d] = ['ca-a', 'ca-b', 'ca-c', 'ca-d'].map(caPem) as [string, string, string, string];
      const plain = `plain-${runtime.node}`;
      const manifest = path.join(mkdtempSync(path.join(os.tmpdir(), 'statelet-trustbundle-')), 'bundles.yaml');
      const writeBundles = (plainPem: string) =>
        writeFileSync(
          manifest,
          [
            bundleManifest(plain, [plainPem]),
            bundleManifest(`${prefix}:one`, [b, a], { signerName, labels: { team: 'a' } }),
            bundleManifest(`${prefix}:two`, [c], { signerName, labels: { team: 'b' } }),
          ].join('---\n'),
        );
      writeBundles(a);
      await cp.kubectl(['apply', '-f', manifest]);
      const namespace = await cp.namespace('trust');
      await cp.core.createNamespacedPod({
        namespace,
        body: pod('reader', [
          { clusterTrustBundle: { name: plain, path: 'plain.pem' } },
          { clusterTrustBundle: { signerName, labelSelector: { matchLabels: { team: 'a' } }, path: 'team-a/ca.pem' } },
          { clusterTrustBundle: { signerName, labelSelector: {}, path: 'all.pem' } },
        ]),
      });
      await cp.waitFor<V1Pod>(pods(namespace), 'reader', (p) => !!p?.status?.containerStatuses?.[0]?.state?.running, 90_000);
      const read = (file: string) => cp.kubectl(['exec', '-n', namespace, 'reader', '-c', 'app', '--', 'cat', `/trust/${file}`]);
      expect(commonNames(await read('plain.pem'))).toEqual(['ca-a']);
      expect(commonNames(await read('team-a/ca.pem')).sort()).toEqual(['ca-a', 'ca-b']);
      expect(commonNames(await read('all.pem')).sort()).toEqual(['ca-a', 'ca-b', 'ca-c']);

      writeBundles(d);
      await cp.kubectl(['apply', '-f', manifest]);
      await waitFor(async () => commonNames(await read('plain.pem')).join() === 'ca-d', 'the changed bundle in the container', 150_000);
      await cp.kubectl(['delete', '-f', manifest]);
    });

    it('keeps a pod naming a missing bundle in ContainerCreating, with FailedMount and the kubelet error', { timeout: 120_000 }, async ({ skip }) => {
      const cp = cluster.cp;
      if (!cp) return skip();
      const namespace = await cp.namespace('trust-missing');
      await cp.core.createNamespacedPod({ namespace, body: pod('waiting', [{ clusterTrustBundle: { name: 'not-there', path: 'ca.pem' } }]) });
      const message = 'MountVolume.SetUp failed for volume "trust" : while getting ClusterTrustBundle: clustertrustbundle.certificates.k8s.io "not-there" not found';
      await waitFor(async () => (await events(namespace)).some((e) => e.reason === 'FailedMount' && e.type === 'Warning' && (e.message ?? '').includes(message)), 'the FailedMount event', 90_000);
      const stuck = await cp.core.readNamespacedPod({ namespace, name: 'waiting' });
      expect(stuck.status?.phase).toBe('Pending');
      expect(stuck.status?.containerStatuses?.[0]?.state?.waiting?.reason).toBe('ContainerCreating');
    });
  });
}

const SIM_NODE = 'node-trustbundle-sim';
describe('clusterTrustBundle on sim://', () => {
  // The API server reaches the node's authenticated API (kubectl exec) with its kubelet client certificate.
  const cluster = clusterNode({ node: SIM_NODE, args: () => ['--container-runtime-endpoint=sim://', `--client-ca-file=${cluster.cp!.kubeletClientCaFile}`, '--sync-frequency=10s'] });
  defineTrustBundleScenarios({ name: 'sim://', node: SIM_NODE, image: 'busybox' }, cluster);
});

const CONTAINERD_NODE = 'node-trustbundle-containerd';
const containerd = await startContainerd();
if (!containerd) {
  it.skip('clusterTrustBundle on containerd (containerd not available here; see the message above)', () => {});
} else {
  afterAll(() => containerd.stop(), 180_000);
  describe('clusterTrustBundle on containerd', () => {
    const cluster = clusterNode({
      node: CONTAINERD_NODE,
      args: () => [`--container-runtime-endpoint=${containerd.endpoint}`, `--client-ca-file=${cluster.cp!.kubeletClientCaFile}`, '--sync-frequency=10s'],
    });
    defineTrustBundleScenarios({ name: 'containerd', node: CONTAINERD_NODE, image: BUSYBOX_IMAGE }, cluster);
  });
}
