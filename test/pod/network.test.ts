/** podNetworkError: whether a pod's sync goes on while the runtime's network is not ready (kubelet.go SyncPod). */
import { describe, expect, it } from 'vitest';
import type { Pod } from '../../src/api/types.ts';
import { NETWORK_NOT_READY, podNetworkError } from '../../src/pod/network.ts';
import { requeueDelayMs } from '../../src/podworkers/requeue.ts';
import { makePod } from '../support/pods.ts';

const notReady = 'container runtime network not ready: NetworkReady=false reason:NetworkPluginNotReady message:Network plugin returns error: cni plugin not initialized';

describe('a pod sync while the runtime network is not ready', () => {
  it.each<[string, Pod, string | null, string | null]>([
    ['network ready: the pod syncs', makePod('p'), null, null],
    ['network ready, host network: the pod syncs', makePod('h', { hostNetwork: true }), null, null],
    ['not ready, pod network: the sync stops with the kubelet\'s error', makePod('p'), notReady, `network is not ready: ${notReady}`],
    ['not ready, hostNetwork false said outright: the same', makePod('p', { hostNetwork: false }), notReady, `network is not ready: ${notReady}`],
    ['not ready, host network: the pod syncs (it needs no pod network)', makePod('h', { hostNetwork: true }), notReady, null],
    ['state unknown, pod network: the error names it', makePod('p'), 'network state unknown', 'network is not ready: network state unknown'],
  ])('%s', (_name, pod, networkError, want) => {
    expect(podNetworkError(pod, networkError)).toBe(want);
  });

  it('is an error the pod workers retry at the short transient period', () => {
    const error = podNetworkError(makePod('p'), notReady)!;
    expect(error.startsWith(NETWORK_NOT_READY)).toBe(true);
    expect(requeueDelayMs({ ok: false, error }, { syncFrequencyMs: 60_000, errorBackoffMs: 10_000 }, 0)).toBe(1_000);
  });
});
