/**
 * The runtime's network readiness, as the whole node sees it (composeNode on the in-process
 * simulated runtime, one SimulatedClock): the syncLoop polls the runtime's Status at start and
 * every 5 s (kubelet.go updateRuntimeUp) and keeps its network state; while NetworkReady is false
 * a pod on the pod network is not synced (kubelet.go SyncPod: a `NetworkNotReady` event, the error
 * `network is not ready: …`) and is retried at the pod workers' 1 s transient period, while a pod
 * on the host's network starts. No sleeps: the clock is stepped and the actors are waited on.
 */
import { describe, expect, it, vi } from 'vitest';
import { type SnapshotFrom, waitFor } from 'xstate';
import type { Logger } from '../../src/log.ts';
import type { PodActor } from '../../src/podworkers/podWorkers.ts';
import { startFakeNode } from '../support/fakeNode.ts';
import { makePod } from '../support/pods.ts';

/** What sim:// (as containerd without an initialized CNI plugin) makes the kubelet say. */
const NOT_READY = 'container runtime network not ready: NetworkReady=false reason:NetworkPluginNotReady message:Network plugin returns error: cni plugin not initialized';

const idle = (s: SnapshotFrom<PodActor>) => s.matches({ syncing: { worker: 'idle' } });

function harness() {
  const logged: { message: string; fields: Record<string, unknown> }[] = [];
  const log: Logger = (_level, message, fields = {}) => void logged.push({ message, fields });
  const node = startFakeNode({ log });
  const { clock, runtime, syncLoop, podActor, statuses } = node;
  const networkError = () => syncLoop.getSnapshot().context.networkError;
  const statusCalls = () => runtime.callLog('status').length;
  /** The Status polls the syncLoop has had answered (or failed): it is back to waiting after `count` of them. */
  const polled = (count: number) => waitFor(syncLoop, (s) => statusCalls() === count && s.matches({ runtimeStatus: 'waiting' }));
  /** The NetworkNotReady events, as the standalone node's recorder logs them: `pod: message`. */
  const networkEvents = () => logged.filter((l) => l.message === 'NetworkNotReady').map((l) => `${String(l.fields['pod'])}: ${String(l.fields['message'])}`);
  const pod = async (uid: string) =>
    vi.waitFor(() => {
      const actor = podActor(uid);
      expect(actor).toBeDefined();
      return actor!;
    });
  return { node, clock, runtime, syncLoop, statuses, networkError, statusCalls, polled, networkEvents, pod, logged };
}

describe("the runtime's network readiness (kubelet.go updateRuntimeUp, runtime.go networkErrors)", () => {
  it('is polled at start and every 5 s; a Status that fails changes nothing', async () => {
    const h = harness();
    await h.polled(1);
    expect(h.networkError()).toBeNull();

    h.runtime.setNetworkReady(false);
    h.clock.increment(4_999);
    expect(h.statusCalls()).toBe(1);
    h.clock.increment(1);
    await h.polled(2);
    expect(h.networkError()).toBe(NOT_READY);

    // The runtime does not answer: the network state stays what it last said.
    h.runtime.setNetworkReady(true);
    h.runtime.failNext('status', 'UNAVAILABLE', 'connection refused');
    h.clock.increment(5_000);
    await h.polled(3);
    expect(h.networkError()).toBe(NOT_READY);
    expect(h.logged.filter((l) => l.message === 'Container runtime sanity check failed')).toHaveLength(1);

    h.clock.increment(5_000);
    await h.polled(4);
    expect(h.networkError()).toBeNull();
    h.node.stop();
  });

  it('keeps a pod off the pod network from starting while not ready, retries it after 1 s, and starts it once ready; a host-network pod starts', async () => {
    const h = harness();
    await h.polled(1);
    h.runtime.setNetworkReady(false);
    h.clock.increment(5_000);
    await h.polled(2);
    expect(h.networkError()).toBe(NOT_READY);

    h.syncLoop.send({ type: 'CONFIG.ADD', source: 'file', pods: [makePod('web'), makePod('host', { hostNetwork: true })] });

    // The host-network pod needs no pod network: it starts.
    const host = await h.pod('uid-host');
    await waitFor(host, (s) => idle(s) && h.statuses.get('uid-host')?.phase === 'Running');

    // The other stops before anything of it is made, with the kubelet's event and error.
    const web = await h.pod('uid-web');
    const syncs = () => web.getSnapshot().context.syncCount;
    await waitFor(web, (s) => idle(s) && s.context.syncCount === 1);
    expect(web.getSnapshot().context.lastError).toBe(`network is not ready: ${NOT_READY}`);
    expect(h.networkEvents()).toEqual([`default/web: network is not ready: ${NOT_READY}`]);
    expect(h.runtime.callLog('runPodSandbox')).toEqual(['runPodSandbox(default/host/uid-host/0)']);
    // Its status was published before the check: Pending, its container waiting to be created.
    expect(h.statuses.get('uid-web')).toMatchObject({ phase: 'Pending', containerStatuses: [{ name: 'main', state: { waiting: { reason: 'ContainerCreating' } } }] });
    expect(h.logged.filter((l) => l.message === 'Error syncing pod, skipping' && l.fields['pod'] === 'default/web')).toHaveLength(1);

    // Retried at the transient period (1 s, no jitter here), not after the 10 s error back-off.
    h.clock.increment(1_000);
    await waitFor(web, (s) => idle(s) && s.context.syncCount === 2);
    expect(h.networkEvents()).toHaveLength(2);
    expect(h.runtime.callLog('runPodSandbox')).toHaveLength(1);

    // The network comes back; until the next poll (5 s after the last) the node does not know it,
    // and the pod starts at its first retry after that poll.
    h.runtime.setNetworkReady(true);
    for (let second = 0; second < 4; second++) {
      expect(h.networkError()).toBe(NOT_READY);
      const before = syncs();
      h.clock.increment(1_000);
      await waitFor(web, (s) => idle(s) && s.context.syncCount === before + 1);
    }
    await h.polled(3);
    expect(h.networkError()).toBeNull();
    if (h.statuses.get('uid-web')?.phase !== 'Running') {
      h.clock.increment(1_000);
      await waitFor(web, (s) => idle(s) && h.statuses.get('uid-web')?.phase === 'Running');
    }
    expect(web.getSnapshot().context.lastError).toBeNull();
    expect(h.runtime.callLog('runPodSandbox')).toEqual(['runPodSandbox(default/host/uid-host/0)', 'runPodSandbox(default/web/uid-web/0)']);
    // One event per failed sync, none since.
    const failed = h.networkEvents().length;
    expect(failed).toBeGreaterThanOrEqual(5);
    h.clock.increment(2_000);
    await waitFor(web, idle);
    expect(h.networkEvents()).toHaveLength(failed);
    h.node.stop();
  });

  it("starts from the Status the agent read at start, until the syncLoop's first poll answers", async () => {
    const node = startFakeNode({
      runtimeConditions: [
        { type: 'RuntimeReady', status: true, reason: '', message: '' },
        { type: 'NetworkReady', status: false, reason: 'NetworkPluginNotReady', message: 'Network plugin returns error: cni plugin not initialized' },
      ],
    });
    expect(node.syncLoop.getSnapshot().context.networkError).toBe(NOT_READY);
    // The runtime's own first answer (ready) replaces it.
    await waitFor(node.syncLoop, (s) => s.context.networkError === null);
    expect(node.runtime.callLog('status')).toHaveLength(1);
    node.stop();
  });
});
