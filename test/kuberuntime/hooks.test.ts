import { afterEach, describe, expect, it } from 'vitest';
import type { Container, LifecycleHandler, Pod } from '../../src/api/types.ts';
import { HookError, type HookTarget, hookHost, resolvePort, runLifecycleHandler } from '../../src/kuberuntime/hooks.ts';
import { NamespaceMode } from '../../src/runtime/types.ts';
import { container, makePod } from '../support/pods.ts';
import { type LifecycleRig, containersByName, lifecycleRig, loopbackServer, syncOnce } from './support.ts';

const servers: { close(): Promise<void> }[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.close()));
});

async function runningTarget(rig: LifecycleRig, pod: Pod, podIP = '10.0.0.1'): Promise<HookTarget> {
  await syncOnce(rig, pod);
  const main = (await containersByName(rig, pod)).get('main')!;
  return { runtime: rig.runtime, pod, container: pod.spec.containers[0]!, containerId: main.id, podIP: async () => podIP };
}

const run = (rig: LifecycleRig, target: HookTarget, handler: LifecycleHandler, signal = new AbortController().signal) =>
  runLifecycleHandler(rig.hookIO, target, handler, { signal, timeoutSeconds: 5 });

describe('lifecycle handlers', () => {
  it('exec: runs the command in the container with the deadline as its timeout', async () => {
    const rig = lifecycleRig();
    const target = await runningTarget(rig, makePod('x'));
    const seen: string[][] = [];
    rig.runtime.setExecHandler((_, cmd) => {
      seen.push(cmd);
      return { stdout: Buffer.from('hi'), stderr: Buffer.alloc(0), exitCode: 0 };
    });
    await run(rig, target, { exec: { command: ['touch', '/ready'] } });
    expect(seen).toEqual([['touch', '/ready']]);
    expect(rig.runtime.calls.find((c) => c.method === 'execSync')?.timeoutSeconds).toBe(5);
  });

  it('exec: a non-zero exit fails with the kubelet message and the output', async () => {
    const rig = lifecycleRig();
    const target = await runningTarget(rig, makePod('x'));
    rig.runtime.setExecHandler(() => ({ stdout: Buffer.from('out;'), stderr: Buffer.from('boom'), exitCode: 3 }));
    const error = await run(rig, target, { exec: { command: ['sh', '-c', 'exit 3'] } }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(HookError);
    expect((error as Error).message).toBe(
      `Exec lifecycle hook ([sh -c exit 3]) for Container "main" in Pod "x_default(uid-x)" failed - error: ` +
        `command 'sh -c exit 3' exited with 3: boom, message: "out;boom"`,
    );
  });

  it('httpGet: GETs scheme://host:port/path with the headers; a named port is looked up', async () => {
    const rig = lifecycleRig();
    const server = await loopbackServer();
    servers.push(server);
    const pod = makePod('web', { containers: [container('main', { ports: [{ name: 'admin', containerPort: server.port }] })] });
    const target = await runningTarget(rig, pod, '127.0.0.1');
    await run(rig, target, { httpGet: { port: 'admin', path: 'hooks/start', httpHeaders: [{ name: 'X-Hook', value: 'postStart' }] } });
    expect(server.requests).toHaveLength(1);
    expect(server.requests[0]).toMatchObject({ method: 'GET', url: '/hooks/start' });
    expect(server.requests[0]!.headers['x-hook']).toBe('postStart');
  });

  it('httpGet: 3xx succeeds (not followed), 5xx fails naming the status', async () => {
    const rig = lifecycleRig();
    const server = await loopbackServer((path) => (path === '/moved' ? 302 : 503));
    servers.push(server);
    const target = await runningTarget(rig, makePod('web'));
    await run(rig, target, { httpGet: { host: '127.0.0.1', port: server.port, path: '/moved' } });
    await expect(run(rig, target, { httpGet: { host: '127.0.0.1', port: String(server.port), path: '/down' } })).rejects.toThrow(
      /^HTTP lifecycle hook \(\/down\) for Container "main" in Pod "web_default\(uid-web\)" failed - error: .*503/,
    );
    expect(server.requests.map((r) => r.url)).toEqual(['/moved', '/down']);
  });

  it('httpGet: fails when nothing listens, and when the pod has no address', async () => {
    const rig = lifecycleRig();
    const server = await loopbackServer();
    await server.close();
    const target = await runningTarget(rig, makePod('web'), '');
    await expect(run(rig, target, { httpGet: { host: '127.0.0.1', port: server.port } })).rejects.toThrow(/ECONNREFUSED/);
    await expect(run(rig, target, { httpGet: { port: 80 } })).rejects.toThrow(/failed to find networking container/);
  });

  it('sleep: waits the seconds on the injected clock, and fails when aborted first', async () => {
    const rig = lifecycleRig();
    const target = await runningTarget(rig, makePod('s'));
    let finished = false;
    const done = run(rig, target, { sleep: { seconds: 3 } }).then(() => (finished = true));
    await expect.poll(() => rig.sleeps.pending).toBe(1);
    rig.clock.increment(2_999);
    await Promise.resolve();
    expect(finished).toBe(false);
    rig.clock.increment(1);
    await done;
    expect(finished).toBe(true);

    const controller = new AbortController();
    const aborted = run(rig, target, { sleep: { seconds: 30 } }, controller.signal);
    controller.abort();
    await expect(aborted).rejects.toThrow('container terminated before sleep hook finished');
  });

  it('tcpSocket is refused for hooks, naming it', async () => {
    const rig = lifecycleRig();
    const target = await runningTarget(rig, makePod('t'));
    await expect(run(rig, target, { tcpSocket: { port: 80 } })).rejects.toThrow(/tcpSocket is deprecated/);
  });

  it('exec: an aborted signal cancels the ExecSync call', async () => {
    const rig = lifecycleRig();
    const target = await runningTarget(rig, makePod('x'));
    const hold = rig.runtime.holdCalls('execSync');
    const controller = new AbortController();
    const pending = run(rig, target, { exec: { command: ['sleep', '100'] } }, controller.signal);
    await hold.whenPending(1);
    controller.abort();
    await expect(pending).rejects.toThrow(/CANCELLED|aborted/);
  });
});

describe('hook addressing', () => {
  const ready = { state: 'SANDBOX_READY' as const, ip: '10.244.0.7', networkMode: NamespaceMode.POD };

  it('uses the sandbox IP, loopback for hostNetwork, nothing for a sandbox that is not ready', () => {
    expect(hookHost(makePod('p'), ready)).toBe('10.244.0.7');
    expect(hookHost(makePod('p', { hostNetwork: true }), { ...ready, ip: '' })).toBe('127.0.0.1');
    expect(hookHost(undefined, { ...ready, ip: '', networkMode: NamespaceMode.NODE })).toBe('127.0.0.1');
    expect(hookHost(makePod('p'), { ...ready, state: 'SANDBOX_NOTREADY' })).toBe('');
    expect(hookHost(makePod('p'), undefined)).toBe('');
  });

  it('resolves ports by number, numeric string, name, and empty as 80', () => {
    const c: Container = container('c', { ports: [{ name: 'http', containerPort: 8080 }] });
    expect(resolvePort(81, c)).toBe(81);
    expect(resolvePort('82', c)).toBe(82);
    expect(resolvePort('http', c)).toBe(8080);
    expect(resolvePort('', c)).toBe(80);
    expect(resolvePort('grpc', c)).toBe("couldn't find port: grpc in container c");
  });
});
