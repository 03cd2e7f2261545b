/**
 * The private containerd that the harness starts is a working CRI runtime: it answers Version,
 * has the busybox image, runs a pod on its own bridge network, runs a container to completion
 * with its exit code and log, cleans up on StopPodSandbox/RemovePodSandbox, and `stop()` leaves
 * nothing behind. Goes through the agent's own CriClient, so it also exercises the client on a
 * real runtime.
 */
import { randomUUID } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { CriClient } from '../../src/runtime/cri/client.ts';
import type { ContainerConfig, ContainerStatus, PodSandboxConfig } from '../../src/runtime/types.ts';
import { BUSYBOX_IMAGE, startContainerd, type ContainerdInstance } from './harness.ts';

// Started while the file is collected, so that a skip is decided before any test is declared.
const containerd = await startContainerd();

/** Polls `read` until `done` holds, or fails with the last value seen. */
async function waitFor<T>(read: () => Promise<T>, done: (value: T) => boolean, timeoutMs: number): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await read();
    if (done(value)) return value;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms; last: ${JSON.stringify(value)}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

function mountsUnder(dir: string): string[] {
  return readFileSync('/proc/self/mountinfo', 'utf8')
    .split('\n')
    .map((line) => line.split(' ')[4] ?? '')
    .filter((mountPoint) => mountPoint.startsWith(`${dir}/`));
}

const SUITE = 'private containerd (scripts/containerd)';

if (containerd === null) {
  // startContainerd() has printed why; keep the skip visible in the test report too.
  describe.skip(SUITE, () => {
    it('needs root and the containerd packages (see the SKIPPING message)', () => {});
  });
} else {
  describe(SUITE, { timeout: 60_000 }, () => suite(containerd));
}

function suite(containerd: ContainerdInstance): void {
  const { endpoint, workDir } = containerd;
  const cri = new CriClient(endpoint, { requestTimeoutMs: 30_000 });

  const uid = randomUUID();
  const logDirectory = join(workDir, 'pod-logs', uid);
  const sandboxConfig: PodSandboxConfig = {
    metadata: { name: 'harness-check', uid, namespace: 'statelet-test', attempt: 0 },
    hostname: 'harness-check',
    logDirectory,
    portMappings: [],
    labels: { 'io.kubernetes.pod.uid': uid },
    annotations: {},
  };
  let sandboxId = '';
  let containerId = '';

  afterAll(async () => {
    cri.close();
    await containerd.stop();
  }, 180_000);

  it('answers Version with CRI v1', async () => {
    const version = await cri.version();
    expect(version.runtimeApiVersion).toBe('v1');
    expect(version.runtimeName).toBe('containerd');
  });

  it('has the busybox image in the CRI image store', async () => {
    const image = await cri.imageStatus(BUSYBOX_IMAGE);
    expect(image).not.toBeNull();
    expect(image?.repoTags).toContain(BUSYBOX_IMAGE);
    // And a missing image is reported as missing, not as an error.
    expect(await cri.imageStatus('statelet.local/not-there:1')).toBeNull();
  });

  it('runs a pod-network sandbox that gets an IP on the instance bridge', async () => {
    mkdirSync(logDirectory, { recursive: true });
    sandboxId = await cri.runPodSandbox(sandboxConfig);
    const status = await cri.podSandboxStatus(sandboxId);
    expect(status.state).toBe('SANDBOX_READY');
    expect(status.network?.ip).toMatch(/^10\.88\.\d+\.\d+$/);
  });

  it('runs a busybox container to EXITED with its exit code and log', async () => {
    const config: ContainerConfig = {
      metadata: { name: 'exits-3', attempt: 0 },
      image: { image: BUSYBOX_IMAGE },
      command: ['sh', '-c', 'echo hi; exit 3'],
      args: [],
      workingDir: '',
      envs: [],
      mounts: [],
      labels: {},
      annotations: {},
      logPath: 'exits-3/0.log',
      stdin: false,
      tty: false,
    };
    containerId = await cri.createContainer(sandboxId, config, sandboxConfig);
    await cri.startContainer(containerId);
    const status = await waitFor<ContainerStatus>(
      () => cri.containerStatus(containerId),
      (s) => s.state === 'CONTAINER_EXITED',
      20_000,
    );
    expect(status.exitCode).toBe(3);
    expect(status.reason).toBe('Error');
    // CRI log format: "<time> stdout F hi".
    expect(readFileSync(join(logDirectory, 'exits-3/0.log'), 'utf8')).toMatch(/ stdout F hi\n/);
  });

  it('StopPodSandbox and RemovePodSandbox leave no pod, container or netns behind', async () => {
    await cri.removeContainer(containerId);
    await cri.stopPodSandbox(sandboxId);
    await cri.removePodSandbox(sandboxId);
    expect(await cri.listContainers()).toEqual([]);
    expect(await cri.listPodSandbox()).toEqual([]);
    expect(mountsUnder(workDir)).toEqual([]);
  });

  it('stop() stops the daemon and removes the work dir', async () => {
    const pid = Number(readFileSync(join(workDir, 'containerd.pid'), 'utf8'));
    await containerd.stop();
    expect(existsSync(workDir)).toBe(false);
    // Gone, or at most a zombie waiting for its reaper (an empty cmdline).
    expect(existsSync(`/proc/${pid}`) ? readFileSync(`/proc/${pid}/cmdline`, 'utf8') : '').toBe('');
    // Calling it again is harmless.
    await containerd.stop();
  });
}
