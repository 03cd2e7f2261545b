/**
 * The CRI proxy of the test kit (test/support/criProxy.ts) in front of sim:// over gRPC: calls and
 * the event stream pass through unchanged, and a FaultInjector's faults apply to the calls it
 * relays — a failure with its code, a hang held until the caller's deadline, other pods untouched.
 */
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CriClient } from '../../src/runtime/cri/client.ts';
import { type CriProxy, startCriProxy } from '../support/criProxy.ts';
import { FaultInjector } from '../support/faults.ts';
import { type SimOverGrpc, containerConfig, podSandboxConfig, rejection, simOverGrpc, take } from './support.ts';

let sim: SimOverGrpc;
let proxy: CriProxy;
let client: CriClient;
const faults = new FaultInjector({ seed: 3 });

beforeAll(async () => {
  sim = await simOverGrpc('statelet-proxy-');
  proxy = await startCriProxy({ socketPath: path.join(sim.dir, 'proxy.sock'), target: sim.sim.endpoint, intercept: faults.intercept });
  client = new CriClient(proxy.endpoint);
});
afterAll(async () => {
  faults.clear();
  client.close();
  await proxy.close();
  await sim.close();
});

describe('startCriProxy', () => {
  it('relays calls and the event stream as the runtime answers them', async () => {
    const stream = new AbortController();
    const events = client.containerEvents({ signal: stream.signal })[Symbol.asyncIterator]();
    const config = podSandboxConfig('a');
    const sandbox = await client.runPodSandbox(config);
    const container = await client.createContainer(sandbox, containerConfig('app'), config);
    expect((await client.listContainers()).map((c) => c.id)).toEqual([container]);
    expect(await client.containerStatus(container)).toMatchObject({ id: container, state: 'CONTAINER_CREATED', metadata: { name: 'app' } });
    expect((await client.version()).runtimeName).toBe((await sim.client.version()).runtimeName);
    // The sandbox's events (created, started), then the container's.
    expect((await take(events, 3)).map((e) => [e.containerId, e.type])).toEqual([
      [sandbox, 'CONTAINER_CREATED_EVENT'],
      [sandbox, 'CONTAINER_STARTED_EVENT'],
      [container, 'CONTAINER_CREATED_EVENT'],
    ]);
    expect(await rejection(client.containerStatus('nope'))).toMatchObject({ code: 'NOT_FOUND', call: 'ContainerStatus' });
    stream.abort();
  });

  it("applies the injector's rules to what it relays: a failure, and one pod's call held until the caller's deadline", async () => {
    const configB = podSandboxConfig('b');
    const configC = podSandboxConfig('c');
    const b = await client.runPodSandbox(configB);
    const c = await client.runPodSandbox(configC);
    faults.failNext('stopPodSandbox', 'UNAVAILABLE', 'injected');
    expect(await rejection(client.stopPodSandbox(c))).toMatchObject({ code: 'UNAVAILABLE', detail: 'injected' });
    faults.holdCalls({ methods: ['stopPodSandbox'], podUid: 'uid-b' });
    const held = rejection(client.stopPodSandbox(b, { timeoutMs: 300 }));
    await client.stopPodSandbox(c);
    expect((await sim.client.podSandboxStatus(c)).state).toBe('SANDBOX_NOTREADY');
    expect((await held).code).toBe('DEADLINE_EXCEEDED');
    // The held call never reached the runtime.
    expect((await sim.client.podSandboxStatus(b)).state).toBe('SANDBOX_READY');
    faults.clear();
  });
});
