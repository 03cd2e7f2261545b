/**
 * What the agent writes to a pod's status in the API, pure (pkg/kubelet/status/status_manager.go
 * syncPod, mergePodStatus, needsUpdate, canBeDeleted):
 * - conditions the kubelet owns are replaced by the agent's; any other type (set by a controller,
 *   a readiness gate's condition) is kept as the API has it;
 * - a terminal phase in the API is never reverted: a status that would take a Succeeded or Failed
 *   pod back to Pending or Running is not written;
 * - nothing is written when the merged status equals the API's.
 */
import { jsonEqual } from '../api/json.ts';
import type { PodCondition, PodStatus } from '../api/types.ts';

/** The condition types the kubelet sets (pkg/kubelet/types/pod_status.go PodConditionsByKubelet). */
export const KUBELET_CONDITIONS: readonly string[] = ['PodScheduled', 'Ready', 'Initialized', 'ContainersReady', 'PodReadyToStartContainers'];

const terminal = (phase: PodStatus['phase']) => phase === 'Succeeded' || phase === 'Failed';

export type StatusWrite = { write: true; status: PodStatus } | { write: false; why: 'unchanged' | 'terminal' };

export function statusToWrite(api: PodStatus | undefined, ours: PodStatus): StatusWrite {
  const current = api ?? {};
  if (terminal(current.phase) && !terminal(ours.phase)) return { write: false, why: 'terminal' };
  const kept: PodCondition[] = (current.conditions ?? []).filter((c) => !KUBELET_CONDITIONS.includes(c.type));
  const conditions = [...(ours.conditions ?? []), ...kept];
  const merged: PodStatus = { ...ours, ...(conditions.length ? { conditions } : {}) };
  const comparable = { ...current, ...merged };
  if (jsonEqual(comparable, current)) return { write: false, why: 'unchanged' };
  return { write: true, status: merged };
}
