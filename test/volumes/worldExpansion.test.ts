/**
 * The volume world's side of online expansion (desired_state_of_world_populator.go
 * checkVolumeFSResize, actual_state_of_world.go InitializeClaimSize, volumeNeedsExpansion): which
 * processing of a pod asks the loop to expand which volume.
 */
import { describe, expect, it } from 'vitest';
import { SimulatedClock } from 'xstate';
import type { PersistentVolume, PersistentVolumeClaim } from '../../src/api/storage.ts';
import type { Pod } from '../../src/api/types.ts';
import { type VolumeChanges, VolumeWorld } from '../../src/volumes/world.ts';
import { MemoryApi } from '../support/memoryApi.ts';

const UNIQUE = 'kubernetes.io/csi/mock.test^vol-1';

function rig(readOnly = false) {
  const api = new MemoryApi();
  api.claims.set('shop/data', { metadata: { name: 'data', namespace: 'shop', uid: 'claim-1' }, spec: { volumeName: 'pv-1' }, status: { phase: 'Bound', capacity: { storage: '1Gi' } } });
  const pv: PersistentVolume = {
    metadata: { name: 'pv-1' },
    spec: { capacity: { storage: '1Gi' }, accessModes: ['ReadWriteOnce'], claimRef: { namespace: 'shop', name: 'data', uid: 'claim-1' }, csi: { driver: 'mock.test', volumeHandle: 'vol-1' } },
  };
  api.volumes.set('pv-1', pv);
  const world = new VolumeWorld({ clock: new SimulatedClock(), claims: { claim: api.getPersistentVolumeClaim.bind(api), volume: api.getPersistentVolume.bind(api) }, csiDrivers: async () => ({ metadata: { name: 'mock.test' }, spec: { attachRequired: false } }) });
  const changes: VolumeChanges[] = [];
  world.listen((c) => changes.push(c));
  const pod = {
    metadata: { name: 'web-0', namespace: 'shop', uid: 'u1' },
    spec: { containers: [{ name: 'app', image: 'busybox', volumeMounts: [{ name: 'data', mountPath: '/data' }] }], volumes: [{ name: 'data', persistentVolumeClaim: { claimName: 'data', readOnly } }] },
  } as unknown as Pod;
  const mount = () => world.markMounted('u1', { outerName: 'data', uniqueName: UNIQUE, kind: 'csiPV', path: '/r/pods/u1/volumes/kubernetes.io~csi/pv-1/mount', readOnly, claim: { namespace: 'shop', name: 'data' }, csi: { driver: 'mock.test', volumeHandle: 'vol-1' } });
  const grow = (pvSize: string, claimCapacity?: string) => {
    api.volumes.set('pv-1', { ...pv, spec: { ...pv.spec, capacity: { storage: pvSize } } });
    if (claimCapacity) api.claims.set('shop/data', { ...api.claims.get('shop/data')!, status: { phase: 'Bound', capacity: { storage: claimCapacity } } } as PersistentVolumeClaim);
  };
  return { world, changes, pod, mount, grow };
}

describe('the volume world and online expansion', () => {
  it('asks for an expansion once the PV outgrows the size its claim showed when the volume was first seen mounted, and not after it is resized', async () => {
    const r = rig();
    await r.world.processPod(r.pod);
    expect(r.changes.at(-1)).toMatchObject({ mount: [{ id: 'u1/data' }], expand: [] });
    r.mount();
    // The first processing after the mount: known at the claim's capacity (1Gi); the PV is no larger.
    await r.world.processPod(r.pod);
    expect(r.world.expansion.size(UNIQUE)).toBe(2 ** 30);
    r.grow('2Gi');
    await r.world.processPod(r.pod);
    expect(r.changes.at(-1)).toEqual({ mount: [], remount: [], expand: ['u1/data'], unmount: [] });
    expect(r.world.volumeToExpand('u1', 'data')).toMatchObject({ currentBytes: 2 ** 30, desiredBytes: 2 * 2 ** 30, volume: { specName: 'pv-1' } });
    // Expanded (MarkVolumeAsResized): nothing more to ask, even with the claim's capacity unchanged.
    r.world.expansion.markResized(UNIQUE, 2 * 2 ** 30);
    const told = r.changes.length;
    await r.world.processPod(r.pod);
    expect(r.changes.length).toBe(told);
    expect(r.world.volumeToExpand('u1', 'data')).toBeNull();
  });

  it('never asks for a volume not mounted yet, one mounted read-only, or one whose driver cannot expand it in use', async () => {
    const notMounted = rig();
    notMounted.grow('2Gi');
    await notMounted.world.processPod(notMounted.pod);
    expect(notMounted.world.volumeToExpand('u1', 'data')).toBeNull();

    const readOnly = rig(true);
    await readOnly.world.processPod(readOnly.pod);
    readOnly.mount();
    await readOnly.world.processPod(readOnly.pod);
    readOnly.grow('2Gi');
    await readOnly.world.processPod(readOnly.pod);
    expect(readOnly.changes.flatMap((c) => c.expand)).toEqual([]);
    expect(readOnly.world.expansion.size(UNIQUE)).toBe(0);

    const inUse = rig();
    await inUse.world.processPod(inUse.pod);
    inUse.mount();
    await inUse.world.processPod(inUse.pod);
    inUse.world.expansion.markInUseError(UNIQUE);
    inUse.grow('2Gi');
    await inUse.world.processPod(inUse.pod);
    expect(inUse.changes.flatMap((c) => c.expand)).toEqual([]);
  });

  it('forgets the volume size once no pod has the volume mounted', async () => {
    const r = rig();
    await r.world.processPod(r.pod);
    r.mount();
    await r.world.processPod(r.pod);
    expect(r.world.expansion.size(UNIQUE)).toBe(2 ** 30);
    r.world.markUnmounted('u1', 'data', UNIQUE);
    expect(r.world.expansion.size(UNIQUE)).toBe(0);
  });
});
