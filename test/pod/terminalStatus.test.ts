/**
 * The statuses a pod actor publishes on its way to the end, as the kubelet's (generateAPIPodStatus
 * along the way, TerminatePod at the very end): the upstream conformance spec "should not start app
 * containers and fail the pod if init containers fail on a RestartNever pod"
 * (test/e2e/common/node/init_container.go), and a pod from the API terminated while Pending.
 */
import { describe, expect, it } from 'vitest';
import { waitFor } from 'xstate';
import type { Pod, PodStatus } from '../../src/api/types.ts';
import { TerminatedUnknownMessage } from '../../src/status/terminate.ts';
import { container, makePod, podHarness, settled } from '../support/pods.ts';

const deleted = (pod: Pod): Pod => ({ ...pod, metadata: { ...pod.metadata, deletionTimestamp: '2026-01-01T00:00:00Z', deletionGracePeriodSeconds: 3 } });

describe('the statuses of a pod on its way to the end', () => {
  it('an init container fails under restartPolicy Never: the pod Failed, its app container waiting PodInitializing in every status, Initialized False for the failed init container', async () => {
    const h = podHarness();
    const published: PodStatus[] = [];
    h.statuses.subscribe((uid, status) => uid === 'uid-init-fail' && status && published.push(status));
    const pod = makePod('init-fail', { restartPolicy: 'Never', initContainers: [container('init1'), container('init2')], containers: [container('run1')] });
    const actor = h.start(pod);
    await settled(actor);
    const [init1] = await h.runtime.listContainers({ state: 'CONTAINER_RUNNING' });
    h.runtime.exitContainer(init1!.id, 0);
    actor.send({ type: 'POD.SYNC' });
    await waitFor(actor, (s) => s.context.syncCount === 2 && s.matches({ syncing: { worker: 'idle' } }));
    const [init2] = await h.runtime.listContainers({ state: 'CONTAINER_RUNNING' });
    expect(init2?.metadata.name).toBe('init2');
    h.runtime.exitContainer(init2!.id, 1);
    actor.send({ type: 'POD.SYNC' });
    await waitFor(actor, (s) => s.matches({ terminated: 'finished' }));

    expect((await h.runtime.listContainers()).map((c) => c.metadata.name).sort()).toEqual(['init1', 'init2']);
    for (const status of published) {
      expect(status.containerStatuses?.map((s) => s.state)).toEqual([{ waiting: { reason: 'PodInitializing' } }]);
    }
    const final = h.statuses.get('uid-init-fail')!;
    expect(final.phase).toBe('Failed');
    expect(final.conditions?.find((c) => c.type === 'Initialized')).toMatchObject({
      status: 'False',
      reason: 'ContainersNotInitialized',
      message: 'containers with incomplete status: [init2]',
    });
    expect(final.initContainerStatuses?.map((s) => [s.name, s.state.terminated?.exitCode])).toEqual([
      ['init1', 0],
      ['init2', 1],
    ]);
  });

  it('a pod from the API deleted while Pending ends Failed, its container that never ran terminated ContainerStatusUnknown (137)', async () => {
    const h = podHarness();
    const pod = makePod('stuck', { containers: [container('app', { image: 'nowhere/none:1', imagePullPolicy: 'Never' })] });
    const actor = h.start(pod);
    await settled(actor);
    expect(h.statuses.get('uid-stuck')).toMatchObject({ phase: 'Pending', containerStatuses: [{ state: { waiting: { reason: 'ErrImageNeverPull' } } }] });
    actor.send({ type: 'POD.UPDATE', pod: deleted(pod), updateType: 'update' });
    await waitFor(actor, (s) => s.matches({ terminated: 'finished' }));
    const final = h.statuses.get('uid-stuck')!;
    expect(final.phase).toBe('Failed');
    expect(final.containerStatuses?.[0]?.state).toEqual({ terminated: { exitCode: 137, reason: 'ContainerStatusUnknown', message: TerminatedUnknownMessage } });
  });

  it('a static pod deleted while Pending keeps its phase (the kubelet gives static pods no terminal phase yet)', async () => {
    const h = podHarness();
    const pod = makePod('stuck', { containers: [container('app', { image: 'nowhere/none:1', imagePullPolicy: 'Never' })] });
    pod.metadata.annotations = { 'kubernetes.io/config.source': 'file' };
    const actor = h.start(pod);
    await settled(actor);
    actor.send({ type: 'POD.KILL', deleted: true });
    await waitFor(actor, (s) => s.matches({ terminated: 'finished' }));
    expect(h.statuses.get('uid-stuck')?.phase).toBe('Pending');
  });
});
