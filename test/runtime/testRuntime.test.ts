import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import type { ContainerEvent } from '../../src/runtime/types.ts';
import { SimEngine } from '../../src/runtime/sim/engine.ts';
import { inProcessRuntime } from '../support/inProcessRuntime.ts';
import { ManualClock } from '../support/manualClock.ts';
import { TestRuntime } from '../support/testRuntime.ts';
import { NamespaceMode, type ContainerConfig, type PodSandboxConfig } from '../../src/runtime/types.ts';
import { containerConfig as baseContainerConfig, networkNamespace, podSandboxConfig, rejection } from './support.ts';

const IMAGE = 'registry.example/app:1';

function sandboxConfig(name: string, options: { labels?: Record<string, string>; hostNetwork?: boolean } = {}): PodSandboxConfig {
  return podSandboxConfig(name, {
    logDirectory: '',
    labels: options.labels ?? { app: name },
    ...(options.hostNetwork ? { linux: networkNamespace(NamespaceMode.NODE) } : {}),
  });
}

function containerConfig(name: string, labels: Record<string, string> = {}): ContainerConfig {
  return baseContainerConfig(name, { image: { image: IMAGE }, labels: { container: name, ...labels } });
}

/** The in-process simulated runtime behind the fault decorator, on a clock that moves when the test says so. */
function setup(): { fake: TestRuntime; clock: ManualClock } {
  const clock = new ManualClock(1_000);
  const fake = new TestRuntime({ clock });
  fake.addImage(IMAGE);
  return { fake, clock };
}

async function runningContainer(fake: TestRuntime, pod = 'web', name = 'app'): Promise<{ sandboxId: string; containerId: string }> {
  const config = sandboxConfig(pod);
  const sandboxId = await fake.runPodSandbox(config);
  const containerId = await fake.createContainer(sandboxId, containerConfig(name), config);
  await fake.startContainer(containerId);
  return { sandboxId, containerId };
}

