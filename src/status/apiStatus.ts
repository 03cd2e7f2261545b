/**
 * What the agent writes to a pod's status in the API, pure (pkg/kubelet/status/status_manager.go
 * syncPod, mergePodStatus, needsUpdate, canBeDeleted):
 * - conditions the kubelet owns are replaced by the agent's; any other type (set by a controller,
 *   a readiness gate's condition) is kept as the API has it;
 * - a terminal phase in the API is never changed: a status that would take a Succeeded or Failed
 *   pod back to Pending or Running, or to the other terminal phase, is not written;
 * - a terminal phase is not written while the pod could still have running containers (its actor
 *   has not yet stopped them all): the API keeps the phase, reason and message it has until then
 *   (mergePodStatus, "Delay transitioning a pod to a terminal status unless the pod is actually
 *   terminal"), so a pod past its activeDeadlineSeconds shows Running while its containers stop,
 *   then Failed with DeadlineExceeded. The `DisruptionTarget` condition (shared with the
 *   controllers) goes with that terminal transition only;
 * - nothing is written when the merged status equals the API's;
 * - the pod's and the host's IPs are the agent's alone: the patch replaces those lists whole. A
 *   strategic merge patch merges them by `ip` (k8s.io/api core/v1 PodStatus: patchStrategy merge),
 *   so a new IP would land beside the old one, which the API server refuses (one IP per family);
 *   the kubelet's two-way patch deletes the old one (pkg/util/pod PatchPodStatus).
 */
import { jsonEqual } from '../api/json.ts';
import type { PodCondition, PodStatus } from '../api/types.ts';

/** The condition types the kubelet sets (pkg/kubelet/types/pod_status.go PodConditionsByKubelet). */
const KUBELET_CONDITIONS: readonly string[] = ['PodScheduled', 'Ready', 'Initialized', 'ContainersReady', 'PodReadyToStartContainers', 'PodResizeInProgress', 'PodResizePending'];
/** The condition types the kubelet shares with controllers (PodConditionSharedByKubelet). */
const SHARED_CONDITIONS: readonly string[] = ['DisruptionTarget'];

const terminal = (phase: PodStatus['phase']) => phase === 'Succeeded' || phase === 'Failed';

export type StatusWrite = { write: true; status: PodStatus } | { write: false; why: 'unchanged' | 'terminal' };

/**
 * Whether the API would be shown `ours` terminal phase too early: the pod is not terminal in the
 * API, is in ours, and could still have running containers. The writer writes such a pod again
 * once its containers have stopped.
 */
export function holdsTerminalPhase(api: PodStatus | undefined, ours: PodStatus, couldHaveRunningContainers: boolean): boolean {
  return couldHaveRunningContainers && !terminal(api?.phase) && terminal(ours.phase);
}

/**
 * The status to write over `api` (the pod's API status), from `ours` (the agent's): the kubelet's
 * mergePodStatus, then its "unchanged" check. `couldHaveRunningContainers`: the pod's actor has not
 * yet stopped every container of it (pod_workers.go CouldHaveRunningContainers).
 */
export function statusToWrite(api: PodStatus | undefined, ours: PodStatus, couldHaveRunningContainers = false): StatusWrite {
  const current = api ?? {};
  if (terminal(current.phase) && ours.phase !== current.phase) return { write: false, why: 'terminal' };
  const held = holdsTerminalPhase(current, ours, couldHaveRunningContainers);
  const transitioningToTerminal = !terminal(current.phase) && terminal(ours.phase);
  // Ours first, then the others the API has (the order the agent has always written them in).
  const kept: PodCondition[] = (current.conditions ?? []).filter((c) => !KUBELET_CONDITIONS.includes(c.type));
  for (const c of ours.conditions ?? []) {
    if (!SHARED_CONDITIONS.includes(c.type) || !transitioningToTerminal || held) continue;
    const at = kept.findIndex((k) => k.type === c.type);
    if (at >= 0) kept[at] = c;
    else kept.push(c);
  }
  const conditions = [...(ours.conditions ?? []).filter((c) => KUBELET_CONDITIONS.includes(c.type)), ...kept];
  const merged: PodStatus = { ...ours, conditions };
  if (conditions.length === 0) delete merged.conditions;
  if (held) {
    // The phase the API has, with its reason and message (none if it has none).
    delete merged.phase;
    delete merged.reason;
    delete merged.message;
    if (current.phase !== undefined) merged.phase = current.phase;
    if (current.reason !== undefined) merged.reason = current.reason;
    if (current.message !== undefined) merged.message = current.message;
  }
  const comparable = { ...current, ...merged };
  if (jsonEqual(comparable, current)) return { write: false, why: 'unchanged' };
  return { write: true, status: merged };
}

/** The IP lists the kubelet alone sets, replaced whole by a patch (a `$patch: replace` element). */
const REPLACED_LISTS = ['podIPs', 'hostIPs'] as const;
/** A condition's fields that come and go with its reason; `null` in a patch removes one. */
const CONDITION_TEXTS = ['reason', 'message'] as const;
/** The status's own fields the agent may set and later drop. */
const STATUS_TEXTS = ['reason', 'message'] as const;

/**
 * The strategic merge patch of `pods/<name>/status` carrying `status`, for the API object of UID
 * `uid`, whatever `api` (the status the API was last seen with) lags behind. Conditions merge by
 * type, and the fields of each merge too (k8s.io/apimachinery strategicpatch mergeSlice), so:
 * - only the conditions the agent owns, and a shared one (DisruptionTarget) it sets, are sent: the
 *   others are left as the API has them (a controller may have changed one since);
 * - a condition the agent owns and no longer shows (a resize condition cleared) is deleted by name,
 *   and one whose reason or message went (Ready turning True) has them set to null, whether or not
 *   `api` shows them: the watch may not have shown the agent's previous write yet. The kubelet's
 *   two-way patch (pkg/util/pod PatchPodStatus) does the same from a fresh read;
 * - the status's own reason and message that `api` has and `status` has not are set to null.
 */
export function statusPatch(uid: string, status: PodStatus, api?: PodStatus): object {
  const patched: Record<string, unknown> = { ...status };
  const conditions: Record<string, unknown>[] = [];
  const shown = new Set<string>();
  for (const c of status.conditions ?? []) {
    shown.add(c.type);
    if (!KUBELET_CONDITIONS.includes(c.type) && !SHARED_CONDITIONS.includes(c.type)) continue;
    // A shared condition the status carries as the API had it is the controller's: not sent back.
    if (SHARED_CONDITIONS.includes(c.type) && api?.conditions?.some((a) => a.type === c.type && jsonEqual(a, c))) continue;
    const sent: Record<string, unknown> = { ...c };
    for (const field of CONDITION_TEXTS) if (c[field] === undefined) sent[field] = null;
    conditions.push(sent);
  }
  for (const type of KUBELET_CONDITIONS) if (!shown.has(type)) conditions.push({ type, $patch: 'delete' });
  patched['conditions'] = conditions;
  for (const field of STATUS_TEXTS) if (status[field] === undefined && api?.[field] !== undefined) patched[field] = null;
  for (const list of REPLACED_LISTS) {
    const items = status[list];
    if (items) patched[list] = [{ $patch: 'replace' }, ...items];
  }
  return { metadata: { uid }, status: patched };
}
