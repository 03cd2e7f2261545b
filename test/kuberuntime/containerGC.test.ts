import { describe, expect, it } from 'vitest';
import {
  type ContainerGcInput,
  type GcContainer,
  type GcSandbox,
  defaultContainerGcPolicy,
  planContainerGc,
} from '../../src/kuberuntime/containerGC.ts';

const now = 1_000_000;

/** `c('a', 'web', 2, 'exited')`: container `a` of pod `p1`, attempt 2, created `age` ms ago. */
function c(id: string, name: string, attempt: number, state: 'running' | 'exited' | 'created' | 'unknown', extra: Partial<GcContainer> = {}): GcContainer {
  const states = { running: 'CONTAINER_RUNNING', exited: 'CONTAINER_EXITED', created: 'CONTAINER_CREATED', unknown: 'CONTAINER_UNKNOWN' } as const;
  return { id, name, attempt, state: states[state], podUid: 'p1', sandboxId: 's1', createdAt: now - 60_000 + attempt * 1_000, ...extra };
}

function s(id: string, attempt: number, ready: boolean, extra: Partial<GcSandbox> = {}): GcSandbox {
  return { id, attempt, podUid: 'p1', state: ready ? 'SANDBOX_READY' : 'SANDBOX_NOTREADY', createdAt: now - 60_000 + attempt * 1_000, ...extra };
}

function plan(over: Partial<ContainerGcInput>) {
  const result = planContainerGc({
    containers: [],
    sandboxes: [],
    policy: defaultContainerGcPolicy,
    nowMs: now,
    isPodDeleted: () => false,
    allSourcesReady: true,
    ...over,
  });
  return { containers: result.containers.map((x) => (x.unknown ? `${x.id}?` : x.id)), sandboxes: result.sandboxes };
}

