/**
 * exec, attach and portForward on the authenticated API (server/streaming.ts) in-process: the
 * agent finds the container, asks the runtime (sim://, in-process) for a streaming URL and
 * splices the client's upgraded connection to it; refusals are plain HTTP answers naming what is
 * missing. The client speaks SPDY as client-go does.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Pod } from '../../src/api/types.ts';
import { SimEngine } from '../../src/runtime/sim/engine.ts';
import { inProcessRuntime } from '../support/inProcessRuntime.ts';
import { SimStreaming } from '../../src/runtime/sim/streaming.ts';
import { parseStreamingPath } from '../../src/server/streaming.ts';
import { freePort } from '../support/agentProcess.ts';
import { waitFor } from '../support/controlPlane.ts';
import { listedPod, startTestKubeletServer, type TestKubeletServer } from '../support/kubeletServerFixture.ts';
import { forwardOnce, runCommand, upgrade } from '../support/streamingClient.ts';
import { containerConfig, podSandboxConfig } from '../runtime/support.ts';

let dir: string;
let agent: TestKubeletServer;
let port: number;
const engine = new SimEngine({ pullDelayMs: 0 });
const runtime = inProcessRuntime(engine);

const pod = listedPod('shop', 'web', 'u1');

beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'statelet-streaming-'));
  port = await freePort();
  const labels = { 'io.kubernetes.pod.uid': 'u1', 'io.kubernetes.pod.name': 'web', 'io.kubernetes.pod.namespace': 'shop' };
  const sandbox = engine.runPodSandbox(podSandboxConfig('web', { metadata: { name: 'web', namespace: 'shop', uid: 'u1', attempt: 0 }, labels }));
  const app = engine.createContainer(sandbox, containerConfig('app', { command: ['sh', '-c', `mkdir -p /www; echo hello > /www/index.html; httpd -f -p ${port} -h /www`], labels: { ...labels, 'io.kubernetes.container.name': 'app' } }));
  engine.startContainer(app);
  await engine.whenListening(app, port);
  agent = await startTestKubeletServer(dir, { pods: () => [pod, ...pods], runtime });
});

afterAll(async () => {
  await agent?.close();
  await engine.close();
  await rm(dir, { recursive: true, force: true });
});

const credentials = async () => agent.credentials;
const url = (p: string) => `${agent.url}${p}`;
const EXEC = "/exec/shop/web/app?command=sh&command=-c&command=echo+hi%3B+echo+err+%3E%262%3B+exit+3&output=1&error=1";

describe('exec, attach and portForward through the agent', () => {
  it('reads the streaming paths as the kubelet routes them', () => {
    expect(parseStreamingPath('/exec/ns/p/c')).toEqual({ kind: 'exec', namespace: 'ns', pod: 'p', uid: null, container: 'c' });
    expect(parseStreamingPath('/attach/ns/p/uid-1/c')).toEqual({ kind: 'attach', namespace: 'ns', pod: 'p', uid: 'uid-1', container: 'c' });
    expect(parseStreamingPath('/portForward/ns/p')).toEqual({ kind: 'portForward', namespace: 'ns', pod: 'p', uid: null });
    expect(parseStreamingPath('/exec/ns/p')).toBeNull();
    expect(parseStreamingPath('/containerLogs/ns/p/c')).toBeNull();
  });

  it("proxies an exec to the runtime: the command's output and exit code reach the client", async () => {
    expect(await runCommand(url(EXEC), await credentials())).toMatchObject({ stdout: 'hi\n', stderr: 'err\n', exitCode: 3 });
    expect(await runCommand(url('/exec/shop/web/u1/app?command=true&output=1'), await credentials(), undefined, false)).toMatchObject({ exitCode: 0 });
  });

  it('refuses without credentials (401), a missing pod or container (404), no streams (400) and a plain request (400)', async () => {
    await expect(upgrade(url(EXEC), ['v4.channel.k8s.io'], { rejectUnauthorized: false })).rejects.toMatchObject({ status: 401 });
    await expect(upgrade(url('/exec/shop/nope/app?command=true&output=1'), ['v4.channel.k8s.io'], await credentials())).rejects.toThrow('404: pod "nope" does not exist');
    await expect(upgrade(url('/exec/shop/web/other/app?command=true&output=1'), ['v4.channel.k8s.io'], await credentials())).rejects.toThrow('404: pod "web" does not exist');
    await expect(upgrade(url('/exec/shop/web/side?command=true&output=1'), ['v4.channel.k8s.io'], await credentials())).rejects.toThrow('404: container not found ("side")');
    await expect(upgrade(url('/exec/shop/web/app?command=true'), ['v4.channel.k8s.io'], await credentials())).rejects.toThrow('400: you must specify at least 1 of stdin, stdout, stderr');
    const plain = await fetchStatus(url(EXEC));
    expect(plain).toEqual({ status: 400, body: 'Upgrade request required' });
  });

  it("attaches to the container's output until it exits", async () => {
    const talk = await freshPod('talk', "trap 'echo bye; exit 0' TERM; while true; do sleep 1; done");
    const attached = runCommand(url('/attach/shop/talk/app?output=1&error=1'), await credentials(), () => void engine.stopContainer(talk.container, 10));
    expect(await attached).toMatchObject({ stdout: 'bye\n', exitCode: 0 });
  });

  it('forwards a port to a server in the pod', async () => {
    const fresh = await freshPod('pf');
    const { session } = await upgrade(url(`/portForward/shop/pf?port=${fresh.port}`), ['portforward.k8s.io'], await credentials());
    const { data } = await forwardOnce(session, fresh.port, '0');
    let response = '';
    data.on('data', (chunk: Buffer) => (response += chunk.toString()));
    const ended = new Promise((resolve) => data.once('end', resolve));
    data.write('GET / HTTP/1.0\r\n\r\n');
    await ended;
    expect(response).toContain('hello from pf');
    session.close();
  });

  it('leaves no session and no exec behind when 1,000 clients go away mid-exec', async () => {
    const fresh = await freshPod('leak');
    const streaming = SimStreaming.of(engine);
    const options = await credentials();
    for (let i = 0; i < 1000; i++) {
      const { session } = await upgrade(url('/exec/shop/leak/app?command=sh&command=-c&command=echo+started%3B+sleep+3600&output=1&error=1'), ['v4.channel.k8s.io'], options);
      await session.open({ streamtype: 'error' });
      const stdout = await session.open({ streamtype: 'stdout' });
      await session.open({ streamtype: 'stderr' });
      await new Promise((resolve) => stdout.once('data', resolve));
      session.close();
    }
    await waitFor(async () => (await streaming.sessions()) === 0 && engine.runningExecs(fresh.container) === 0, 'every session and exec gone', 60_000);
  }, 120_000);
});

const pods: Pod[] = [];

/** Another pod in the runtime and the agent's list, running `script` or serving "hello from NAME" over httpd. */
async function freshPod(name: string, script?: string): Promise<{ port: number; container: string }> {
  const freePortNumber = await freePort();
  const command = script ?? `mkdir -p /www; echo hello from ${name} > /www/index.html; httpd -f -p ${freePortNumber} -h /www`;
  const labels = { 'io.kubernetes.pod.uid': `u-${name}`, 'io.kubernetes.pod.name': name, 'io.kubernetes.pod.namespace': 'shop' };
  const sandbox = engine.runPodSandbox(podSandboxConfig(name, { metadata: { name, namespace: 'shop', uid: `u-${name}`, attempt: 0 }, labels }));
  const container = engine.createContainer(sandbox, containerConfig('app', { command: ['sh', '-c', command], labels: { ...labels, 'io.kubernetes.container.name': 'app' } }));
  engine.startContainer(container);
  if (!script) await engine.whenListening(container, freePortNumber);
  pods.push(listedPod('shop', name, `u-${name}`));
  return { port: freePortNumber, container };
}

async function fetchStatus(target: string): Promise<{ status: number; body: string }> {
  const { request } = await import('node:https');
  const options = await credentials();
  return new Promise((resolve, reject) => {
    const req = request(target, { ...options, method: 'POST' }, (res) => {
      let body = '';
      res.on('data', (chunk: Buffer) => (body += chunk.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('error', reject);
    req.end();
  });
}
