/**
 * What a pod's sandbox runs on and in, at its sync on sim:// (kuberuntime_sandbox.go
 * createPodSandbox; runtimeclass_manager.go LookupRuntimeHandler; userns_manager.go
 * GetOrCreateUserNamespaceMappings): the handler of its RuntimeClass reaches RunPodSandbox; a class
 * the node does not know, a handler the runtime does not have, or a user namespace the handler
 * cannot give is the kubelet's FailedCreatePodSandBox event, no sandbox, and a retry at the next
 * sync; `hostUsers: false` runs the pod in a user namespace of its own, which its containers see.
 */
import { mkdir, mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { Pod } from '../../src/api/types.ts';
import { apiObjectReader } from '../../src/client/objects.ts';
import { lookupRuntimeHandler } from '../../src/kuberuntime/sandboxRuntime.ts';
import { silentLogger } from '../../src/log.ts';
import type { RuntimeHandler } from '../../src/runtime/types.ts';
import { UserNamespaceManager } from '../../src/userns/manager.ts';
import { TokenManager } from '../../src/volumes/tokens.ts';
import { MemoryApi } from '../support/memoryApi.ts';
import { makePod } from '../support/pods.ts';
import { lifecycleRig, syncOnce } from './support.ts';

const dirs: string[] = [];
afterEach(async () => {
  for (const dir of dirs.splice(0)) await rm(dir, { recursive: true, force: true });
});

/** A rig whose cluster knows `classes` (name → handler) and whose pods' directories are on disk; `handlers`: the runtime Status's, as last read. */
async function rig(options: { classes?: Record<string, string>; standalone?: boolean; handlers?: () => readonly RuntimeHandler[] | null } = {}) {
  const r = lifecycleRig();
  const podsDir = await mkdtemp(path.join(os.tmpdir(), 'statelet-sandbox-runtime-'));
  dirs.push(podsDir);
  const classes = new Map(Object.entries(options.classes ?? {}));
  const handlers = options.handlers ?? (() => r.runtime.engine.status().runtimeHandlers ?? []);
  const api = new MemoryApi();
  r.deps = {
    ...r.deps,
    host: { ...r.deps.host, userNamespaces: new UserNamespaceManager(podsDir, handlers, silentLogger) },
    ...(options.standalone
      ? {}
      : { cluster: { objects: apiObjectReader(api), services: () => [], tokens: new TokenManager(api, () => r.clock.now(), silentLogger), runtimeClassHandler: (name) => classes.get(name) ?? null } }),
  };
  /** The pod's directory made, as the node makes it before its sandbox (makePodDataDirs). */
  const pod = async (p: Pod) => {
    await mkdir(path.join(podsDir, p.metadata.uid), { recursive: true });
    return p;
  };
  const sandboxes = async (p: Pod) => r.runtime.listPodSandbox({ labelSelector: { 'io.kubernetes.pod.uid': p.metadata.uid } });
  return { ...r, classes, podsDir, pod, sandboxes };
}

describe("a pod's runtime handler (runtimeclass_manager.go LookupRuntimeHandler)", () => {
  it.each([
    ['no class', undefined, ''],
    ["the '' class", '', ''],
    ['a class the node knows', 'sandboxed', 'kata'],
  ])('is the handler of %s', (_case, className, handler) => {
    expect(lookupRuntimeHandler(className, (name) => (name === 'sandboxed' ? 'kata' : null))).toBe(handler);
  });

  it('is not found for a class the node does not know, in the kubelet words', () => {
    expect(() => lookupRuntimeHandler('gvisor', () => null)).toThrow('runtimeclass.node.k8s.io "gvisor" not found');
  });
});

describe("a pod's sandbox and its RuntimeClass", () => {
  it("runs on its class's handler, which the sandbox reports", async () => {
    const r = await rig({ classes: { sandboxed: 'test-handler' } });
    const pod = await r.pod(makePod('web', { runtimeClassName: 'sandboxed' }));
    expect((await syncOnce(r, pod)).errors).toEqual([]);
    const [sandbox] = await r.sandboxes(pod);
    expect(sandbox?.runtimeHandler).toBe('test-handler');
    expect((await r.runtime.podSandboxStatus(sandbox!.id)).runtimeHandler).toBe('test-handler');
  });

  it('waits with FailedCreatePodSandBox while its class is missing, and starts once it exists', async () => {
    const r = await rig();
    const pod = await r.pod(makePod('web', { runtimeClassName: 'sandboxed' }));
    expect((await syncOnce(r, pod)).errors).toEqual(['CreatePodSandboxError: runtimeclass.node.k8s.io "sandboxed" not found']);
    expect(r.events.lines()).toEqual(['FailedCreatePodSandBox: Failed to create pod sandbox: runtimeclass.node.k8s.io "sandboxed" not found']);
    expect(r.events.events[0]?.type).toBe('Warning');
    expect(await r.sandboxes(pod)).toEqual([]);

    r.classes.set('sandboxed', 'test-handler');
    expect((await syncOnce(r, pod)).errors).toEqual([]);
    expect((await r.sandboxes(pod)).map((s) => s.runtimeHandler)).toEqual(['test-handler']);
  });

  it('is not found on a node without an API server, which has no classes', async () => {
    const r = await rig({ standalone: true });
    const pod = await r.pod(makePod('web', { runtimeClassName: 'sandboxed' }));
    expect((await syncOnce(r, pod)).errors).toEqual(['CreatePodSandboxError: runtimeclass.node.k8s.io "sandboxed" not found']);
    // A pod that names no class runs there as anywhere.
    expect((await syncOnce(r, await r.pod(makePod('plain')))).errors).toEqual([]);
  });

  it("waits with the runtime's error when the runtime has no such handler", async () => {
    const r = await rig({ classes: { sandboxed: 'kata' } });
    const pod = await r.pod(makePod('web', { runtimeClassName: 'sandboxed' }));
    await syncOnce(r, pod);
    expect(r.events.lines()).toEqual(['FailedCreatePodSandBox: Failed to create pod sandbox: CRI RunPodSandbox failed (UNKNOWN): failed to get sandbox runtime: no runtime for "kata" is configured']);
    expect(await r.sandboxes(pod)).toEqual([]);
  });
});

describe("a pod's user namespace (userns_manager.go GetOrCreateUserNamespaceMappings)", () => {
  it('runs a pod with hostUsers: false in a namespace of its own: its block recorded, its containers mapped', async () => {
    const r = await rig();
    const pod = await r.pod(makePod('web', { hostUsers: false }));
    expect((await syncOnce(r, pod)).errors).toEqual([]);
    const mapping = [{ hostId: 65536, containerId: 0, length: 65536 }];
    expect(JSON.parse(await readFile(path.join(r.podsDir, 'uid-web', 'userns'), 'utf8'))).toEqual({ uidMappings: mapping, gidMappings: mapping });
    const [container] = await r.runtime.listContainers({ labelSelector: { 'io.kubernetes.pod.uid': 'uid-web' } });
    const read = async (file: string) => (await r.runtime.execSync(container!.id, ['cat', file], 5)).stdout.toString();
    expect(await read('/proc/self/uid_map')).toBe('         0      65536      65536\n');
    expect(await read('/proc/self/gid_map')).toBe('         0      65536      65536\n');

    // The next pod has the next block; a pod in the node's namespace sees the whole ID space.
    const other = await r.pod(makePod('other', { hostUsers: false }));
    await syncOnce(r, other);
    expect(JSON.parse(await readFile(path.join(r.podsDir, 'uid-other', 'userns'), 'utf8')).uidMappings[0].hostId).toBe(131072);
    const plain = await r.pod(makePod('plain'));
    await syncOnce(r, plain);
    const [host] = await r.runtime.listContainers({ labelSelector: { 'io.kubernetes.pod.uid': 'uid-plain' } });
    expect((await r.runtime.execSync(host!.id, ['cat', '/proc/self/uid_map'], 5)).stdout.toString()).toBe('         0          0 4294967295\n');
  });

  it.each([
    ['before the runtime Status was read', () => null, 'runtime handlers are not set'],
    ['on a runtime that reports no handlers (containerd 1.6)', () => [], 'the handler "" is not known'],
    ['on a handler without the feature', () => [{ name: '', features: { recursiveReadOnlyMounts: false, userNamespaces: false } }], 'RuntimeClass handler "" does not support user namespaces'],
  ])('does not start a pod with hostUsers: false %s', async (_case, handlers, error) => {
    const r = await rig({ handlers });
    const pod = await r.pod(makePod('web', { hostUsers: false }));
    await syncOnce(r, pod);
    expect(r.events.lines()).toEqual([`FailedCreatePodSandBox: Failed to create pod sandbox: ${error}`]);
    expect(await r.sandboxes(pod)).toEqual([]);
  });
});
