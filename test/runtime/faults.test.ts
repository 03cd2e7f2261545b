/**
 * The fault injector (test/support/faults.ts) over the in-process sim:// runtime: failures by
 * method and count, or by pod, delays, hangs tied to one pod that end at release, abort or
 * deadline, and draws that repeat with their seed; and the same where sim:// serves the calls.
 */
import { describe, expect, it } from 'vitest';
import { FaultInjector, seededRandom } from '../support/faults.ts';
import { SimEngine } from '../../src/runtime/sim/engine.ts';
import { inProcessRuntime } from '../support/inProcessRuntime.ts';
import { containerConfig, podSandboxConfig, rejection, simOverGrpc } from './support.ts';

function setup(seed = 1) {
  const engine = new SimEngine({ pullDelayMs: 0 });
  const faults = new FaultInjector({ seed });
  const runtime = faults.runtime(inProcessRuntime(engine));
  const pod = async (name: string) => {
    const config = podSandboxConfig(name, { labels: { 'io.kubernetes.pod.uid': `uid-${name}` } });
    const sandbox = await runtime.runPodSandbox(config);
    const container = await runtime.createContainer(sandbox, containerConfig('app', { command: ['sleep', 'infinity'], labels: { 'io.kubernetes.pod.uid': `uid-${name}` } }), config);
    await runtime.startContainer(container);
    return { sandbox, container };
  };
  return { engine, faults, runtime, pod };
}

