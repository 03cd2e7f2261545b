/**
 * The evented PLEG end to end: the agent in-process on sim://, whose CRI server streams container
 * events. With the relist period at 30 s, an init container's exit must still be noticed at once:
 * the pod reaches Running long before a relist could have told it.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { type SimAgent, startSimAgent } from '../support/inProcessAgent.ts';

const image = 'statelet.local/busybox:1';
const manifest = `
apiVersion: v1
kind: Pod
metadata: { name: quick-init }
spec:
  terminationGracePeriodSeconds: 1
  initContainers:
    - { name: init, image: ${image}, command: ["sh", "-c", "exit 0"] }
  containers:
    - { name: app, image: ${image}, command: ["sh", "-c", "trap 'exit 0' TERM; while true; do sleep 1; done"] }
`;

let sim: SimAgent | undefined;
afterEach(async () => {
  await sim?.stop();
  sim = undefined;
});

describe('evented PLEG on sim://', () => {
  it("notices an init container's exit without waiting for the 30 s relist", async () => {
    const started = Date.now();
    sim = await startSimAgent('evented-node', ['--pleg-relist-period', '30s'], { 'quick-init.yaml': manifest });
    const running = sim.agent;
    const pod = await vi.waitFor(
      () => {
        const found = running.view.pods().find((p) => p.metadata.name === 'quick-init-evented-node');
        if (found?.status?.phase !== 'Running') throw new Error(`not Running yet: ${JSON.stringify(found?.status ?? null)}`);
        return found;
      },
      { timeout: 20_000, interval: 50 },
    );
    const elapsedMs = Date.now() - started;
    expect(pod.status?.initContainerStatuses?.[0]?.state.terminated?.exitCode).toBe(0);
    // The relists so far ran at start (and once more as the stream opened); the next is 30 s away.
    expect(elapsedMs).toBeLessThan(20_000);
    const pleg = running.syncLoop.getSnapshot().children.pleg;
    expect(pleg?.getSnapshot().matches({ events: { watching: 'streaming' } })).toBe(true);
    expect(pleg?.getSnapshot().context.streamedEvents).toBeGreaterThan(0);
  }, 30_000);
});
