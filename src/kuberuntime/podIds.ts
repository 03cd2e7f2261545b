/**
 * The runtime IDs of each pod's sandboxes and containers, as the agent made them and last found
 * them, so that reading a pod's status asks the runtime about those IDs (PodSandboxStatus,
 * ContainerStatus) instead of listing the node's sandboxes and containers by the pod's UID first.
 * The kubelet does the same: its GetPodStatus (kuberuntime_manager.go) takes the IDs from the
 * PLEG's relist of the node, and never lists per pod.
 *
 * Every ID of a pod is known here without listing, because the agent is the only one that creates
 * sandboxes and containers with its labels, and every creation goes through `recordingPodIds`:
 * - a sandbox or container created is added to its pod;
 * - one removed, or that the runtime no longer knows (NOT_FOUND), is dropped;
 * - a creation that failed may still have happened (a deadline passed while the runtime worked):
 *   its pod is read by listing the next time, as is a pod the agent has not read since it started
 *   (one it adopts). A listing only adds IDs: one removed meanwhile is dropped on its NOT_FOUND.
 * So the set is always a superset of what the runtime holds for the pod, and each read still asks
 * the runtime for the state of every one of them: a sync never acts on an older picture.
 */
import { containerIdOf, podUidOf, sandboxIdOf } from '../runtime/criCalls.ts';
import { decorate } from '../runtime/decorate.ts';
import { type RuntimeService, isNotFound } from '../runtime/types.ts';

export interface KnownPodIds {
  /** Sandbox IDs. */
  sandboxes: ReadonlySet<string>;
  /** Container ID → its sandbox's ID. */
  containers: ReadonlyMap<string, string>;
}

interface PodEntry {
  sandboxes: Set<string>;
  containers: Map<string, string>;
  /** A creation's outcome is unknown: list before trusting the entry. */
  uncertain: boolean;
}

export class RuntimePodIds {
  private readonly pods = new Map<string, PodEntry>();
  /** Sandbox or container ID → pod UID. */
  private readonly owners = new Map<string, string>();

  /** The pod's IDs, or undefined when they must be found by listing. */
  of(uid: string): KnownPodIds | undefined {
    const entry = this.pods.get(uid);
    return entry && !entry.uncertain ? entry : undefined;
  }

  /** What a listing of the pod found (added to what is known: a listing may be older than a creation). */
  listed(uid: string, sandboxes: readonly string[], containers: readonly { id: string; podSandboxId: string }[]): void {
    const entry = this.entry(uid);
    entry.uncertain = false;
    for (const id of sandboxes) this.addSandbox(uid, entry, id);
    for (const c of containers) this.addContainer(uid, entry, c.id, c.podSandboxId);
    this.dropIfEmpty(uid, entry);
  }

  sandboxCreated(uid: string, id: string): void {
    this.addSandbox(uid, this.entry(uid), id);
  }

  containerCreated(uid: string, id: string, sandboxId: string): void {
    this.addContainer(uid, this.entry(uid), id, sandboxId);
  }

  /** A creation for the pod failed: it may have happened all the same. */
  creationUncertain(uid: string): void {
    this.entry(uid).uncertain = true;
  }

  /** The sandbox or container is removed, or unknown to the runtime. */
  gone(id: string): void {
    const uid = this.owners.get(id);
    if (uid === undefined) return;
    this.owners.delete(id);
    const entry = this.pods.get(uid);
    if (!entry) return;
    entry.sandboxes.delete(id);
    entry.containers.delete(id);
    this.dropIfEmpty(uid, entry);
  }

  /** A pod with nothing in the runtime is not kept (its next read lists: two calls, for a pod starting or gone). */
  private dropIfEmpty(uid: string, entry: PodEntry): void {
    if (entry.sandboxes.size === 0 && entry.containers.size === 0 && !entry.uncertain) this.pods.delete(uid);
  }

  private entry(uid: string): PodEntry {
    let entry = this.pods.get(uid);
    if (!entry) this.pods.set(uid, (entry = { sandboxes: new Set(), containers: new Map(), uncertain: false }));
    return entry;
  }

  private addSandbox(uid: string, entry: PodEntry, id: string): void {
    entry.sandboxes.add(id);
    this.owners.set(id, uid);
  }

  private addContainer(uid: string, entry: PodEntry, id: string, sandboxId: string): void {
    entry.containers.set(id, sandboxId);
    this.owners.set(id, uid);
  }
}

/**
 * The runtime, with every sandbox and container created or removed through it recorded in `ids`
 * (the calls the table of CRI calls says create or remove one). Everything else goes straight to
 * `runtime`.
 */
export function recordingPodIds(runtime: RuntimeService, ids: RuntimePodIds): RuntimeService {
  return decorate(runtime, async (call, args, proceed) => {
    if (call.creates) {
      const uid = podUidOf(call, args)!;
      try {
        const created = await proceed();
        // What a creating call answers is the new ID (criCalls.ts: `creates` is for calls that answer one).
        if (call.creates === 'sandbox') ids.sandboxCreated(uid, created as string);
        else ids.containerCreated(uid, created as string, sandboxIdOf(call, args)!);
        return created;
      } catch (err) {
        ids.creationUncertain(uid);
        throw err;
      }
    }
    const removed = call.removes ? (sandboxIdOf(call, args) ?? containerIdOf(call, args)) : undefined;
    if (removed === undefined) return proceed();
    try {
      const result = await proceed();
      ids.gone(removed);
      return result;
    } catch (err) {
      if (isNotFound(err)) ids.gone(removed);
      throw err;
    }
  });
}
