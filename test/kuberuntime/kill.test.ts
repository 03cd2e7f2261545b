import { afterEach, describe, expect, it } from 'vitest';
import type { Container, Pod } from '../../src/api/types.ts';
import { killPodRuntime } from '../../src/kuberuntime/execute.ts';
import { killGracePeriod } from '../../src/kuberuntime/kill.ts';
import { readPodStatus } from '../../src/kuberuntime/podStatus.ts';
import { container, makePod } from '../support/pods.ts';
import { type LifecycleRig, containersByName, lifecycleRig, loopbackServer, syncOnce } from './support.ts';

const preStop = (...command: string[]): Container['lifecycle'] => ({ preStop: { exec: { command } } });

/** Syncs until every container of the pod runs (sidecars start one sync after another). */
async function runAll(rig: LifecycleRig, pod: Pod): Promise<Map<string, string>> {
  const names = [...(pod.spec.initContainers ?? []), ...pod.spec.containers].map((c) => c.name);
  for (let round = 0; round < names.length + 1; round++) {
    const byName = await containersByName(rig, pod);
    if (names.every((n) => byName.get(n)?.state === 'CONTAINER_RUNNING')) {
      return new Map(names.map((n) => [byName.get(n)!.id, n]));
    }
    await syncOnce(rig, pod);
  }
  throw new Error('containers did not all start');
}

async function kill(rig: LifecycleRig, pod: Pod | undefined, uid: string, override?: number, signal?: AbortSignal) {
  const status = await readPodStatus(rig.runtime, uid);
  return killPodRuntime(rig.deps, pod, status, override, signal ? { signal } : {});
}

/** The stops in call order, as `name:timeout`. */
function stops(rig: LifecycleRig, names: Map<string, string>): string[] {
  return rig.runtime.calls.filter((c) => c.method === 'stopContainer').map((c) => `${names.get(c.target)}:${c.timeoutSeconds}`);
}

describe('killContainer grace period', () => {
  const pod = makePod('g', { terminationGracePeriodSeconds: 30 });
  const probed = container('c', {
    livenessProbe: { exec: { command: ['true'] }, terminationGracePeriodSeconds: 4 },
    startupProbe: { exec: { command: ['true'] }, terminationGracePeriodSeconds: 6 },
  });
  const deleting: Pod = { ...pod, metadata: { ...pod.metadata, deletionGracePeriodSeconds: 11 } };
  const noGrace: Pod = { ...pod, spec: { containers: [probed] } };

  it.each([
    ['the pod spec', pod, undefined, undefined, 30],
    ['the liveness probe when killing for it', pod, 'LivenessProbe', undefined, 4],
    ['the startup probe when killing for it', pod, 'StartupProbe', undefined, 6],
    ['the spec for other reasons', pod, 'SpecChanged', undefined, 30],
    ['the deletion grace period before any probe', deleting, 'LivenessProbe', undefined, 11],
    ['an override before everything', deleting, 'LivenessProbe', 1, 1],
    ['2 when nothing is set', noGrace, 'LivenessProbe', undefined, 2],
  ] as const)('comes from %s', (_, p, reason, override, expected) => {
    expect(killGracePeriod(p, probed, reason, override)).toBe(expected);
  });
});

