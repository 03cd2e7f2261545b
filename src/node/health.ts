/**
 * The node's health as `/healthz` reports it, pure: the runtime answered the last relist, and the
 * PLEG relisted within the kubelet's threshold (pkg/kubelet/pleg/generic.go Healthy: three
 * minutes; pkg/kubelet/runtime.go runtimeState keeps the runtime's error). Null: healthy.
 */

/** The PLEG is unhealthy when it has not relisted for this long (the kubelet's threshold). */
export const plegHealthThresholdMs = 3 * 60_000;

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
