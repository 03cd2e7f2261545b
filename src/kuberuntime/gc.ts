/**
 * Container garbage collection against the runtime: list the agent's containers and sandboxes
 * (those carrying the pod UID label; anything else on the runtime is not ours), decide with
 * `planContainerGc`, then remove. One failed removal is logged and the rest go on; something
 * already gone counts as removed.
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
