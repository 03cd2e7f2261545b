/**
 * A terminal pod is never admitted again, and its record is never rewritten (pkg/kubelet/kubelet.go
 * HandlePodAdditions skips admission for a terminal pod; kubelet_pods.go filterOutInactivePods
 * leaves it out of what admission counts): after a restart of the agent, a pod that had Succeeded
 * comes back as an addition from the API, on a node it no longer fits. The whole node on the
 * TestRuntime (composeNode), an empty runtime as a restarted sim:// has.
 */
import { describe, expect, it, vi } from 'vitest';
import { type SnapshotFrom, waitFor } from 'xstate';
import type { Pod, PodStatus } from '../../src/api/types.ts';
import { Label } from '../../src/kuberuntime/labels.ts';
import type { PodActor } from '../../src/podworkers/podWorkers.ts';
import { startFakeNode } from '../support/fakeNode.ts';
import { IMAGE, makePod } from '../support/pods.ts';

const succeeded: PodStatus = {
  observedGeneration: 1,
  phase: 'Succeeded',
  startTime: '2026-01-01T00:00:00Z',
  qosClass: 'BestEffort',
  conditions: [
    { type: 'PodReadyToStartContainers', status: 'False', observedGeneration: 1, lastProbeTime: null, lastTransitionTime: '2026-01-01T00:00:05Z' },
    { type: 'Initialized', status: 'True', reason: 'PodCompleted', observedGeneration: 1, lastProbeTime: null, lastTransitionTime: '2026-01-01T00:00:00Z' },
    { type: 'Ready', status: 'False', reason: 'PodCompleted', observedGeneration: 1, lastProbeTime: null, lastTransitionTime: '2026-01-01T00:00:04Z' },
    { type: 'ContainersReady', status: 'False', reason: 'PodCompleted', observedGeneration: 1, lastProbeTime: null, lastTransitionTime: '2026-01-01T00:00:04Z' },
    { type: 'PodScheduled', status: 'True', observedGeneration: 1, lastProbeTime: null, lastTransitionTime: '2026-01-01T00:00:00Z' },
  ],
  containerStatuses: [
    {
      name: 'main',
      state: { terminated: { exitCode: 0, reason: 'Completed', startedAt: '2026-01-01T00:00:01Z', finishedAt: '2026-01-01T00:00:04Z', containerID: 'fake://gone' } },
      lastState: {},
      ready: false,
      restartCount: 0,
      image: IMAGE,
      imageID: 'sha256:gone',
      containerID: 'fake://gone',
      started: false,
    },
  ],
};

/** A pod of the API, created at `created`, with the status the API has for it. */
const apiPod = (name: string, created: string, spec: Partial<Pod['spec']> = {}, status?: PodStatus): Pod => {
  const pod = makePod(name, spec);
  pod.metadata = { ...pod.metadata, generation: 1, creationTimestamp: created, annotations: { 'kubernetes.io/config.source': 'api' } };
  if (status) pod.status = structuredClone(status);
  return pod;
};

const finished = (s: SnapshotFrom<PodActor>) => s.matches({ terminated: 'finished' });

describe('a terminal pod after a restart of the agent', () => {
  it('is not admitted again on a node it no longer fits: its Succeeded record stays as it was, nothing of it runs', async () => {
    const node = startFakeNode({ config: { maxPods: 1 } });
    const running = apiPod('running', '2026-01-01T00:00:00Z');
    const done = apiPod('done', '2026-01-01T00:00:01Z', { restartPolicy: 'Never' }, succeeded);
    node.syncLoop.send({ type: 'CONFIG.ADD', source: 'api', pods: [running, done] });

    const actor = await vi.waitFor(() => node.podActor('uid-done')!);
    await waitFor(actor, finished);
    await waitFor(node.podActor('uid-running')!, (s) => s.matches({ syncing: { worker: 'idle' } }));
    expect(node.statuses.get('uid-running')?.phase).toBe('Running');
    const status = node.statuses.get('uid-done')!;
    expect(status.phase).toBe('Succeeded');
    expect(status.reason).toBeUndefined();
    expect(status.message).toBeUndefined();
    // What the API had of its containers is kept, though the runtime has nothing of them any more.
    expect(status.containerStatuses).toEqual(succeeded.containerStatuses);
    expect(status.startTime).toBe(succeeded.startTime);
    expect(status.conditions).toEqual(succeeded.conditions);
    expect(await node.runtime.listContainers({ labelSelector: { [Label.podUid]: 'uid-done' } })).toEqual([]);
    expect(await node.runtime.listPodSandbox({ labelSelector: { [Label.podUid]: 'uid-done' } })).toEqual([]);
    node.stop();
  });

  it('does not count against admission: a pod added with it is admitted in its place', async () => {
    const node = startFakeNode({ config: { maxPods: 1 } });
    const done = apiPod('done', '2026-01-01T00:00:00Z', { restartPolicy: 'Never' }, succeeded);
    const failed = apiPod('failed', '2026-01-01T00:00:01Z', { restartPolicy: 'Never' }, { ...succeeded, phase: 'Failed', reason: 'DeadlineExceeded' });
    const fresh = apiPod('fresh', '2026-01-01T00:00:02Z');
    node.syncLoop.send({ type: 'CONFIG.ADD', source: 'api', pods: [done, failed, fresh] });
    await waitFor(await vi.waitFor(() => node.podActor('uid-fresh')!), (s) => s.matches({ syncing: { worker: 'idle' } }));
    expect(node.statuses.get('uid-fresh')?.phase).toBe('Running');
    await waitFor(node.podActor('uid-failed')!, finished);
    expect(node.statuses.get('uid-failed')).toMatchObject({ phase: 'Failed', reason: 'DeadlineExceeded' });
    // A later pod finds the node full with `fresh` alone.
    node.syncLoop.send({ type: 'CONFIG.ADD', source: 'api', pods: [apiPod('late', '2026-01-01T00:00:03Z')] });
    await vi.waitFor(() => expect(node.statuses.get('uid-late')).toMatchObject({ phase: 'Failed', reason: 'OutOfpods', observedGeneration: 1 }));
    node.stop();
  });
});
