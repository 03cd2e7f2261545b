/**
 * The API pod source and its client against the real API server, where the agent's reactions
 * hinge on how an answer is classified: a watch that comes back after its version was compacted
 * away gets `410 Gone` and the source lists again, losing nothing and repeating nothing; what the
 * node identity may not do is a 403, told apart from everything else.
 */
import { KubeConfig } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Pod } from '../../src/api/types.ts';
import { isForbidden, RequestCounts } from '../../src/client/api.ts';
import { createKubeClient } from '../../src/client/kubeClient.ts';
import { realClock } from '../../src/clock.ts';
import { createApiSource } from '../../src/sources/apiserver.ts';
import { type ControlPlane, startControlPlane, waitFor } from '../support/controlPlane.ts';

const NODE = 'node-s';
let cp: ControlPlane | null = null;

beforeAll(async () => {
  // Compaction every 2 s: old versions are soon gone, as on a busy cluster after a while.
  cp = await startControlPlane({ nodeNames: [NODE], apiserverArgs: ['--etcd-compaction-interval=2s'] });
}, 15 * 60_000);

afterAll(async () => {
  await cp?.close();
});

const nodeClient = (counts?: RequestCounts) => {
  const config = new KubeConfig();
  config.loadFromFile(cp!.nodeKubeconfig(NODE));
  return createKubeClient(config, { requestTimeoutMs: 10_000, userAgent: 'statelet-test', ...(counts ? { counts } : {}) });
};

const bound = (name: string): Pod =>
  ({ apiVersion: 'v1', kind: 'Pod', metadata: { name, namespace: '', uid: '' }, spec: { nodeName: NODE, containers: [{ name: 'c', image: 'busybox:1' }] } }) as Pod;

/** Resolves once the API server has compacted `resourceVersion` away (an exact read of it says 410). */
async function compactedPast(resourceVersion: string): Promise<void> {
  await waitFor(
    async () => {
      try {
        await cp!.core.listNamespacedPod({ namespace: 'default', resourceVersion, resourceVersionMatch: 'Exact' });
        return false;
      } catch (err) {
        return (err as { code?: number }).code === 410;
      }
    },
    `etcd compaction past version ${resourceVersion}`,
    60_000,
  );
}

describe('the API pod source against the real API server', () => {
  it('lists again after 410 Gone when its watch comes back past a compaction, and loses nothing', { timeout: 150_000 }, async ({ skip }) => {
    if (!cp) return skip();
    const namespace = await cp.namespace('compact');
    const create = (name: string) => cp!.core.createNamespacedPod({ namespace, body: { ...bound(name), metadata: { name } } as never });
    await create('before');
    const counts = new RequestCounts();
    const snapshots: string[][] = [];
    const logs: string[] = [];
    let watchingFrom = '';
    const source = createApiSource({
      api: nodeClient(counts),
      nodeName: NODE,
      clock: realClock,
      log: (_level, message) => void logs.push(message),
      onSnapshot: (pods) => void snapshots.push(pods.map((p) => p.metadata.name).sort()),
      onError: (pod, message) => void logs.push(`${pod}: ${message}`),
      onState: (state) => {
        if (state.phase === 'watching') watchingFrom = state.resourceVersion;
      },
    });
    source.start();
    try {
      await waitFor(async () => snapshots.length > 0 && watchingFrom !== '', 'the first list');
      const listedAt = watchingFrom;
      // Other writes move the store's version on; then compaction passes the watch's version.
      for (let i = 0; i < 5; i++) await cp.core.createNamespacedConfigMap({ namespace, body: { metadata: { name: `cm-${i}` } } });
      await compactedPast(listedAt);
      // The API server goes away and comes back; meanwhile nothing new, then one more pod.
      await cp.stop({ crash: true });
      await cp.restart();
      await create('after');
      await waitFor(async () => snapshots.at(-1)?.includes('after') ?? false, 'the pod created after the restart', 60_000);
      expect(logs).toContain('Pod watch expired (410 Gone); listing again');
      const lists = counts.entries().filter((e) => e.method === 'LIST' && e.code === 200).reduce((n, e) => n + e.count, 0);
      expect(lists).toBe(2);
      expect(snapshots.at(-1)).toEqual(['after', 'before']);
    } finally {
      source.stop();
    }
  });

  it('takes the BOOKMARKs of its watch as versions only: no pod, no error, no snapshot', { timeout: 150_000 }, async ({ skip }) => {
    if (!cp) return skip();
    const namespace = await cp.namespace('bookmarks');
    await cp.core.createNamespacedPod({ namespace, body: { ...bound('steady'), metadata: { name: 'steady' } } as never });
    const bookmarks: string[] = [];
    const api = nodeClient();
    // The client's own watch, told of each bookmark the API server sends (about once a minute).
    const watchPods: typeof api.watchPods = (fieldSelector, resourceVersion, handlers) =>
      api.watchPods(fieldSelector, resourceVersion, { ...handlers, onBookmark: (version) => (bookmarks.push(version), handlers.onBookmark(version)) });
    const problems: string[] = [];
    const snapshots: string[][] = [];
    let watching = false;
    const source = createApiSource({
      api: { ...api, watchPods },
      nodeName: NODE,
      clock: realClock,
      log: (level, message) => void (level === 'error' || level === 'warn' ? problems.push(message) : undefined),
      onSnapshot: (pods) => void snapshots.push(pods.map((p) => p.metadata.name).sort()),
      onError: (pod, message) => void problems.push(`${pod}: ${message}`),
      onState: (state) => void (watching ||= state.phase === 'watching'),
    });
    source.start();
    try {
      await waitFor(async () => watching, 'the watch');
      // A pod of another node: this watch is not sent it, but the pods' version moves past where
      // the watch started, and the API server's next bookmark carries the new version.
      const elsewhere = await cp.core.createNamespacedPod({
        namespace,
        body: { metadata: { name: 'elsewhere' }, spec: { nodeName: 'another-node', containers: [{ name: 'c', image: 'busybox:1' }] } },
      });
      const snapshotsBefore = snapshots.length;
      await waitFor(async () => bookmarks.length > 0, 'a BOOKMARK from the API server', 120_000);
      expect(Number(bookmarks[0])).toBeGreaterThanOrEqual(Number(elsewhere.metadata?.resourceVersion));
      expect(problems).toEqual([]);
      expect(snapshots.length).toBe(snapshotsBefore);
      expect(snapshots.at(-1)).toContain('steady');
    } finally {
      source.stop();
    }
  });

  it('tells a 403 (the node asking for what it may not) from other failures', async ({ skip }) => {
    if (!cp) return skip();
    const namespace = await cp.namespace('forbidden');
    await cp.core.createNamespacedPod({ namespace, body: { metadata: { name: 'elsewhere' }, spec: { nodeName: 'another-node', containers: [{ name: 'c', image: 'busybox' }] } } });
    const err = await nodeClient().getPod(namespace, 'elsewhere').catch((e: unknown) => e);
    expect(isForbidden(err)).toBe(true);
    expect(String(err)).toMatch(/^ApiError: GET pods .*elsewhere: 403 Forbidden: /);
  });
});
