/**
 * Reconstruction's decisions (reconstruction.ts: reconstruct_common.go reconstructVolume, the
 * plugins' ConstructVolumeSpec and ConstructBlockVolumeSpec) table-tested, and its walk of a pods
 * directory (reconstruct.ts: getVolumesFromPodDir) over a temporary one.
 */
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { findPodVolumes, reconstructPodVolumes } from '../../src/volumes/reconstruct.ts';
import { type FoundVolume, type OnDisk, reconstructVolume, unescapeQualifiedName } from '../../src/volumes/reconstruction.ts';

const dirs: string[] = [];
afterEach(async () => {
  for (const dir of dirs.splice(0)) await rm(dir, { recursive: true, force: true });
});

const found = (plugin: string, specName: string, mode: FoundVolume['mode'] = 'Filesystem'): FoundVolume => ({ uid: 'u1', plugin, specName, path: `/var/lib/kubelet/pods/u1/${mode === 'Block' ? 'volumeDevices' : 'volumes'}/${plugin.replace('/', '~')}/${specName}`, mode });
const disk = (extra: OnDisk = {}): OnDisk => extra;
const persistentData = { specVolID: 'pv-1', volumeHandle: 'vol-7', driverName: 'csi.example.com', nodeName: 'node-a', attachmentID: 'csi-x', volumeLifecycleMode: 'Persistent' };

describe('reconstructVolume', () => {
  it.each<[string, FoundVolume, OnDisk, ReturnType<typeof reconstructVolume>]>([
    ['a CSI PersistentVolume: its driver and handle name it', found('kubernetes.io/csi', 'pv-1'), disk({ volumeData: persistentData }), { uid: 'u1', specName: 'pv-1', kind: 'csiPV', uniqueName: 'kubernetes.io/csi/csi.example.com^vol-7' }],
    [
      'an inline CSI volume (Ephemeral): named per pod',
      found('kubernetes.io/csi', 'scratch'),
      disk({ volumeData: { ...persistentData, specVolID: 'scratch', volumeHandle: 'csi-abc', volumeLifecycleMode: 'Ephemeral' } }),
      { uid: 'u1', specName: 'scratch', kind: 'csiInline', uniqueName: 'kubernetes.io/csi/u1-scratch' },
    ],
    [
      'a CSI volume without vol_data.json',
      found('kubernetes.io/csi', 'pv-1'),
      disk({ volumeData: { error: 'no such file' } }),
      { error: 'kubernetes.io/csi: plugin.ConstructVolumeSpec failed loading volume data using [/var/lib/kubelet/pods/u1/volumes/kubernetes.io~csi/pv-1]: no such file' },
    ],
    ['a local volume: the PersistentVolume of its directory', found('kubernetes.io/local-volume', 'pv-2'), disk(), { uid: 'u1', specName: 'pv-2', kind: 'localPV', uniqueName: 'kubernetes.io/local-volume/pv-2' }],
    [
      'a mapped CSI PersistentVolume: its driver and handle name it, from its plugin directory\'s data',
      found('kubernetes.io/csi', 'pv-3', 'Block'),
      disk({ volumeData: { ...persistentData, specVolID: 'pv-3' } }),
      { uid: 'u1', specName: 'pv-3', kind: 'csiPV', uniqueName: 'kubernetes.io/csi/csi.example.com^vol-7', map: true },
    ],
    [
      'a mapped CSI volume without its data',
      found('kubernetes.io/csi', 'pv-3', 'Block'),
      disk({ volumeData: { error: 'no such file' } }),
      { error: 'kubernetes.io/csi: plugin.ConstructBlockVolumeSpec failed loading volume data using [/var/lib/kubelet/pods/u1/volumeDevices/kubernetes.io~csi/pv-3]: no such file' },
    ],
    ['a mapped local volume: the PersistentVolume of its link', found('kubernetes.io/local-volume', 'pv-5', 'Block'), disk(), { uid: 'u1', specName: 'pv-5', kind: 'localPV', uniqueName: 'kubernetes.io/local-volume/pv-5', map: true }],
    ['a mapped volume of a plugin this node does not have', found('kubernetes.io/rbd', 'pv-6', 'Block'), disk(), { error: 'no volume plugin matched name: kubernetes.io/rbd' }],
    ['a plugin this node does not have', found('kubernetes.io/nfs', 'share'), disk(), { error: 'no volume plugin matched name: kubernetes.io/nfs' }],
  ])('%s', (_, volume, onDisk, expected) => {
    expect(reconstructVolume(volume, onDisk)).toEqual(expected);
  });
});

