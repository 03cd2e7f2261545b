import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { CriClient } from '../../src/runtime/cri/client.ts';
import type { ManualClock } from '../support/manualClock.ts';
import { SimEngine } from '../../src/runtime/sim/engine.ts';
import { startSimRuntime, type SimRuntime } from '../../src/runtime/sim/server.ts';
import { CriError, NamespaceMode, type ContainerConfig, type ContainerEvent, type PodSandboxConfig } from '../../src/runtime/types.ts';
import { type SimOverGrpc, containerConfig as baseContainerConfig, networkNamespace, podSandboxConfig, rejection, simOverGrpc } from './support.ts';

let grpc: SimOverGrpc;
let dir: string;
let clock: ManualClock;
let sim: SimRuntime;
let client: CriClient;

beforeEach(async () => {
  grpc = await simOverGrpc('statelet-sim-');
  ({ dir, clock, sim, client } = grpc);
});

afterEach(() => grpc.close());

function podConfig(name: string, options: { hostNetwork?: boolean; logDirectory?: string } = {}): PodSandboxConfig {
  const uid = `uid-${name}`;
  return podSandboxConfig(name, {
    logDirectory: options.logDirectory ?? '',
    labels: { 'io.kubernetes.pod.uid': uid, 'io.kubernetes.pod.name': name, app: 'demo' },
    linux: networkNamespace(options.hostNetwork ? NamespaceMode.NODE : NamespaceMode.POD),
  });
}

function containerConfig(pod: PodSandboxConfig, name: string, command: string[], image = 'busybox'): ContainerConfig {
  return baseContainerConfig(name, {
    image: { image },
    command,
    envs: [{ key: 'GREETING', value: 'hello' }],
    labels: {
      'io.kubernetes.pod.uid': pod.metadata.uid,
      'io.kubernetes.container.name': name,
    },
  });
}

async function runContainer(pod: PodSandboxConfig, sandboxId: string, name: string, command: string[]): Promise<string> {
  const id = await client.createContainer(sandboxId, containerConfig(pod, name, command), pod);
  await client.startContainer(id);
  return id;
}

/** Resolves when the engine has received a StopContainer call, so the test can move the clock. */
function whenStopReceived(engine: SimEngine): Promise<void> {
  const original = engine.stopContainer.bind(engine);
  return new Promise((resolve) => {
    engine.stopContainer = (id, timeout) => {
      const stopped = original(id, timeout);
      resolve();
      return stopped;
    };
  });
}

async function expectCriError(promise: Promise<unknown>, code: string, message: RegExp | string): Promise<void> {
  const error = await rejection(promise);
  expect(error.code).toBe(code);
  expect(error.detail).toMatch(message);
}

