/**
 * The cluster scenarios (clusterScenarios.ts) on a private containerd: statelet as the node of a
 * real kube-apiserver + etcd, running real containers from a locally imported busybox image.
 * Outside CI it skips loudly when containerd cannot be started here (or the control plane cannot
 * be built); under CI=true both harnesses throw instead.
 */
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, it } from 'vitest';
import { BUSYBOX_IMAGE, startContainerd } from '../containerd/harness.ts';
import { defineClusterScenarios } from './clusterScenarios.ts';

const containerd = await startContainerd();

if (!containerd) {
  it.skip('cluster suite on containerd (containerd not available here; see the message above)', () => {});
} else {
  afterAll(() => containerd.stop(), 180_000);
  defineClusterScenarios({
    name: 'containerd',
    image: BUSYBOX_IMAGE,
    endpoint: () => containerd.endpoint,
    runtimeVersion: /^containerd:\/\/\d+\.\d+/,
    // SIGSTOP: the daemon hangs as a wedged one does (its containers, under their shims, run on).
    freeze: async () => {
      const pid = Number((await readFile(path.join(containerd.workDir, 'containerd.pid'), 'utf8')).trim());
      process.kill(pid, 'SIGSTOP');
      return async () => void process.kill(pid, 'SIGCONT');
    },
  });
}