describe('the in-process simulated runtime: sandboxes', () => {
  it('gives pod-network sandboxes distinct IPs and host-network sandboxes none', async () => {
    const { fake, clock } = setup();
    const a = await fake.runPodSandbox(sandboxConfig('a'));
    clock.advance(2_000 - clock.now());
    const b = await fake.runPodSandbox(sandboxConfig('b'));
    const host = await fake.runPodSandbox(sandboxConfig('h', { hostNetwork: true }));

    const statusA = await fake.podSandboxStatus(a);
    const statusB = await fake.podSandboxStatus(b);
    const statusHost = await fake.podSandboxStatus(host);
    expect(statusA.network?.ip).toMatch(/^127\.\d+\.\d+\.\d+$/);
    expect(statusB.network?.ip).not.toBe(statusA.network?.ip);
    expect(statusA.networkMode).toBe(NamespaceMode.POD);
    expect(statusHost.network?.ip ?? '').toBe('');
    expect(statusHost.networkMode).toBe(NamespaceMode.NODE);
    expect(statusA.createdAt).toBe(1_000);
    expect(statusB.createdAt).toBe(2_000);
    expect(statusA.metadata).toEqual({ name: 'a', uid: 'uid-a', namespace: 'default', attempt: 0 });
  });

  it("reports NetworkReady false as containerd does without CNI, and then fails pod-network sandboxes but not host-network ones", async () => {
    const { fake } = setup();
    const network = async () => (await fake.status()).conditions.find((c) => c.type === 'NetworkReady');
    expect(await network()).toEqual({ type: 'NetworkReady', status: true, reason: '', message: '' });
    fake.setNetworkReady(false);
    expect(await network()).toEqual({ type: 'NetworkReady', status: false, reason: 'NetworkPluginNotReady', message: 'Network plugin returns error: cni plugin not initialized' });
    expect((await fake.status()).conditions.find((c) => c.type === 'RuntimeReady')?.status).toBe(true);
    const err = await rejection(fake.runPodSandbox(sandboxConfig('a')));
    expect(err).toMatchObject({ call: 'RunPodSandbox', code: 'UNKNOWN' });
    expect(err.message).toMatch(/failed to setup network for sandbox "[0-9a-f]{64}": cni plugin not initialized/);
    expect(await fake.listPodSandbox()).toEqual([]);
    await fake.runPodSandbox(sandboxConfig('h', { hostNetwork: true }));
    fake.setNetworkReady(false, 'Custom', 'plugin still loading');
    expect(await network()).toEqual({ type: 'NetworkReady', status: false, reason: 'Custom', message: 'plugin still loading' });
    fake.setNetworkReady(true);
    expect((await network())?.status).toBe(true);
    // The failed attempt reserved no name: the same sandbox starts now.
    await fake.runPodSandbox(sandboxConfig('a'));
    expect((await fake.listPodSandbox()).map((s) => s.metadata.name).sort()).toEqual(['a', 'h']);
  });

  it('refuses a second sandbox with the same name while the first exists', async () => {
    const { fake } = setup();
    await fake.runPodSandbox(sandboxConfig('a'));
    const err = await rejection(fake.runPodSandbox(sandboxConfig('a')));
    expect(err.call).toBe('RunPodSandbox');
  });

  it('filters sandboxes by id, state and exact label match', async () => {
    const { fake } = setup();
    const a = await fake.runPodSandbox(sandboxConfig('a', { labels: { app: 'web', tier: 'front' } }));
    const b = await fake.runPodSandbox(sandboxConfig('b', { labels: { app: 'web', tier: 'back' } }));
    await fake.stopPodSandbox(b);

    const ids = async (filter: Parameters<TestRuntime['listPodSandbox']>[0]): Promise<string[]> =>
      (await fake.listPodSandbox(filter)).map((s) => s.id).sort();
    expect(await ids({})).toEqual([a, b].sort());
    expect(await ids({ id: a })).toEqual([a]);
    expect(await ids({ state: 'SANDBOX_READY' })).toEqual([a]);
    expect(await ids({ state: 'SANDBOX_NOTREADY' })).toEqual([b]);
    expect(await ids({ labelSelector: { app: 'web' } })).toEqual([a, b].sort());
    expect(await ids({ labelSelector: { app: 'web', tier: 'back' } })).toEqual([b]);
    expect(await ids({ labelSelector: { app: 'we' } })).toEqual([]);
  });

  it('stopping a sandbox kills its running containers and marks it NOTREADY', async () => {
    const { fake, clock } = setup();
    const { sandboxId, containerId } = await runningContainer(fake);
    clock.advance(5_000 - clock.now());
    await fake.stopPodSandbox(sandboxId);

    expect((await fake.podSandboxStatus(sandboxId)).state).toBe('SANDBOX_NOTREADY');
    const status = await fake.containerStatus(containerId);
    expect(status).toMatchObject({ state: 'CONTAINER_EXITED', exitCode: 137, finishedAt: 5_000 });
  });

  it('remove of an unknown sandbox succeeds; stop and status of one are NOT_FOUND (which the agent takes as done)', async () => {
    const { fake } = setup();
    expect(await rejection(fake.stopPodSandbox('nope'))).toMatchObject({ call: 'StopPodSandbox', code: 'NOT_FOUND' });
    await expect(fake.removePodSandbox('nope')).resolves.toBeUndefined();
    const err = await rejection(fake.podSandboxStatus('nope'));
    expect(err).toMatchObject({ call: 'PodSandboxStatus', code: 'NOT_FOUND' });
  });

  it('removing a sandbox removes its containers too', async () => {
    const { fake } = setup();
    const { sandboxId, containerId } = await runningContainer(fake);
    await fake.removePodSandbox(sandboxId);
    expect(await fake.listContainers()).toEqual([]);
    expect(fake.getContainer(containerId)).toBeUndefined();
    expect(await fake.listPodSandbox()).toEqual([]);
  });
});

