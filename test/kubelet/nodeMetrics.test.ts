/**
 * What the node tells its metrics (NodeMetrics) for pods: the start of a pod from its first
 * sighting, each pod worker's work by type, and a UID restarted while watched, on one node driven
 * by its SimulatedClock.
 */
import { describe, expect, it, vi } from 'vitest';
import { waitFor } from 'xstate';
import type { PodWorkType } from '../../src/podworkers/workDuration.ts';
import { startFakeNode } from '../support/fakeNode.ts';
import { makePod } from '../support/pods.ts';

describe('the node tells its metrics', () => {
  it('when a pod first runs since it was seen, and how long each pod worker run took by type', async () => {
    const started: number[] = [];
    const slis: [number, boolean][] = [];
    const work: PodWorkType[] = [];
    const seconds: number[] = [];
    const node = startFakeNode({
      metrics: {
        podStarted: (seconds) => started.push(seconds),
        podStartedSli: (seconds, first) => slis.push([seconds, first]),
        podWorked: (type, took) => {
          work.push(type);
          seconds.push(took);
        },
      },
    });
    const pod = makePod('web');
    // Seen by its source 4 s before the node gets it.
    pod.metadata.annotations = { 'kubernetes.io/config.seen': new Date(node.now() - 4_000).toISOString() };
    node.syncLoop.send({ type: 'CONFIG.ADD', source: 'file', pods: [pod] });
    // The simulated clock stands still while the pod starts: exactly the 4 s before the node had it.
    await vi.waitFor(() => expect(started).toEqual([4]));
    expect(slis).toEqual([[4, true]]);
    expect(work[0]).toBe('create');
    node.syncLoop.send({ type: 'CONFIG.UPDATE', source: 'file', pods: [{ ...pod, metadata: { ...pod.metadata, labels: { v: '2' } } }] });
    await vi.waitFor(() => expect(work).toContain('update'));
    node.syncLoop.send({ type: 'CONFIG.REMOVE', source: 'file', pods: [pod] });
    await vi.waitFor(() => expect(work.slice(-2)).toEqual(['kill', 'terminated']));
    expect(started).toHaveLength(1);
    // Timed on the node's clock (standing still here), not the wall clock.
    expect(seconds.every((s) => s === 0)).toBe(true);
    node.stop();
  });

  it('counts a static pod whose UID came back while it terminated once, as static', async () => {
    const restarts: boolean[] = [];
    const node = startFakeNode({ metrics: { podRestarted: (isStatic) => restarts.push(isStatic) } });
    const pod = makePod('etcd');
    pod.metadata.annotations = { 'kubernetes.io/config.source': 'file' };
    node.syncLoop.send({ type: 'CONFIG.ADD', source: 'file', pods: [pod] });
    const first = await vi.waitFor(() => node.podActor('uid-etcd') ?? Promise.reject(new Error('no actor yet')));
    await waitFor(first, (s) => s.matches({ syncing: { progress: 'running', worker: 'idle' } }));
    const hold = node.runtime.holdCalls('stopContainer');
    node.syncLoop.send({ type: 'CONFIG.REMOVE', source: 'file', pods: [pod] });
    await hold.whenPending(1);
    node.syncLoop.send({ type: 'CONFIG.ADD', source: 'file', pods: [pod] });
    hold.releaseAll();
    await vi.waitFor(() => expect(node.podActor('uid-etcd')).not.toBe(first));
    await waitFor(node.podActor('uid-etcd')!, (s) => s.matches({ syncing: { progress: 'running' } }));
    expect(restarts).toEqual([true]);
    node.stop();
  });
});
