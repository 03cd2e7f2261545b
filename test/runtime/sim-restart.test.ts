/** sim:// restarting its daemon (SimRuntime.restart): calls and streams break, containers live on. */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect, it, vi } from 'vitest';
import { CriClient } from '../../src/runtime/cri/client.ts';
import { startSimRuntime } from '../../src/runtime/sim/server.ts';
import { containerConfig, podSandboxConfig, rejection } from './support.ts';

it('breaks calls and event streams while down, and serves the same running containers after', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'statelet-sim-restart-'));
  const sim = await startSimRuntime({ socketPath: join(dir, 'cri.sock'), pullDelayMs: 0 });
  const client = new CriClient(sim.endpoint);
  try {
    const pod = podSandboxConfig('r');
    const sandbox = await client.runPodSandbox(pod);
    const container = await client.createContainer(sandbox, containerConfig('app', { command: ['sleep', 'infinity'] }), pod);
    await client.startContainer(container);
    const events = client.containerEvents()[Symbol.asyncIterator]();
    const next = events.next();

    const restarted = sim.restart(300);
    await expect(next).rejects.toThrow();
    expect((await rejection(client.listContainers({}, { timeoutMs: 100 }))).code).toMatch(/UNAVAILABLE|DEADLINE_EXCEEDED/);
    await restarted;

    // The client's channel reconnects on its own backoff, as it would to containerd.
    const status = await vi.waitFor(() => client.containerStatus(container), { timeout: 10_000, interval: 100 });
    expect(status.state).toBe('CONTAINER_RUNNING');
    const again = client.containerEvents()[Symbol.asyncIterator]();
    const stopped = again.next();
    await client.stopContainer(container, 0);
    expect((await stopped).value).toMatchObject({ containerId: container });
  } finally {
    client.close();
    await sim.close();
    await rm(dir, { recursive: true, force: true });
  }
});
