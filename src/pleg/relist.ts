/**
 * The PLEG's relist diff (pkg/kubelet/pleg/generic.go Relist, generateEvents), pure: two snapshots of what the runtime holds,
 * each container and sandbox reduced to running / exited / unknown, and the events that explain
 * the difference. Created containers count as unknown, and a change to unknown yields no event:
 * only starts, deaths and removals move a pod.
 *
 * The evented PLEG uses the same table for one entry at a time (`entryEvents`): a CRI container
 * event says what one container or sandbox is now (`stateAfterEvent`), and the events are the
 * difference with what the record held. So the stream and the relist can never disagree about
 * what a change means, and a change already told by one is not told again by the other.
 */
import type { PlegEvent, PlegEventType } from '../events.ts';
import type { ContainerEventType } from '../runtime/types.ts';

export type RelistState = 'running' | 'exited' | 'unknown';

/** Pod UID → (container or sandbox ID → state). */
export type RelistRecord = ReadonlyMap<string, ReadonlyMap<string, RelistState>>;

const emptyPod: ReadonlyMap<string, RelistState> = new Map();

export function relistEvents(previous: RelistRecord, current: RelistRecord): PlegEvent[] {
  const events: PlegEvent[] = [];
  const uids = new Set([...previous.keys(), ...current.keys()]);
  for (const podUid of uids) {
    const before = previous.get(podUid) ?? emptyPod;
    const after = current.get(podUid) ?? emptyPod;
    if (before === after) continue;
    for (const containerId of new Set([...before.keys(), ...after.keys()])) {
      events.push(...entryEvents(podUid, containerId, before.get(containerId), after.get(containerId)));
    }
  }
  return events;
}

/** The events for one container or sandbox going from `was` to `now` (undefined: not there). */
export function entryEvents(
  podUid: string,
  containerId: string,
  was: RelistState | undefined,
  now: RelistState | undefined,
): PlegEvent[] {
  if (was === now) return [];
  const event = (type: PlegEventType): PlegEvent => ({ type, podUid, containerId });
  if (now === 'running') return [event('PLEG.CONTAINER_STARTED')];
  if (now === 'exited') return [event('PLEG.CONTAINER_DIED')];
  if (now === undefined) {
    return was === 'exited' ? [event('PLEG.CONTAINER_REMOVED')] : [event('PLEG.CONTAINER_DIED'), event('PLEG.CONTAINER_REMOVED')];
  }
  return [];
}

/**
 * What a CRI container event (GetContainerEvents) says the container or sandbox is now: CREATED
 * is unknown (so it moves nothing, as in the kubelet's evented PLEG), STARTED running, STOPPED
 * exited, DELETED gone. A sandbox's own events (containerd 1.7+ and sim:// send them, with the
 * sandbox id as the container id) read the same way, as the relist reads a ready sandbox as
 * running and a not-ready one as exited.
 */
export function stateAfterEvent(type: ContainerEventType): RelistState | undefined {
  switch (type) {
    case 'CONTAINER_CREATED_EVENT':
      return 'unknown';
    case 'CONTAINER_STARTED_EVENT':
      return 'running';
    case 'CONTAINER_STOPPED_EVENT':
      return 'exited';
    case 'CONTAINER_DELETED_EVENT':
      return undefined;
  }
}
