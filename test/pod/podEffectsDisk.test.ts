/**
 * A pod's sync on a full or read-only disk under its directories (issue 13's disk episode, at unit
 * level): on a real small filesystem (smallFilesystem.ts, root only), the pod effects against the
 * in-process runtime. A new pod waits with an error that names the pod and the path; a running
 * pod's sync writes nothing, so it goes on; the disk's return is all it takes.
 */
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Pod } from '../../src/api/types.ts';
import { createPodEffects } from '../../src/pod/podEffects.ts';
import type { CallTrace } from '../../src/runtime/callTrace.ts';
import { StatusManager } from '../../src/status/manager.ts';
import { lifecycleRig } from '../kuberuntime/support.ts';
import { container, makePod } from '../support/pods.ts';
import { runningVolumeManager } from '../support/volumes.ts';
import { type SmallFilesystem, mountSmallFilesystem, rootOrSkip } from '../support/smallFilesystem.ts';

const noMemory = { backoff: {}, reasons: {} };
const noTrace: CallTrace = { started: () => {}, finished: () => {} };
const withEmptyDir = (name: string): Pod =>
  makePod(name, { containers: [container('main', { volumeMounts: [{ name: 'data', mountPath: '/data' }] })], volumes: [{ name: 'data', emptyDir: {} }] });

function rig(root: string) {
  const base = lifecycleRig();
  const podsDir = path.join(root, 'pods');
  const volumes = runningVolumeManager({ deps: { podsDir }, recorder: base.deps.observe.recorder });
  const deps = { ...base.deps, host: { ...base.deps.host, podsDir, podLogsRoot: path.join(root, 'logs'), volumes: volumes.world } };
  const effects = createPodEffects({ work: deps, statuses: new StatusManager(), runtimeName: 'fake' });
  const sync = (pod: Pod) => effects.syncPod({ pod, memory: noMemory }, new AbortController().signal, noTrace);
  const running = async (pod: Pod) => (await base.runtime.listContainers({ state: 'CONTAINER_RUNNING' })).filter((c) => c.labels['io.kubernetes.pod.uid'] === pod.metadata.uid).map((c) => c.id);
  return { ...base, deps, sync, running };
}

describe('a pod log directory that cannot be made', () => {
  it('gets the pod no sandbox, and the error names the directory', async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'statelet-logdir-'));
    try {
      // A file where the pod logs directory should be: no directory can be made under it.
      await writeFile(path.join(dir, 'logs'), '');
      const r = rig(dir);
      const pod = makePod('p');
      const outcome = await r.sync(pod);
      expect(outcome.errors).toEqual([`CreatePodSandboxError: ENOTDIR: not a directory, stat '${path.join(dir, 'logs', 'default_p_uid-p')}'`]);
      expect(await r.runtime.listPodSandbox()).toEqual([]);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe.skipIf(!rootOrSkip('the pod effects on a full or read-only disk'))('a pod on a full or read-only disk', () => {
  let fs: SmallFilesystem;
  beforeEach(async () => {
    fs = await mountSmallFilesystem(path.join(await mkdtemp(path.join(os.tmpdir(), 'statelet-disk-')), 'fs'));
  });
  afterEach(async () => {
    await fs.remove();
    await rm(path.dirname(fs.dir), { recursive: true, force: true });
  });

  it('a new pod: no directory can be made, the sync fails naming the pod and the directory, and the pod starts once there is room', async () => {
    const r = rig(fs.dir);
    await mkdir(r.deps.host.podsDir);
    await fs.fill();
    const pod = withEmptyDir('new');
    const outcome = await r.sync(pod);
    const message = `error making pod data directories: ENOSPC: no space left on device, mkdir '${path.join(fs.dir, 'pods', 'uid-new')}'`;
    expect(outcome.errors).toEqual([`FailedToMakePodDataDirectories: ${message}`]);
    expect(r.events.events.map((e) => [`${e.object.namespace}/${e.object.name}`, e.reason, e.message])).toContainEqual(['default/new', 'FailedToMakePodDataDirectories', message]);
    expect(await r.runtime.listPodSandbox()).toEqual([]);

    await fs.free();
    expect((await r.sync(pod)).errors).toEqual([]);
    expect(await r.running(pod)).toHaveLength(1);
  });

  it('a running pod with an emptyDir: its syncs write nothing, so a read-only disk fails none of them and its container runs on', async () => {
    const r = rig(fs.dir);
    const pod = withEmptyDir('steady');
    expect((await r.sync(pod)).errors).toEqual([]);
    const before = await r.running(pod);
    await fs.readOnly();
    expect((await r.sync(pod)).errors).toEqual([]);
    expect(await r.running(pod)).toEqual(before);
  });

  it('a container started when no block is left: CreateContainerConfigError naming the hosts file it could not write', async () => {
    const r = rig(fs.dir);
    // Directories can still be made (inodes are left), a file's content cannot be written.
    await fs.fill({ inodes: false });
    const pod = makePod('hosts');
    const outcome = await r.sync(pod);
    const file = path.join(fs.dir, 'pods', 'uid-hosts', 'etc-hosts');
    expect(outcome.errors).toEqual([`CreateContainerConfigError: failed to write the pod's hosts file ${file}: ENOSPC: no space left on device, write`]);
    expect(r.events.lines()).toContain(`Failed: Error: failed to write the pod's hosts file ${file}: ENOSPC: no space left on device, write`);
    expect(await r.running(pod)).toEqual([]);
  });
});
