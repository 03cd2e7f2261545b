/** Faults sim:// can be told to have: a container that crashes, a sandbox whose own process is lost. */
import { expect, it } from 'vitest';
import { SimEngine } from '../../src/runtime/sim/engine.ts';
import { containerConfig, podSandboxConfig } from './support.ts';

it('loses a sandbox as containerd loses a pause container: NOTREADY, told as stopped, its containers running on', async () => {
  const engine = new SimEngine({ pullDelayMs: 0 });
  try {
    const sandbox = engine.runPodSandbox(podSandboxConfig('lost'));
    const container = engine.createContainer(sandbox, containerConfig('app', { command: ['sleep', 'infinity'] }));
    engine.startContainer(container);
    const events: string[] = [];
    engine.subscribe((event) => events.push(`${event.containerId === sandbox ? 'sandbox' : 'container'} ${event.type}`));

    engine.loseSandbox(sandbox);
    expect(engine.podSandboxStatus(sandbox).state).toBe('SANDBOX_NOTREADY');
    expect(engine.containerStatusNow(container).state).toBe('CONTAINER_RUNNING');
    expect(events).toEqual(['sandbox CONTAINER_STOPPED_EVENT']);
    expect(() => engine.loseSandbox(sandbox)).toThrow(/is not ready/);

    engine.crashContainer(container, 137);
    expect(engine.containerStatusNow(container)).toMatchObject({ state: 'CONTAINER_EXITED', exitCode: 137 });
    expect(() => engine.crashContainer(container, 1)).toThrow(/is not running/);
  } finally {
    await engine.close();
  }
});
