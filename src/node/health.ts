/**
 * The node's health as `/healthz` reports it, pure: the runtime answered the last relist, and the
 * PLEG relisted within the kubelet's threshold (pkg/kubelet/pleg/generic.go Healthy: three
 * minutes; pkg/kubelet/runtime.go runtimeState keeps the runtime's error). Null: healthy.
 * And the runtime's network as its Status reports it (runtimeNetworkError), which pod syncs read.
 */
import type { RuntimeStatusInfo } from '../runtime/types.ts';


/** The PLEG is unhealthy when it has not relisted for this long (the kubelet's threshold). */
const plegHealthThresholdMs = 3 * 60_000;

export interface RelistHealth {
  /** When the last successful relist started; null: none yet. */
  lastRelistAt: number | null;
  /** The error of the last relist, when it failed. */
  lastRuntimeError: string | null;
}

export function unhealthyReason({ lastRelistAt, lastRuntimeError }: RelistHealth, now: number): string | null {
  if (lastRuntimeError) return `runtime: ${lastRuntimeError}`;
  if (lastRelistAt === null) return 'pleg: pleg has yet to be successful';
  const age = now - lastRelistAt;
  if (age > plegHealthThresholdMs) return `pleg: pleg was last seen active ${Math.round(age / 1000)}s ago; threshold is ${plegHealthThresholdMs / 1000}s`;
  return null;
}

/**
 * Why the node is not Ready, in the kubelet's words (pkg/kubelet/runtime.go runtimeErrors, the
 * Ready condition's message): the runtime is down, or the PLEG has not relisted in time.
 */
export function notReadyReasons({ lastRelistAt, lastRuntimeError }: RelistHealth, now: number): string[] {
  if (lastRuntimeError) return ['container runtime is down'];
  if (lastRelistAt === null) return ['PLEG is not healthy: pleg has yet to be successful'];
  const age = now - lastRelistAt;
  if (age > plegHealthThresholdMs) return [`PLEG is not healthy: pleg was last seen active ${Math.round(age / 1000)}s ago; threshold is ${plegHealthThresholdMs / 60_000}m0s`];
  return [];
}

/**
 * The runtime's network state from the conditions of its Status, in the kubelet's words
 * (kubelet.go updateRuntimeUp: `container runtime network not ready: %v` of the NetworkReady
 * condition, pkg/kubelet/container RuntimeCondition.String; runtime.go networkErrors): an error
 * when NetworkReady is false or missing (Go prints the missing condition as `<nil>`). Null: ready.
 */
export function runtimeNetworkError(conditions: RuntimeStatusInfo['conditions']): string | null {
  const network = conditions.find((c) => c.type === 'NetworkReady');
  if (network?.status) return null;
  const condition = network ? `NetworkReady=false reason:${network.reason} message:${network.message}` : '<nil>';
  return `container runtime network not ready: ${condition}`;
}
