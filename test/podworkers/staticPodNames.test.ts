import { describe, expect, it } from 'vitest';
import { StaticPodNames } from '../../src/podworkers/staticPodNames.ts';

describe('StaticPodNames', () => {
  it('lets the first pod of a name start and queues the others in arrival order', () => {
    const names = new StaticPodNames();
    expect(names.tryStart('etcd_default', 'a')).toBe(true);
    expect(names.tryStart('etcd_default', 'b')).toBe(false);
    expect(names.tryStart('etcd_default', 'c')).toBe(false);
    expect(names.tryStart('etcd_default', 'b')).toBe(false);
    expect(names.isWaiting('etcd_default', 'b')).toBe(true);
    expect(names.tryStart('other_default', 'x')).toBe(true);
    expect(names.tryStart('etcd_default', 'a')).toBe(true);
  });

  it('hands the name to the first waiting pod still wanted, skipping the ones that are gone', () => {
    const names = new StaticPodNames();
    names.tryStart('n', 'a');
    names.tryStart('n', 'b');
    names.tryStart('n', 'c');
    expect(names.release('n', 'a', (uid) => uid !== 'b')).toBe('c');
    expect(names.holder('n')).toBe('c');
    expect(names.isWaiting('n', 'b')).toBe(false);
    expect(names.release('n', 'c', () => true)).toBeUndefined();
    expect(names.holder('n')).toBeUndefined();
  });

  it('ignores a release by a pod that does not hold the name', () => {
    const names = new StaticPodNames();
    names.tryStart('n', 'a');
    names.tryStart('n', 'b');
    expect(names.release('n', 'b', () => true)).toBeUndefined();
    expect(names.holder('n')).toBe('a');
  });

  it('forgets a waiting pod that was removed before it could start', () => {
    const names = new StaticPodNames();
    names.tryStart('n', 'a');
    names.tryStart('n', 'b');
    names.drop('n', 'b');
    expect(names.release('n', 'a', () => true)).toBeUndefined();
  });
});
