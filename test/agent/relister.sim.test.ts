/**
 * The evented PLEG end to end: the agent in-process on sim://, whose CRI server streams container
 * events. With the relist period at 30 s, an init container's exit must still be noticed at once:
 * the pod reaches Running long before a relist could have told it.
 */
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { type Agent, startAgent } from '../../src/agent/agent.ts';
import { parseCommandLine } from '../../src/cli/flags.ts';
import { silentLogger } from '../../src/log.ts';

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

let dir: string | undefined;
let agent: Agent | undefined;
afterEach(async () => {
  await agent?.stop();
  if (dir) await rm(dir, { recursive: true, force: true });
  agent = undefined;
  dir = undefined;
});

async function startOnSim(extraArgs: string[]): Promise<Agent> {
  dir = await mkdtemp(path.join(os.tmpdir(), 'statelet-evented-'));
  await mkdir(path.join(dir, 'manifests'));
  await writeFile(path.join(dir, 'manifests', 'quick-init.yaml'), manifest);
  const parsed = parseCommandLine([
    '--container-runtime-endpoint', 'sim://',
    '--root-dir', path.join(dir, 'root'),
    '--pod-logs-dir', path.join(dir, 'logs'),
    '--pod-manifest-path', path.join(dir, 'manifests'),
    '--hostname-override', 'evented-node',
    '--read-only-port', '0',
    '--healthz-port', '0',
    ...extraArgs,
  ]);
  if (parsed.kind !== 'run') throw new Error(`expected a run result, got ${parsed.kind}`);
  return startAgent(parsed.config, silentLogger);
}

describe('evented PLEG on sim://', () => {
  it("notices an init container's exit without waiting for the 30 s relist", async () => {
    const started = Date.now();
    agent = await startOnSim(['--pleg-relist-period', '30s']);
    const running = agent;
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
