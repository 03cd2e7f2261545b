/** What a source hands over (sourcePods.ts): each pod stamped with its source and first sighting, shared with its last version, frozen. */
import { describe, expect, it } from 'vitest';
import { ConfigAnnotation, type Pod } from '../../src/api/types.ts';
import { SourcePods } from '../../src/sources/sourcePods.ts';

function pod(uid: string, image = 'nginx:1'): Pod {
  return { metadata: { name: uid, namespace: 'default', uid }, spec: { containers: [{ name: 'c', image }] }, status: { phase: 'Pending' } };
}

/** A clock that advances one second per call, so a re-stamped `seen` would be visible. */
function tickingClock(): () => number {
  let t = Date.parse('2024-05-01T00:00:00Z');
  return () => (t += 1000);
}

describe('SourcePods', () => {
  it('stamps each pod with its source and the time it was first seen', () => {
    const pods = new SourcePods('file', () => Date.parse('2024-05-01T12:00:00Z'));
    expect(pods.keep(pod('a')).metadata.annotations).toEqual({ [ConfigAnnotation.source]: 'file', [ConfigAnnotation.seen]: '2024-05-01T12:00:00.000Z' });
  });

  it('keeps the first seen time across versions, and sees a UID anew once it left and came back', () => {
    const pods = new SourcePods('http', tickingClock());
    const seen = pods.keep(pod('a')).metadata.annotations?.[ConfigAnnotation.seen];
    expect(pods.snapshot([pod('a', 'nginx:2')])[0]!.metadata.annotations?.[ConfigAnnotation.seen]).toBe(seen);
    pods.snapshot([]);
    expect(pods.keep(pod('a')).metadata.annotations?.[ConfigAnnotation.seen]).not.toBe(seen);
  });

  it('gives back the same object for the same given object, and shares what did not change with the last version', () => {
    const pods = new SourcePods('api', tickingClock());
    const given = pod('a');
    const kept = pods.keep(given);
    expect(pods.keep(given)).toBe(kept);
    const statusOnly = pods.keep({ ...pod('a'), status: { phase: 'Running' } });
    expect(statusOnly).not.toBe(kept);
    expect(statusOnly.spec).toBe(kept.spec);
    // A new pod shares what it has in common with the pod kept before it.
    expect(pods.keep(pod('b')).spec.containers[0]).toBe(statusOnly.spec.containers[0]);
  });

  it('freezes what it keeps, and never touches what it was given', () => {
    const pods = new SourcePods('file', tickingClock());
    const given = pod('a');
    const kept = pods.keep(given);
    expect(() => {
      kept.spec.containers[0]!.image = 'mutated';
    }).toThrow(TypeError);
    expect(given.metadata.annotations).toBeUndefined();
  });
});
