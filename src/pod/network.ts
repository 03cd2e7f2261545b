/**
 * Whether a pod's sync may go on while the runtime's network is not ready, pure (kubelet.go
 * SyncPod: "If the network plugin is not ready, only start the pod if it uses the host network").
 * A pod on the pod network is not synced further: its sync fails with the kubelet's error, which
 * the pod workers retry after the short transient period (src/podworkers/requeue.ts). A pod on
 * the host's network needs no pod network and syncs as usual.
 */
import type { Pod } from '../api/types.ts';

/** pkg/kubelet/errors.go NetworkNotReadyErrorMsg: the error of a sync that waits for the pod network. */
export const NETWORK_NOT_READY = 'network is not ready';

/**
 * The error the pod's sync stops with, also the message of its `NetworkNotReady` event
 * (`network is not ready: <the runtime's network error>`); null: the sync goes on. `networkError`
 * is the runtime's network state as the node last polled it (src/node/health.ts
 * runtimeNetworkError), null when ready.
 */
export function podNetworkError(pod: Pod, networkError: string | null): string | null {
  if (networkError === null || pod.spec.hostNetwork === true) return null;
  return `${NETWORK_NOT_READY}: ${networkError}`;
}
