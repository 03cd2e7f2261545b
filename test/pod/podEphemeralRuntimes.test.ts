/**
 * `kubectl debug --target` on both runtimes, below the API: the pod actor and its effects (the
 * kubelet's SyncPod) driving sim:// over gRPC and a private containerd through the agent's own
 * CriClient. A running pod is updated with an ephemeral container, as the API source delivers the
 * `ephemeralcontainers` subresource's change; the container starts in the target's pid namespace
 * (it sees the target's process at pid 1, which CRI pid TARGET gives on both runtimes), is
 * reported in `ephemeralContainerStatuses`, is not started again once it has ended, and is
 * stopped with the pod. Through the real API server and kubectl: test/cluster/clusterScenarios.ts.
 * Outside CI the containerd half skips loudly where containerd cannot run; under CI=true it fails.
 */
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Actor, createActor, waitFor } from 'xstate';
import type { EphemeralContainer, Pod } from '../../src/api/types.ts';
import { crashLoopPolicy } from '../../src/kuberuntime/backoff.ts';
import { ImagePuller } from '../../src/kuberuntime/images.ts';
import { VolumeWorld } from '../../src/volumes/world.ts';
import { realClock } from '../../src/clock.ts';
import { UserNamespaceManager } from '../../src/userns/manager.ts';
import { Label } from '../../src/kuberuntime/labels.ts';
import { silentLogger } from '../../src/log.ts';
import { createPodEffects } from '../../src/pod/podEffects.ts';
import { type PodMachine, podMachineWith } from '../../src/pod/pod.ts';
import { CriClient } from '../../src/runtime/cri/client.ts';
import { startSimRuntime } from '../../src/runtime/sim/server.ts';
import { StatusManager } from '../../src/status/manager.ts';
import { containerdForDescribe } from '../containerd/forDescribe.ts';
import { BUSYBOX_IMAGE } from '../containerd/harness.ts';
import { NO_MEMORY_FEATURES, createRecorder } from '../support/pods.ts';
import { RecordedEvents } from '../support/recordedEvents.ts';

/** The app's script: pid 1 of its own pid namespace, told apart by what it echoes. */
const APP = "echo the-app-process; trap 'exit 0' TERM; while true; do sleep 1; done";
const DEBUGGER = 'echo debugging; while true; do sleep 1; done';

interface Rig {
  cri: CriClient;
  runtimeName: string;
  statuses: StatusManager;
  start(pod: Pod): Actor<PodMachine>;
  close(): Promise<void>;
}

async function rig(endpoint: string, runtimeName: string): Promise<Rig> {
  const logs = await mkdtemp(path.join(os.tmpdir(), 'statelet-ephemeral-logs-'));
  const cri = new CriClient(endpoint, { requestTimeoutMs: 60_000 });
  const statuses = new StatusManager();
  const effects = createPodEffects({
    work: {
      cri: { runtime: cri, images: cri, puller: new ImagePuller(cri, 1) },
      host: {
        now: () => Date.now(),
        podLogsRoot: logs,
        security: { seccompDefault: false, seccompProfileRoot: '/var/lib/statelet/seccomp' },
        memoryCapacityBytes: 8 * 2 ** 30,
        memoryFeatures: NO_MEMORY_FEATURES,
        crashLoop: crashLoopPolicy,
        userNamespaces: new UserNamespaceManager('/nonexistent/statelet-test-pods', () => null, silentLogger),
        volumes: new VolumeWorld({ clock: realClock }),
      },
      observe: { log: silentLogger, recorder: new RecordedEvents() },
    },
    statuses,
    runtimeName,
  });
  const parent = createActor(createRecorder().logic);
  parent.start();
  return {
    cri,
    runtimeName,
    statuses,
    start(pod) {
      const actor = createActor(podMachineWith(effects), { parent, input: { pod } });
      actor.start();
      return actor;
    },
    async close() {
      parent.stop();
      cri.close();
      await rm(logs, { recursive: true, force: true });
    },
  };
}

/** Asks for a sync and waits until one that began after the ask has ended. */
async function syncOnce(actor: Actor<PodMachine>): Promise<void> {
  const count = actor.getSnapshot().context.syncCount;
  actor.send({ type: 'POD.SYNC' });
  await waitFor(actor, (s) => s.context.syncCount > count && s.matches({ syncing: { worker: 'idle' } }), { timeout: 60_000 });
}

