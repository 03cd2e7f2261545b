/**
 * The grace period a terminating pod is killed with (pkg/kubelet/pod_workers.go
 * calculateEffectiveGracePeriod): the deletion grace
 * period and any kill override can only shorten it, the spec's value applies when nothing else
 * does, and it is at least one second. It never grows.
 */
import type { Pod } from '../api/types.ts';

export const defaultTerminationGracePeriodSeconds = 30;

export function nextGracePeriod(stored: number | undefined, pod: Pod, override?: number): number {
  let grace = stored ?? 0;
  let overridden = false;
  const shorten = (value: number | undefined) => {
    if (value === undefined) return;
    if (grace === 0 || value < grace) {
      grace = value;
      overridden = true;
    }
  };
  shorten(pod.metadata.deletionGracePeriodSeconds);
  shorten(override);
  // A stored 0 means "none yet", like an absent one.
  if (grace === 0 && !overridden) {
    grace = pod.spec.terminationGracePeriodSeconds ?? defaultTerminationGracePeriodSeconds;
  }
  return Math.max(grace, 1);
}
