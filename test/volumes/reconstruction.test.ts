/**
 * Reconstruction's decisions (reconstruction.ts: reconstruct_common.go reconstructVolume, the
 * plugins' ConstructVolumeSpec, mount-utils GetMountRefs) table-tested, and its walk of a pods
 * directory (reconstruct.ts: getVolumesFromPodDir) over a temporary one.
 */
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { findPodVolumes, reconstructPodVolumes } from '../../src/volumes/reconstruct.ts';
import { type FoundVolume, type OnDisk, mountRefs, reconstructVolume, unescapeQualifiedName } from '../../src/volumes/reconstruction.ts';

const dirs: string[] = [];
afterEach(async () => {
  for (const dir of dirs.splice(0)) await rm(dir, { recursive: true, force: true });
});

const found = (plugin: string, specName: string, mode: FoundVolume['mode'] = 'Filesystem'): FoundVolume => ({ uid: 'u1', plugin, specName, path: `/var/lib/kubelet/pods/u1/volumes/${plugin.replace('/', '~')}/${specName}`, mode });
const deviceMounts = '/var/lib/kubelet/plugins/kubernetes.io/local-volume/mounts';
const disk = (extra: Partial<OnDisk> = {}): OnDisk => ({ localDeviceMounts: deviceMounts, ...extra });
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
    ['a local volume on a directory (its bind mount refers to no device mount)', found('kubernetes.io/local-volume', 'pv-2'), disk({ mountRefs: ['/mnt/disks/a'] }), { uid: 'u1', specName: 'pv-2', kind: 'localPV', uniqueName: 'kubernetes.io/local-volume/pv-2' }],
    [
      'a local volume on a block device (its bind mount shares the device mount)',
      found('kubernetes.io/local-volume', 'pv-2'),
      disk({ mountRefs: [`${deviceMounts}/pv-2`] }),
      { uid: 'u1', specName: 'pv-2', kind: 'localPV', uniqueName: 'kubernetes.io/local-volume/pv-2', localDevice: true },
    ],
    ['a local volume not mounted', found('kubernetes.io/local-volume', 'pv-2'), disk(), { uid: 'u1', specName: 'pv-2', kind: 'localPV', uniqueName: 'kubernetes.io/local-volume/pv-2' }],
    ['a raw block volume: no block plugin on this node', found('kubernetes.io/csi', 'pv-3', 'Block'), disk(), { error: 'could not find block volume plugin "kubernetes.io/csi" (spec.Name: "pv-3") pod "u1" (UID: "u1")' }],
    ['a plugin this node does not have', found('kubernetes.io/nfs', 'share'), disk(), { error: 'no volume plugin matched name: kubernetes.io/nfs' }],
  ])('%s', (_, volume, onDisk, expected) => {
    expect(reconstructVolume(volume, onDisk)).toEqual(expected);
  });
});

describe('mountRefs', () => {
  // mountinfo: id parent major:minor root mount-point options … - fstype source super-options
  const table = [
    '22 1 8:1 / / rw - ext4 /dev/sda1 rw',
    `40 22 7:3 / ${deviceMounts}/pv-2 rw - ext4 /dev/loop3 rw`,
    '41 22 7:3 / /var/lib/kubelet/pods/u1/volumes/kubernetes.io~local-volume/pv-2 rw - ext4 /dev/loop3 rw',
    '42 22 8:1 /mnt/disks/a /var/lib/kubelet/pods/u2/volumes/kubernetes.io~local-volume/pv-4 rw - ext4 /dev/sda1 rw',
    '43 22 8:1 /mnt/disks/a /mnt/disks/a rw - ext4 /dev/sda1 rw',
    '44 22 0:50 / /var/lib/kubelet/pods/u3/volumes/kubernetes.io~empty-dir/with\\040space rw - tmpfs tmpfs rw',
  ].join('\n');
  it.each([
    ['a bind mount of a device mount: the device mount', '/var/lib/kubelet/pods/u1/volumes/kubernetes.io~local-volume/pv-2', [`${deviceMounts}/pv-2`]],
    ['a bind mount of a directory: the mounts of that directory', '/var/lib/kubelet/pods/u2/volumes/kubernetes.io~local-volume/pv-4', ['/mnt/disks/a']],
    ['a mount point with an escaped name, shared with nothing', '/var/lib/kubelet/pods/u3/volumes/kubernetes.io~empty-dir/with space', []],
    ['not a mount point', '/var/lib/kubelet/pods/u9/volumes/kubernetes.io~local-volume/pv-9', []],
  ])('%s', (_, dir, expected) => {
    expect(mountRefs(table, dir)).toEqual(expected);
  });
});

describe('findPodVolumes and reconstructPodVolumes', () => {
  it("walks each pod's volumes and volumeDevices by plugin, and reconstructs the CSI and local ones", async () => {
    const pods = await mkdtemp(path.join(os.tmpdir(), 'statelet-reconstruct-walk-'));
    dirs.push(pods);
    const make = async (rel: string, file?: string) => {
      await mkdir(path.join(pods, rel), { recursive: true });
      if (file !== undefined) await writeFile(path.join(pods, rel, 'vol_data.json'), file);
    };
    await make('u1/volumes/kubernetes.io~csi/pv-1', JSON.stringify(persistentData));
    await make('u1/volumes/kubernetes.io~empty-dir/scratch');
    await make('u2/volumes/kubernetes.io~local-volume/pv-2');
    await make('u2/volumeDevices/kubernetes.io~csi/pv-3');
    await make('u3/volumes/kubernetes.io~csi/pv-4', '{"driverName": 7}');
    await writeFile(path.join(pods, 'not-a-pod'), '');

    const all = await findPodVolumes(pods);
    expect(all.map((v) => [v.uid, v.plugin, v.specName, v.mode]).sort()).toEqual([
      ['u1', 'kubernetes.io/csi', 'pv-1', 'Filesystem'],
      ['u1', 'kubernetes.io/empty-dir', 'scratch', 'Filesystem'],
      ['u2', 'kubernetes.io/csi', 'pv-3', 'Block'],
      ['u2', 'kubernetes.io/local-volume', 'pv-2', 'Filesystem'],
      ['u3', 'kubernetes.io/csi', 'pv-4', 'Filesystem'],
    ]);

    const { volumes, failed } = await reconstructPodVolumes(pods, async () => '');
    expect(volumes.map((v) => [v.uid, v.uniqueName]).sort()).toEqual([
      ['u1', 'kubernetes.io/csi/csi.example.com^vol-7'],
      ['u2', 'kubernetes.io/local-volume/pv-2'],
    ]);
    expect(failed.map((f) => [f.volume.uid, f.volume.specName, f.error.split(':')[0]]).sort()).toEqual([
      ['u2', 'pv-3', 'could not find block volume plugin "kubernetes.io/csi" (spec.Name'],
      ['u3', 'pv-4', 'kubernetes.io/csi'],
    ]);
    expect(failed.find((f) => f.volume.uid === 'u3')!.error).toContain('the value of "driverName" is a number, not a string');
  });

  it('unescapes plugin names', () => {
    expect(unescapeQualifiedName('kubernetes.io~local-volume')).toBe('kubernetes.io/local-volume');
  });
});