describe('killing containers', () => {
  it('runs preStop before StopContainer and subtracts the whole seconds it took', async () => {
    const rig = lifecycleRig();
    const pod = makePod('p', { containers: [container('main', { lifecycle: preStop('drain') })] });
    const names = await runAll(rig, pod);
    rig.runtime.clearCalls();
    const hold = rig.runtime.holdCalls('execSync');
    const done = kill(rig, pod, 'uid-p', 10);
    await hold.whenPending(1);
    rig.clock.increment(3_400);
    hold.releaseAll();
    await done;
    expect(rig.runtime.callLog().filter((l) => /^(execSync|stop)/.test(l))).toEqual([
      expect.stringMatching(/^execSync/),
      expect.stringMatching(/^stopContainer/),
      expect.stringMatching(/^stopPodSandbox/),
    ]);
    expect(rig.runtime.calls.find((c) => c.method === 'execSync')?.timeoutSeconds).toBe(10);
    expect(stops(rig, names)).toEqual(['main:7']);
  });

  it('waits for preStop at most the grace period, then stops with the 2 s minimum', async () => {
    const rig = lifecycleRig();
    const pod = makePod('p', { containers: [container('main', { lifecycle: preStop('hang') })] });
    const names = await runAll(rig, pod);
    rig.runtime.clearCalls();
    rig.runtime.holdCalls('execSync');
    const done = kill(rig, pod, 'uid-p', 5);
    await expect.poll(() => rig.sleeps.pending).toBe(1);
    rig.clock.increment(5_000);
    await done;
    expect(stops(rig, names)).toEqual(['main:2']);
    expect(rig.logs.map((l) => l.message)).toContain('PreStop hook not completed in grace period');
  });

  it('skips preStop with a zero grace period and still stops with 2 s', async () => {
    const rig = lifecycleRig();
    const pod = makePod('p', { containers: [container('main', { lifecycle: preStop('drain') })] });
    const names = await runAll(rig, pod);
    rig.runtime.clearCalls();
    await kill(rig, pod, 'uid-p', 0);
    expect(rig.runtime.callLog('execSync')).toEqual([]);
    expect(stops(rig, names)).toEqual(['main:2']);
  });

  it('reports a failing preStop (event without its output, log with it) and kills the container anyway', async () => {
    const rig = lifecycleRig();
    const pod = makePod('p', { containers: [container('main', { lifecycle: preStop('false') })] });
    const names = await runAll(rig, pod);
    rig.runtime.setExecHandler(() => ({ stdout: Buffer.alloc(0), stderr: Buffer.from('no'), exitCode: 1 }));
    rig.runtime.clearCalls();
    await kill(rig, pod, 'uid-p', 8);
    expect(stops(rig, names)).toEqual(['main:8']);
    expect(rig.logs.find((l) => l.message === 'PreStop hook failed')?.fields.err).toMatch(/exited with 1: no/);
    expect(rig.events.lines().slice(-2)).toEqual(['Killing: Stopping container main', 'FailedPreStopHook: PreStopHook failed']);
    expect(rig.events.events.at(-1)!.object).toMatchObject({ kind: 'Pod', name: 'p', fieldPath: 'spec.containers{main}' });
  });

  it('restores the grace period and the preStop hook from annotations when the pod spec is gone', async () => {
    const rig = lifecycleRig();
    const pod = makePod('o', { terminationGracePeriodSeconds: 9, containers: [container('main', { lifecycle: preStop('save', 'state') })] });
    const names = await runAll(rig, pod);
    const commands: string[][] = [];
    rig.runtime.setExecHandler((_, cmd) => {
      commands.push(cmd);
      return { stdout: Buffer.alloc(0), stderr: Buffer.alloc(0), exitCode: 0 };
    });
    rig.runtime.clearCalls();
    // What the agent passes for a runtime pod nobody owns: a pod that lists no container.
    const orphan: Pod = { metadata: { name: 'uid-o', namespace: '', uid: 'uid-o' }, spec: { containers: [] } };
    await kill(rig, orphan, 'uid-o');
    expect(commands).toEqual([['save', 'state']]);
    expect(stops(rig, names)).toEqual(['main:9']);
  });

  it('runs an httpGet preStop against the pod address (loopback for hostNetwork pods)', async () => {
    const rig = lifecycleRig();
    const server = await loopbackServer();
    try {
      const hook = { preStop: { httpGet: { port: server.port, path: '/quit' } } };
      const pod = makePod('h', { hostNetwork: true, containers: [container('main', { lifecycle: hook })] });
      await runAll(rig, pod);
      await kill(rig, pod, 'uid-h', 3);
      expect(server.requests.map((r) => r.url)).toEqual(['/quit']);
    } finally {
      await server.close();
    }
  });
});

describe('termination order with sidecars', () => {
  const sidecar = (name: string, extra: Partial<Container> = {}) => container(name, { restartPolicy: 'Always', ...extra });

  it('stops regular containers first, then the sidecars in reverse order; sidecar preStop hooks start at once', async () => {
    const rig = lifecycleRig();
    const pod = makePod('sc', {
      initContainers: [sidecar('s1', { lifecycle: preStop('s1-drain') }), sidecar('s2', { lifecycle: preStop('s2-drain') })],
      containers: [container('a'), container('b')],
    });
    const names = await runAll(rig, pod);
    rig.runtime.clearCalls();
    const hold = rig.runtime.holdCalls('stopContainer');
    const done = kill(rig, pod, 'uid-sc', 30);
    await hold.whenPending(2);
    // Both sidecars' preStop hooks ran while the regular containers were still being stopped.
    const execs = rig.runtime.calls.filter((c) => c.method === 'execSync').map((c) => names.get(c.target));
    expect(execs.sort()).toEqual(['s1', 's2']);
    expect(stops(rig, names).sort()).toEqual(['a:30', 'b:30']);
    hold.releaseAll();
    await done;
    expect(stops(rig, names).slice(2)).toEqual(['s2:30', 's1:30']);
    expect(rig.runtime.callLog().at(-1)).toMatch(/^stopPodSandbox/);
  });

  it('bounds each sidecar wait by what is left of its grace period', async () => {
    const rig = lifecycleRig();
    const pod = makePod('sc', { initContainers: [sidecar('s1'), sidecar('s2')], containers: [container('a')] });
    const names = await runAll(rig, pod);
    rig.runtime.clearCalls();
    const hold = rig.runtime.holdCalls('stopContainer');
    const done = kill(rig, pod, 'uid-sc', 5);
    await hold.whenPending(1);
    await expect.poll(() => rig.sleeps.pending).toBe(2);
    expect(stops(rig, names)).toEqual(['a:5']);
    // `a` never stops in time: at the end of the grace period both sidecars go, with the 2 s minimum.
    rig.clock.increment(5_000);
    await hold.whenPending(3);
    hold.releaseAll();
    await done;
    expect(stops(rig, names).slice(1).sort()).toEqual(['s1:2', 's2:2']);
  });

  it('leaves pods without sidecars unordered and stops exited sidecars not at all', async () => {
    const rig = lifecycleRig();
    const pod = makePod('sc', { initContainers: [sidecar('s1')], containers: [container('a')] });
    const names = await runAll(rig, pod);
    const s1 = [...names].find(([, n]) => n === 's1')![0];
    rig.runtime.exitContainer(s1, 0);
    rig.runtime.clearCalls();
    await kill(rig, pod, 'uid-sc', 4);
    expect(stops(rig, names)).toEqual(['a:4']);
  });
});