describe('sim:// over gRPC', () => {
  it('identifies itself and reports ready', async () => {
    expect(await client.version()).toMatchObject({ runtimeName: 'statelet-sim', runtimeApiVersion: 'v1' });
    const status = await client.status();
    expect(status.conditions.map((c) => [c.type, c.status])).toEqual([
      ['RuntimeReady', true],
      ['NetworkReady', true],
    ]);
  });

  it("reports the supplementalGroupsPolicy feature, and each container's user as its process started", async () => {
    expect((await client.status()).features).toEqual({ supplementalGroupsPolicy: true });
    const pod = podConfig('who');
    const sandbox = await client.runPodSandbox(pod);
    const context = { privileged: false, namespaceOptions: {}, readonlyRootfs: false, noNewPrivs: false, maskedPaths: [], readonlyPaths: [] };
    const id = await client.createContainer(
      sandbox,
      { ...containerConfig(pod, 'app', ['sleep', '10']), linux: { securityContext: { ...context, runAsUser: 1000, runAsGroup: 3000, supplementalGroups: [2000, 4000], supplementalGroupsPolicy: 'Strict' } } },
      pod,
    );
    expect((await client.containerStatus(id)).user).toEqual({ linux: { uid: 1000, gid: 3000, supplementalGroups: [3000, 2000, 4000] } });
    const root = await client.createContainer(sandbox, containerConfig(pod, 'root', ['sleep', '10']), pod);
    expect((await client.containerStatus(root)).user).toEqual({ linux: { uid: 0, gid: 0, supplementalGroups: [0] } });
  });

  it('carries huge page limits, unified files and the swap limit over the wire into the container\'s cgroup files', async () => {
    const pod = podConfig('mem');
    const sandbox = await client.runPodSandbox(pod);
    const resources = {
      cpuPeriod: 100_000,
      cpuQuota: 10_000,
      cpuShares: 102,
      memoryLimitInBytes: 67_108_864,
      oomScoreAdj: -997,
      hugepageLimits: [
        { pageSize: '1GB', limit: 0 },
        { pageSize: '2MB', limit: 8_388_608 },
      ],
      unified: { 'memory.oom.group': '1', 'memory.swap.max': '0' },
    };
    const id = await client.createContainer(sandbox, { ...containerConfig(pod, 'app', ['sleep', '10']), linux: { resources } }, pod);
    await client.startContainer(id);
    const cat = async (file: string) => (await client.execSync(id, ['cat', `/sys/fs/cgroup/${file}`], 5)).stdout.toString().trim();
    expect([await cat('hugetlb.1GB.max'), await cat('hugetlb.2MB.max'), await cat('memory.oom.group'), await cat('memory.swap.max'), await cat('memory.max')]).toEqual(['0', '8388608', '1', '0', '67108864']);
  });

  it('gives pod-network sandboxes unique 127.x addresses and host-network ones none', async () => {
    const a = await client.runPodSandbox(podConfig('a'));
    const b = await client.runPodSandbox(podConfig('b'));
    const host = await client.runPodSandbox(podConfig('h', { hostNetwork: true }));
    const [sa, sb, sh] = await Promise.all([a, b, host].map((id) => client.podSandboxStatus(id)));
    expect(sa?.network?.ip).toMatch(/^127\.\d+\.\d+\.\d+$/);
    expect(sb?.network?.ip).toMatch(/^127\.\d+\.\d+\.\d+$/);
    expect(sa?.network?.ip).not.toBe(sb?.network?.ip);
    expect(sh?.network?.ip).toBe('');
    expect(sh?.networkMode).toBe(NamespaceMode.NODE);
    expect(sa).toMatchObject({ state: 'SANDBOX_READY', metadata: { name: 'a' }, createdAt: clock.now() });
  });

  it('refuses a hostname for a host-network sandbox, as runc under containerd does', async () => {
    await expectCriError(client.runPodSandbox({ ...podConfig('h', { hostNetwork: true }), hostname: 'h' }), 'UNKNOWN', /unable to set hostname without a private UTS namespace/);
  });

  it('a container that exits 3 is EXITED with exit code 3 and reason Error', async () => {
    const pod = podConfig('p');
    const sandbox = await client.runPodSandbox(pod);
    const id = await runContainer(pod, sandbox, 'c', ['sh', '-c', 'exit 3']);
    const status = await client.containerStatus(id);
    expect(status).toMatchObject({ state: 'CONTAINER_EXITED', exitCode: 3, reason: 'Error' });
    expect(status.finishedAt).toBe(clock.now());

    const ok = await runContainer(pod, sandbox, 'ok', ['true']);
    expect(await client.containerStatus(ok)).toMatchObject({ state: 'CONTAINER_EXITED', exitCode: 0, reason: 'Completed' });
  });

  it('runs a sleeping container on the engine clock', async () => {
    const pod = podConfig('p');
    const sandbox = await client.runPodSandbox(pod);
    const id = await runContainer(pod, sandbox, 'c', ['sh', '-c', 'sleep 10; exit 4']);
    expect((await client.containerStatus(id)).state).toBe('CONTAINER_RUNNING');
    clock.advance(10_000);
    expect(await client.containerStatus(id)).toMatchObject({ state: 'CONTAINER_EXITED', exitCode: 4 });
  });

  it('StopContainer on a TERM-ignoring container waits the full timeout, then kills (137)', async () => {
    const pod = podConfig('p');
    const sandbox = await client.runPodSandbox(pod);
    const id = await runContainer(pod, sandbox, 'c', ['sleep', '3600']);
    const received = whenStopReceived(sim.engine);
    let stopped = false;
    const stop = client.stopContainer(id, 30).then(() => {
      stopped = true;
    });
    await received;
    clock.advance(29_999);
    expect((await client.containerStatus(id)).state).toBe('CONTAINER_RUNNING');
    expect(stopped).toBe(false);
    clock.advance(1);
    await stop;
    expect(await client.containerStatus(id)).toMatchObject({ state: 'CONTAINER_EXITED', exitCode: 137, reason: 'Error' });
  });

  it('a second StopContainer with a shorter timeout brings the kill forward', async () => {
    const pod = podConfig('p');
    const sandbox = await client.runPodSandbox(pod);
    const id = await runContainer(pod, sandbox, 'c', ['sh', '-c', 'sleep 3600']);
    const first = whenStopReceived(sim.engine);
    const long = client.stopContainer(id, 300);
    await first;
    const second = whenStopReceived(sim.engine);
    const short = client.stopContainer(id, 2);
    await second;
    clock.advance(2000);
    await Promise.all([long, short]);
    expect((await client.containerStatus(id)).exitCode).toBe(137);
  });

  it('a TERM trap makes StopContainer return promptly with the trap exit code', async () => {
    const pod = podConfig('p');
    const sandbox = await client.runPodSandbox(pod);
    const id = await runContainer(pod, sandbox, 'c', ['sh', '-c', "trap 'exit 0' TERM; while true; do sleep 1; done"]);
    await client.stopContainer(id, 30);
    expect(await client.containerStatus(id)).toMatchObject({ state: 'CONTAINER_EXITED', exitCode: 0, reason: 'Completed' });
    // Stopping again, or stopping something unknown, is fine.
    await client.stopContainer(id, 30);
    await client.stopContainer('0123456789abcdef'.repeat(4), 30);
  });

  it('StopPodSandbox kills containers at once; RemovePodSandbox removes them', async () => {
    const pod = podConfig('p');
    const sandbox = await client.runPodSandbox(pod);
    const id = await runContainer(pod, sandbox, 'c', ['sleep', 'infinity']);
    await client.stopPodSandbox(sandbox);
    expect(await client.containerStatus(id)).toMatchObject({ state: 'CONTAINER_EXITED', exitCode: 137 });
    expect((await client.podSandboxStatus(sandbox)).state).toBe('SANDBOX_NOTREADY');
    await client.stopPodSandbox(sandbox);
    await client.removePodSandbox(sandbox);
    await expectCriError(client.containerStatus(id), 'NOT_FOUND', id);
    await expectCriError(client.podSandboxStatus(sandbox), 'NOT_FOUND', sandbox);
    await client.removePodSandbox(sandbox);
  });

  it('maps errors to gRPC codes naming the id', async () => {
    await expectCriError(client.containerStatus('nope'), 'NOT_FOUND', /container "nope" not found/);
    const pod = podConfig('p');
    const sandbox = await client.runPodSandbox(pod);
    const id = await runContainer(pod, sandbox, 'c', ['sleep', '100']);
    await expectCriError(client.removeContainer(id), 'FAILED_PRECONDITION', id);
    await expectCriError(client.startContainer(id), 'FAILED_PRECONDITION', id);
    await expectCriError(client.runPodSandbox(pod), 'ALREADY_EXISTS', /reserved/);
    await expectCriError(
      client.createContainer(sandbox, containerConfig(pod, 'c', ['true']), pod),
      'ALREADY_EXISTS',
      /reserved/,
    );
  });

  it('filters sandboxes and containers by label, sandbox, state and id', async () => {
    const pods = ['x', 'y', 'z'].map((name) => podConfig(name));
    const ids: Record<string, { sandbox: string; running: string; exited: string }> = {};
    for (const pod of pods) {
      const sandbox = await client.runPodSandbox(pod);
      ids[pod.metadata.name] = {
        sandbox,
        running: await runContainer(pod, sandbox, 'main', ['sleep', 'infinity']),
        exited: await runContainer(pod, sandbox, 'init', ['true']),
      };
    }
    const y = ids['y'];
    if (!y) throw new Error('pod y missing');
    const byUid = await client.listContainers({ labelSelector: { 'io.kubernetes.pod.uid': 'uid-y' } });
    expect(byUid.map((c) => c.id).sort()).toEqual([y.running, y.exited].sort());
    expect(byUid.every((c) => c.podSandboxId === y.sandbox)).toBe(true);

    const byUidAndName = await client.listContainers({
      labelSelector: { 'io.kubernetes.pod.uid': 'uid-y', 'io.kubernetes.container.name': 'init' },
    });
    expect(byUidAndName.map((c) => c.id)).toEqual([y.exited]);
    expect((await client.listContainers({ podSandboxId: y.sandbox })).length).toBe(2);
    expect((await client.listContainers({ state: 'CONTAINER_RUNNING' })).length).toBe(3);
    expect((await client.listContainers({ podSandboxId: y.sandbox, state: 'CONTAINER_EXITED' })).map((c) => c.id)).toEqual([y.exited]);
    expect((await client.listContainers({ id: y.running })).map((c) => c.id)).toEqual([y.running]);
    expect((await client.listContainers()).length).toBe(6);

    expect((await client.listPodSandbox({ labelSelector: { app: 'demo' } })).length).toBe(3);
    expect((await client.listPodSandbox({ labelSelector: { 'io.kubernetes.pod.uid': 'uid-x' } })).map((s) => s.metadata.name)).toEqual(['x']);
    await client.stopPodSandbox(y.sandbox);
    expect((await client.listPodSandbox({ state: 'SANDBOX_READY' })).length).toBe(2);
    expect((await client.listPodSandbox({ id: y.sandbox }))[0]?.state).toBe('SANDBOX_NOTREADY');
  });

  it('lists each sandbox and container as the same listing while its state holds, and a change at once', async () => {
    const pod = podConfig('kept');
    const sandbox = await client.runPodSandbox(pod);
    const id = await runContainer(pod, sandbox, 'main', ['sleep', 'infinity']);
    const [first] = sim.engine.listContainers({ id });
    expect(sim.engine.listContainers({ id })[0]).toBe(first);
    expect(Object.isFrozen(first)).toBe(true);
    expect((await client.listContainers()).map((c) => c.state)).toEqual(['CONTAINER_RUNNING']);
    expect((await client.listPodSandbox()).map((s) => s.state)).toEqual(['SANDBOX_READY']);

    // The server keeps each listing's encoding: what changed must be written anew.
    await client.stopPodSandbox(sandbox);
    expect(sim.engine.listContainers({ id })[0]).not.toBe(first);
    expect((await client.listContainers()).map((c) => [c.id, c.state])).toEqual([[id, 'CONTAINER_EXITED']]);
    expect((await client.listPodSandbox()).map((s) => [s.id, s.state])).toEqual([[sandbox, 'SANDBOX_NOTREADY']]);
  });

  it('pulls images; missing images fail the pull; creating from an unpulled image fails', async () => {
    expect(await client.imageStatus('docker.io/library/nginx:1.25')).toBeNull();
    const ref = await client.pullImage('nginx:1.25');
    expect(ref).toMatch(/^sha256:[0-9a-f]{64}$/);
    const info = await client.imageStatus('docker.io/library/nginx:1.25');
    expect(info).toMatchObject({ id: ref, repoTags: ['docker.io/library/nginx:1.25'] });
    expect(await client.imageStatus('busybox')).not.toBeNull();

    await expectCriError(client.pullImage('example.com/doesnotexist:1'), 'NOT_FOUND', /failed to pull and unpack image "example.com\/doesnotexist:1".*not found/);
    await expectCriError(client.pullImage('sim.invalid/app:1'), 'NOT_FOUND', /not found/);

    const pod = podConfig('p');
    const sandbox = await client.runPodSandbox(pod);
    await expectCriError(
      client.createContainer(sandbox, containerConfig(pod, 'c', ['true'], 'redis:7'), pod),
      'NOT_FOUND',
      /image "redis:7" not found/,
    );
    await client.removeImage('nginx:1.25');
    expect(await client.imageStatus('nginx:1.25')).toBeNull();
  });

  it('missing images can be configured through the constructor', async () => {
    const engine = new SimEngine({ clock, pullDelayMs: 0, missingImages: ['private/app:2'] });
    await expect(engine.pullImage('docker.io/private/app:2')).rejects.toThrow(/not found/);
    const ref = await engine.pullImage('private/app:3');
    expect(engine.imageStatus('private/app:3')).toMatchObject({ id: ref, repoTags: ['docker.io/private/app:3'] });
    await engine.close();
  });

  it('streams container events to every subscriber', async () => {
    const controller = new AbortController();
    const pod = podConfig('p');
    const sandbox = await client.runPodSandbox(pod);
    const collect = async (): Promise<ContainerEvent[]> => {
      const seen: ContainerEvent[] = [];
      try {
        for await (const event of client.containerEvents({ signal: controller.signal })) {
          if (event.containerId === sandbox) continue; // sandbox lifecycle events, as containerd sends
          seen.push(event);
          if (event.type === 'CONTAINER_DELETED_EVENT') break;
        }
      } catch (error) {
        if (!(error instanceof CriError && error.code === 'CANCELLED')) throw error;
      }
      return seen;
    };
    const first = collect();
    const second = collect();
    // The streams are open once the engine has both subscribers; a status call round-trips after them.
    await waitForSubscribers(2);
    const id = await runContainer(pod, sandbox, 'c', ['sh', '-c', 'exit 0']);
    await client.removeContainer(id);
    for (const events of await Promise.all([first, second])) {
      expect(events.map((e) => e.type)).toEqual([
        'CONTAINER_CREATED_EVENT',
        'CONTAINER_STARTED_EVENT',
        'CONTAINER_STOPPED_EVENT',
        'CONTAINER_DELETED_EVENT',
      ]);
      expect(events.every((e) => e.containerId === id && e.podSandboxMetadata?.name === 'p')).toBe(true);
    }
    controller.abort();
  });

  it('ExecSync runs against the container filesystem and honours its timeout', async () => {
    const pod = podConfig('p');
    const sandbox = await client.runPodSandbox(pod);
    const id = await runContainer(pod, sandbox, 'c', ['sh', '-c', 'echo ok > /tmp/healthy; sleep infinity']);
    const ok = await client.execSync(id, ['cat', '/tmp/healthy'], 5);
    expect(ok.stdout.toString()).toBe('ok\n');
    expect(ok.exitCode).toBe(0);
    const env = await client.execSync(id, ['sh', '-c', 'echo $GREETING; rm /tmp/healthy; test -e /tmp/healthy'], 5);
    expect(env).toMatchObject({ exitCode: 1 });
    expect(env.stdout.toString()).toBe('hello\n');
    const missing = await client.execSync(id, ['cat', '/tmp/healthy'], 5);
    expect(missing.exitCode).toBe(1);
    expect(missing.stderr.toString()).toMatch(/No such file/);

    const execStarted = new Promise<void>((resolve) => {
      const original = sim.engine.execSync.bind(sim.engine);
      sim.engine.execSync = (...args) => {
        const result = original(...args);
        resolve();
        return result;
      };
    });
    const slow = client.execSync(id, ['sleep', '10'], 1);
    await execStarted;
    clock.advance(1000);
    await expectCriError(slow, 'DEADLINE_EXCEEDED', /timeout/);
  });

  it('writes container output to the CRI log file', async () => {
    const logDirectory = join(dir, 'pods', 'p');
    const pod = podConfig('p', { logDirectory });
    const sandbox = await client.runPodSandbox(pod);
    const id = await runContainer(pod, sandbox, 'c', ['sh', '-c', 'echo "$GREETING world"; echo oops >&2; echo -n partial']);
    expect((await client.containerStatus(id)).logPath).toBe(join(logDirectory, 'c/0.log'));
    await sim.engine.flushLogs();
    const log = await readFile(join(logDirectory, 'c', '0.log'), 'utf8');
    const ts = '2024-01-01T00:00:00.000000000Z';
    expect(log).toBe(`${ts} stdout F hello world\n${ts} stderr F oops\n${ts} stdout P partial\n`);
  });

  it('holds 1,000 sandboxes with 2,000 containers and lists per pod through the uid index', async () => {
    const pods = Array.from({ length: 1000 }, (_, i) => podConfig(`pod-${i}`));
    const sandboxes = await Promise.all(pods.map((pod) => client.runPodSandbox(pod)));
    await Promise.all(
      pods.map(async (pod, i) => {
        const sandbox = sandboxes[i] ?? '';
        await runContainer(pod, sandbox, 'app', ['sh', '-c', "trap 'exit 0' TERM; while true; do sleep 10; done"]);
        await runContainer(pod, sandbox, 'sidecar', ['sleep', 'infinity']);
      }),
    );
    expect(sim.engine.size).toEqual({ sandboxes: 1000, containers: 2000 });
    expect(new Set((await Promise.all(sandboxes.map((id) => client.podSandboxStatus(id)))).map((s) => s.network?.ip)).size).toBe(1000);
    const perPod = await Promise.all(pods.map((pod) => client.listContainers({ labelSelector: { 'io.kubernetes.pod.uid': pod.metadata.uid } })));
    expect(perPod.every((list) => list.length === 2 && list.every((c) => c.state === 'CONTAINER_RUNNING'))).toBe(true);
    // Only the looping containers hold a timer; `sleep infinity` holds none.
    expect(clock.pendingTimers).toBe(1000);
    clock.advance(60_000);
    expect((await client.listContainers({ state: 'CONTAINER_RUNNING' })).length).toBe(2000);
  }, 60_000);
});

describe('server lifecycle', () => {
  it('replaces a stale socket file and removes the socket on close', async () => {
    const socketPath = join(dir, 'stale.sock');
    await writeFile(socketPath, 'left over');
    const other = await startSimRuntime({ socketPath, pullDelayMs: 0 });
    const otherClient = new CriClient(other.endpoint);
    expect((await otherClient.version()).runtimeName).toBe('statelet-sim');
    otherClient.close();
    await other.close();
    await expect(readFile(socketPath)).rejects.toThrow(/ENOENT/);
  });
});

/** Waits until the engine has `count` event subscribers, via a round-trip after each subscription. */
async function waitForSubscribers(count: number): Promise<void> {
  while (sim.engine.subscriberCount < count) await client.version();
}
