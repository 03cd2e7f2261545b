/**
 * Servers in sim:// containers: busybox-style `httpd` and `nc -l` listen on the pod's loopback
 * address for real, so probes (httpGet, tcpSocket) reach them. Real sockets, loopback only.
 */
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { createServer, connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { CriClient } from '../../src/runtime/cri/client.ts';
import { ManualClock } from '../support/manualClock.ts';
import { startSimRuntime, type SimRuntime } from '../../src/runtime/sim/server.ts';
import { NamespaceMode, type PodSandboxConfig } from '../../src/runtime/types.ts';
import { containerConfig, networkNamespace, podSandboxConfig } from './support.ts';

let dir: string;
let clock: ManualClock;
let sim: SimRuntime;
let client: CriClient;
/** A port nothing on this host listens on (checked on the wildcard address, so free on every 127.x). */
let port: number;

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'statelet-sim-servers-'));
  clock = new ManualClock();
  sim = await startSimRuntime({ socketPath: join(dir, 'cri.sock'), clock, pullDelayMs: 0 });
  client = new CriClient(sim.endpoint);
  port = await freePort();
});

afterEach(async () => {
  client.close();
  await sim.close();
  await rm(dir, { recursive: true, force: true });
});

const PROBE_READY = (p: number): string => `mkdir -p /www; echo ok > /www/healthz; httpd -f -p ${p} -h /www`;

function podConfig(name: string, options: { hostNetwork?: boolean } = {}): PodSandboxConfig {
  return podSandboxConfig(name, {
    logDirectory: join(dir, 'pods', name),
    labels: { 'io.kubernetes.pod.uid': `uid-${name}` },
    linux: networkNamespace(options.hostNetwork ? NamespaceMode.NODE : NamespaceMode.POD),
  });
}

async function startPod(name: string, options: { hostNetwork?: boolean } = {}): Promise<{ pod: PodSandboxConfig; sandbox: string; ip: string }> {
  const pod = podConfig(name, options);
  const sandbox = await client.runPodSandbox(pod);
  const ip = (await client.podSandboxStatus(sandbox)).network?.ip ?? '';
  return { pod, sandbox, ip };
}

async function run(pod: PodSandboxConfig, sandbox: string, name: string, command: string[]): Promise<string> {
  const id = await client.createContainer(sandbox, containerConfig(name, { command, labels: { 'io.kubernetes.pod.uid': pod.metadata.uid } }), pod);
  await client.startContainer(id);
  return id;
}

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen({ host: '0.0.0.0', port: 0 }, resolve);
  });
  const address = server.address();
  await new Promise((resolve) => server.close(resolve));
  if (!address || typeof address === 'string') throw new Error('no port');
  return address.port;
}

async function get(url: string): Promise<{ status: number; body: string }> {
  const response = await fetch(url, { redirect: 'manual' });
  return { status: response.status, body: await response.text() };
}

/** The error code of a TCP connect, or 'connected'. */
function connectResult(host: string, p: number): Promise<string> {
  return new Promise((resolve) => {
    const socket = connect({ host, port: p });
    socket.once('connect', () => {
      socket.destroy();
      resolve('connected');
    });
    socket.once('error', (error: NodeJS.ErrnoException) => resolve(error.code ?? error.message));
  });
}

/** Connects, sends `text`, half-closes, and resolves with what the server sent once it closes its side. */
function exchange(host: string, p: number, text: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host, port: p });
    let data = '';
    socket.setEncoding('utf8');
    socket.on('data', (chunk: string) => (data += chunk));
    socket.on('error', reject);
    socket.on('end', () => resolve(data));
    socket.end(text);
  });
}

/** Resolves with the exit code once the container has exited. */
function exited(id: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const unsubscribe = sim.engine.subscribe((event) => {
      if (event.containerId !== id || event.type !== 'CONTAINER_STOPPED_EVENT') return;
      unsubscribe();
      resolve(sim.engine.containerStatusNow(id).exitCode);
    });
    try {
      const status = sim.engine.containerStatusNow(id);
      if (status.state === 'CONTAINER_EXITED') {
        unsubscribe();
        resolve(status.exitCode);
      }
    } catch (error) {
      unsubscribe();
      reject(error);
    }
  });
}

async function logOf(pod: PodSandboxConfig, name: string): Promise<string> {
  await sim.engine.flushLogs();
  return readFile(join(pod.logDirectory, name, '0.log'), 'utf8');
}

