import { describe, expect, it } from 'vitest';
import { jsonEqual } from '../../src/api/json.ts';
import { deepFreeze, sharedWith } from '../../src/immutable.ts';

const version1 = () => ({
  metadata: { name: 'web', resourceVersion: '1', labels: { app: 'web' } },
  spec: { containers: [{ name: 'app', image: 'busybox', args: ['a', 'b'] }], tolerations: [{ key: 'k', operator: 'Exists' }] },
  status: { phase: 'Pending', conditions: [{ type: 'Ready', status: 'False' }] },
});

describe('sharedWith', () => {
  it('takes every unchanged part from the previous version and keeps what changed', () => {
    const before = version1();
    const next = version1();
    next.metadata.resourceVersion = '2';
    next.status.conditions[0]!.status = 'True';
    const shared = sharedWith(before, next);
    expect(shared).toEqual(next);
    expect(shared.spec).toBe(before.spec);
    expect(shared.metadata.labels).toBe(before.metadata.labels);
    expect(shared.metadata).not.toBe(before.metadata);
    expect(shared.status.conditions).not.toBe(before.status.conditions);
    // Neither version was changed.
    expect(before.metadata.resourceVersion).toBe('1');
    expect(next.spec).not.toBe(before.spec);
  });

  it('returns the previous version itself when nothing changed', () => {
    const before = version1();
    expect(sharedWith(before, version1())).toBe(before);
  });

  it('returns `next` itself when nothing can be shared', () => {
    const next = version1();
    expect(sharedWith(undefined, next)).toBe(next);
    expect(sharedWith({ other: 1 }, next)).toBe(next);
    expect(sharedWith([next], next)).toBe(next);
  });

  it.each([
    ['a member added', { a: 1 }, { a: 1, b: 2 }],
    ['a member removed', { a: 1, b: 2 }, { a: 1 }],
    ['a member set to undefined', { a: 1 }, { a: 1, b: undefined }],
    ['null against absent', { a: 1 }, { a: 1, b: null }],
    ['an item added', [1, 2], [1, 2, 3]],
    ['an item removed', [1, 2, 3], [1, 2]],
    ['an array for an object', { 0: 'x' }, ['x']],
    ['a number for a string', { a: '1' }, { a: 1 }],
  ])('does not take the previous part when they differ: %s', (_case, before, next) => {
    const shared = sharedWith(before, next);
    expect(shared).not.toBe(before);
    expect(Object.keys(shared)).toEqual(Object.keys(next));
    expect(shared).toStrictEqual(next);
  });

  it('shares items of an array that changed elsewhere', () => {
    const before = { items: [{ n: 1 }, { n: 2 }] };
    const shared = sharedWith(before, { items: [{ n: 1 }, { n: 3 }] });
    expect(shared.items[0]).toBe(before.items[0]);
    expect(shared.items[1]).toEqual({ n: 3 });
  });

  it('works on frozen versions', () => {
    const before = deepFreeze(version1());
    const next = version1();
    next.metadata.resourceVersion = '2';
    const shared = sharedWith(before, next);
    expect(shared.spec).toBe(before.spec);
    expect(jsonEqual(shared, next)).toBe(true);
  });
});

describe('deepFreeze', () => {
  it('freezes the object and everything in it', () => {
    const pod = deepFreeze(version1());
    expect(Object.isFrozen(pod)).toBe(true);
    expect(Object.isFrozen(pod.spec.containers[0]!.args)).toBe(true);
    expect(() => {
      (pod.status as { phase: string }).phase = 'Running';
    }).toThrow(TypeError);
  });

  it('leaves values that are not objects as they are', () => {
    expect(deepFreeze('x')).toBe('x');
    expect(deepFreeze(null)).toBe(null);
  });
});