describe('the in-process simulated runtime: containers', () => {
  it('walks a container through created, running and exited with timestamps from now()', async () => {
    const { fake, clock } = setup();
    const config = sandboxConfig('web');
    const sandboxId = await fake.runPodSandbox(config);
    clock.advance(2_000 - clock.now());
    const id = await fake.createContainer(sandboxId, containerConfig('app'), config);
    expect((await fake.containerStatus(id)).state).toBe('CONTAINER_CREATED');
    clock.advance(3_000 - clock.now());
    await fake.startContainer(id);
    clock.advance(4_000 - clock.now());
    fake.exitContainer(id, 0);

    const status = await fake.containerStatus(id);
    expect(status).toMatchObject({
      state: 'CONTAINER_EXITED',
      createdAt: 2_000,
      startedAt: 3_000,
      finishedAt: 4_000,
      exitCode: 0,
      reason: 'Completed',
    });
    // ContainerStatus reports the repo digest, as containerd does.
    expect(status.imageRef).toMatch(/@sha256:/);
  });

  it('a stop with no grace kills (137); a process that traps TERM ends with its own code', async () => {
    const { fake } = setup();
    const { containerId: killed } = await runningContainer(fake, 'a');
    const config = sandboxConfig('b');
    const sandboxId = await fake.runPodSandbox(config);
    const trapping = { ...containerConfig('app'), command: ['sh', '-c', "trap 'exit 0' TERM; sleep 3600 & wait"] };
    const graceful = await fake.createContainer(sandboxId, trapping, config);
    await fake.startContainer(graceful);

    await fake.stopContainer(killed, 0);
    await fake.stopContainer(graceful, 30);

    expect(await fake.containerStatus(killed)).toMatchObject({ exitCode: 137 });
    expect(await fake.containerStatus(graceful)).toMatchObject({ exitCode: 0, reason: 'Completed' });
  });

  it('refuses to remove a running container, and removes it once stopped', async () => {
    const { fake } = setup();
    const { containerId } = await runningContainer(fake);
    const err = await rejection(fake.removeContainer(containerId));
    expect(err).toMatchObject({ call: 'RemoveContainer', code: 'FAILED_PRECONDITION' });

    await fake.stopContainer(containerId, 0);
    await fake.removeContainer(containerId);
    expect(fake.getContainer(containerId)).toBeUndefined();
  });

  it('is idempotent for stop and remove of unknown containers, NOT_FOUND for status and start', async () => {
    const { fake } = setup();
    await expect(fake.stopContainer('ghost', 10)).resolves.toBeUndefined();
    await expect(fake.removeContainer('ghost')).resolves.toBeUndefined();
    expect(await rejection(fake.containerStatus('ghost'))).toMatchObject({ call: 'ContainerStatus', code: 'NOT_FOUND' });
    expect(await rejection(fake.startContainer('ghost'))).toMatchObject({ call: 'StartContainer', code: 'NOT_FOUND' });
  });

  it('refuses to create a container from an image that is not present', async () => {
    const { fake } = setup();
    const config = sandboxConfig('web');
    const sandboxId = await fake.runPodSandbox(config);
    const missing = { ...containerConfig('app'), image: { image: 'not/pulled:1' } };
    expect(await rejection(fake.createContainer(sandboxId, missing, config))).toMatchObject({ code: 'NOT_FOUND' });
  });

  it('filters containers by id, state, sandbox and labels', async () => {
    const { fake } = setup();
    const { sandboxId: s1, containerId: c1 } = await runningContainer(fake, 'a', 'app');
    const { sandboxId: s2, containerId: c2 } = await runningContainer(fake, 'b', 'app');
    const config = sandboxConfig('a');
    const c3 = await fake.createContainer(s1, containerConfig('sidecar', { role: 'proxy' }), config);
    fake.exitContainer(c2, 1);

    const ids = async (filter: Parameters<TestRuntime['listContainers']>[0]): Promise<string[]> =>
      (await fake.listContainers(filter)).map((c) => c.id).sort();
    expect(await ids({ podSandboxId: s1 })).toEqual([c1, c3].sort());
    expect(await ids({ podSandboxId: s2 })).toEqual([c2]);
    expect(await ids({ state: 'CONTAINER_RUNNING' })).toEqual([c1]);
    expect(await ids({ state: 'CONTAINER_EXITED' })).toEqual([c2]);
    expect(await ids({ id: c3 })).toEqual([c3]);
    expect(await ids({ labelSelector: { container: 'app' } })).toEqual([c1, c2].sort());
    expect(await ids({ labelSelector: { container: 'sidecar', role: 'proxy' } })).toEqual([c3]);
    expect(await ids({ podSandboxId: s2, labelSelector: { container: 'sidecar' } })).toEqual([]);
  });

  it('fails a start whose log file cannot be made, and a reopen (after a rotation) too, as containerd does; the running container goes on', async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'statelet-simlogs-'));
    try {
      const { fake } = setup();
      const config = podSandboxConfig('web', { logDirectory: dir, labels: { app: 'web' } });
      const sandboxId = await fake.runPodSandbox(config);
      // A file where a container's log directory goes: no log file can be made under it.
      writeFileSync(path.join(dir, 'blocked'), '');
      const blocked = await fake.createContainer(sandboxId, containerConfig('blocked'), config);
      const refused = await rejection(fake.startContainer(blocked));
      expect(refused).toMatchObject({ call: 'StartContainer', code: 'UNKNOWN' });
      expect(refused.message).toContain(`failed to create container loggers: failed to create and open log file: EEXIST: file already exists, mkdir '${path.join(dir, 'blocked')}'`);
      expect(fake.getContainer(blocked)?.state).toBe('CONTAINER_CREATED');

      const app = await fake.createContainer(sandboxId, containerConfig('app'), config);
      await fake.startContainer(app);
      rmSync(path.join(dir, 'app'), { recursive: true });
      writeFileSync(path.join(dir, 'app'), '');
      const reopen = await rejection(fake.reopenContainerLog(app));
      expect(reopen).toMatchObject({ call: 'ReopenContainerLog', code: 'UNKNOWN' });
      expect(reopen.message).toContain('failed to create and open log file: EEXIST');
      expect(fake.getContainer(app)?.state).toBe('CONTAINER_RUNNING');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('runs exec through the scripted handler only for running containers', async () => {
    const { fake } = setup();
    const { containerId } = await runningContainer(fake);
    fake.setExecHandler((id, cmd) => ({ stdout: Buffer.from(`${id}:${cmd.join(' ')}`), stderr: Buffer.alloc(0), exitCode: 3 }));
    const result = await fake.execSync(containerId, ['cat', '/ready'], 1);
    expect(result.stdout.toString()).toBe(`${containerId}:cat /ready`);
    expect(result.exitCode).toBe(3);

    fake.exitContainer(containerId, 0);
    expect(await rejection(fake.execSync(containerId, ['true'], 1))).toMatchObject({ code: 'FAILED_PRECONDITION' });
  });
});

