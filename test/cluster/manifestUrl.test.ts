/**
 * Static pods from `--manifest-url` in a cluster (sim://, the real API server): a URL pod is a
 * static pod like a file pod, so it gets its mirror pod, with its status, and loses it when the
 * URL stops serving it (pkg/kubelet/config/http.go; kubetypes.IsStaticPod: any source but the
 * API). Beside it, a manifest directory with two pods of one name: the pod left out gets the
 * kubelet's FailedValidation event in the API (pkg/kubelet/config/config.go filterInvalidPods).
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { type Server, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import type { CoreV1Event, V1Pod } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { clusterNode } from '../support/clusterNode.ts';
import { pods, waitFor } from '../support/controlPlane.ts';

const NODE = 'node-u';
const loop = 'while true; do sleep 1; done';
const pod = (name: string) => ({ apiVersion: 'v1', kind: 'Pod', metadata: { name }, spec: { containers: [{ name: 'app', image: 'busybox', command: ['sh', '-c', loop] }] } });
const yamlPod = (name: string, image: string) => `apiVersion: v1\nkind: Pod\nmetadata: {name: ${name}}\nspec:\n  containers:\n  - {name: app, image: ${image}, command: [sh, -c, '${loop}']}\n`;

let server: Server | undefined;
let url = '';
let body = JSON.stringify({ apiVersion: 'v1', kind: 'PodList', items: [pod('url-web')] });
let manifests = '';

const fixture = clusterNode({
  node: NODE,
  prepare: async () => {
    server = createServer((_req, res) => res.end(body));
    await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/pods`;
    manifests = await mkdtemp(path.join(os.tmpdir(), 'statelet-url-manifests-'));
    await writeFile(path.join(manifests, 'a.yaml'), yamlPod('dup', 'busybox'));
    await writeFile(path.join(manifests, 'b.yaml'), yamlPod('dup', 'busybox:1'));
  },
  args: () => ['--container-runtime-endpoint=sim://', `--manifest-url=${url}`, '--http-check-frequency=500ms', `--pod-manifest-path=${manifests}`],
  cleanUp: async () => {
    if (server) await new Promise<void>((resolve) => server!.close(() => resolve()));
    if (manifests) await rm(manifests, { recursive: true, force: true });
  },
});

describe('--manifest-url in a cluster (sim://)', () => {
  it("gives a URL pod its mirror pod, with the pod's status, and deletes it when the URL stops serving the pod", { timeout: 90_000 }, async ({ skip }) => {
    const { cp, agent } = fixture;
    if (!cp || !agent) return skip();
    const name = `url-web-${NODE}`;
    const local = await agent.waitForPod('url-web', (p) => p.status?.phase === 'Running', 30_000);
    expect(local.metadata.annotations?.['kubernetes.io/config.source']).toBe('http');
    const mirror = (await cp.waitFor<V1Pod>(pods('default'), name, (p) => p?.status?.phase === 'Running', 30_000))!;
    expect(mirror.metadata?.annotations?.['kubernetes.io/config.mirror']).toBe(local.metadata.uid);
    expect(mirror.metadata?.ownerReferences).toEqual([expect.objectContaining({ kind: 'Node', name: NODE, controller: true })]);
    expect(mirror.spec?.nodeName).toBe(NODE);
    expect(mirror.status?.containerStatuses?.[0]).toMatchObject({ name: 'app', ready: true });

    body = JSON.stringify({ apiVersion: 'v1', kind: 'PodList', items: [] });
    await cp.waitFor<V1Pod>(pods('default'), name, (p) => p === null, 30_000);
    await expect.poll(async () => (await agent.pods()).map((p) => p.metadata.name), { timeout: 30_000 }).not.toContain(name);
  });

  it('records FailedValidation on a static pod left out for a name another manifest has', { timeout: 60_000 }, async ({ skip }) => {
    const { cp, agent } = fixture;
    if (!cp || !agent) return skip();
    const kept = await agent.waitForPod('dup', (p) => p.status?.phase === 'Running', 30_000);
    expect(kept.spec.containers[0]!.image).toBe('busybox');
    let found: CoreV1Event | undefined;
    await waitFor(async () => {
      const { items } = await cp.core.listNamespacedEvent({ namespace: 'default' });
      found = items.find((e) => e.reason === 'FailedValidation' && e.involvedObject.name === `dup-${NODE}`);
      return found !== undefined;
    }, 'the FailedValidation event of the duplicate static pod');
    expect(found!.type).toBe('Warning');
    expect(found!.involvedObject.uid).not.toBe(kept.metadata.uid);
    expect(found!.message).toBe(`Error validating pod dup-${NODE}_default(${found!.involvedObject.uid}) from file due to duplicate pod name "dup-${NODE}", ignoring`);
    expect(found!.source).toMatchObject({ component: 'kubelet', host: NODE });
  });
});
