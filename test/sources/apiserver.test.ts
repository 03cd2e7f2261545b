/**
 * The API pod source against the in-memory API: first snapshot after the list, bursts coalesced,
 * a dropped watch resumed from its version without a relist, 410 relists, backoff on failures,
 * a 403 said plainly, and a pod the agent cannot run reported while the others go on.
 * (The same behaviours against the real API server: test/cluster.)
 */
import { describe, expect, it } from 'vitest';
import type { Pod } from '../../src/api/types.ts';
import { ApiError } from '../../src/client/api.ts';
import type { LogFields, LogLevel } from '../../src/log.ts';
import { type ApiSourceState, createApiSource } from '../../src/sources/apiserver.ts';
import { ManualClock } from '../support/manualClock.ts';
import { MemoryApi } from '../support/memoryApi.ts';

const NODE = 'node-a';

function pod(name: string, extra: Partial<Pod['spec']> = {}, node = NODE): Pod {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace: 'default', uid: `uid-${name}` },
    spec: { nodeName: node, containers: [{ name: 'app', image: 'busybox:1' }], ...extra },
  };
}

function harness() {
  const api = new MemoryApi();
  const clock = new ManualClock();
  const snapshots: string[][] = [];
  const errors: string[] = [];
  const logs: { level: LogLevel; message: string; fields?: LogFields }[] = [];
  const states: ApiSourceState[] = [];
  const mirrors: string[][] = [];
  const source = createApiSource({
    api,
    nodeName: NODE,
    clock,
    log: (level, message, fields) => void logs.push({ level, message, ...(fields ? { fields } : {}) }),
    onSnapshot: (pods) => void snapshots.push(pods.map((p) => p.metadata.name).sort()),
    onMirrorPods: (pods) => void mirrors.push(pods.map((p) => p.metadata.name)),
    onError: (name, message, object) => void errors.push(`${name}: ${message}${object ? ` (uid ${object.metadata.uid})` : ''}`),
    onState: (s) => void states.push(s),
  });
  const last = () => snapshots.at(-1);
  return { api, clock, snapshots, errors, logs, states, mirrors, source, last };
}

