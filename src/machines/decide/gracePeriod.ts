/**
 * The grace period a terminating pod is killed with (KUBELET_BEHAVIOR §3.3): the deletion grace
 * period and any kill override can only shorten it, the spec's value applies when nothing else
 * does, and it is at least one second. It never grows.
 */
import type { Pod } from '../../api/types.ts';

export const defaultTerminationGracePeriodSeconds = 30;

export function nextGracePeriod(stored: number | undefined, pod: Pod, override?: number): number {
  let grace = stored ?? 0;
  const shorten = (value: number | undefined) => {
    if (value === undefined) return;
    if (grace === 0 || value < grace) grace = value;
  };
  shorten(pod.metadata.deletionGracePeriodSeconds);
  shorten(override);
  if (grace === 0 && stored === undefined && override === undefined && pod.metadata.deletionGracePeriodSeconds === undefined) {
    grace = pod.spec.terminationGracePeriodSeconds ?? defaultTerminationGracePeriodSeconds;
  }
  return Math.max(grace, 1);
}
