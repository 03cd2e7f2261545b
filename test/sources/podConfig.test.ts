import { describe, expect, it } from 'vitest';
import { ConfigAnnotation, type Pod, type SourceName } from '../../src/api/types.ts';
import type { ConfigOp } from '../../src/events.ts';
import { jsonEqual } from '../../src/api/json.ts';
import { PodConfig, type PodUpdate } from '../../src/sources/podConfig.ts';

function pod(uid: string, name = uid, extra: Partial<Pod['metadata']> = {}): Pod {
  return {
    metadata: { name, namespace: 'default', uid, ...extra },
    spec: { containers: [{ name: 'c', image: 'nginx:1' }] },
    status: { phase: 'Pending' },
  };
}

function summary(updates: PodUpdate[]): [ConfigOp, string[]][] {
  return updates.map((u) => [u.op, u.pods.map((p) => p.metadata.uid)]);
}

describe('PodConfig.merge', () => {
  type Case = {
    name: string;
    before: Pod[];
    after: (pods: Pod[]) => Pod[];
    expected: [ConfigOp, string[]][];
  };
  const cases: Case[] = [
    { name: 'identical re-snapshot ⇒ nothing', before: [pod('a')], after: (p) => p, expected: [] },
    {
      name: 'spec change ⇒ UPDATE',
      before: [pod('a')],
      after: ([a]) => [{ ...a!, spec: { containers: [{ name: 'c', image: 'nginx:2' }] } }],
      expected: [['UPDATE', ['a']]],
    },
    {
      name: 'label change ⇒ UPDATE',
      before: [pod('a')],
      after: ([a]) => [{ ...a!, metadata: { ...a!.metadata, labels: { app: 'x' } } }],
      expected: [['UPDATE', ['a']]],
    },
    {
      name: 'user annotation change ⇒ UPDATE',
      before: [pod('a')],
      after: ([a]) => [{ ...a!, metadata: { ...a!.metadata, annotations: { team: 'x' } } }],
      expected: [['UPDATE', ['a']]],
    },
    {
      name: 'change of kubelet-local annotations only ⇒ nothing',
      before: [pod('a')],
      after: ([a]) => [
        {
          ...a!,
          metadata: {
            ...a!.metadata,
            annotations: { [ConfigAnnotation.seen]: 'yesterday', [ConfigAnnotation.mirror]: 'm', [ConfigAnnotation.source]: 'api' },
          },
        },
      ],
      expected: [],
    },
    {
      name: 'key order only ⇒ nothing',
      before: [pod('a')],
      after: ([a]) => [{ status: a!.status, spec: { containers: [{ image: 'nginx:1', name: 'c' }] }, metadata: a!.metadata }],
      expected: [],
    },
    {
      name: 'status-only change ⇒ RECONCILE',
      before: [pod('a')],
      after: ([a]) => [{ ...a!, status: { phase: 'Running' } }],
      expected: [['RECONCILE', ['a']]],
    },
    {
      name: 'deletionTimestamp ⇒ DELETE',
      before: [pod('a')],
      after: ([a]) => [{ ...a!, metadata: { ...a!.metadata, deletionTimestamp: '2024-05-01T00:10:00Z', deletionGracePeriodSeconds: 30 } }],
      expected: [['DELETE', ['a']]],
    },
    { name: 'missing UID ⇒ REMOVE', before: [pod('a'), pod('b')], after: ([, b]) => [b!], expected: [['REMOVE', ['a']]] },
    {
      name: 'order is REMOVE, ADD, UPDATE, DELETE, RECONCILE',
      before: [pod('gone'), pod('upd'), pod('del'), pod('rec')],
      after: ([, upd, del, rec]) => [
        { ...rec!, status: { phase: 'Running' } },
        { ...del!, metadata: { ...del!.metadata, deletionTimestamp: '2024-05-01T00:10:00Z' } },
        { ...upd!, spec: { containers: [{ name: 'c', image: 'nginx:2' }] } },
        pod('new'),
      ],
      expected: [
        ['REMOVE', ['gone']],
        ['ADD', ['new']],
        ['UPDATE', ['upd']],
        ['DELETE', ['del']],
        ['RECONCILE', ['rec']],
      ],
    },
  ];

  it.each(cases)('$name', ({ before, after, expected }) => {
    const config = new PodConfig(['file']);
    expect(summary(config.merge('file', before))).toEqual([['ADD', before.map((p) => p.metadata.uid)]]);
    expect(summary(config.merge('file', after(structuredClone(before))))).toEqual(expected);
  });

  it('takes the objects a source handed over before as unchanged, and still sees the one it replaced', () => {
    const config = new PodConfig(['api']);
    const pods = [pod('a'), pod('b'), pod('c')];
    config.merge('api', pods);
    expect(config.merge('api', pods)).toEqual([]);
    const b = { ...pods[1]!, status: { phase: 'Running' as const } };
    expect(summary(config.merge('api', [pods[0]!, b, pods[2]!]))).toEqual([['RECONCILE', ['b']]]);
    expect(config.pods().find((p) => p.metadata.uid === 'b')?.status).toEqual({ phase: 'Running' });
    // An equal copy of the same pod is compared, and is no change either.
    expect(config.merge('api', [structuredClone(pods[0]!), b, pods[2]!])).toEqual([]);
  });

  it('emits an empty ADD for a first empty snapshot, and nothing for later empty ones', () => {
    const config = new PodConfig(['file']);
    expect(config.merge('file', [])).toEqual([{ op: 'ADD', source: 'file', pods: [] }]);
    expect(config.merge('file', [])).toEqual([]);
  });

  it('stores the new version: a revert after an update is an update again', () => {
    const config = new PodConfig(['file']);
    config.merge('file', [pod('a')]);
    const changed = pod('a');
    changed.spec.containers[0]!.image = 'nginx:2';
    config.merge('file', [changed]);
    expect(config.pods()[0]?.spec.containers[0]?.image).toBe('nginx:2');
    expect(summary(config.merge('file', [pod('a')]))).toEqual([['UPDATE', ['a']]]);
  });

  it('stores the status of a RECONCILE', () => {
    const config = new PodConfig(['file']);
    config.merge('file', [pod('a')]);
    const running = { ...pod('a'), status: { phase: 'Running' as const } };
    expect(summary(config.merge('file', [running]))).toEqual([['RECONCILE', ['a']]]);
    expect(config.merge('file', [running])).toEqual([]);
  });

  it('drops a second pod with the same full name and reports it', () => {
    const dropped: [string, SourceName][] = [];
    const config = new PodConfig(['file'], { onDuplicate: (p, s) => dropped.push([p.metadata.uid, s]) });
    const updates = config.merge('file', [pod('a', 'web'), pod('b', 'web'), pod('c', 'web', { namespace: 'other' })]);
    expect(summary(updates)).toEqual([['ADD', ['a', 'c']]]);
    expect(dropped).toEqual([['b', 'file']]);
    expect(config.pods().map((p) => p.metadata.uid)).toEqual(['a', 'c']);
  });

  it('keeps sources apart: a snapshot of one never removes pods of another', () => {
    const config = new PodConfig(['file', 'api']);
    config.merge('file', [pod('f')]);
    expect(summary(config.merge('api', [pod('x')]))).toEqual([['ADD', ['x']]]);
    expect(summary(config.merge('api', []))).toEqual([['REMOVE', ['x']]]);
    expect(config.pods().map((p) => p.metadata.uid)).toEqual(['f']);
  });

  it('is ready once every expected source has delivered a snapshot', () => {
    const config = new PodConfig(['file', 'api']);
    expect(config.sourcesReady()).toBe(false);
    config.merge('file', []);
    expect(config.sourcesReady()).toBe(false);
    expect([...config.seenSources()]).toEqual(['file']);
    config.merge('api', [pod('a')]);
    expect(config.sourcesReady()).toBe(true);
    expect(new Set(config.seenSources())).toEqual(new Set(['file', 'api']));
  });

  it('refuses a source it was not configured with', () => {
    expect(() => new PodConfig(['file']).merge('http', [])).toThrow(/http/);
  });

  it('stores and hands out the pods as their source gave them, reshaping none', () => {
    const config = new PodConfig(['file']);
    const input = pod('a');
    const [add] = config.merge('file', [input]);
    expect(add!.pods[0]).toBe(input);
    const status = { ...input, status: { phase: 'Running' as const } };
    expect(config.merge('file', [status])).toEqual([{ op: 'RECONCILE', source: 'file', pods: [status] }]);
    expect(config.pods()[0]).toBe(status);
  });
});

describe('jsonEqual', () => {
  it.each([
    [{ a: 1, b: [1, 2] }, { b: [1, 2], a: 1 }, true],
    [{ a: 1, b: undefined }, { a: 1 }, true],
    [{ a: 1, b: null }, { a: 1 }, true],
    [{ a: [{ t: null }] }, { a: [{}] }, true],
    [{ a: null }, { a: 0 }, false],
    [{ a: 1 }, { a: 2 }, false],
    [{ a: [1, 2] }, { a: [2, 1] }, false],
    [{ a: {} }, { a: [] }, false],
    [{ a: 1 }, { a: 1, b: 2 }, false],
  ])('%j vs %j ⇒ %s', (a, b, equal) => {
    expect(jsonEqual(a, b)).toBe(equal);
  });
});