async function debugWithTarget(r: Rig, image: string): Promise<void> {
  const uid = randomUUID();
  const pod: Pod = {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: 'debug-me', namespace: 'default', uid },
    spec: {
      restartPolicy: 'Always',
      terminationGracePeriodSeconds: 5,
      containers: [{ name: 'app', image, imagePullPolicy: 'IfNotPresent', command: ['sh', '-c', APP] }],
    },
  };
  const actor = r.start(pod);
  await waitFor(actor, (s) => s.context.phase === 'Running' && s.matches({ syncing: { worker: 'idle' } }), { timeout: 60_000 });
  const named = async (name: string) => r.cri.listContainers({ labelSelector: { [Label.podUid]: uid, [Label.containerName]: name } });

  // kubectl debug -it debug-me --image=… --target=app: the spec gains an ephemeral container.
  const debuggerSpec: EphemeralContainer = { name: 'debugger', image, imagePullPolicy: 'IfNotPresent', command: ['sh', '-c', DEBUGGER], stdin: true, tty: true, targetContainerName: 'app' };
  const count = actor.getSnapshot().context.syncCount;
  actor.send({ type: 'POD.UPDATE', pod: { ...pod, spec: { ...pod.spec, ephemeralContainers: [debuggerSpec] } }, updateType: 'update' });
  await waitFor(actor, (s) => s.context.syncCount > count && s.matches({ syncing: { worker: 'idle' } }), { timeout: 60_000 });
  const [debug] = await named('debugger');
  expect(debug?.state).toBe('CONTAINER_RUNNING');
  const status = r.statuses.get(uid);
  expect(status?.ephemeralContainerStatuses).toEqual([
    expect.objectContaining({ name: 'debugger', state: { running: expect.anything() }, ready: false, restartCount: 0, containerID: `${r.runtimeName}://${debug!.id}` }),
  ]);
  expect(status?.phase).toBe('Running');

  // In the app's pid namespace: its pid 1 is the app's shell, not the debugger's own command.
  const pid1 = (await r.cri.execSync(debug!.id, ['cat', '/proc/1/cmdline'], 10)).stdout.toString();
  expect(pid1).toContain('the-app-process');
  expect(pid1).not.toContain('debugging');
  const [app] = await named('app');
  expect((await r.cri.execSync(app!.id, ['cat', '/proc/1/cmdline'], 10)).stdout.toString()).toContain('the-app-process');

  // It ends (it is not pid 1 where it runs: TERM ends it); the pod's policy is Always, yet it stays ended.
  await r.cri.stopContainer(debug!.id, 10);
  await syncOnce(actor);
  await syncOnce(actor);
  expect((await named('debugger')).map((c) => [c.id, c.state])).toEqual([[debug!.id, 'CONTAINER_EXITED']]);
  expect(r.statuses.get(uid)?.ephemeralContainerStatuses?.[0]?.state.terminated).toMatchObject({ exitCode: 143 });
  expect((await named('app')).map((c) => c.id)).toEqual([app!.id]);

  // Killed with the pod: every container stopped, then the sandbox.
  actor.send({ type: 'POD.KILL', deleted: true });
  await waitFor(actor, (s) => s.matches({ terminated: 'finished' }), { timeout: 60_000 });
  expect(await r.cri.listContainers({ labelSelector: { [Label.podUid]: uid }, state: 'CONTAINER_RUNNING' })).toEqual([]);
}

describe('kubectl debug --target below the API, on sim://', () => {
  let dir: string;
  let close: () => Promise<void>;
  let r: Rig;
  beforeAll(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'statelet-ephemeral-sim-'));
    const sim = await startSimRuntime({ socketPath: path.join(dir, 'cri.sock') });
    r = await rig(sim.endpoint, 'sim');
    close = async () => {
      await r.close();
      await sim.close();
      await rm(dir, { recursive: true, force: true });
    };
  });
  afterAll(() => close?.());

  it("starts the debugger in the app's pid namespace, reports it, never restarts it, and stops it with the pod", async () => {
    await debugWithTarget(r, 'statelet.local/busybox:1');
  }, 60_000);
});

describe('kubectl debug --target below the API, on containerd', () => {
  const containerd = containerdForDescribe();

  it("starts the debugger in the app's pid namespace, reports it, never restarts it, and stops it with the pod", async ({ skip }) => {
    const instance = containerd();
    if (!instance) return skip('containerd not available here (see the message above)');
    const r = await rig(instance.endpoint, 'containerd');
    try {
      await debugWithTarget(r, BUSYBOX_IMAGE);
    } finally {
      await r.close();
    }
  }, 120_000);
});
