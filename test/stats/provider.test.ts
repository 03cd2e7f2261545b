/**
 * The stats provider (src/stats/provider.ts, served by src/server/statsRoutes.ts) over the simulated runtime on a manual clock:
 * CPU rates between requests, samples forgotten with their containers, the fallback to container
 * stats, log usage, and the runtime's errors as the kubelet reports them.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import type { ServerResponse } from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Label } from '../../src/kuberuntime/labels.ts';
import { silentLogger } from '../../src/log.ts';
import { PROCESS_BASE_BYTES } from '../../src/runtime/sim/usage.ts';
import type { HostUsage } from '../../src/stats/summary.ts';
import { StatsProvider } from '../../src/stats/provider.ts';
import { serveStats } from '../../src/server/statsRoutes.ts';
import { ManualClock } from '../support/manualClock.ts';
import { TestRuntime } from '../support/testRuntime.ts';
import { containerConfig, podSandboxConfig } from '../runtime/support.ts';

const HOST: HostUsage = { bootTime: Date.UTC(2024, 0, 1), cpuNanoseconds: 1e9, memTotalBytes: 4 << 30, memFreeBytes: 2 << 30, inactiveFileBytes: 0, swapTotalBytes: 0, swapFreeBytes: 0 };

let dir: string;
let clock: ManualClock;
let runtime: TestRuntime;
let provider: StatsProvider;

beforeEach(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'statelet-stats-'));
  clock = new ManualClock();
  runtime = new TestRuntime({ clock });
  provider = new StatsProvider({ nodeName: 'node-a', runtime, podLogsDir: dir, now: () => clock.now(), log: silentLogger, readHost: async () => HOST });
});

afterEach(async () => {
  await runtime.close();
  await rm(dir, { recursive: true, force: true });
});

/** A pod `web` in `shop` whose containers log where the agent puts logs (`<dir>/shop_web_u1/<name>/0.log`). */
async function runPod(containers: Record<string, string>): Promise<{ sandboxId: string; ids: string[] }> {
  const metadata = { name: 'web', namespace: 'shop', uid: 'u1', attempt: 0 };
  const labels = { [Label.podName]: 'web', [Label.podNamespace]: 'shop', [Label.podUid]: 'u1' };
  const sandbox = podSandboxConfig('web', { metadata, labels, logDirectory: path.join(dir, 'shop_web_u1') });
  const sandboxId = await runtime.runPodSandbox(sandbox);
  const ids: string[] = [];
  for (const [name, script] of Object.entries(containers)) {
    const config = containerConfig(name, { command: ['sh', '-c', script], labels: { ...labels, [Label.containerName]: name } });
    const id = await runtime.createContainer(sandboxId, config, sandbox);
    await runtime.startContainer(id);
    ids.push(id);
  }
  return { sandboxId, ids };
}

/** The response serveStats writes, caught. */
function response(): { res: ServerResponse; sent: Promise<{ status: number; body: string }> } {
  let resolve!: (value: { status: number; body: string }) => void;
  const sent = new Promise<{ status: number; body: string }>((r) => (resolve = r));
  let status = 0;
  const res = {
    writeHead: (code: number) => (status = code),
    end: (body: string) => resolve({ status, body }),
  } as unknown as ServerResponse;
  return { res, sent };
}

describe('StatsProvider', () => {
  it("gives a working container's CPU rate from the previous request's sample", async () => {
    const { ids } = await runPod({ busy: 'while true; do echo x > /tmp/f; done' });
    const first = await provider.summary(true);
    const before = await runtime.containerStats(ids[0]!);
    clock.advance(50);
    const after = await runtime.containerStats(ids[0]!);
    const second = await provider.summary(true);

    expect(first.pods[0]?.containers[0]?.cpu?.usageNanoCores).toBeUndefined();
    const cpu = second.pods[0]?.containers[0]?.cpu;
    // Nothing ran between the reads and the summary: the clock stood still.
    expect(cpu?.usageCoreNanoSeconds).toBe(after.cpu?.usageCoreNanoSeconds);
    expect(cpu?.usageNanoCores).toBe(Math.floor((((after.cpu?.usageCoreNanoSeconds ?? 0) - (before.cpu?.usageCoreNanoSeconds ?? 0)) * 1000) / 50));
    expect(cpu?.usageNanoCores).toBeGreaterThan(0);
  });

  it('forgets the samples of a pod once it is gone', async () => {
    const { sandboxId } = await runPod({ a: 'sleep infinity', b: 'sleep infinity' });
    await provider.summary(false);
    expect(provider.samplesKept).toBe(4); // two containers, their sandbox, the node
    await runtime.removePodSandbox(sandboxId);
    expect((await provider.summary(false)).pods).toEqual([]);
    expect(provider.samplesKept).toBe(1);
  });

  it("sums the containers' stats into the pod's when ListPodSandboxStats fails", async () => {
    await runPod({ a: 'sleep infinity', b: 'echo hi > /tmp/x; sleep infinity' });
    const fromSandbox = (await provider.summary(true)).pods[0];
    runtime.failAlways('listPodSandboxStats', 'UNKNOWN', 'failed to get cgroup metrics for sandbox: cgroupPath is empty');
    const summed = (await provider.summary(true)).pods[0];

    const containers = (summed?.containers ?? []).reduce((sum, c) => sum + (c.memory?.workingSetBytes ?? 0), 0);
    expect(summed?.memory?.workingSetBytes).toBe(containers);
    // The sandbox's own figure also counts its pause process.
    expect(fromSandbox?.memory?.workingSetBytes).toBe(containers + PROCESS_BASE_BYTES);
    expect(runtime.callLog('listContainerStats')).toHaveLength(1);
  });

  it("measures each running container's log directory in the full summary only", async () => {
    await runPod({ app: 'echo hello; sleep infinity' });
    await runtime.engine.flushLogs();
    const logs = (await provider.summary(false)).pods[0]?.containers[0]?.logs;
    expect(logs?.usedBytes).toBeGreaterThan(0);
    expect(logs?.inodesUsed).toBe(2); // the directory and 0.log
    expect((await provider.summary(true)).pods[0]?.containers[0]?.logs).toBeUndefined();
  });

  it("answers a runtime failure with the kubelet's 500 and resource_scrape_error 1", async () => {
    await runPod({ app: 'sleep infinity' });
    runtime.failAlways('listContainers', 'UNAVAILABLE', 'connection refused');

    const { res, sent } = response();
    expect(await serveStats(provider, res, '/stats/summary', new URLSearchParams())).toBe(true);
    expect(await sent).toEqual({ status: 500, body: 'Internal Error: CRI ListContainers failed (UNAVAILABLE): connection refused' });
    expect(await provider.resourceMetrics()).toMatch(/^resource_scrape_error 1$/m);

    runtime.clearFailures();
    expect(await provider.resourceMetrics()).toMatch(/^pod_memory_working_set_bytes\{namespace="shop",pod="web"\} \d+ \d+$/m);
  });
});
