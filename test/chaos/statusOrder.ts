/**
 * Whether the agent's pod status writes reached the API server in order (issue 13, cluster mode):
 * what the API server held after each write, in resourceVersion order, never moves a pod's status
 * back — an older status never overwrites a newer one. The kubelet guarantees it by writing one
 * pod's status from one place at a time, always its latest (pkg/kubelet/status/status_manager.go
 * syncPod); so the writes of one pod never overlap, and along them:
 *   - a container's restart count never decreases;
 *   - the phase never leaves Succeeded or Failed;
 *   - a container seen ended (its state or last state terminated) is never running again;
 *   - a container replaced by a newer one (another containerID for its name) never comes back;
 *   - a condition's lastTransitionTime never goes back.
 */
import type { ContainerStatus, PodStatus } from '../../src/api/types.ts';
import type { StatusWrite } from '../support/apiFaultProxy.ts';
import type { Violation } from './invariants.ts';

const TERMINAL = new Set(['Succeeded', 'Failed']);

/** What one pod's statuses have shown so far, and what a later status may not contradict. */
interface Seen {
  phase?: string;
  restarts: Map<string, number>;
  ended: Set<string>;
  /** Per container name, its containerIDs in the order they appeared. */
  ids: Map<string, string[]>;
  transitions: Map<string, string>;
}

function regressions(seen: Seen, status: PodStatus): string[] {
  const found: string[] = [];
  if (seen.phase && TERMINAL.has(seen.phase) && status.phase !== seen.phase) found.push(`phase ${seen.phase} → ${status.phase ?? 'none'}`);
  if (status.phase && !(seen.phase && TERMINAL.has(seen.phase))) seen.phase = status.phase;
  const containers: ContainerStatus[] = [...(status.initContainerStatuses ?? []), ...(status.containerStatuses ?? [])];
  for (const c of containers) {
    const before = seen.restarts.get(c.name) ?? 0;
    if (c.restartCount < before) found.push(`container ${c.name} restart count ${before} → ${c.restartCount}`);
    seen.restarts.set(c.name, Math.max(before, c.restartCount));
    const id = c.containerID ?? '';
    if (id && c.state.running && seen.ended.has(id)) found.push(`container ${c.name} (${id}) running again after it ended`);
    const ids = seen.ids.get(c.name) ?? [];
    if (id && ids.includes(id) && ids.at(-1) !== id) found.push(`container ${c.name} back to ${id} after ${ids.at(-1)}`);
    // The last state's container came before the current one. It may be shown only after the
    // current one was: a crash-looping pod that stops restarting shows its newest container ended
    // and the one before it as the last state (kuberuntime's convertToAPIContainerStatuses keeps the
    // two newest), where its last status showed the newest as the last state of a waiting one.
    const last = c.lastState.terminated?.containerID;
    if (last && !ids.includes(last)) {
      const current = id ? ids.indexOf(id) : -1;
      if (current >= 0) ids.splice(current, 0, last);
      else ids.push(last);
    }
    if (id && !ids.includes(id)) ids.push(id);
    seen.ids.set(c.name, ids);
    for (const state of [c.state, c.lastState]) if (state.terminated?.containerID) seen.ended.add(state.terminated.containerID);
    if (id && c.state.terminated) seen.ended.add(id);
  }
  for (const condition of status.conditions ?? []) {
    const at = condition.lastTransitionTime;
    if (!at) continue;
    const was = seen.transitions.get(condition.type);
    if (was && at < was) found.push(`condition ${condition.type} transition time ${was} → ${at}`);
    if (!was || at > was) seen.transitions.set(condition.type, at);
  }
  return found;
}

/** The writes of each pod that overlapped, and the statuses that went back, in resourceVersion order. */
export function statusOrderViolations(writes: readonly StatusWrite[]): Violation[] {
  const violations: Violation[] = [];
  const byPod = new Map<string, StatusWrite[]>();
  for (const write of writes) byPod.set(write.uid, [...(byPod.get(write.uid) ?? []), write]);
  for (const [uid, all] of byPod) {
    const pod = `pod ${all[0]!.namespace}/${all[0]!.name} (${uid})`;
    const asked = [...all].sort((a, b) => a.requested - b.requested);
    for (let i = 1; i < asked.length; i++) {
      if (asked[i]!.requested < asked[i - 1]!.answered) violations.push({ invariant: 'one status write at a time', detail: `${pod}: a write was sent before the one before it was answered` });
    }
    const applied = all.filter((w) => w.stored && w.resourceVersion).sort((a, b) => Number(a.resourceVersion) - Number(b.resourceVersion));
    const seen: Seen = { restarts: new Map(), ended: new Set(), ids: new Map(), transitions: new Map() };
    for (const write of applied) {
      for (const detail of regressions(seen, write.stored!)) violations.push({ invariant: 'statuses written in order', detail: `${pod} at resourceVersion ${write.resourceVersion}: ${detail}` });
    }
  }
  return violations;
}
