/**
 * The PLEG's relist diff (KUBELET_BEHAVIOR §8), pure: two snapshots of what the runtime holds,
 * each container and sandbox reduced to running / exited / unknown, and the events that explain
 * the difference. Created containers count as unknown, and a change to unknown yields no event:
 * only starts, deaths and removals move a pod.
 */

export type RelistState = 'running' | 'exited' | 'unknown';

/** Pod UID → (container or sandbox ID → state). */
export type RelistRecord = ReadonlyMap<string, ReadonlyMap<string, RelistState>>;

export type PlegEventType = 'PLEG.CONTAINER_STARTED' | 'PLEG.CONTAINER_DIED' | 'PLEG.CONTAINER_REMOVED';

export interface PlegEvent {
  type: PlegEventType;
  podUid: string;
  containerId: string;
}

const emptyPod: ReadonlyMap<string, RelistState> = new Map();

export function relistEvents(previous: RelistRecord, current: RelistRecord): PlegEvent[] {
  const events: PlegEvent[] = [];
  const uids = new Set([...previous.keys(), ...current.keys()]);
  for (const podUid of uids) {
    const before = previous.get(podUid) ?? emptyPod;
    const after = current.get(podUid) ?? emptyPod;
    if (before === after) continue;
    for (const containerId of new Set([...before.keys(), ...after.keys()])) {
      const was = before.get(containerId);
      const now = after.get(containerId);
      if (was === now) continue;
      const push = (type: PlegEventType) => events.push({ type, podUid, containerId });
      if (now === 'running') push('PLEG.CONTAINER_STARTED');
      else if (now === 'exited') push('PLEG.CONTAINER_DIED');
      else if (now === undefined) {
        if (was !== 'exited') push('PLEG.CONTAINER_DIED');
        push('PLEG.CONTAINER_REMOVED');
      }
    }
  }
  return events;
}
