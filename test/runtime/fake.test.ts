import { describe, expect, it } from 'vitest';
import { FakeRuntime } from '../../src/runtime/fake.ts';
import { NamespaceMode, type ContainerConfig, type PodSandboxConfig } from '../../src/runtime/types.ts';
import { containerConfig as baseContainerConfig, networkNamespace, podSandboxConfig, rejection, take } from './support.ts';

const IMAGE = 'registry.example/app:1';

function sandboxConfig(name: string, options: { labels?: Record<string, string>; hostNetwork?: boolean } = {}): PodSandboxConfig {
  return podSandboxConfig(name, {
    logDirectory: `/var/log/pods/default_${name}`,
    labels: options.labels ?? { app: name },
    ...(options.hostNetwork ? { linux: networkNamespace(NamespaceMode.NODE) } : {}),
  });
}

function containerConfig(name: string, labels: Record<string, string> = {}): ContainerConfig {
  return baseContainerConfig(name, { image: { image: IMAGE }, labels: { container: name, ...labels } });
}

/** A fake whose clock only moves when the test says so. */
function setup(): { fake: FakeRuntime; clock: { ms: number } } {
  const clock = { ms: 1_000 };
  const fake = new FakeRuntime({ now: () => clock.ms });
  fake.addImage(IMAGE);
  return { fake, clock };
}

async function runningContainer(fake: FakeRuntime, pod = 'web', name = 'app'): Promise<{ sandboxId: string; containerId: string }> {
  const config = sandboxConfig(pod);
  const sandboxId = await fake.runPodSandbox(config);
  const containerId = await fake.createContainer(sandboxId, containerConfig(name), config);
  await fake.startContainer(containerId);
  return { sandboxId, containerId };
}

describe('FakeRuntime sandboxes', () => {
  it('gives pod-network sandboxes distinct IPs and host-network sandboxes none', async () => {
    const { fake, clock } = setup();
    const a = await fake.runPodSandbox(sandboxConfig('a'));
    clock.ms = 2_000;
    const b = await fake.runPodSandbox(sandboxConfig('b'));
    const host = await fake.runPodSandbox(sandboxConfig('h', { hostNetwork: true }));

    const statusA = await fake.podSandboxStatus(a);
    const statusB = await fake.podSandboxStatus(b);
    const statusHost = await fake.podSandboxStatus(host);
    expect(statusA.network?.ip).toMatch(/^10\.244\.0\.\d+$/);
    expect(statusB.network?.ip).not.toBe(statusA.network?.ip);
    expect(statusA.networkMode).toBe(NamespaceMode.POD);
    expect(statusHost.network).toBeUndefined();
    expect(statusHost.networkMode).toBe(NamespaceMode.NODE);
    expect(statusA.createdAt).toBe(1_000);
    expect(statusB.createdAt).toBe(2_000);
    expect(statusA.metadata).toEqual({ name: 'a', uid: 'uid-a', namespace: 'default', attempt: 0 });
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

    const ids = async (filter: Parameters<FakeRuntime['listPodSandbox']>[0]): Promise<string[]> =>
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
    clock.ms = 5_000;
    await fake.stopPodSandbox(sandboxId);

    expect((await fake.podSandboxStatus(sandboxId)).state).toBe('SANDBOX_NOTREADY');
    const status = await fake.containerStatus(containerId);
    expect(status).toMatchObject({ state: 'CONTAINER_EXITED', exitCode: 137, reason: 'Error', finishedAt: 5_000 });
  });

  it('stop and remove of unknown sandboxes succeed; status of one is NOT_FOUND', async () => {
    const { fake } = setup();
    await expect(fake.stopPodSandbox('nope')).resolves.toBeUndefined();
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

describe('FakeRuntime containers', () => {
  it('walks a container through created, running and exited with timestamps from now()', async () => {
    const { fake, clock } = setup();
    const config = sandboxConfig('web');
    const sandboxId = await fake.runPodSandbox(config);
    clock.ms = 2_000;
    const id = await fake.createContainer(sandboxId, containerConfig('app'), config);
    expect((await fake.containerStatus(id)).state).toBe('CONTAINER_CREATED');
    clock.ms = 3_000;
    await fake.startContainer(id);
    clock.ms = 4_000;
    fake.exitContainer(id, 0);

    const status = await fake.containerStatus(id);
    expect(status).toMatchObject({
      state: 'CONTAINER_EXITED',
      createdAt: 2_000,
      startedAt: 3_000,
      finishedAt: 4_000,
      exitCode: 0,
      reason: 'Completed',
      image: IMAGE,
      logPath: '/var/log/pods/default_web/app/0.log',
    });
    expect(status.imageRef).toMatch(/^sha256:/);
  });

  it('stop kills with 137 unless the container was scripted to exit on SIGTERM', async () => {
    const { fake } = setup();
    const { containerId: killed } = await runningContainer(fake, 'a');
    const { containerId: graceful } = await runningContainer(fake, 'b');
    fake.exitOnTerm(graceful, 0);

    await fake.stopContainer(killed, 30);
    await fake.stopContainer(graceful, 30);

    expect(await fake.containerStatus(killed)).toMatchObject({ exitCode: 137, reason: 'Error' });
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

    const ids = async (filter: Parameters<FakeRuntime['listContainers']>[0]): Promise<string[]> =>
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

describe('FakeRuntime scripting', () => {
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
    await expect(first).resolves.toMatchObject({ runtimeName: 'fake' });
    const third = fake.version();
    await hold.whenPending(2);

    hold.failAll('DEADLINE_EXCEEDED', 'too slow');
    expect(await rejection(second)).toMatchObject({ call: 'Version', code: 'DEADLINE_EXCEEDED', detail: 'too slow' });
    expect(await rejection(third)).toMatchObject({ code: 'DEADLINE_EXCEEDED' });
    await expect(fake.version()).resolves.toMatchObject({ runtimeName: 'fake' });
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

describe('FakeRuntime images', () => {
  it('pulls images unless scripted to fail, and reports status by name or id', async () => {
    const { fake } = setup();
    expect(await fake.imageStatus('nginx:1')).toBeNull();
    const ref = await fake.pullImage('nginx:1');
    expect(await fake.imageStatus('nginx:1')).toMatchObject({ id: ref, repoTags: ['nginx:1'] });
    expect(await fake.imageStatus(ref)).toMatchObject({ id: ref });

    fake.failPull('private/secret:1', 'pull access denied', 'UNKNOWN');
    expect(await rejection(fake.pullImage('private/secret:1'))).toMatchObject({
      call: 'PullImage',
      code: 'UNKNOWN',
      detail: 'pull access denied',
    });
    expect(await fake.imageStatus('private/secret:1')).toBeNull();

    await fake.removeImage('nginx:1');
    await fake.removeImage('nginx:1');
    expect((await fake.listImages()).map((i) => i.repoTags[0])).toEqual([IMAGE]);
  });
});

describe('FakeRuntime events', () => {
  it('streams lifecycle events in order, including those before the first read', async () => {
    const { fake, clock } = setup();
    const iterator = fake.containerEvents()[Symbol.asyncIterator]();
    const { sandboxId, containerId } = await runningContainer(fake);
    clock.ms = 9_000;
    await fake.stopContainer(containerId, 0);
    await fake.removePodSandbox(sandboxId);

    const events = await take(iterator, 4);
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
    expect(first.value).toMatchObject({ containerId, type: 'CONTAINER_CREATED_EVENT' });
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