describe('the fault decorator', () => {
  it('fails the next N calls of a method, then recovers', async () => {
    const { fake } = setup();
    fake.failNext('version', 'UNAVAILABLE', 'socket gone', 2);
    expect(await rejection(fake.version())).toMatchObject({ call: 'Version', code: 'UNAVAILABLE', detail: 'socket gone' });
    expect(await rejection(fake.version())).toMatchObject({ code: 'UNAVAILABLE' });
    await expect(fake.version()).resolves.toMatchObject({ runtimeApiVersion: 'v1' });
  });

  it('a scripted failure leaves state untouched', async () => {
    const { fake } = setup();
    const { containerId } = await runningContainer(fake);
    fake.failNext('stopContainer', 'DEADLINE_EXCEEDED');
    await rejection(fake.stopContainer(containerId, 30));
    expect((await fake.containerStatus(containerId)).state).toBe('CONTAINER_RUNNING');
  });

  it('fails every call until cleared', async () => {
    const { fake } = setup();
    fake.failAlways('listPodSandbox', 'INTERNAL');
    for (let i = 0; i < 3; i++) expect(await rejection(fake.listPodSandbox())).toMatchObject({ code: 'INTERNAL' });
    fake.clearFailures('listPodSandbox');
    await expect(fake.listPodSandbox()).resolves.toEqual([]);
  });

  it('holds calls until the test releases them, applying their effect on release', async () => {
    const { fake } = setup();
    const config = sandboxConfig('web');
    const sandboxId = await fake.runPodSandbox(config);
    const containerId = await fake.createContainer(sandboxId, containerConfig('app'), config);
    const hold = fake.holdCalls('startContainer');

    let settled = false;
    const start = fake.startContainer(containerId).then(() => {
      settled = true;
    });
    await hold.whenPending(1);
    expect(hold.pending).toBe(1);
    expect(settled).toBe(false);
    expect((await fake.containerStatus(containerId)).state).toBe('CONTAINER_CREATED');

    hold.releaseAll();
    await start;
    expect(settled).toBe(true);
    expect((await fake.containerStatus(containerId)).state).toBe('CONTAINER_RUNNING');
  });

  it('releaseNext lets one call through and keeps holding; failAll fails the rest', async () => {
    const { fake } = setup();
    const hold = fake.holdCalls('version');
    const first = fake.version();
    const second = fake.version();
    await hold.whenPending(2);

    expect(hold.releaseNext()).toBe(true);
    await expect(first).resolves.toMatchObject({ runtimeName: 'statelet-sim' });
    const third = fake.version();
    await hold.whenPending(2);

    hold.failAll('DEADLINE_EXCEEDED', 'too slow');
    expect(await rejection(second)).toMatchObject({ call: 'Version', code: 'DEADLINE_EXCEEDED', detail: 'too slow' });
    expect(await rejection(third)).toMatchObject({ code: 'DEADLINE_EXCEEDED' });
    await expect(fake.version()).resolves.toMatchObject({ runtimeName: 'statelet-sim' });
  });

  it('cancels a held call when its signal aborts', async () => {
    const { fake } = setup();
    const hold = fake.holdCalls('status');
    const controller = new AbortController();
    const call = fake.status({ signal: controller.signal });
    await hold.whenPending(1);
    controller.abort();
    expect(await rejection(call)).toMatchObject({ call: 'Status', code: 'CANCELLED' });
    expect(hold.pending).toBe(0);
  });

  it('records every call with its target', async () => {
    const { fake } = setup();
    const { sandboxId, containerId } = await runningContainer(fake);
    await fake.stopContainer(containerId, 10);
    await fake.pullImage('busybox:1');
    expect(fake.callLog()).toEqual([
      'runPodSandbox(default/web/uid-web/0)',
      `createContainer(${sandboxId}/app)`,
      `startContainer(${containerId})`,
      `stopContainer(${containerId})`,
      'pullImage(busybox:1)',
    ]);
    expect(fake.callLog('stopContainer')).toEqual([`stopContainer(${containerId})`]);
  });
});