describe('FaultInjector', () => {
  it('fails the next N calls of a method with the given code, naming the call, then lets them through', async () => {
    const { faults, runtime, engine } = setup();
    faults.failNext('listContainers', 'UNAVAILABLE', 'runtime restarting', 2);
    const error = await rejection(runtime.listContainers());
    expect(error).toMatchObject({ code: 'UNAVAILABLE', call: 'ListContainers', detail: 'runtime restarting' });
    await rejection(runtime.listContainers());
    expect(await runtime.listContainers()).toEqual([]);
    expect(await runtime.version()).toMatchObject({ runtimeName: 'statelet-sim' });
    expect(faults.injected).toEqual({ fail: 2, delay: 0, hang: 0 });
    await engine.close();
  });

  it("hangs one pod's calls only, lists them as held, and lets them go when the rule is removed", async () => {
    const { faults, runtime, pod, engine } = setup();
    const a = await pod('a');
    const b = await pod('b');
    const hang = faults.holdCalls({ methods: ['stopContainer'], podUid: 'uid-a' });
    let aStopped = false;
    const stopA = runtime.stopContainer(a.container, 0).then(() => (aStopped = true));
    await runtime.stopContainer(b.container, 0);
    expect((await runtime.containerStatus(b.container)).state).toBe('CONTAINER_EXITED');
    expect(faults.held).toEqual([expect.objectContaining({ method: 'stopContainer', podUid: 'uid-a' })]);
    expect(aStopped).toBe(false);
    expect(hang.hits).toBe(1);
    hang.releaseAll();
    await stopA;
    expect((await runtime.containerStatus(a.container)).state).toBe('CONTAINER_EXITED');
    expect(faults.held).toEqual([]);
    await engine.close();
  });

  it("fails one pod's calls only, those it never named too (by the IDs the runtime handed out), and delays calls until their caller gives up", async () => {
    const { faults, runtime, pod, engine } = setup();
    const a = await pod('a');
    const b = await pod('b');
    faults.failAlways({ podUid: 'uid-a' }, 'UNAVAILABLE');
    expect(await rejection(runtime.containerStatus(a.container))).toMatchObject({ call: 'ContainerStatus', code: 'UNAVAILABLE' });
    expect(await rejection(runtime.stopPodSandbox(a.sandbox))).toMatchObject({ call: 'StopPodSandbox', code: 'UNAVAILABLE' });
    expect((await runtime.containerStatus(b.container)).state).toBe('CONTAINER_RUNNING');
    faults.clearFailures();

    faults.delayCalls('version', 30, 1);
    const started = performance.now();
    await runtime.version();
    expect(performance.now() - started).toBeGreaterThanOrEqual(25);
    faults.delayCalls('podSandboxStatus', 60_000);
    const caller = new AbortController();
    const delayed = rejection(runtime.podSandboxStatus(b.sandbox, { signal: caller.signal }));
    caller.abort();
    expect(await delayed).toMatchObject({ call: 'PodSandboxStatus', code: 'CANCELLED' });
    expect(faults.injected).toEqual({ fail: 2, delay: 2, hang: 0 });
    faults.clear();
    expect((await runtime.podSandboxStatus(b.sandbox)).state).toBe('SANDBOX_READY');
    await engine.close();
  });

  it('ends a hanging call at its deadline (DEADLINE_EXCEEDED) or when its caller aborts (CANCELLED)', async () => {
    const { faults, runtime, engine } = setup();
    faults.holdCalls('listPodSandbox');
    expect((await rejection(runtime.listPodSandbox({}, { timeoutMs: 20 }))).code).toBe('DEADLINE_EXCEEDED');
    const caller = new AbortController();
    const call = rejection(runtime.listPodSandbox({}, { signal: caller.signal }));
    caller.abort();
    expect((await call).code).toBe('CANCELLED');
    expect(faults.held).toEqual([]);
    await engine.close();
  });

  it('draws the same calls for the same seed', async () => {
    const hitsFor = async (seed: number) => {
      const { faults, runtime, engine } = setup(seed);
      faults.failAlways({ methods: ['version'], probability: 0.3 }, 'UNKNOWN');
      const hits: number[] = [];
      for (let i = 0; i < 50; i++) await runtime.version().catch(() => hits.push(i));
      await engine.close();
      return hits;
    };
    const first = await hitsFor(42);
    expect(first.length).toBeGreaterThan(5);
    expect(first.length).toBeLessThan(30);
    expect(await hitsFor(42)).toEqual(first);
    expect(await hitsFor(43)).not.toEqual(first);
    expect(seededRandom(7)()).toBe(seededRandom(7)());
  });

  it('applies its rules where sim:// serves the calls: a client over gRPC sees the failure, the hang held until its deadline, other pods untouched', async () => {
    const faults = new FaultInjector({ seed: 1 });
    const { client, close } = await simOverGrpc('statelet-faults-', { intercept: faults.intercept });
    try {
      const configA = podSandboxConfig('a');
      const configB = podSandboxConfig('b');
      const sandboxA = await client.runPodSandbox(configA);
      const sandboxB = await client.runPodSandbox(configB);
      const containerA = await client.createContainer(sandboxA, containerConfig('app'), configA);
      faults.failNext('createContainer', 'RESOURCE_EXHAUSTED', 'no space left');
      expect(await rejection(client.createContainer(sandboxB, containerConfig('app'), configB))).toMatchObject({ call: 'CreateContainer', code: 'RESOURCE_EXHAUSTED', detail: 'no space left' });

      // Pod a's container id was learned from CreateContainer's response: its status call is held, pod b's is not.
      faults.holdCalls({ methods: ['containerStatus', 'removePodSandbox'], podUid: 'uid-a' });
      const held = rejection(client.containerStatus(containerA, { timeoutMs: 300 }));
      const containerB = await client.createContainer(sandboxB, containerConfig('app'), configB);
      expect((await client.containerStatus(containerB)).metadata.name).toBe('app');
      await client.removePodSandbox(sandboxB);
      expect(faults.held).toEqual([expect.objectContaining({ method: 'containerStatus', podUid: 'uid-a' })]);
      expect((await held).code).toBe('DEADLINE_EXCEEDED');
      // The client gone, the server lets go of the call as well.
      await expect.poll(() => faults.held).toEqual([]);
      expect(await rejection(client.removePodSandbox(sandboxA, { timeoutMs: 100 }))).toMatchObject({ code: 'DEADLINE_EXCEEDED' });
    } finally {
      faults.clear();
      await close();
    }
  });
});