describe('httpd in a sim container', () => {
  it('serves the probe file on the pod IP; rm via ExecSync makes it 404; a stop closes the port', async () => {
    const { pod, sandbox, ip } = await startPod('web');
    expect(ip).toMatch(/^127\./);
    const id = await run(pod, sandbox, 'web', ['sh', '-c', PROBE_READY(port)]);
    await sim.engine.whenListening(id, port);

    expect(await get(`http://${ip}:${port}/healthz`)).toEqual({ status: 200, body: 'ok\n' });
    expect((await get(`http://${ip}:${port}/missing`)).status).toBe(404);

    const removed = await client.execSync(id, ['rm', '/www/healthz'], 5);
    expect(removed.exitCode).toBe(0);
    expect((await get(`http://${ip}:${port}/healthz`)).status).toBe(404);
    await client.execSync(id, ['sh', '-c', 'echo back > /www/healthz'], 5);
    expect(await get(`http://${ip}:${port}/healthz`)).toEqual({ status: 200, body: 'back\n' });

    // PID 1 is `sh` without a TERM trap: TERM is ignored, the kill comes after the grace period.
    const stopped = client.stopContainer(id, 30);
    // The kill timer is the only timer: once it exists, the stop has been received.
    for (let i = 0; i < 100 && clock.pendingTimers === 0; i++) await client.version();
    expect(clock.pendingTimers).toBe(1);
    expect(await connectResult(ip, port)).toBe('connected');
    clock.advance(30_000);
    await stopped;
    expect(await client.containerStatus(id)).toMatchObject({ state: 'CONTAINER_EXITED', exitCode: 137 });
    expect(await connectResult(ip, port)).toBe('ECONNREFUSED');
  });

  it('serves index.html for a directory, redirects a directory without slash, refuses other methods', async () => {
    const { pod, sandbox, ip } = await startPod('site');
    const id = await run(pod, sandbox, 'site', ['sh', '-c', `mkdir -p /srv/app; echo '<p>hi</p>' > /srv/app/index.html; cd /srv; httpd -f -p ${port}`]);
    await sim.engine.whenListening(id, port);
    const page = await fetch(`http://${ip}:${port}/app/`);
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toBe('text/html');
    expect(await page.text()).toBe('<p>hi</p>\n');
    const redirect = await fetch(`http://${ip}:${port}/app?x=1`, { redirect: 'manual' });
    expect(redirect.status).toBe(302);
    expect(redirect.headers.get('location')).toBe('/app/?x=1');
    expect((await get(`http://${ip}:${port}/`)).status).toBe(404);
    expect((await fetch(`http://${ip}:${port}/app/index.html`, { method: 'POST', body: 'x' })).status).toBe(501);
    const head = await fetch(`http://${ip}:${port}/app/index.html`, { method: 'HEAD' });
    expect(head.headers.get('content-length')).toBe('10');
  });

  it('with a TERM trap and `& wait`, StopContainer ends httpd promptly with exit 0', async () => {
    const { pod, sandbox, ip } = await startPod('trap');
    const id = await run(pod, sandbox, 'trap', ['sh', '-c', `trap 'exit 0' TERM; ${PROBE_READY(port)} & wait`]);
    await sim.engine.whenListening(id, port);
    expect((await get(`http://${ip}:${port}/healthz`)).status).toBe(200);
    await client.stopContainer(id, 30);
    expect(await client.containerStatus(id)).toMatchObject({ state: 'CONTAINER_EXITED', exitCode: 0, reason: 'Completed' });
    expect(await connectResult(ip, port)).toBe('ECONNREFUSED');
  });

  it('a port already taken in the pod fails the second httpd with exit 1 and a bind error', async () => {
    const { pod, sandbox } = await startPod('clash');
    const first = await run(pod, sandbox, 'first', ['httpd', '-f', '-p', String(port)]);
    await sim.engine.whenListening(first, port);
    const second = await run(pod, sandbox, 'second', ['sh', '-c', `httpd -f -p 0.0.0.0:${port}`]);
    await expect(sim.engine.whenListening(second, port)).rejects.toThrow(/exited with code 1/);
    expect(await exited(second)).toBe(1);
    expect(await client.containerStatus(second)).toMatchObject({ state: 'CONTAINER_EXITED', exitCode: 1, reason: 'Error' });
    expect(await logOf(pod, 'second')).toMatch(/ stderr F httpd: bind: Address already in use\n$/);
    expect((await client.containerStatus(first)).state).toBe('CONTAINER_RUNNING');
  });

  it('without -f httpd daemonises: the command returns 0 and the server lives as long as the container', async () => {
    const { pod, sandbox, ip } = await startPod('daemon');
    // As the whole container command, the daemon dies with the container at once (as on containerd).
    const bare = await run(pod, sandbox, 'bare', ['httpd', '-p', String(port)]);
    expect(await exited(bare)).toBe(0);
    expect(await connectResult(ip, port)).toBe('ECONNREFUSED');

    const id = await run(pod, sandbox, 'main', ['sh', '-c', `httpd -p ${port} && echo started; sleep infinity`]);
    await sim.engine.whenListening(id, port);
    expect(await logOf(pod, 'main')).toMatch(/stdout F started\n$/);
    // A daemon started by ExecSync outlives the exec, as it is reparented to the container's PID 1.
    const other = await freePort();
    const exec = await client.execSync(id, ['httpd', '-p', String(other)], 5);
    expect(exec.exitCode).toBe(0);
    await sim.engine.whenListening(id, other);
    expect(await connectResult(ip, other)).toBe('connected');
    await client.stopContainer(id, 0);
    expect(await connectResult(ip, port)).toBe('ECONNREFUSED');
    expect(await connectResult(ip, other)).toBe('ECONNREFUSED');
  });

  it('host-network containers serve on 127.0.0.1', async () => {
    const { pod, sandbox, ip } = await startPod('host', { hostNetwork: true });
    expect(ip).toBe('');
    const id = await run(pod, sandbox, 'host', ['sh', '-c', PROBE_READY(port)]);
    await sim.engine.whenListening(id, port);
    expect(await get(`http://127.0.0.1:${port}/healthz`)).toEqual({ status: 200, body: 'ok\n' });
    await client.stopPodSandbox(sandbox);
    expect(await connectResult('127.0.0.1', port)).toBe('ECONNREFUSED');
  });

  it('200 pods each running httpd on the same port all answer, and all stop listening', async () => {
    const pods = await Promise.all(Array.from({ length: 200 }, (_, i) => startPod(`pod-${i}`)));
    const ids = await Promise.all(pods.map(({ pod, sandbox }) => run(pod, sandbox, 'web', ['sh', '-c', PROBE_READY(port)])));
    await Promise.all(ids.map((id) => sim.engine.whenListening(id, port)));
    expect(new Set(pods.map((p) => p.ip)).size).toBe(200);
    const answers = await Promise.all(pods.map(({ ip }) => get(`http://${ip}:${port}/healthz`)));
    expect(answers.every((a) => a.status === 200 && a.body === 'ok\n')).toBe(true);
    // Listening costs no timer: nothing is pending on the clock.
    expect(clock.pendingTimers).toBe(0);
    await Promise.all(pods.map(({ sandbox }) => client.stopPodSandbox(sandbox)));
    const after = await Promise.all(pods.map(({ ip }) => connectResult(ip, port)));
    expect(after.every((code) => code === 'ECONNREFUSED')).toBe(true);
  }, 60_000);
});

