/**
 * What the agent writes to a pod's status in the API, pure (pkg/kubelet/status/status_manager.go
 * syncPod, mergePodStatus, needsUpdate, canBeDeleted):
 * - conditions the kubelet owns are replaced by the agent's; any other type (set by a controller,
 *   a readiness gate's condition) is kept as the API has it;
 * - a terminal phase in the API is never reverted: a status that would take a Succeeded or Failed
 *   pod back to Pending or Running is not written;
 * - nothing is written when the merged status equals the API's;
 * - the pod's and the host's IPs are the agent's alone: the patch replaces those lists whole. A
 *   strategic merge patch merges them by `ip` (k8s.io/api core/v1 PodStatus: patchStrategy merge),
 *   so a new IP would land beside the old one, which the API server refuses (one IP per family);
 *   the kubelet's two-way patch deletes the old one (pkg/util/pod PatchPodStatus).
 */
import { jsonEqual } from '../api/json.ts';
import type { PodCondition, PodStatus } from '../api/types.ts';

/** The condition types the kubelet sets (pkg/kubelet/types/pod_status.go PodConditionsByKubelet). */
const KUBELET_CONDITIONS: readonly string[] = ['PodScheduled', 'Ready', 'Initialized', 'ContainersReady', 'PodReadyToStartContainers'];

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

/** The IP lists the kubelet alone sets, replaced whole by a patch (a `$patch: replace` element). */
const REPLACED_LISTS = ['podIPs', 'hostIPs'] as const;

/** The strategic merge patch of `pods/<name>/status` carrying `status`, for the API object of UID `uid`. */
export function statusPatch(uid: string, status: PodStatus): object {
  const patched: Record<string, unknown> = { ...status };
  for (const list of REPLACED_LISTS) {
    const items = status[list];
    if (items) patched[list] = [{ $patch: 'replace' }, ...items];
  }
  return { metadata: { uid }, status: patched };
}
