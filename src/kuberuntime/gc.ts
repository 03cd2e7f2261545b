/**
 * Container garbage collection against the runtime: list the agent's containers and sandboxes
 * (those carrying the pod UID label; anything else on the runtime is not ours), decide with
 * `planContainerGc`, then remove. One failed removal is logged and the rest go on; something
 * already gone counts as removed.
 *
 * `ContainerGc` is the node's container GC with the kubelet's two capabilities
 * (pkg/kubelet/kuberuntime/kuberuntime_gc.go GarbageCollect, and the container GC's
 * DeleteAllUnusedContainers that the eviction manager calls under disk pressure).
 */
import { type ContainerGcPolicy, type GcContainer, type GcSandbox, planContainerGc } from './containerGC.ts';
import type { Logger } from '../log.ts';
import { type RuntimeService, isNotFound } from '../runtime/types.ts';
import { Label } from './labels.ts';

interface ContainerGcDeps {
  runtime: RuntimeService;
  now(): number;
  log: Logger;
}

export interface ContainerGcResult {
  containersRemoved: number;
  sandboxesRemoved: number;
  failures: number;
}

export async function collectContainerGarbage(
  deps: ContainerGcDeps,
  policy: ContainerGcPolicy,
  isPodDeleted: (uid: string) => boolean,
  allSourcesReady: boolean,
): Promise<ContainerGcResult> {
  const { runtime, log } = deps;
  const [containerList, sandboxList] = await Promise.all([runtime.listContainers(), runtime.listPodSandbox()]);
  const containers: GcContainer[] = [];
  for (const c of containerList) {
    const podUid = c.labels[Label.podUid];
    if (!podUid) continue;
    containers.push({ id: c.id, podUid, name: c.metadata.name, sandboxId: c.podSandboxId, state: c.state, attempt: c.metadata.attempt, createdAt: c.createdAt });
  }
  const sandboxes: GcSandbox[] = [];
  for (const s of sandboxList) {
    const podUid = s.labels[Label.podUid];
    if (!podUid) continue;
    sandboxes.push({ id: s.id, podUid, state: s.state, attempt: s.metadata.attempt, createdAt: s.createdAt });
  }
  const plan = planContainerGc({ containers, sandboxes, policy, nowMs: deps.now(), isPodDeleted, allSourcesReady });
  const result: ContainerGcResult = { containersRemoved: 0, sandboxesRemoved: 0, failures: 0 };

  const attempt = async (what: string, id: string, steps: () => Promise<void>): Promise<boolean> => {
    try {
      await steps();
      return true;
    } catch (err) {
      if (isNotFound(err)) return true;
      result.failures++;
      log('error', `Failed to remove ${what}`, { id, err });
      return false;
    }
  };
  for (const { id, unknown } of plan.containers) {
    const removed = await attempt('dead container', id, async () => {
      // A container in unknown state may still run: stop it first.
      if (unknown) await runtime.stopContainer(id, 0);
      await runtime.removeContainer(id);
    });
    if (removed) result.containersRemoved++;
  }
  for (const id of plan.sandboxes) {
    const removed = await attempt('sandbox', id, async () => {
      // It should be stopped already; stopping again is harmless and covers the rare case it is not.
      await runtime.stopPodSandbox(id);
      await runtime.removePodSandbox(id);
    });
    if (removed) result.sandboxesRemoved++;
  }
  if (result.containersRemoved || result.sandboxesRemoved || result.failures) {
    log('info', 'Container garbage collection', { ...result });
  }
  return result;
}

interface ContainerGcParts extends ContainerGcDeps {
  policy: ContainerGcPolicy;
  pods: {
    /** Nothing owns the pod any more: neither config nor a worker (ShouldPodContentBeRemoved). */
    isDeleted(uid: string): boolean;
    /** The UIDs of the active pods: every other pod runs nothing that must stay (ShouldPodRuntimeBeRemoved), for the eviction's reclaim. */
    activeUids(): ReadonlySet<string>;
  };
  /** Every configured source has been seen: before that a pod missing from config may just not have been read. */
  sourcesReady(): boolean;
}

export class ContainerGc {
  constructor(private readonly parts: ContainerGcParts) {}

  /** The periodic pass (kubelet.go StartGarbageCollection, every minute): the policy's limits, deleted pods' containers. */
  collect(): Promise<ContainerGcResult> {
    return collectContainerGarbage(this.parts, this.parts.policy, (uid) => this.parts.pods.isDeleted(uid), this.parts.sourcesReady());
  }

  /** The eviction manager's reclaim (DeleteAllUnusedContainers): also every dead container of a pod that runs nothing that must stay. */
  deleteAllUnusedContainers(): Promise<ContainerGcResult> {
    const active = this.parts.pods.activeUids();
    return collectContainerGarbage(this.parts, this.parts.policy, (uid) => !active.has(uid), true);
  }
}
