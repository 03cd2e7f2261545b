/**
 * The cluster scenarios (clusterScenarios.ts) on a private containerd: statelet as the node of a
 * real kube-apiserver + etcd, running real containers from a locally imported busybox image.
 * Outside CI it skips loudly when containerd cannot be started here (or the control plane cannot
 * be built); under CI=true both harnesses throw instead.
 */
import { afterAll, it } from 'vitest';
import { BUSYBOX_IMAGE, startContainerd } from '../containerd/harness.ts';
import { defineClusterScenarios } from './clusterScenarios.ts';

const containerd = await startContainerd();

if (!containerd) {
  it.skip('cluster suite on containerd (containerd not available here; see the message above)', () => {});
} else {
  afterAll(() => containerd.stop(), 180_000);
  defineClusterScenarios({ name: 'containerd', image: BUSYBOX_IMAGE, endpoint: () => containerd.endpoint, runtimeVersion: /^containerd:\/\/\d+\.\d+/ });
}
