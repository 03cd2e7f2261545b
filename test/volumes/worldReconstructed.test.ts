/**
 * The volume world's decisions over volumes found set up at start (world.ts addReconstructed,
 * releasePod, possiblyMounted; reconstruct.go, reconciler readyToUnmount): what the loop is told to
 * start for them, with the world alone (its listener records the changes; no operation runs).
 */
import { describe, expect, it } from 'vitest';
import { SimulatedClock } from 'xstate';
import type { Pod } from '../../src/api/types.ts';
import type { ReconstructedVolume } from '../../src/volumes/reconstruction.ts';
import { type VolumeChanges, VolumeWorld } from '../../src/volumes/world.ts';

const pod = (uid: string, volumes: unknown[]): Pod =>
  ({
    metadata: { name: `web-${uid}`, namespace: 'shop', uid },
    spec: { containers: [{ name: 'app', image: 'busybox', volumeMounts: (volumes as { name: string }[]).map((v) => ({ name: v.name, mountPath: `/${v.name}` })) }], volumes },
  }) as unknown as Pod;

const inline = { name: 'scratch', csi: { driver: 'csi.example.com' } };
const found = (uid: string): ReconstructedVolume => ({ uid, specName: 'scratch', uniqueName: `kubernetes.io/csi/${uid}-scratch`, kind: 'csiInline' });

function world() {
  const w = new VolumeWorld({ clock: new SimulatedClock() });
  const changes: VolumeChanges[] = [];
  w.listen((c) => changes.push(c));
  const adopted: string[] = [];
  const add = (...volumes: ReconstructedVolume[]) => w.addReconstructed(volumes, (v) => adopted.push(`${v.uid}/${v.uniqueName}`));
  return { w, changes, adopted, add };
}

describe('volumes found set up at start', () => {
  it('are torn down, by operations that only tear down, once their pod is known gone; the pod has volumes possibly set up until they end', () => {
    const { w, changes, adopted, add } = world();
    expect(add(found('u1'))).toHaveLength(1);
    expect(adopted).toEqual(['u1/kubernetes.io/csi/u1-scratch']);
    // Nothing is torn down before the pod is known gone (readyToUnmount).
    expect(changes).toEqual([]);
    expect(w.possiblyMounted('u1')).toBe(true);
    expect(w.inUse('kubernetes.io/csi/u1-scratch')).toBe(true);

    expect(w.releasePod('u1')).toBe(true);
    expect(changes).toEqual([{ mount: [{ id: 'u1/scratch', uid: 'u1', pod: 'u1', outerName: 'scratch', uniqueName: 'kubernetes.io/csi/u1-scratch', specName: 'scratch', kind: 'csiInline', foundOnDisk: true }], remount: [], unmount: [], expand: [] }]);
    expect(w.inUse('kubernetes.io/csi/u1-scratch')).toBe(false);
    expect(w.possiblyMounted('u1')).toBe(true);
    // Told once: a later pass does not start it again.
    expect(w.releasePod('u1')).toBe(true);
    expect(changes).toHaveLength(1);
    w.operationEnded('u1/scratch');
    expect(w.possiblyMounted('u1')).toBe(false);
  });

  it("are taken on by the operation of a pod that still wants them (mounted again), never torn down", async () => {
    const { w, changes, add } = world();
    add(found('u1'));
    await w.processPod(pod('u1', [inline]));
    expect(changes).toEqual([{ mount: [{ id: 'u1/scratch', uid: 'u1', pod: 'shop/web-u1', outerName: 'scratch', uniqueName: 'kubernetes.io/csi/u1-scratch', specName: 'scratch', kind: 'csiInline' }], remount: [], unmount: [], expand: [] }]);
    // Its operation holds it now: the pod's teardown is that operation's.
    w.releasePod('u1');
    expect(changes[1]).toEqual({ mount: [], remount: [], unmount: ['u1/scratch'], expand: [] });
  });

  it('are left out when a pod processed first has an operation for them already', async () => {
    const { w, changes, adopted, add } = world();
    await w.processPod(pod('u1', [inline]));
    expect(add(found('u1'))).toEqual([]);
    expect(adopted).toEqual([]);
    expect(changes).toHaveLength(1);
  });

  it("are kept while the processing of a pod that is still there failed (a claim not read: the volume may be that claim's)", async () => {
    const { w, changes, add } = world();
    const claimed = { ...found('u1'), specName: 'pv-1', uniqueName: 'kubernetes.io/csi/csi.example.com^vol-1', kind: 'csiPV' as const };
    add(claimed);
    await w.processPod(pod('u1', [{ name: 'data', persistentVolumeClaim: { claimName: 'data' } }]));
    expect(changes).toEqual([]);
    expect(w.possiblyMounted('u1')).toBe(true);
  });

  it('of a pod processed already that does not want them are torn down at once', async () => {
    const { w, changes, add } = world();
    await w.processPod(pod('u1', [inline]));
    add({ ...found('u1'), specName: 'old', uniqueName: 'kubernetes.io/csi/u1-old' });
    expect(changes[1]!.mount).toEqual([expect.objectContaining({ id: 'u1/old', uniqueName: 'kubernetes.io/csi/u1-old', foundOnDisk: true })]);
  });
});
