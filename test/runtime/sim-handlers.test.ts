/**
 * sim://'s runtime handlers and user namespaces over gRPC, as containerd 2.x has them: its Status
 * reports each configured runtime and the default as '' (internal/cri/server/service.go
 * introspectRuntimeHandlers), each with user namespaces; a sandbox runs on the handler
 * RunPodSandbox names and reports it back; a handler it does not have is refused with containerd
 * 1.6's words (pkg/cri/server/sandbox_run.go); a sandbox's user namespace mappings (CRI
 * NamespaceOption.userns_options) are what its containers' /proc/self/uid_map and gid_map show.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { simOptionsFromEndpoint } from '../../src/agent/agent.ts';
import { NamespaceMode, type PodSandboxConfig } from '../../src/runtime/types.ts';
import { type SimOverGrpc, containerConfig, podSandboxConfig, rejection, simOverGrpc } from './support.ts';

let grpc: SimOverGrpc | undefined;
afterEach(async () => {
  await grpc?.close();
  grpc = undefined;
});

const withUserns = (name: string, hostId: number): PodSandboxConfig => {
  const mapping = [{ hostId, containerId: 0, length: 65536 }];
  return podSandboxConfig(name, {
    labels: { 'io.kubernetes.pod.uid': `uid-${name}` },
    linux: { securityContext: { namespaceOptions: { network: NamespaceMode.POD, pid: NamespaceMode.CONTAINER, ipc: NamespaceMode.POD, usernsOptions: { mode: NamespaceMode.POD, uids: mapping, gids: mapping } } } },
  });
};

describe("sim://'s runtime handlers", () => {
  it('reports its handlers, the default as "" too, each supporting user namespaces', async () => {
    grpc = await simOverGrpc('statelet-sim-handlers-');
    const userns = { recursiveReadOnlyMounts: false, userNamespaces: true };
    expect((await grpc.client.status()).runtimeHandlers).toEqual([
      { name: '', features: userns },
      { name: 'runc', features: userns },
      { name: 'test-handler', features: userns },
    ]);
  });

  it('runs a sandbox on the handler named and reports it; refuses one it does not have', async () => {
    grpc = await simOverGrpc('statelet-sim-handlers-', { runtimeHandlers: ['runc', 'kata'] });
    const { client } = grpc;
    const onKata = await client.runPodSandbox(podSandboxConfig('a'), 'kata');
    const onDefault = await client.runPodSandbox(podSandboxConfig('b'));
    expect((await client.podSandboxStatus(onKata)).runtimeHandler).toBe('kata');
    expect((await client.podSandboxStatus(onDefault)).runtimeHandler).toBe('');
    expect((await client.listPodSandbox()).map((s) => [s.metadata.name, s.runtimeHandler]).sort()).toEqual([['a', 'kata'], ['b', '']]);
    const refused = await rejection(client.runPodSandbox(podSandboxConfig('c'), 'test-handler'));
    expect(refused.code).toBe('UNKNOWN');
    expect(refused.message).toContain('failed to get sandbox runtime: no runtime for "test-handler" is configured');
  });

  it("maps its containers' IDs as the sandbox's user namespace says", async () => {
    grpc = await simOverGrpc('statelet-sim-handlers-');
    const { client } = grpc;
    const sandbox = withUserns('web', 196608);
    const sandboxId = await client.runPodSandbox(sandbox);
    const id = await client.createContainer(sandboxId, containerConfig('app', { command: ['sh', '-c', 'while true; do sleep 1; done'] }), sandbox);
    await client.startContainer(id);
    const read = async (file: string) => (await client.execSync(id, ['cat', file], 5)).stdout.toString();
    expect(await read('/proc/self/uid_map')).toBe('         0     196608      65536\n');
    expect(await read('/proc/self/gid_map')).toBe('         0     196608      65536\n');
    // Root in the container is root of its own namespace only.
    expect((await client.execSync(id, ['id', '-u'], 5)).stdout.toString().trim()).toBe('0');
  });
});

describe('sim:// endpoint settings', () => {
  it('takes its handlers from the endpoint, the default first, and refuses a name that is not a DNS label', () => {
    expect(simOptionsFromEndpoint('sim://?handlers=runc,kata')).toEqual({ runtimeHandlers: ['runc', 'kata'] });
    expect(() => simOptionsFromEndpoint('sim://?handlers=runc,Kata_1')).toThrow('sim://?handlers=runc,Kata_1: handlers must be DNS labels separated by commas, not "Kata_1"');
  });
  it('offers the CSI driver csi= names, and refuses a name that is not a CSI driver name', () => {
    expect(simOptionsFromEndpoint('sim://?csi=hostpath.csi.sim&memory=1Gi')).toEqual({ csiDriver: 'hostpath.csi.sim', memoryBytes: 1024 ** 3 });
    expect(() => simOptionsFromEndpoint('sim://?csi=Host_Path')).toThrow('sim://?csi=Host_Path: csi must name a CSI driver (a lower-case DNS subdomain of at most 63 characters, such as hostpath.csi.sim), not "Host_Path"');
    expect(() => simOptionsFromEndpoint('sim://?csi=')).toThrow('csi must name a CSI driver');
    expect(() => simOptionsFromEndpoint(`sim://?csi=${'a'.repeat(64)}`)).toThrow('csi must name a CSI driver');
  });
});