describe('planContainerGc: dead containers', () => {
  it.each([
    {
      name: 'keeps the newest dead container of each container (default policy), oldest removed first',
      containers: [c('w0', 'web', 0, 'exited'), c('w1', 'web', 1, 'exited'), c('w2', 'web', 2, 'exited'), c('w3', 'web', 3, 'running')],
      want: ['w0', 'w1'],
    },
    {
      name: 'counts units per (pod, container name): another container and another pod keep theirs',
      containers: [
        c('w0', 'web', 0, 'exited'),
        c('w1', 'web', 1, 'exited'),
        c('i0', 'init', 0, 'exited'),
        c('q0', 'web', 0, 'exited', { podUid: 'p2' }),
      ],
      want: ['w0'],
    },
    {
      name: 'never removes a running container, however many there are',
      containers: [c('a', 'web', 0, 'running'), c('b', 'web', 1, 'running')],
      want: [],
    },
    {
      name: 'orders by attempt before creation time (a restored clock does not make an old attempt new)',
      containers: [c('old', 'web', 0, 'exited', { createdAt: now - 1_000 }), c('new', 'web', 1, 'exited', { createdAt: now - 50_000 })],
      want: ['old'],
    },
    {
      name: 'ties on attempt are broken by creation time',
      containers: [c('x', 'web', 0, 'exited', { createdAt: now - 5_000 }), c('y', 'web', 0, 'exited', { createdAt: now - 9_000 })],
      want: ['y'],
    },
    {
      name: 'a container in unknown state is stopped before removal',
      containers: [c('u', 'web', 0, 'unknown'), c('w1', 'web', 1, 'exited')],
      want: ['u?'],
    },
    {
      name: 'an older created-but-never-started instance counts as dead',
      containers: [c('c0', 'web', 0, 'created'), c('c1', 'web', 1, 'exited')],
      want: ['c0'],
    },
    {
      name: 'the newest instance, only created (about to start), is not dead: the finished one before it stays for the status',
      containers: [c('w0', 'web', 0, 'exited'), c('w1', 'web', 1, 'exited'), c('w2', 'web', 2, 'created')],
      want: ['w0'],
    },
  ])('$name', ({ containers, want }) => {
    expect(plan({ containers }).containers).toEqual(want);
  });

  it('leaves containers younger than the minimum age out (and keeps the newest of the rest)', () => {
    const containers = [c('w0', 'web', 0, 'exited', { createdAt: now - 10_000 }), c('w1', 'web', 1, 'exited', { createdAt: now - 5_000 }), c('w2', 'web', 2, 'exited', { createdAt: now - 1_000 })];
    expect(plan({ containers, policy: { ...defaultContainerGcPolicy, minAgeMs: 6_000 } }).containers).toEqual([]);
    expect(plan({ containers, policy: { ...defaultContainerGcPolicy, minAgeMs: 4_000 } }).containers).toEqual(['w0']);
    expect(plan({ containers, policy: { ...defaultContainerGcPolicy, minAgeMs: 0 } }).containers).toEqual(['w0', 'w1']);
  });

  it('a negative maxPerPodContainer keeps every dead container', () => {
    const containers = [c('w0', 'web', 0, 'exited'), c('w1', 'web', 1, 'exited')];
    expect(plan({ containers, policy: { ...defaultContainerGcPolicy, maxPerPodContainer: -1 } }).containers).toEqual([]);
  });

  it('removes every dead container of a deleted pod, but only once all sources are ready', () => {
    const containers = [c('w0', 'web', 0, 'exited'), c('q0', 'web', 0, 'exited', { podUid: 'gone' }), c('q1', 'web', 1, 'created', { podUid: 'gone' })];
    const isPodDeleted = (uid: string) => uid === 'gone';
    // Gone: even its newest instance, only created, goes (it will never start).
    expect(plan({ containers, isPodDeleted }).containers).toEqual(['q0', 'q1']);
    // Not known to be gone yet: the created instance may start, and q0 is its one finished instance to keep.
    expect(plan({ containers, isPodDeleted, allSourcesReady: false }).containers).toEqual([]);
  });

  it('maxContainers: first an equal share per unit (at least one), then the oldest overall', () => {
    const containers = [
      ...[0, 1, 2, 3].map((a) => c(`a${a}`, 'a', a, 'exited')),
      ...[0, 1, 2].map((a) => c(`b${a}`, 'b', a, 'exited', { createdAt: now - 30_000 + a * 1_000 })),
      c('z0', 'z', 0, 'exited', { podUid: 'p2', createdAt: now - 59_000 }),
    ];
    const policy = { minAgeMs: 0, maxPerPodContainer: -1, maxContainers: 6 };
    // 3 units, 6 allowed: 2 each ⇒ a0, a1, b0 go; 5 left, within the limit.
    expect(plan({ containers, policy }).containers.sort()).toEqual(['a0', 'a1', 'b0']);
    // 2 allowed: 1 each (the minimum) ⇒ 3 left, then the oldest overall (z0, attempt 0) goes too.
    expect(plan({ containers, policy: { ...policy, maxContainers: 2 } }).containers.sort()).toEqual(['a0', 'a1', 'a2', 'b0', 'b1', 'z0']);
  });
});

describe('planContainerGc: sandboxes', () => {
  it.each([
    {
      name: "a live pod keeps its newest sandbox, even stopped; older ones go once they hold no container",
      sandboxes: [s('s0', 0, false), s('s1', 1, false), s('s2', 2, false)],
      containers: [c('w', 'web', 0, 'exited', { sandboxId: 's1' })],
      want: ['s0'],
    },
    {
      name: 'a ready sandbox is never removed',
      sandboxes: [s('s0', 0, true), s('s1', 1, true)],
      containers: [],
      want: [],
    },
    {
      name: 'a sandbox emptied by this round of container removals goes in the same round',
      sandboxes: [s('s0', 0, false), s('s1', 1, true)],
      containers: [c('old', 'web', 0, 'exited', { sandboxId: 's0' }), c('new', 'web', 1, 'exited', { sandboxId: 's1' })],
      want: ['s0'],
    },
  ])('$name', ({ sandboxes, containers, want }) => {
    expect(plan({ sandboxes, containers }).sandboxes).toEqual(want);
  });

  it('a deleted pod loses every inactive sandbox, the newest included (sources ready)', () => {
    const sandboxes = [s('s0', 0, false, { podUid: 'gone' }), s('s1', 1, false, { podUid: 'gone' }), s('keep', 0, false)];
    const isPodDeleted = (uid: string) => uid === 'gone';
    expect(plan({ sandboxes, isPodDeleted }).sandboxes).toEqual(['s0', 's1']);
    expect(plan({ sandboxes, isPodDeleted, allSourcesReady: false }).sandboxes).toEqual(['s0']);
  });
});
