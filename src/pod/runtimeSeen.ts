/**
 * What a sync saw of its pod in the runtime when that view needed nothing more done, and whether
 * a PLEG event is news after it, pure.
 *
 * A sync reads the pod from the runtime again after acting; when the plan for that view is empty
 * (nothing to start, kill or resize), the view is where the pod rests, and an event of the PLEG
 * that tells the same thing (the sandbox it made is running, the container it started is running)
 * comes too late to change anything: the pod starts no sync for it, and the runtime is not read
 * once more for nothing. Any other event — a container seen running has died, one not seen at
 * all has started — starts a sync as always. The kubelet gets the same from its pod cache: the
 * pod worker syncs on the status the PLEG put there, and an event about what that status already
 * shows finds nothing to do (pod_workers.go, the cache's GetNewerThan).
 *
 * The states are the PLEG's (pleg/relist.ts): a running container or a ready sandbox is running, an
 * exited container or a not-ready sandbox exited, a created or unknown container unknown.
 */
import type { RuntimePodStatus } from '../api/runtimeView.ts';
import type { PlegEvent } from '../events.ts';

export type SeenState = 'running' | 'exited' | 'unknown';
/** Container or sandbox ID → its state in the view (a plain object: it is part of the pod actor's snapshot). */
export type RuntimeSeen = Readonly<Record<string, SeenState>>;

export function runtimeSeen(status: RuntimePodStatus): RuntimeSeen {
  const seen: Record<string, SeenState> = {};
  for (const sandbox of status.sandboxes) seen[sandbox.id] = sandbox.state === 'SANDBOX_READY' ? 'running' : 'exited';
  for (const c of status.containers) seen[c.id] = c.state === 'CONTAINER_RUNNING' ? 'running' : c.state === 'CONTAINER_EXITED' ? 'exited' : 'unknown';
  return seen;
}

/** The event tells what `seen` shows already (no view: everything is news). */
export function isSeen(seen: RuntimeSeen | undefined, event: PlegEvent): boolean {
  if (!seen) return false;
  const state = Object.hasOwn(seen, event.containerId) ? seen[event.containerId] : undefined;
  switch (event.type) {
    case 'PLEG.CONTAINER_STARTED':
      return state === 'running';
    case 'PLEG.CONTAINER_DIED':
      return state === 'exited';
    case 'PLEG.CONTAINER_REMOVED':
      return state === undefined;
  }
}