describe('nc -l -p in a sim container', () => {
  it('accepts one TCP connection, logs what the peer sends, exits 0 when the peer closes', async () => {
    const { pod, sandbox, ip } = await startPod('tcp');
    const id = await run(pod, sandbox, 'tcp', ['sh', '-c', `nc -l -p ${port}; echo "nc exited $?"`]);
    await sim.engine.whenListening(id, port);
    // nc has no stdin in a container: it sends nothing and shuts its side at once.
    expect(await exchange(ip, port, 'hello\n')).toBe('');
    expect(await exited(id)).toBe(0);
    expect(await logOf(pod, 'tcp')).toMatch(/stdout F hello\n.* stdout F nc exited 0\n$/);
    expect(await connectResult(ip, port)).toBe('ECONNREFUSED');
  });

  it('a tcpSocket-style probe (connect, close) ends a bare `nc -l -p`, which then stops listening', async () => {
    const { pod, sandbox, ip } = await startPod('probe');
    const id = await run(pod, sandbox, 'probe', ['nc', '-lk', '-p', String(port)]);
    await sim.engine.whenListening(id, port);
    expect(await connectResult(ip, port)).toBe('connected');
    expect(await exited(id)).toBe(0);
  });

  it('`while true; do nc -l -p PORT; done` keeps answering connections one at a time', async () => {
    const { pod, sandbox, ip } = await startPod('loop');
    const id = await run(pod, sandbox, 'loop', ['sh', '-c', `while true; do nc -l -p ${port}; done`]);
    for (let i = 0; i < 3; i++) {
      // nc stops listening before it shuts its side, so after the EOF the next listener is a new nc.
      await sim.engine.whenListening(id, port);
      expect(await exchange(ip, port, `ping ${i}\n`)).toBe('');
    }
    expect((await client.containerStatus(id)).state).toBe('CONTAINER_RUNNING');
    expect(await logOf(pod, 'loop')).toMatch(/ping 0\n.*ping 1\n.*ping 2\n$/s);
  });
});
