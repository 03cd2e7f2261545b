import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import { type SnapshotFrom, waitFor } from 'xstate';
import type { Pod } from '../../src/api/types.ts';
import type { ContainerGcResult } from '../../src/kuberuntime/gc.ts';
import { Label } from '../../src/kuberuntime/labels.ts';
import type { Logger } from '../../src/log.ts';
import { crashLoopPolicy } from '../../src/kuberuntime/backoff.ts';
import { containerConfig, podSandboxConfig } from '../runtime/support.ts';
import type { PodActor } from '../../src/podworkers/podWorkers.ts';
import { startFakeNode } from '../support/fakeNode.ts';
import { IMAGE, makePod } from '../support/pods.ts';

function syncLoopHarness(options: { maxPods?: number; expectedSources?: ('file' | 'http' | 'api')[] } = {}) {
  // What housekeeping and the garbage collector did, as the agent logs them: the orphans stopped, each container GC's result.
  const orphanKills: string[] = [];
  const gcRuns: ContainerGcResult[] = [];
  const log: Logger = (_level, message, fields = {}) => {
    if (message === 'Stopping runtime pod unknown to the agent') orphanKills.push(String(fields['podUID']));
    if (message === 'Container garbage collection') {
      const { containersRemoved, sandboxesRemoved, failures } = fields;
      gcRuns.push({ containersRemoved: Number(containersRemoved), sandboxesRemoved: Number(sandboxesRemoved), failures: Number(failures) });
    }
  };
  const node = startFakeNode({
    ...(options.maxPods !== undefined ? { config: { maxPods: options.maxPods } } : {}),
    ...(options.expectedSources ? { expectedSources: options.expectedSources } : {}),
    log,
  });
  const { clock, runtime, statuses, podManager, syncLoop, podActor } = node;
  const waitPod = async (uid: string, predicate: (snapshot: SnapshotFrom<PodActor>) => boolean) => {
    const actor = await vi.waitFor(() => {
      const found = podActor(uid);
      expect(found).toBeDefined();
      return found!;
    });
    return waitFor(actor, predicate);
  };
  const add = (...pods: Pod[]) => syncLoop.send({ type: 'CONFIG.ADD', source: 'file', pods });
  const pleg = () => syncLoop.getSnapshot().children.pleg!;
  /** Runs exactly one more relist: waits for the PLEG to idle, advances one period, waits again. */
  const relist = async () => {
    const idlePleg = () => waitFor(pleg(), (s) => s.matches({ relist: 'waiting' }));
    const before = (await idlePleg()).context.relists;
    clock.increment(1_000);
    await waitFor(pleg(), (s) => s.matches({ relist: 'waiting' }) && s.context.relists === before + 1);
  };
  /** A sandbox of pod `uid-<name>`, which no config has: as if left by an earlier agent. */
  const runUnownedSandbox = (name: string) => runtime.runPodSandbox(podSandboxConfig(name, { labels: { [Label.podUid]: `uid-${name}` } }));
  return { clock, runtime, statuses, podManager, syncLoop, podActor, waitPod, add, orphanKills, gcRuns, relist, runUnownedSandbox, rootDir: node.rootDir };
}

const idle = (s: SnapshotFrom<PodActor>) => s.matches({ syncing: { worker: 'idle' } });

describe('what the node tells its metrics', () => {
  it('counts each container start attempted, with the reason of a failure, and times each relist', async () => {
    const starts: string[] = [];
    const relists: (number | null)[] = [];
    const node = startFakeNode({
      metrics: {
        containerStarted: (type, failure) => starts.push(`${type} ${failure ?? 'ok'}`),
        relisted: (_durationMs, intervalMs) => relists.push(intervalMs),
      },
    });
    node.syncLoop.send({
      type: 'CONFIG.ADD',
      source: 'file',
      pods: [makePod('m', { containers: [{ name: 'app', image: IMAGE }, { name: 'broken', image: 'nowhere/none:1', imagePullPolicy: 'Never' }] })],
    });
    await vi.waitFor(() => expect([...starts].sort()).toEqual(['container ErrImageNeverPull', 'container ok']));
    node.clock.increment(1_000);
    await vi.waitFor(() => expect(relists.length).toBeGreaterThanOrEqual(2));
    expect(relists[0]).toBeNull();
    expect(relists[1]).toBeGreaterThan(0);
    node.stop();
  });
});