describe('findPodVolumes and reconstructPodVolumes', () => {
  it("walks each pod's volumes and volumeDevices by plugin, and reconstructs the CSI and local ones", async () => {
    const root = await mkdtemp(path.join(os.tmpdir(), 'statelet-reconstruct-walk-'));
    dirs.push(root);
    const pods = path.join(root, 'pods');
    const make = async (rel: string, file?: string) => {
      await mkdir(path.join(pods, rel), { recursive: true });
      if (file !== undefined) await writeFile(path.join(pods, rel, 'vol_data.json'), file);
    };
    await make('u1/volumes/kubernetes.io~csi/pv-1', JSON.stringify(persistentData));
    await make('u1/volumes/kubernetes.io~empty-dir/scratch');
    await make('u2/volumes/kubernetes.io~local-volume/pv-2');
    await make('u2/volumeDevices/kubernetes.io~csi/pv-3');
    await make('u2/volumeDevices/kubernetes.io~csi/pv-5');
    await make('u2/volumeDevices/kubernetes.io~local-volume/pv-6');
    // A mapped CSI volume's data is its plugin's, beside the pods directory (none for pv-5).
    await mkdir(path.join(root, 'plugins/kubernetes.io/csi/volumeDevices/pv-3/data'), { recursive: true });
    await writeFile(path.join(root, 'plugins/kubernetes.io/csi/volumeDevices/pv-3/data/vol_data.json'), JSON.stringify({ ...persistentData, specVolID: 'pv-3', volumeHandle: 'vol-8' }));
    await make('u3/volumes/kubernetes.io~csi/pv-4', '{"driverName": 7}');
    await writeFile(path.join(pods, 'not-a-pod'), '');

    const all = await findPodVolumes(pods);
    expect(all.map((v) => [v.uid, v.plugin, v.specName, v.mode]).sort()).toEqual([
      ['u1', 'kubernetes.io/csi', 'pv-1', 'Filesystem'],
      ['u1', 'kubernetes.io/empty-dir', 'scratch', 'Filesystem'],
      ['u2', 'kubernetes.io/csi', 'pv-3', 'Block'],
      ['u2', 'kubernetes.io/csi', 'pv-5', 'Block'],
      ['u2', 'kubernetes.io/local-volume', 'pv-2', 'Filesystem'],
      ['u2', 'kubernetes.io/local-volume', 'pv-6', 'Block'],
      ['u3', 'kubernetes.io/csi', 'pv-4', 'Filesystem'],
    ]);

    const { volumes, failed } = await reconstructPodVolumes(pods);
    expect(volumes.map((v) => [v.uid, v.uniqueName, v.map ?? false]).sort()).toEqual([
      ['u1', 'kubernetes.io/csi/csi.example.com^vol-7', false],
      ['u2', 'kubernetes.io/csi/csi.example.com^vol-8', true],
      ['u2', 'kubernetes.io/local-volume/pv-2', false],
      ['u2', 'kubernetes.io/local-volume/pv-6', true],
    ]);
    expect(failed.map((f) => [f.volume.uid, f.volume.specName, f.error.split(':')[0]]).sort()).toEqual([
      ['u2', 'pv-5', 'kubernetes.io/csi'],
      ['u3', 'pv-4', 'kubernetes.io/csi'],
    ]);
    expect(failed.find((f) => f.volume.uid === 'u3')!.error).toContain('the value of "driverName" is a number, not a string');
  });

  it('unescapes plugin names', () => {
    expect(unescapeQualifiedName('kubernetes.io~local-volume')).toBe('kubernetes.io/local-volume');
  });
});
