/**
 * Container garbage collection, decided: which dead containers and which sandboxes to remove, as
 * the kubelet's container GC chooses them (pkg/kubelet/kuberuntime/kuberuntime_gc.go).
 *
 * Containers are considered by evict unit, a (pod UID, container name) pair; only containers that
 * are not running and were created at least `minAgeMs` ago can go, newest first by attempt, then by
 * creation time. Unlike the kubelet, a unit's newest instance is not taken for dead while it is
 * only created (about to start) and its pod is not gone: counted as the one dead instance to keep,
 * it would cost the previous, finished instance, and with it the status's last termination.
 *   1. every evictable container of a deleted pod (only once all sources are ready: before that a
 *      pod missing from config may just not have been read yet);
 *   2. per unit, all but the newest `maxPerPodContainer` (negative: no limit);
 *   3. if more than `maxContainers` remain in total (negative: no limit): per unit all but the
 *      newest max(1, maxContainers / units), then the oldest overall.
 * Sandboxes go when they are neither ready nor hold a container (after this round's removals):
 * every such sandbox of a deleted pod (sources ready); for other pods, all but the newest sandbox.
 */
import type { ContainerState, SandboxState } from '../runtime/types.ts';

export interface ContainerGcPolicy {
  minAgeMs: number;
  maxPerPodContainer: number;
  maxContainers: number;
}

/** The kubelet's defaults: no minimum age, one dead container kept per container, no total limit. */
export const defaultContainerGcPolicy: ContainerGcPolicy = { minAgeMs: 0, maxPerPodContainer: 1, maxContainers: -1 };

export interface GcContainer {
  id: string;
  podUid: string;
  name: string;
  sandboxId: string;
  state: ContainerState;
  attempt: number;
  createdAt: number;
}

export interface GcSandbox {
  id: string;
  podUid: string;
  state: SandboxState;
  attempt: number;
  createdAt: number;
}

export interface ContainerGcInput {
  containers: readonly GcContainer[];
  sandboxes: readonly GcSandbox[];
  policy: ContainerGcPolicy;
  nowMs: number;
  /** The pod is gone: not in config, and its worker has finished with it. */
  isPodDeleted(uid: string): boolean;
  allSourcesReady: boolean;
}

interface ContainerGcPlan {
  /** Oldest first within a unit. `unknown`: state unknown, stop it before removing it. */
  containers: { id: string; unknown: boolean }[];
  sandboxes: string[];
}

const byAttemptNewestFirst = (a: { attempt: number; createdAt: number }, b: { attempt: number; createdAt: number }) =>
  b.attempt - a.attempt || b.createdAt - a.createdAt;

export function planContainerGc(input: ContainerGcInput): ContainerGcPlan {
  const { policy } = input;
  const removed: GcContainer[] = [];
  const unitKey = (c: GcContainer) => `${c.podUid}\u0000${c.name}`;
  const podGone = (uid: string) => input.allSourcesReady && input.isPodDeleted(uid);
  // The newest instance of each container, whatever its state: a created one is about to start.
  const newest = new Map<string, GcContainer>();
  for (const c of input.containers) {
    const current = newest.get(unitKey(c));
    if (!current || byAttemptNewestFirst(c, current) < 0) newest.set(unitKey(c), c);
  }
  const units = new Map<string, GcContainer[]>();
  for (const c of input.containers) {
    if (c.state === 'CONTAINER_RUNNING' || c.createdAt > input.nowMs - policy.minAgeMs) continue;
    const key = unitKey(c);
    if (c.state === 'CONTAINER_CREATED' && newest.get(key) === c && !podGone(c.podUid)) continue;
    let unit = units.get(key);
    if (!unit) units.set(key, (unit = []));
    unit.push(c);
  }
  for (const unit of units.values()) unit.sort(byAttemptNewestFirst);

  /** Removes all but the newest `keep` of a unit (sorted newest first). */
  const keepNewest = (key: string, keep: number) => {
    const unit = units.get(key)!;
    if (unit.length <= keep) return;
    removed.push(...unit.slice(keep).reverse());
    units.set(key, unit.slice(0, keep));
  };

  for (const [key, unit] of units) {
    if (!podGone(unit[0]!.podUid)) continue;
    keepNewest(key, 0);
    units.delete(key);
  }
  if (policy.maxPerPodContainer >= 0) for (const key of units.keys()) keepNewest(key, policy.maxPerPodContainer);
  const total = () => [...units.values()].reduce((sum, unit) => sum + unit.length, 0);
  if (policy.maxContainers >= 0 && total() > policy.maxContainers) {
    const perUnit = Math.max(1, Math.floor(policy.maxContainers / units.size));
    for (const key of units.keys()) keepNewest(key, perUnit);
    const left = total();
    if (left > policy.maxContainers) {
      const all = [...units.values()].flat().sort(byAttemptNewestFirst);
      removed.push(...all.slice(policy.maxContainers).reverse());
    }
  }

  const gone = new Set(removed.map((c) => c.id));
  const holding = new Set(input.containers.filter((c) => !gone.has(c.id)).map((c) => c.sandboxId));
  const byPod = new Map<string, GcSandbox[]>();
  for (const s of input.sandboxes) {
    let list = byPod.get(s.podUid);
    if (!list) byPod.set(s.podUid, (list = []));
    list.push(s);
  }
  const sandboxes: string[] = [];
  for (const [uid, list] of byPod) {
    list.sort(byAttemptNewestFirst);
    // A deleted pod loses every inactive sandbox; a live one keeps its newest, whatever its state.
    const candidates = podGone(uid) ? list : list.slice(1);
    for (const s of candidates.reverse()) {
      if (s.state !== 'SANDBOX_READY' && !holding.has(s.id)) sandboxes.push(s.id);
    }
  }
  return { containers: removed.map((c) => ({ id: c.id, unknown: c.state === 'CONTAINER_UNKNOWN' })), sandboxes };
}
