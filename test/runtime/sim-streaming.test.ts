/**
 * Exec, Attach and PortForward on sim://: the CRI call returns a single-use URL on the runtime's
 * streaming server; a SPDY client (as client-go's) gets the command's output and exit status, the
 * container's output, or a connection to a server in the pod. Real gRPC, real sockets, loopback.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { CriClient } from '../../src/runtime/cri/client.ts';
import { startSimRuntime, type SimRuntime } from '../../src/runtime/sim/server.ts';
import { SimStreaming } from '../../src/runtime/sim/streaming.ts';
import { adler32, HEADER_DICTIONARY } from '../../src/runtime/streaming/spdy.ts';
import type { PodSandboxConfig } from '../../src/runtime/types.ts';
import { freePort } from '../support/agentProcess.ts';
import { waitFor } from '../support/controlPlane.ts';
import { forwardOnce, runCommand, upgrade } from '../support/streamingClient.ts';
import { containerConfig, podSandboxConfig, rejection } from './support.ts';

let dir: string;
let sim: SimRuntime;
let client: CriClient;

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'statelet-sim-streaming-'));
  sim = await startSimRuntime({ socketPath: join(dir, 'cri.sock'), pullDelayMs: 0 });
  client = new CriClient(sim.endpoint);
});

afterEach(async () => {
  client.close();
  await sim.close();
  await rm(dir, { recursive: true, force: true });
});

async function startPod(name: string, command: string[]): Promise<{ sandbox: string; container: string; pod: PodSandboxConfig }> {
  const pod = podSandboxConfig(name, { labels: { 'io.kubernetes.pod.uid': `uid-${name}` } });
  const sandbox = await client.runPodSandbox(pod);
  const container = await client.createContainer(sandbox, containerConfig('app', { command }), pod);
  await client.startContainer(container);
  return { sandbox, container, pod };
}

const streams = { stdin: false, stdout: true, stderr: true, tty: false };
const SLEEP = ['sh', '-c', "trap 'exit 0' TERM; while true; do sleep 1; done"];

describe('SPDY', () => {
  it("uses SPDY/3's header dictionary (1423 bytes, the zlib DICTID every peer checks)", () => {
    expect(HEADER_DICTIONARY.length).toBe(1423);
    expect(adler32(HEADER_DICTIONARY).toString(16)).toBe('e3c6a7c2');
  });
});

describe('exec on sim://', () => {
  it("streams a command's stdout and stderr and reports its exit code", async () => {
    const { container } = await startPod('exec', SLEEP);
    const url = await client.exec({ containerId: container, cmd: ['sh', '-c', 'echo hi; echo oops >&2; exit 3'], ...streams });
    expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/exec\/[\w-]+$/);
    const result = await runCommand(url);
    expect(result).toMatchObject({ stdout: 'hi\n', stderr: 'oops\n', exitCode: 3 });
    expect(JSON.parse(result.status)).toMatchObject({ status: 'Failure', reason: 'NonZeroExitCode', details: { causes: [{ reason: 'ExitCode', message: '3' }] } });
    expect(await runCommand(await client.exec({ containerId: container, cmd: ['true'], ...streams }))).toMatchObject({ exitCode: 0, status: '{"metadata":{},"status":"Success"}' });
  });

  it('takes each URL once, and refuses requests the runtime cannot serve', async () => {
    const { container } = await startPod('once', SLEEP);
    const url = await client.exec({ containerId: container, cmd: ['true'], ...streams });
    await runCommand(url);
    await expect(runCommand(url)).rejects.toMatchObject({ status: 404 });
    expect((await rejection(client.exec({ containerId: container, cmd: ['true'], stdin: false, stdout: false, stderr: false, tty: false }))).code).toBe('INVALID_ARGUMENT');
    expect((await rejection(client.exec({ containerId: container, cmd: ['true'], stdin: false, stdout: true, stderr: true, tty: true }))).message).toContain('tty and stderr cannot both be true');
    const stale = await client.exec({ containerId: container, cmd: ['true'], ...streams });
    await expect(upgrade(stale, ['v9.channel.k8s.io'])).rejects.toMatchObject({ status: 403 });
  });

  it('fails an exec in a container that has exited with an internal error naming it', async () => {
    const { container } = await startPod('gone', ['true']);
    const result = await runCommand(await client.exec({ containerId: container, cmd: ['true'], ...streams }));
    const status = JSON.parse(result.status) as { message: string };
    expect(status).toMatchObject({ status: 'Failure', reason: 'InternalError', code: 500 });
    expect(status.message).toContain(`container "${container}" is not running`);
  });

  it('kills the command and frees the session when the client goes away mid-exec, 200 times over', async () => {
    const { container } = await startPod('leave', SLEEP);
    const streaming = SimStreaming.of(sim.engine);
    for (let i = 0; i < 200; i++) {
      const url = await client.exec({ containerId: container, cmd: ['sh', '-c', 'echo started; sleep 3600'], ...streams });
      const { session } = await upgrade(url, ['v4.channel.k8s.io']);
      await session.open({ streamtype: 'error' });
      const stdout = await session.open({ streamtype: 'stdout' });
      await session.open({ streamtype: 'stderr' });
      await new Promise((resolve) => stdout.once('data', resolve));
      session.close();
    }
    await waitFor(async () => (await streaming.sessions()) === 0, 'every streaming session closed');
    // Only the main process is left: every exec was killed.
    expect((await client.execSync(container, ['true'], 5)).exitCode).toBe(0);
    expect(sim.engine.runningExecs(container)).toBe(0);
  });
});

describe('attach on sim://', () => {
  it("streams the container's output from the moment it attaches until it exits", async () => {
    const { container } = await startPod('attach', ['sh', '-c', "trap 'echo bye; exit 0' TERM; while true; do sleep 1; done"]);
    const url = await client.attach({ containerId: container, stdin: false, stdout: true, stderr: true, tty: false });
    const result = runCommand(url, {}, () => void client.stopContainer(container, 10));
    expect(await result).toMatchObject({ stdout: 'bye\n', exitCode: 0 });
  });
});

describe('port-forward on sim://', () => {
  it('connects a data stream to a server in the pod, and reports a refused port on the error stream', async () => {
    const port = await freePort();
    const { sandbox, container } = await startPod('pf', ['sh', '-c', `mkdir -p /www; echo hello > /www/index.html; httpd -f -p ${port} -h /www`]);
    await sim.engine.whenListening(container, port);
    const url = await client.portForward({ podSandboxId: sandbox, port: [port] });
    const { session, protocol } = await upgrade(url, ['portforward.k8s.io']);
    expect(protocol).toBe('portforward.k8s.io');
    const { data } = await forwardOnce(session, port, '0');
    let response = '';
    data.on('data', (chunk: Buffer) => (response += chunk.toString()));
    const ended = new Promise((resolve) => data.once('end', resolve));
    data.write('GET / HTTP/1.0\r\n\r\n');
    await ended;
    expect(response).toMatch(/^HTTP\/1\.[01] 200/);
    expect(response).toContain('hello');

    const closed = await freePort();
    const refused = await forwardOnce(session, closed, '1');
    const error = JSON.parse(await refused.error) as { closeConnection: boolean; message: string };
    expect(error.message).toContain(`error forwarding port ${closed} to pod ${sandbox}`);
    expect(error.message).toContain('ECONNREFUSED');
    session.close();
  });
});
