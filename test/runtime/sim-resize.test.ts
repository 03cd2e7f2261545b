/**
 * sim:// takes UpdateContainerResources as containerd does (updateOCILinuxResource), over gRPC:
 * the running container's cgroup files show the new values at once, it keeps running (same pid 1,
 * no restart), a zero field leaves the old value, its OOM score stays, its memory limit holds from
 * then on, ContainerStatus reports the resources it now has, and an unknown container is NOT_FOUND.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { CriClient } from '../../src/runtime/cri/client.ts';
import type { LinuxContainerResources } from '../../src/runtime/types.ts';
import { type SimOverGrpc, containerConfig, podSandboxConfig, rejection, simOverGrpc } from './support.ts';

let grpc: SimOverGrpc;
let client: CriClient;

beforeEach(async () => {
  grpc = await simOverGrpc('statelet-sim-resize-');
  ({ client } = grpc);
});
afterEach(() => grpc.close());

const resources = (cpuShares: number, cpuQuota: number, memoryLimitInBytes: number, oomScoreAdj = 0): LinuxContainerResources => ({ cpuShares, cpuQuota, cpuPeriod: 100_000, memoryLimitInBytes, oomScoreAdj });
const MiB = 2 ** 20;

async function run(memoryLimit: number) {
  const pod = podSandboxConfig('resize', { labels: { 'io.kubernetes.pod.uid': 'uid-resize' } });
  const sandbox = await client.runPodSandbox(pod);
  const id = await client.createContainer(
    sandbox,
    containerConfig('app', { command: ['sh', '-c', 'while true; do sleep 1; done'], linux: { resources: resources(102, 20_000, memoryLimit, 985) } }),
    pod,
  );
  await client.startContainer(id);
  return id;
}

const cat = async (id: string, file: string) => (await client.execSync(id, ['cat', file], 5)).stdout.toString().trim();

describe('sim:// UpdateContainerResources', () => {
  it('changes the running container\'s cgroup in place and reports it in ContainerStatus', async () => {
    const id = await run(64 * MiB);
    const before = await client.containerStatus(id);
    expect(before.resources).toMatchObject({ cpuShares: 102, cpuQuota: 20_000, memoryLimitInBytes: 64 * MiB });
    expect(await cat(id, '/sys/fs/cgroup/cpu.max')).toBe('20000 100000');

    await client.updateContainerResources(id, resources(512, 50_000, 0));
    expect(await cat(id, '/sys/fs/cgroup/cpu.max')).toBe('50000 100000');
    expect(await cat(id, '/sys/fs/cgroup/cpu.weight')).toBe('20');
    // A zero leaves the value as it was, as containerd does; the OOM score is the process's and stays.
    expect(await cat(id, '/sys/fs/cgroup/memory.max')).toBe(String(64 * MiB));
    expect(await cat(id, '/proc/self/oom_score_adj')).toBe('985');
    const after = await client.containerStatus(id);
    expect(after.state).toBe('CONTAINER_RUNNING');
    expect(after.startedAt).toBe(before.startedAt);
    expect(after.resources).toMatchObject({ cpuShares: 512, cpuQuota: 50_000, memoryLimitInBytes: 64 * MiB, oomScoreAdj: 985 });
  });

  it('holds a lowered memory limit from then on: what no longer fits is OOM-killed', async () => {
    const id = await run(256 * MiB);
    expect((await client.execSync(id, ['sh', '-c', 'dd if=/dev/zero of=/dev/null bs=100M count=1'], 5)).exitCode).toBe(0);
    await client.updateContainerResources(id, resources(0, 0, 32 * MiB));
    expect(await cat(id, '/sys/fs/cgroup/memory.max')).toBe(String(32 * MiB));
    const oom = await client.execSync(id, ['sh', '-c', 'dd if=/dev/zero of=/dev/null bs=100M count=1'], 5);
    expect(oom.exitCode).not.toBe(0);
  });

  it('answers NOT_FOUND for a container it does not have', async () => {
    expect((await rejection(client.updateContainerResources('nope', resources(2, 0, 0)))).code).toBe('NOT_FOUND');
  });
});