describe('API pod source', () => {
  it('hands over its first snapshot after the list, then one snapshot per burst of watch events', async () => {
    const h = harness();
    h.api.putPod(pod('a'));
    h.api.putPod(pod('elsewhere', {}, 'node-b'));
    h.source.start();
    await h.clock.settle(0);
    expect(h.snapshots).toEqual([['a']]);
    h.api.putPod(pod('b'));
    h.api.putPod(pod('c'));
    h.api.putPod(pod('d'));
    await h.clock.settle(10);
    expect(h.snapshots).toEqual([['a'], ['a', 'b', 'c', 'd']]);
    h.api.removePod('default', 'a');
    await h.clock.settle(10);
    expect(h.last()).toEqual(['b', 'c', 'd']);
    h.source.stop();
  });

  it('hands over frozen pods: a new version keeps the unchanged parts of the last, a new pod what it shares with the one before it', async () => {
    const api = new MemoryApi();
    const clock = new ManualClock();
    const snapshots: Map<string, Pod>[] = [];
    const source = createApiSource({
      api,
      nodeName: NODE,
      clock,
      log: () => undefined,
      onSnapshot: (pods) => void snapshots.push(new Map(pods.map((p) => [p.metadata.name, p]))),
      onError: () => undefined,
    });
    api.putPod(pod('a', { tolerations: [{ key: 'node.kubernetes.io/not-ready', operator: 'Exists', effect: 'NoExecute' }] }));
    source.start();
    await clock.settle(0);
    const a1 = snapshots.at(-1)!.get('a')!;
    expect(Object.isFrozen(a1.spec.containers[0])).toBe(true);
    expect(() => {
      a1.spec.containers[0]!.image = 'changed';
    }).toThrow(TypeError);

    await api.patchPodStatus('default', 'a', { status: { phase: 'Running' } });
    api.putPod(pod('b', { tolerations: [{ key: 'node.kubernetes.io/not-ready', operator: 'Exists', effect: 'NoExecute' }] }));
    await clock.settle(10);
    const a2 = snapshots.at(-1)!.get('a')!;
    const b = snapshots.at(-1)!.get('b')!;
    expect(a2.status?.phase).toBe('Running');
    expect(a2).not.toBe(a1);
    expect(a2.spec).toBe(a1.spec);
    expect(b.metadata.name).toBe('b');
    expect(b.spec.tolerations).toBe(a1.spec.tolerations);
    expect(b.spec.containers[0]).toBe(a1.spec.containers[0]);
    source.stop();
  });

  it('resumes a dropped watch from its last version after a backoff, without listing again', async () => {
    const h = harness();
    h.api.putPod(pod('a'));
    h.source.start();
    await h.clock.settle(0);
    h.api.dropWatches(new ApiError(0, '', 'socket hang up', 'WATCH pods'));
    // Meanwhile a pod arrives: the resumed watch replays it.
    h.api.putPod(pod('b'));
    expect(h.states.at(-1)).toMatchObject({ phase: 'backingOff', delayMs: 800 });
    await h.clock.settle(799);
    expect(h.api.count('watchPods')).toBe(1);
    await h.clock.settle(1);
    await h.clock.settle(10);
    expect(h.api.count('watchPods')).toBe(2);
    expect(h.api.count('listPods')).toBe(1);
    expect(h.last()).toEqual(['a', 'b']);
    h.source.stop();
  });

  it('reopens a watch the server closed at once', async () => {
    const h = harness();
    h.source.start();
    await h.clock.settle(0);
    h.api.dropWatches();
    await h.clock.settle(0);
    expect(h.api.count('watchPods')).toBe(2);
    expect(h.api.openWatches).toBe(1);
    h.source.stop();
  });

  it('takes a BOOKMARK only as the version to resume from: no pod, no error, no snapshot', async () => {
    const h = harness();
    h.api.putPod(pod('a'));
    h.source.start();
    await h.clock.settle(0);
    // Changes on other nodes move the API's version past the last event this watch was sent.
    h.api.putPod(pod('elsewhere-1', {}, 'node-b'));
    h.api.putPod(pod('elsewhere-2', {}, 'node-b'));
    const version = h.api.pod('default', 'elsewhere-2')!.metadata.resourceVersion;
    h.api.bookmark();
    await h.clock.settle(10);
    expect(h.errors).toEqual([]);
    expect(h.logs).toEqual([]);
    expect(h.snapshots).toEqual([['a']]);
    // The next watch starts from the bookmark's version.
    h.api.dropWatches();
    await h.clock.settle(0);
    expect(h.states.at(-1)).toEqual({ phase: 'watching', resourceVersion: version });
    h.source.stop();
  });

  it('lists again when its version was compacted away (410), and loses nothing', async () => {
    const h = harness();
    h.api.putPod(pod('a'));
    h.source.start();
    await h.clock.settle(0);
    h.api.dropWatches(new ApiError(0, '', 'connection reset', 'WATCH pods'));
    h.api.putPod(pod('b'));
    h.api.removePod('default', 'a');
    h.api.compact();
    await h.clock.settle(800);
    await h.clock.settle(10);
    expect(h.api.count('listPods')).toBe(2);
    expect(h.logs.some((l) => /410 Gone/.test(l.message))).toBe(true);
    expect(h.last()).toEqual(['b']);
    expect(h.api.openWatches).toBe(1);
    h.source.stop();
  });

  it('backs off doubling on repeated failures, and says plainly when the API server refuses the node (403)', async () => {
    const h = harness();
    const forbidden = new ApiError(403, 'Forbidden', 'pods is forbidden: User "system:node:node-a" cannot list resource "pods"', 'LIST pods');
    h.api.failNext('listPods', forbidden, forbidden, forbidden);
    h.source.start();
    await h.clock.settle(0);
    await h.clock.settle(800);
    await h.clock.settle(1_600);
    expect(h.states.filter((s) => s.phase === 'backingOff').map((s) => (s as { delayMs: number }).delayMs)).toEqual([800, 1_600, 3_200]);
    expect(h.logs.filter((l) => l.level === 'error' && /refused the node/.test(l.message))).toHaveLength(3);
    expect(h.snapshots).toEqual([]);
    await h.clock.settle(3_200);
    expect(h.snapshots).toEqual([[]]);
    h.source.stop();
  });

  it('reports a pod it cannot run by name and field, once per version, and runs the others', async () => {
    const h = harness();
    h.api.putPod(pod('good'));
    h.api.putPod(pod('bad', { containers: [{ name: 'Not_A_Name', image: 'busybox:1' }] }));
    h.source.start();
    await h.clock.settle(0);
    expect(h.last()).toEqual(['good']);
    expect(h.errors).toEqual([expect.stringMatching(/^default\/bad: spec\.containers\[0\]\.name: .*\(uid uid-bad\)$/)]);
    h.api.putPod(pod('other'));
    await h.clock.settle(10);
    expect(h.last()).toEqual(['good', 'other']);
    expect(h.errors).toHaveLength(1);
    h.source.stop();
  });

  it('hands mirror pods over apart and never runs them', async () => {
    const h = harness();
    const mirror = pod('static-web-node-a');
    mirror.metadata.annotations = { 'kubernetes.io/config.mirror': 'hash' };
    h.api.putPod(mirror);
    h.api.putPod(pod('a'));
    h.source.start();
    await h.clock.settle(0);
    expect(h.last()).toEqual(['a']);
    expect(h.mirrors.at(-1)).toEqual(['static-web-node-a']);
    h.source.stop();
  });
});
