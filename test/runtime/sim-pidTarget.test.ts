/**
 * sim:// joining another container's pid namespace (CRI NamespaceMode TARGET with `target_id`, what
 * the kubelet sends for an ephemeral container's `targetContainerName`), over gRPC: the joining
 * container sees the target's process at pid 1, is not pid 1 itself (TERM ends it), and a target
 * that is missing, stopped or in another pod is refused as containerd refuses it
 * (pkg/cri/server/container_create_linux.go validateTargetContainer).
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { identityOf } from '../../src/runtime/sim/identity.ts';
import { type ContainerConfig, NamespaceMode, type PodSandboxConfig } from '../../src/runtime/types.ts';
import { type SimOverGrpc, containerConfig, podSandboxConfig, rejection, simOverGrpc } from './support.ts';

let grpc: SimOverGrpc;

beforeEach(async () => {
  grpc = await simOverGrpc('statelet-sim-target-');
});
afterEach(() => grpc.close());

const APP = ['sh', '-c', "echo serving; while true; do sleep 1; done"];

function pod(name: string): PodSandboxConfig {
  return podSandboxConfig(name, { labels: { 'io.kubernetes.pod.uid': `uid-${name}` } });
}

function config(sandbox: PodSandboxConfig, name: string, command: string[], pid: NamespaceMode, targetId?: string): ContainerConfig {
  return containerConfig(name, {
    command,
    labels: { 'io.kubernetes.pod.uid': sandbox.metadata.uid, 'io.kubernetes.container.name': name },
    linux: {
      securityContext: {
        privileged: false,
        namespaceOptions: { network: NamespaceMode.POD, pid, ipc: NamespaceMode.POD, ...(targetId ? { targetId } : {}) },
        readonlyRootfs: false,
        supplementalGroups: [],
        noNewPrivs: false,
        maskedPaths: [],
        readonlyPaths: [],
      },
    },
  });
}

async function run(sandbox: PodSandboxConfig, sandboxId: string, containerConfig: ContainerConfig): Promise<string> {
  const id = await grpc.client.createContainer(sandboxId, containerConfig, sandbox);
  await grpc.client.startContainer(id);
  return id;
}

describe('sim:// pid namespace TARGET', () => {
  it("sees the target's process at pid 1, where a container of its own sees its own command", async () => {
    const { client } = grpc;
    const web = pod('web');
    const sandboxId = await client.runPodSandbox(web);
    const app = await run(web, sandboxId, config(web, 'app', APP, NamespaceMode.CONTAINER));
    const debug = await run(web, sandboxId, config(web, 'debug', ['sh', '-c', 'while true; do sleep 1; done'], NamespaceMode.TARGET, app));
    const cmdline = async (id: string) => (await client.execSync(id, ['cat', '/proc/1/cmdline'], 5)).stdout.toString();
    expect(await cmdline(debug)).toBe(`${APP.join('\0')}\0`);
    expect(await cmdline(app)).toBe(`${APP.join('\0')}\0`);
    // Without a target it would see its own.
    const alone = await run(web, sandboxId, config(web, 'alone', ['sleep', '3600'], NamespaceMode.CONTAINER));
    expect(await cmdline(alone)).toBe('sleep\x003600\x00');
  });

  it('is not pid 1 of the namespace it joined: TERM ends it at once (143), where the target, pid 1, ignores it', async () => {
    const { client, clock } = grpc;
    const web = pod('web');
    const sandboxId = await client.runPodSandbox(web);
    const app = await run(web, sandboxId, config(web, 'app', APP, NamespaceMode.CONTAINER));
    const debug = await run(web, sandboxId, config(web, 'debug', ['sh', '-c', 'while true; do sleep 1; done'], NamespaceMode.TARGET, app));
    await client.stopContainer(debug, 30);
    expect(await client.containerStatus(debug)).toMatchObject({ state: 'CONTAINER_EXITED', exitCode: 143 });
    const stopping = client.stopContainer(app, 2);
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect((await client.containerStatus(app)).state).toBe('CONTAINER_RUNNING');
    clock.advance(2000);
    await stopping;
    expect(await client.containerStatus(app)).toMatchObject({ state: 'CONTAINER_EXITED', exitCode: 137 });
  });

  it('refuses a target that does not exist, is not running, or belongs to another pod, as containerd does', async () => {
    const { client } = grpc;
    const web = pod('web');
    const other = pod('other');
    const sandboxId = await client.runPodSandbox(web);
    const otherId = await client.runPodSandbox(other);
    const stranger = await run(other, otherId, config(other, 'app', APP, NamespaceMode.CONTAINER));
    const done = await run(web, sandboxId, config(web, 'done', ['true'], NamespaceMode.CONTAINER));
    const refused = async (name: string, targetId: string) => {
      const error = await rejection(client.createContainer(sandboxId, config(web, name, ['sleep', '1'], NamespaceMode.TARGET, targetId), web));
      return error.detail;
    };
    expect(await refused('a', 'nope')).toBe('failed to generate container spec: invalid target container: container "nope" does not exist: not found');
    expect(await refused('b', done)).toBe(`failed to generate container spec: invalid target container: container "${done}" is not running - in state CONTAINER_EXITED`);
    expect(await refused('c', stranger)).toBe(
      `failed to generate container spec: invalid target container: container "${stranger}" (sandbox ${otherId}) does not belong to sandbox ${sandboxId}`,
    );
  });

  it("identity: pid TARGET sees the target's pid 1, or the pod's pause process when it is told none", () => {
    const context = config(pod('p'), 'debug', [], NamespaceMode.TARGET, 'x').linux?.securityContext;
    expect(identityOf(context, ['sh'], ['nginx', '-g', 'daemon off;']).pid1).toEqual(['nginx', '-g', 'daemon off;']);
    expect(identityOf(context, ['sh']).pid1).toEqual(['/pause']);
  });
});
