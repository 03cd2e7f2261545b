/** The PLEG relist diff (pkg/kubelet/pleg/generic.go generateEvents). */
import { describe, expect, it } from 'vitest';
import { type RelistRecord, type RelistState, relistEvents } from '../../src/pleg/relist.ts';

const record = (pods: Record<string, Record<string, RelistState>>): RelistRecord =>
  new Map(Object.entries(pods).map(([uid, containers]) => [uid, new Map(Object.entries(containers))]));

const events = (before: Record<string, Record<string, RelistState>>, after: Record<string, Record<string, RelistState>>) =>
  relistEvents(record(before), record(after)).map((e) => `${e.type} ${e.podUid}/${e.containerId}`);

describe('relistEvents', () => {
  type Row = [name: string, was: RelistState | undefined, now: RelistState | undefined, want: string[]];
  const rows: Row[] = [
    ['unchanged running', 'running', 'running', []],
    ['unchanged exited', 'exited', 'exited', []],
    ['new running container', undefined, 'running', ['PLEG.CONTAINER_STARTED p1/c1']],
    ['exited → running', 'exited', 'running', ['PLEG.CONTAINER_STARTED p1/c1']],
    ['unknown → running', 'unknown', 'running', ['PLEG.CONTAINER_STARTED p1/c1']],
    ['running → exited', 'running', 'exited', ['PLEG.CONTAINER_DIED p1/c1']],
    ['new exited container', undefined, 'exited', ['PLEG.CONTAINER_DIED p1/c1']],
    ['running → unknown: no event', 'running', 'unknown', []],
    ['new unknown (created) container: no event', undefined, 'unknown', []],
    ['vanished after exited: Removed only', 'exited', undefined, ['PLEG.CONTAINER_REMOVED p1/c1']],
    ['vanished while running: Died then Removed', 'running', undefined, ['PLEG.CONTAINER_DIED p1/c1', 'PLEG.CONTAINER_REMOVED p1/c1']],
    ['vanished while unknown: Died then Removed', 'unknown', undefined, ['PLEG.CONTAINER_DIED p1/c1', 'PLEG.CONTAINER_REMOVED p1/c1']],
  ];
  it.each(rows)('%s', (_name, was, now, want) => {
    const one = (state: RelistState | undefined): Record<string, Record<string, RelistState>> => ({
      p1: state === undefined ? {} : { c1: state },
    });
    const before = one(was);
    const after = one(now);
    expect(events(before, after)).toEqual(want);
  });

  it('a new pod: events for each of its containers and its sandbox', () => {
    expect(events({}, { p2: { sandbox: 'running', c1: 'running', c2: 'exited' } })).toEqual([
      'PLEG.CONTAINER_STARTED p2/sandbox',
      'PLEG.CONTAINER_STARTED p2/c1',
      'PLEG.CONTAINER_DIED p2/c2',
    ]);
  });

  it('a vanished pod: its running things die and everything is removed', () => {
    expect(events({ p3: { sandbox: 'running', c1: 'exited' } }, {})).toEqual([
      'PLEG.CONTAINER_DIED p3/sandbox',
      'PLEG.CONTAINER_REMOVED p3/sandbox',
      'PLEG.CONTAINER_REMOVED p3/c1',
    ]);
  });

  it('only changed containers of changed pods produce events', () => {
    const before = { a: { c1: 'running', c2: 'running' }, b: { c3: 'running' } } as const;
    const after = { a: { c1: 'running', c2: 'exited' }, b: { c3: 'running' } } as const;
    expect(events(before, after)).toEqual(['PLEG.CONTAINER_DIED a/c2']);
  });

  it('identical snapshots produce nothing', () => {
    const snapshot = { a: { c1: 'running' as const, c2: 'exited' as const } };
    expect(events(snapshot, snapshot)).toEqual([]);
  });
});