describe('the in-process simulated runtime: images', () => {
  it('pulls images unless scripted to fail, and reports status by name or id', async () => {
    const { fake } = setup();
    expect(await fake.imageStatus('nginx:1')).toBeNull();
    const before = (await fake.listImages()).length;
    const ref = await fake.pullImage('nginx:1');
    expect(await fake.imageStatus('nginx:1')).toMatchObject({ id: ref, repoTags: ['docker.io/library/nginx:1'] });
    expect(await fake.imageStatus(ref)).toMatchObject({ id: ref });

    fake.failPull('private/secret:1');
    expect(await rejection(fake.pullImage('private/secret:1'))).toMatchObject({ call: 'PullImage', code: 'NOT_FOUND' });
    expect(await fake.imageStatus('private/secret:1')).toBeNull();

    await fake.removeImage('nginx:1');
    await fake.removeImage('nginx:1');
    expect(await fake.listImages()).toHaveLength(before);
  });
});

describe('the in-process simulated runtime: events, through the decorator', () => {
  it('streams lifecycle events in order, including those before the first read', async () => {
    const { fake, clock } = setup();
    const iterator = fake.containerEvents()[Symbol.asyncIterator]();
    const { sandboxId, containerId } = await runningContainer(fake);
    clock.advance(9_000 - clock.now());
    await fake.stopContainer(containerId, 0);
    await fake.removePodSandbox(sandboxId);

    // The sandbox's own events come too (as containerd 1.7+ sends them): keep the container's.
    const events: ContainerEvent[] = [];
    while (events.length < 4) {
      const next = await iterator.next();
      if (next.done) break;
      if (next.value.containerId === containerId) events.push(next.value);
    }
    expect(events.map((e) => e.type)).toEqual([
      'CONTAINER_CREATED_EVENT',
      'CONTAINER_STARTED_EVENT',
      'CONTAINER_STOPPED_EVENT',
      'CONTAINER_DELETED_EVENT',
    ]);
    expect(events.every((e) => e.containerId === containerId)).toBe(true);
    expect(events[2]?.createdAt).toBe(9_000);
    expect(events[0]?.podSandboxMetadata?.name).toBe('web');
    await iterator.return?.();
    expect(fake.openEventStreams).toBe(0);
  });

  it('delivers an event to a reader already waiting', async () => {
    const { fake } = setup();
    const iterator = fake.containerEvents()[Symbol.asyncIterator]();
    const pending = iterator.next();
    const { containerId } = await runningContainer(fake);
    const first = await pending;
    expect(first.value).toMatchObject({ podSandboxMetadata: { name: 'web' }, type: 'CONTAINER_CREATED_EVENT' });
    expect(containerId).toBeTruthy();
  });

  it('throws UNIMPLEMENTED when switched off, like containerd 1.6', async () => {
    const { fake } = setup();
    fake.setEventsUnimplemented();
    const iterator = fake.containerEvents()[Symbol.asyncIterator]();
    expect(await rejection(iterator.next())).toMatchObject({ call: 'GetContainerEvents', code: 'UNIMPLEMENTED' });
  });

  it('ends with CANCELLED when the signal aborts, and with the given code when broken', async () => {
    const { fake } = setup();
    const controller = new AbortController();
    const cancelled = fake.containerEvents({ signal: controller.signal })[Symbol.asyncIterator]();
    const broken = fake.containerEvents()[Symbol.asyncIterator]();
    const waiting = cancelled.next();
    controller.abort();
    expect(await rejection(waiting)).toMatchObject({ code: 'CANCELLED' });

    const brokenNext = broken.next();
    fake.breakEventStreams('UNAVAILABLE');
    expect(await rejection(brokenNext)).toMatchObject({ code: 'UNAVAILABLE' });
  });
});

describe('the in-process adapter itself', () => {
  it('fails a call whose signal has fired with CANCELLED, naming the call, and maps engine errors to CriError', async () => {
    const runtime = inProcessRuntime(new SimEngine({ clock: new ManualClock(0), pullDelayMs: 0 }));
    const controller = new AbortController();
    controller.abort();
    expect(await rejection(runtime.listContainers({}, { signal: controller.signal }))).toMatchObject({ call: 'ListContainers', code: 'CANCELLED' });
    expect(await rejection(runtime.containerStatus('ghost'))).toMatchObject({ call: 'ContainerStatus', code: 'NOT_FOUND' });
  });
});
