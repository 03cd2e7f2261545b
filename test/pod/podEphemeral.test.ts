/**
 * Ephemeral containers through the pod actor and its effects, on the in-process simulated runtime:
 * added by an update of the pod (what the API source delivers after the `ephemeralcontainers`
 * subresource changed the spec), started at the next sync in the target container's pid namespace,
 * reported in `ephemeralContainerStatuses`, never restarted, and killed with the pod
 * (kuberuntime_manager.go computePodActions and SyncPod, kuberuntime_container.go startContainer).
 */
import { describe, expect, it } from 'vitest';
import { waitFor } from 'xstate';
import type { EphemeralContainer, Pod } from '../../src/api/types.ts';
import { IMAGE, container, makePod, podHarness, settled } from '../support/pods.ts';

const LONG = ['sh', '-c', 'while true; do sleep 1; done'];
const APP = ['sh', '-c', 'echo the-app; while true; do sleep 1; done'];

const debuggerOf = (extra: Partial<EphemeralContainer> = {}): EphemeralContainer => ({ name: 'debugger', image: IMAGE, imagePullPolicy: 'IfNotPresent', command: LONG, ...extra });
/** Asks for a sync and waits for it to have been the actor's `count`th. */
async function syncAgain(actor: ReturnType<ReturnType<typeof podHarness>['start']>, count: number): Promise<void> {
  actor.send({ type: 'POD.SYNC' });
  await waitFor(actor, (s) => s.context.syncCount === count && s.matches({ syncing: { worker: 'idle' } }));
}
const withDebugger = (pod: Pod, debug: EphemeralContainer): Pod => ({ ...pod, spec: { ...pod.spec, ephemeralContainers: [debug] } });

describe('an ephemeral container added to a running pod', () => {
  it("starts at the next sync in its target's pid namespace, is reported, is never restarted, and dies with the pod", async () => {
    const h = podHarness();
    const pod = makePod('debugme', { containers: [container('app', { command: APP })] });
    const actor = h.start(pod);
    await settled(actor);
    const [app] = await h.runtime.listContainers({ labelSelector: { 'io.kubernetes.container.name': 'app' } });

    actor.send({ type: 'POD.UPDATE', pod: withDebugger(pod, debuggerOf({ targetContainerName: 'app' })), updateType: 'update' });
    await waitFor(actor, (s) => s.context.syncCount === 2 && s.matches({ syncing: { worker: 'idle' } }));
    const [debug] = await h.runtime.listContainers({ labelSelector: { 'io.kubernetes.container.name': 'debugger' } });
    expect(debug?.state).toBe('CONTAINER_RUNNING');
    // It sees the app's process at pid 1: it was created with pid TARGET and the app's container id.
    expect((await h.runtime.execSync(debug!.id, ['cat', '/proc/1/cmdline'], 5)).stdout.toString()).toBe(`${APP.join('\0')}\0`);
    expect(debug?.annotations['io.kubernetes.container.type']).toBe('ephemeral');
    const status = h.statuses.get('uid-debugme');
    expect(status?.ephemeralContainerStatuses).toEqual([
      expect.objectContaining({ name: 'debugger', state: { running: expect.anything() }, ready: false, restartCount: 0, containerID: `fake://${debug!.id}` }),
    ]);
    expect(status?.containerStatuses?.map((c) => c.name)).toEqual(['app']);
    expect(status?.phase).toBe('Running');

    // It exits; the pod's restart policy is Always, yet it is not started again.
    h.runtime.exitContainer(debug!.id, 2);
    actor.send({ type: 'PLEG.CONTAINER_DIED', podUid: 'uid-debugme', containerId: debug!.id });
    await waitFor(actor, (s) => s.context.syncCount === 3 && s.matches({ syncing: { worker: 'idle' } }));
    actor.send({ type: 'POD.SYNC' });
    await waitFor(actor, (s) => s.context.syncCount === 4 && s.matches({ syncing: { worker: 'idle' } }));
    expect((await h.runtime.listContainers({ labelSelector: { 'io.kubernetes.container.name': 'debugger' } })).map((c) => c.id)).toEqual([debug!.id]);
    expect(h.statuses.get('uid-debugme')?.ephemeralContainerStatuses?.[0]?.state.terminated).toMatchObject({ exitCode: 2, reason: 'Error' });
    expect((await h.runtime.listContainers({ labelSelector: { 'io.kubernetes.container.name': 'app' } }))[0]?.id).toBe(app!.id);
  });

  it('is stopped with the rest of the pod when the pod is killed', async () => {
    const h = podHarness();
    const pod = makePod('killed', { containers: [container('app', { command: APP })], terminationGracePeriodSeconds: 1 });
    const actor = h.start(withDebugger(pod, debuggerOf({ targetContainerName: 'app' })));
    await settled(actor);
    // Not in the sync that makes the sandbox (rule A plans nothing else): in the next one.
    expect((await h.runtime.listContainers()).map((c) => c.metadata.name)).toEqual(['app']);
    await syncAgain(actor, 2);
    expect((await h.runtime.listContainers({ state: 'CONTAINER_RUNNING' })).map((c) => c.metadata.name).sort()).toEqual(['app', 'debugger']);
    h.runtime.clearCalls();
    actor.send({ type: 'POD.KILL', deleted: true });
    const killing = waitFor(actor, (s) => s.matches({ terminated: 'finished' }));
    for (let i = 0; i < 20 && !actor.getSnapshot().matches({ terminated: 'finished' }); i++) {
      await new Promise((resolve) => setTimeout(resolve, 5));
      h.clock.increment(500);
    }
    await killing;
    expect(h.runtime.callLog().filter((l) => l.startsWith('stopContainer'))).toHaveLength(2);
    expect(await h.runtime.listContainers()).toEqual([]);
  });

  it('waits with CreateContainerConfigError while its target has no instance, and starts once it has', async () => {
    const h = podHarness();
    h.runtime.failPull('statelet.local/late:1');
    const pod = makePod('early', { containers: [container('app', { command: APP, image: 'statelet.local/late:1' })] });
    const actor = h.start(withDebugger(pod, debuggerOf({ targetContainerName: 'app' })));
    await settled(actor);
    await syncAgain(actor, 2);
    const waiting = h.statuses.get('uid-early')?.ephemeralContainerStatuses?.[0]?.state.waiting;
    expect(waiting).toEqual({ reason: 'CreateContainerConfigError', message: 'unable to find target container app' });
    expect(await h.runtime.listContainers({ labelSelector: { 'io.kubernetes.container.name': 'debugger' } })).toEqual([]);

    h.runtime.addImage('statelet.local/late:1');
    // The app starts in this sync, after the debugger's attempt (ephemeral containers go first, on the status read as the sync began); the next sync starts the debugger.
    await syncAgain(actor, 3);
    expect(h.statuses.get('uid-early')?.ephemeralContainerStatuses?.[0]?.state.waiting?.reason).toBe('CreateContainerConfigError');
    await syncAgain(actor, 4);
    const status = h.statuses.get('uid-early');
    expect(status?.ephemeralContainerStatuses?.[0]?.state.running).toBeDefined();
  });
});