describe('postStart', () => {
  const servers: { close(): Promise<void> }[] = [];
  afterEach(async () => {
    await Promise.all(servers.splice(0).map((s) => s.close()));
  });

  it('a failing exec postStart kills the container (its preStop runs) and explains it with PostStartHookError', async () => {
    const rig = lifecycleRig();
    const lifecycle = { postStart: { exec: { command: ['setup'] } }, preStop: { exec: { command: ['drain'] } } };
    const pod = makePod('ps', { terminationGracePeriodSeconds: 12, containers: [container('main', { lifecycle })] });
    rig.runtime.setExecHandler((_, cmd) =>
      cmd[0] === 'setup'
        ? { stdout: Buffer.alloc(0), stderr: Buffer.from('setup failed'), exitCode: 1 }
        : { stdout: Buffer.alloc(0), stderr: Buffer.alloc(0), exitCode: 0 },
    );
    const result = await syncOnce(rig, pod);
    const main = (await containersByName(rig, pod)).get('main')!;
    expect(main.state).toBe('CONTAINER_EXITED');
    expect(result.reasons['main']).toEqual({
      reason: 'PostStartHookError',
      message: expect.stringMatching(/^Exec lifecycle hook \(\[setup\]\) for Container "main" .* exited with 1: setup failed/),
    });
    expect(result.errors).toEqual([expect.stringMatching(/^PostStartHookError: /)]);
    const order = rig.runtime.calls.filter((c) => ['startContainer', 'execSync', 'stopContainer'].includes(c.method));
    expect(order.map((c) => `${c.method}:${c.timeoutSeconds ?? ''}`)).toEqual(['startContainer:', 'execSync:0', 'execSync:12', 'stopContainer:12']);
    expect(rig.events.lines()).toEqual([
      'Pulled: Container image "statelet.local/busybox:1" already present on machine',
      'Created: Created container: main',
      'Started: Started container main',
      'FailedPostStartHook: PostStartHook failed',
      'Killing: FailedPostStartHook',
    ]);
  });

  it('an httpGet postStart reaches the new sandbox (loopback for hostNetwork) and the container keeps running', async () => {
    const rig = lifecycleRig();
    const server = await loopbackServer();
    servers.push(server);
    const lifecycle = { postStart: { httpGet: { port: server.port, path: '/started', httpHeaders: [{ name: 'X-Pod', value: 'ps' }] } } };
    const pod = makePod('ps', { hostNetwork: true, containers: [container('main', { lifecycle })] });
    const result = await syncOnce(rig, pod);
    expect(result.reasons).toEqual({});
    expect(result.errors).toEqual([]);
    expect((await containersByName(rig, pod)).get('main')?.state).toBe('CONTAINER_RUNNING');
    expect(server.requests.map((r) => [r.url, r.headers['x-pod']])).toEqual([['/started', 'ps']]);
  });

  it('a sync cancelled during postStart ends without killing the container', async () => {
    const rig = lifecycleRig();
    const pod = makePod('ps', { containers: [container('main', { lifecycle: { postStart: { exec: { command: ['slow'] } } } })] });
    const hold = rig.runtime.holdCalls('execSync');
    const controller = new AbortController();
    const sync = syncOnce(rig, pod, { signal: controller.signal });
    await hold.whenPending(1);
    controller.abort();
    await expect(sync).rejects.toThrow(/CANCELLED|aborted/);
    expect(rig.runtime.callLog('stopContainer')).toEqual([]);
  });
});