describe('syncLoop and pod workers', () => {
  it('admits an added pod and runs it', async () => {
    const h = syncLoopHarness();
    h.add(makePod('a'));
    await h.waitPod('uid-a', idle);
    expect(h.statuses.get('uid-a')?.phase).toBe('Running');
    expect(h.syncLoop.getSnapshot().context.routed['CONFIG.ADD']).toBe(1);
  });

  it('rejects a pod over maxPods with a Failed status and never starts it', async () => {
    const h = syncLoopHarness({ maxPods: 1 });
    h.add(makePod('first'), makePod('second'));
    await h.waitPod('uid-first', idle);
    expect(h.podActor('uid-second')).toBeUndefined();
    expect(h.statuses.get('uid-second')).toMatchObject({ phase: 'Failed', reason: 'OutOfpods' });
    expect(h.statuses.get('uid-second')?.message).toMatch(/^Pod was rejected: /);
    const containers = await h.runtime.listContainers({ labelSelector: { [Label.podUid]: 'uid-second' } });
    expect(containers).toEqual([]);
  });

  it('terminates a removed pod, cleans the runtime and forgets the actor and its status', async () => {
    const h = syncLoopHarness();
    const pod = makePod('gone');
    h.add(pod);
    await h.waitPod('uid-gone', idle);
    h.syncLoop.send({ type: 'CONFIG.REMOVE', source: 'file', pods: [pod] });
    await vi.waitFor(() => expect(h.podActor('uid-gone')).toBeUndefined());
    expect(h.statuses.get('uid-gone')).toBeUndefined();
    expect(await h.runtime.listContainers()).toEqual([]);
    expect(await h.runtime.listPodSandbox()).toEqual([]);
  });

  it('restarts a dead container when the PLEG sees it die', async () => {
    const h = syncLoopHarness();
    h.add(makePod('pleg'));
    await h.waitPod('uid-pleg', idle);
    await h.relist(); // records the running container
    const [c] = await h.runtime.listContainers();
    h.runtime.exitContainer(c!.id, 1);
    await h.relist();
    await vi.waitFor(() => expect(h.syncLoop.getSnapshot().context.routed['PLEG.CONTAINER_DIED']).toBe(1));
    await vi.waitFor(() => expect(h.statuses.get('uid-pleg')?.containerStatuses?.[0]?.restartCount).toBe(1));
  });

  it('retries the syncs that failed while the runtime was down as soon as a relist succeeds again, not after their back-off', async () => {
    const h = syncLoopHarness();
    await h.relist();
    h.runtime.failAlways('listPodSandbox', 'UNAVAILABLE', 'runtime restarting');
    h.runtime.failAlways('runPodSandbox', 'UNAVAILABLE', 'runtime restarting');
    h.add(makePod('back'));
    await vi.waitFor(() => expect(h.podActor('uid-back')?.getSnapshot().context.lastError).toContain('runtime restarting'));
    h.clock.increment(1_000);
    await waitFor(h.syncLoop, (s) => s.matches({ runtime: 'unhealthy' }));
    h.runtime.clearFailures();
    // One relist period later, far inside the 10 s error back-off.
    await h.relist();
    await vi.waitFor(() => expect(h.statuses.get('uid-back')?.containerStatuses?.[0]?.state.running).toBeDefined());
  });

  it('resyncs a pod when it is due, on the shared tick', async () => {
    const h = syncLoopHarness();
    h.add(makePod('resync'));
    await h.waitPod('uid-resync', idle);
    await h.relist(); // the container-started event syncs the pod once more
    const before = (await h.waitPod('uid-resync', idle)).context.syncCount;
    h.clock.increment(58_000);
    expect(h.podActor('uid-resync')!.getSnapshot().context.syncCount).toBe(before);
    h.clock.increment(2_000);
    await vi.waitFor(() => expect(h.podActor('uid-resync')!.getSnapshot().context.syncCount).toBe(before + 1));
  });

  it('holds housekeeping until every source is seen, then stops runtime pods nobody owns', async () => {
    const h = syncLoopHarness({ expectedSources: ['file'] });
    const orphan = await h.runUnownedSandbox('orphan');
    await h.relist(); // sees the orphan
    h.clock.increment(4_000);
    expect(h.orphanKills).toEqual([]);
    expect(h.syncLoop.getSnapshot().matches({ sources: 'waiting' })).toBe(true);

    h.syncLoop.send({ type: 'SOURCE.SEEN', source: 'file' });
    expect(h.syncLoop.getSnapshot().matches({ sources: 'ready' })).toBe(true);
    h.clock.increment(2_000);
    await vi.waitFor(() => expect(h.orphanKills).toEqual(['uid-orphan']));
    // Stopped and removed, as the kubelet kills runtime pods nobody wants.
    await vi.waitFor(() => expect(h.runtime.getSandbox(orphan)).toBeUndefined());
  });

  it('keeps a pod removed before every source has been seen running, and stops it once they all have been (kubelet.go deletePod, HandlePodCleanups)', async () => {
    // A manifest directory and an API server: the file is read first, the API has not listed yet.
    const h = syncLoopHarness({ expectedSources: ['file', 'api'] });
    const pod = makePod('early');
    h.add(pod);
    h.syncLoop.send({ type: 'SOURCE.SEEN', source: 'file' });
    await h.waitPod('uid-early', idle);
    h.syncLoop.send({ type: 'CONFIG.REMOVE', source: 'file', pods: [pod] });
    // Gone from config at once; its containers keep running while the API source is not seen.
    expect(h.podManager.has('uid-early')).toBe(false);
    h.clock.increment(6_000);
    expect(h.syncLoop.getSnapshot().matches({ sources: 'waiting' })).toBe(true);
    const waiting = h.podActor('uid-early')!.getSnapshot();
    expect(waiting.hasTag('terminating') || waiting.hasTag('terminated')).toBe(false);
    expect((await h.runtime.listContainers()).map((c) => c.state)).toEqual(['CONTAINER_RUNNING']);

    // The API source's first list: every source is seen, the first housekeeping stops the pod.
    h.syncLoop.send({ type: 'CONFIG.ADD', source: 'api', pods: [] });
    h.syncLoop.send({ type: 'SOURCE.SEEN', source: 'api' });
    h.clock.increment(2_000);
    await vi.waitFor(() => expect(h.podActor('uid-early')).toBeUndefined());
    expect(await h.runtime.listContainers()).toEqual([]);
  });

  it('kills a pod removed once every source has been seen at once, without waiting for housekeeping', async () => {
    const h = syncLoopHarness({ expectedSources: ['file'] });
    const pod = makePod('late');
    h.add(pod);
    h.syncLoop.send({ type: 'SOURCE.SEEN', source: 'file' });
    await h.waitPod('uid-late', idle);
    h.syncLoop.send({ type: 'CONFIG.REMOVE', source: 'file', pods: [pod] });
    // No clock step: no housekeeping pass ran, the handler itself told the actor to stop.
    const actor = h.podActor('uid-late');
    expect(actor === undefined || actor.getSnapshot().hasTag('terminating') || actor.getSnapshot().hasTag('terminated')).toBe(true);
    await vi.waitFor(() => expect(h.podActor('uid-late')).toBeUndefined());
  });

  it("writes a running pod's /etc/hosts under its directory, and removes directories of pods nobody owns", async () => {
    const h = syncLoopHarness();
    h.add(makePod('kept'));
    await h.waitPod('uid-kept', idle);
    const podsDir = path.join(h.rootDir, 'pods');
    expect(readFileSync(path.join(podsDir, 'uid-kept', 'etc-hosts'), 'utf8')).toMatch(/^# Kubernetes-managed hosts file\.\n/);
    // Left by an earlier agent: no pod, nothing in the runtime.
    mkdirSync(path.join(podsDir, 'uid-gone'), { recursive: true });
    writeFileSync(path.join(podsDir, 'uid-gone', 'etc-hosts'), 'old');
    h.clock.increment(2_000);
    await vi.waitFor(() => expect(existsSync(path.join(podsDir, 'uid-gone'))).toBe(false));
    expect(existsSync(path.join(podsDir, 'uid-kept', 'etc-hosts'))).toBe(true);
  });

  it('garbage-collects dead containers every minute (the garbage collector loop): one kept per container, none of pods nobody owns', async () => {
    const h = syncLoopHarness();
    h.add(makePod('crashy'));
    await h.waitPod('uid-crashy', idle);
    // A pod gone while the agent was away: its container exited, its sandbox stopped.
    const stale = await h.runUnownedSandbox('stale');
    const staleContainer = await h.runtime.createContainer(
      stale,
      containerConfig('app', { image: { image: IMAGE }, labels: { [Label.podUid]: 'uid-stale' } }),
      podSandboxConfig('stale'),
    );
    await h.runtime.stopPodSandbox(stale);
    // The first collection ran at start, before any of it; the next, a minute later, finds the stale pod.
    h.clock.increment(60_000);
    await vi.waitFor(() => expect(h.gcRuns).toHaveLength(1));
    expect(h.gcRuns[0]).toEqual({ containersRemoved: 1, sandboxesRemoved: 1, failures: 0 });
    expect(h.runtime.getContainer(staleContainer)).toBeUndefined();

    // Two crashes: two dead instances of the container, a third running.
    for (const restarts of [1, 2]) {
      await h.relist();
      const running = (await h.runtime.listContainers({ state: 'CONTAINER_RUNNING' }))[0]!;
      h.runtime.exitContainer(running.id, 1);
      await h.relist();
      if (restarts === 2) h.clock.increment(crashLoopPolicy.initialMs);
      await vi.waitFor(() => expect(h.statuses.get('uid-crashy')?.containerStatuses?.[0]?.restartCount).toBe(restarts));
    }
    const dead = () => h.runtime.listContainers({ state: 'CONTAINER_EXITED' });
    expect(await dead()).toHaveLength(2);
    const newestDead = (await dead()).sort((a, b) => b.metadata.attempt - a.metadata.attempt)[0]!;

    // A minute after that collection, the next one keeps only the newest dead instance.
    h.clock.increment(120_000 - (h.clock.now() - Date.parse('2026-01-01T00:00:00Z')) + 1_000);
    await vi.waitFor(() => expect(h.gcRuns).toHaveLength(2));
    expect(h.gcRuns[1]).toMatchObject({ containersRemoved: 1, failures: 0 });
    expect((await dead()).map((c) => c.id)).toEqual([newestDead.id]);
    expect(await h.runtime.listContainers({ state: 'CONTAINER_RUNNING' })).toHaveLength(1);
    // The status still counts every restart and shows the last termination.
    await h.relist();
    const status = h.statuses.get('uid-crashy')?.containerStatuses?.[0];
    expect(status?.restartCount).toBe(2);
    expect(status?.lastState.terminated?.exitCode).toBe(1);
  });

  it('starts a fresh actor when a terminating UID is added again, once the old one has finished', async () => {
    const h = syncLoopHarness();
    const pod = makePod('again');
    h.add(pod);
    const first = await h.waitPod('uid-again', idle);
    expect(first.context.syncCount).toBeGreaterThan(0);
    const hold = h.runtime.holdCalls('stopContainer');
    h.syncLoop.send({ type: 'CONFIG.REMOVE', source: 'file', pods: [pod] });
    await hold.whenPending(1);
    const old = h.podActor('uid-again');
    h.add(pod);
    expect(old!.getSnapshot().context.restartRequested).toBe(true);
    hold.releaseAll();
    await vi.waitFor(() => expect(h.podActor('uid-again')).not.toBe(old));
    const fresh = await h.waitPod('uid-again', idle);
    expect(fresh.matches({ syncing: { progress: 'running' } })).toBe(true);
    expect(h.statuses.get('uid-again')?.phase).toBe('Running');
  });

  it('starts a new version of a static pod only after the old one with the same name has finished', async () => {
    const h = syncLoopHarness();
    const staticPod = (uid: string) => {
      const pod = makePod('etcd', {}, uid);
      pod.metadata.annotations = { 'kubernetes.io/config.source': 'file' };
      return pod;
    };
    const v1 = staticPod('uid-v1');
    const v2 = staticPod('uid-v2');
    h.add(v1);
    await h.waitPod('uid-v1', idle);
    const hold = h.runtime.holdCalls('stopContainer');
    h.syncLoop.send({ type: 'CONFIG.REMOVE', source: 'file', pods: [v1] });
    h.add(v2);
    await hold.whenPending(1);
    expect(h.podActor('uid-v2')).toBeUndefined();
    const running = await h.runtime.listContainers({ labelSelector: { [Label.podUid]: 'uid-v2' } });
    expect(running).toEqual([]);
    hold.releaseAll();
    const v2Actor = await h.waitPod('uid-v2', idle);
    expect(v2Actor.matches({ syncing: { progress: 'running' } })).toBe(true);
    // By the time v2 runs, v1 is gone from the runtime: the two never overlapped.
    expect(await h.runtime.listContainers({ labelSelector: { [Label.podUid]: 'uid-v1' } })).toEqual([]);
  });
});

describe('what the node logs of a pod whose work fails', () => {
  it('says "Error syncing pod" once per cause, with the pod and the error: not while the same error repeats, again when it changes, and for a failing termination', async () => {
    const lines: string[] = [];
    const log: Logger = (level, message, fields = {}) => {
      if (message === 'Error syncing pod, skipping') lines.push(`${level} ${String(fields['pod'])} ${String(fields['work'])}: ${String(fields['err'])}`);
    };
    const node = startFakeNode({ log });
    const syncs = () => node.podActor('uid-full')?.getSnapshot().context.syncCount ?? 0;
    /** Runs the pod's next sync: the 10 s error back-off, then the shared tick. */
    const nextSync = async () => {
      const before = syncs();
      node.clock.increment(10_000);
      node.clock.increment(1_000);
      await vi.waitFor(() => expect(syncs()).toBe(before + 1));
    };
    node.runtime.failAlways('runPodSandbox', 'RESOURCE_EXHAUSTED', 'no space left on device');
    node.syncLoop.send({ type: 'CONFIG.ADD', source: 'file', pods: [makePod('full')] });
    await vi.waitFor(() => expect(syncs()).toBe(1));
    await nextSync();
    await nextSync();
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/^error default\/full sync: CreatePodSandboxError: .*no space left on device$/);

    node.runtime.clearFailures();
    node.runtime.failAlways('runPodSandbox', 'UNAVAILABLE', 'read-only file system');
    await nextSync();
    await nextSync();
    expect(lines).toHaveLength(2);
    expect(lines[1]).toMatch(/read-only file system$/);

    node.runtime.clearFailures();
    await nextSync();
    await vi.waitFor(() => expect(node.statuses.get('uid-full')?.containerStatuses?.[0]?.state.running).toBeDefined());
    node.runtime.failAlways('stopContainer', 'UNAVAILABLE', 'read-only file system');
    node.syncLoop.send({ type: 'CONFIG.REMOVE', source: 'file', pods: [makePod('full')] });
    await vi.waitFor(() => expect(lines).toHaveLength(3));
    expect(lines[2]).toMatch(/^error default\/full terminate: .*read-only file system$/);
  });
});
