/** tmpfs for memory-backed volumes: the mount table read, the size rule, and what the mounter runs (with the system's commands replaced). */
import { describe, expect, it } from 'vitest';
import { mountPointsUnder, systemMounter, tmpfsSizeBytes } from '../../src/volumes/mounter.ts';

const MOUNTINFO = [
  '22 1 8:1 / / rw,relatime - ext4 /dev/sda1 rw',
  '90 22 0:50 / /var/lib/statelet/pods/u1/volumes/kubernetes.io~secret/creds rw,relatime - tmpfs tmpfs rw,size=1024k',
  '91 22 0:51 / /var/lib/statelet/pods/u1/volumes/kubernetes.io~empty-dir/with\\040space rw - tmpfs tmpfs rw',
  '92 22 0:52 / /var/lib/statelet/pods/u12/volumes/kubernetes.io~secret/x rw - tmpfs tmpfs rw',
  '',
].join('\n');

describe('mountPointsUnder', () => {
  it('finds the mounts under a pod, decoding escapes, not those of a pod whose UID starts the same', () => {
    expect(mountPointsUnder(MOUNTINFO, '/var/lib/statelet/pods/u1')).toEqual([
      '/var/lib/statelet/pods/u1/volumes/kubernetes.io~empty-dir/with space',
      '/var/lib/statelet/pods/u1/volumes/kubernetes.io~secret/creds',
    ]);
  });
});

describe('tmpfsSizeBytes', () => {
  it.each<[number | undefined, number | undefined, number | undefined, number | undefined]>([
    [8e9, undefined, undefined, 8e9],
    [8e9, 1e9, undefined, 1e9],
    [8e9, 1e9, 5e8, 5e8],
    [8e9, 1e9, 2e9, 1e9],
    [8e9, 0, 0, 8e9],
    [undefined, undefined, undefined, undefined],
  ])('allocatable %s, pod limit %s, sizeLimit %s: %s', (allocatable, podLimit, sizeLimit, expected) => {
    expect(tmpfsSizeBytes(allocatable, podLimit, sizeLimit)).toBe(expected);
  });
});

describe('systemMounter', () => {
  const setUp = (failMount?: string) => {
    const runs: string[] = [];
    const logs: string[] = [];
    let reads = 0;
    const mounter = systemMounter(
      '/var/lib/statelet/pods',
      (_, message) => logs.push(message),
      async (file, args) => {
        runs.push([file, ...args].join(' '));
        if (file === 'mount' && failMount) throw new Error(failMount);
      },
      async () => {
        reads++;
        return MOUNTINFO;
      },
    );
    return { mounter, runs, logs, reads: () => reads };
  };

  it('adopts the mounts of an earlier run, mounts a new tmpfs once, and unmounts everything under a pod, reading the mount table once', async () => {
    const { mounter, runs, reads } = setUp();
    expect(await mounter.adopt()).toBe(3);
    expect(await mounter.mountTmpfs('/var/lib/statelet/pods/u1/volumes/kubernetes.io~secret/creds', 1024)).toBe(true);
    expect(await mounter.mountTmpfs('/var/lib/statelet/pods/u2/volumes/kubernetes.io~secret/s', 4096)).toBe(true);
    expect(await mounter.mountTmpfs('/var/lib/statelet/pods/u2/volumes/kubernetes.io~secret/s', 4096)).toBe(true);
    expect(runs).toEqual(['mount -t tmpfs -o size=4096 tmpfs /var/lib/statelet/pods/u2/volumes/kubernetes.io~secret/s']);
    expect(mounter.mounted).toBe(4);
    await mounter.unmountUnder('/var/lib/statelet/pods/u1');
    expect(runs.slice(1)).toEqual([
      'umount /var/lib/statelet/pods/u1/volumes/kubernetes.io~empty-dir/with space',
      'umount /var/lib/statelet/pods/u1/volumes/kubernetes.io~secret/creds',
    ]);
    expect(mounter.mounted).toBe(2);
    await mounter.unmountUnder('/var/lib/statelet/pods/u2');
    expect(runs.slice(3)).toEqual(['umount /var/lib/statelet/pods/u2/volumes/kubernetes.io~secret/s']);
    expect(mounter.mounted).toBe(1);
    expect(reads()).toBe(1);
  });

  it("adopts local volumes' device mounts, and not a CSI driver's publishes, which only the driver unmounts (NodeUnpublishVolume)", async () => {
    const runs: string[] = [];
    const table = [
      MOUNTINFO,
      '93 22 0:53 / /var/lib/statelet/pods/u1/volumes/kubernetes.io~csi/pv-1/mount rw - ext4 /dev/mock rw',
      '94 22 7:3 / /var/lib/statelet/plugins/kubernetes.io/local-volume/mounts/pv-2 rw - ext4 /dev/loop3 rw',
    ].join('\n');
    const mounter = systemMounter('/var/lib/statelet/pods', () => {}, async (file, args) => void runs.push([file, ...args].join(' ')), async () => table);
    expect(await mounter.adopt()).toBe(4);
    await mounter.unmountUnder('/var/lib/statelet/pods/u1');
    expect(runs).not.toContain('umount /var/lib/statelet/pods/u1/volumes/kubernetes.io~csi/pv-1/mount');
    expect(await mounter.unmount('/var/lib/statelet/plugins/kubernetes.io/local-volume/mounts/pv-2')).toBe(true);
    expect(runs.at(-1)).toBe('umount /var/lib/statelet/plugins/kubernetes.io/local-volume/mounts/pv-2');
  });

  it("adopts raw block devices' bind mounts onto their global map files, local and CSI, and not the CSI driver's block publishes and stages", async () => {
    const runs: string[] = [];
    const plugins = '/var/lib/statelet/plugins';
    const table = [
      MOUNTINFO,
      `95 22 0:5 /loop4 ${plugins}/kubernetes.io~local-volume/volumeDevices/pv-3/u1 rw - devtmpfs udev rw`,
      `96 22 0:5 /loop5 ${plugins}/kubernetes.io/csi/volumeDevices/pv-4/dev/u1 rw - devtmpfs udev rw`,
      `97 22 0:5 /loop5 ${plugins}/kubernetes.io/csi/volumeDevices/publish/pv-4/u1 rw - devtmpfs udev rw`,
      `98 22 0:5 /loop5 ${plugins}/kubernetes.io/csi/volumeDevices/staging/pv-4 rw - devtmpfs udev rw`,
      '',
    ].join('\n');
    const mounter = systemMounter('/var/lib/statelet/pods', () => {}, async (file, args) => void runs.push([file, ...args].join(' ')), async () => table);
    expect(await mounter.adopt()).toBe(5);
    for (const point of [`${plugins}/kubernetes.io~local-volume/volumeDevices/pv-3/u1`, `${plugins}/kubernetes.io/csi/volumeDevices/pv-4/dev/u1`]) expect(await mounter.unmount(point)).toBe(true);
    expect(await mounter.unmount(`${plugins}/kubernetes.io/csi/volumeDevices/publish/pv-4/u1`)).toBe(false);
    expect(runs).toEqual([`umount ${plugins}/kubernetes.io~local-volume/volumeDevices/pv-3/u1`, `umount ${plugins}/kubernetes.io/csi/volumeDevices/pv-4/dev/u1`]);
  });

  it('reads the mount table before its first mount, so a pod synced right after a restart does not get a second tmpfs', async () => {
    const { mounter, runs } = setUp();
    expect(await mounter.mountTmpfs('/var/lib/statelet/pods/u1/volumes/kubernetes.io~secret/creds', 1024)).toBe(true);
    expect(runs).toEqual([]);
  });

  it('keeps memory-backed volumes on disk where it may not mount, saying so once', async () => {
    const { mounter, runs, logs } = setUp('mount: /x: must be superuser to use mount.');
    expect(await mounter.mountTmpfs('/var/lib/statelet/pods/u3/volumes/a', undefined)).toBe(false);
    expect(await mounter.mountTmpfs('/var/lib/statelet/pods/u3/volumes/b', undefined)).toBe(false);
    expect(runs).toHaveLength(1);
    expect(logs).toHaveLength(1);
  });

  it('bind-mounts a local volume read-only with a remount, and where a tmpfs was refused already, says once what that means for local volumes', async () => {
    const { mounter, runs } = setUp();
    expect(await mounter.bindMount('/mnt/disks/a', '/var/lib/statelet/pods/u3/volumes/kubernetes.io~local-volume/pv-a', { readOnly: true })).toBe(true);
    expect(runs).toEqual([
      'mount --bind /mnt/disks/a /var/lib/statelet/pods/u3/volumes/kubernetes.io~local-volume/pv-a',
      'mount -o remount,bind,ro /var/lib/statelet/pods/u3/volumes/kubernetes.io~local-volume/pv-a',
    ]);
    const refused = setUp('mount: only root can use "--types" option');
    expect(await refused.mounter.mountTmpfs('/var/lib/statelet/pods/u1/volumes/kubernetes.io~secret/s', 1)).toBe(false);
    for (const pv of ['pv-a', 'pv-b']) expect(await refused.mounter.bindMount('/mnt/disks/a', `/var/lib/statelet/pods/u1/volumes/kubernetes.io~local-volume/${pv}`, { readOnly: false })).toBe(false);
    expect(refused.logs.filter((line) => line.startsWith('Cannot bind-mount here'))).toHaveLength(1);
  });

  it('fails the volume on any other mount error', async () => {
    const { mounter } = setUp('mount: /x: wrong fs type');
    await expect(mounter.mountTmpfs('/var/lib/statelet/pods/u3/volumes/a', undefined)).rejects.toThrow('mount tmpfs at /var/lib/statelet/pods/u3/volumes/a: mount: /x: wrong fs type');
  });

  it('mounts a hugetlbfs of the page size once, and unmounts it with the pod', async () => {
    const { mounter, runs } = setUp();
    const dir = '/var/lib/statelet/pods/u4/volumes/kubernetes.io~empty-dir/pages';
    await mounter.mountHugetlbfs(dir, '2Mi');
    await mounter.mountHugetlbfs(dir, '2Mi');
    expect(runs).toEqual([`mount -t hugetlbfs -o pagesize=2Mi nodev ${dir}`]);
    expect(await mounter.unmountUnder('/var/lib/statelet/pods/u4')).toEqual([dir]);
  });

  it('fails a hugetlbfs mount with the mount\'s error, even where it would keep tmpfs on disk: huge pages have no stand-in', async () => {
    const { mounter } = setUp('mount: only root can use "--options" option');
    const dir = '/var/lib/statelet/pods/u5/volumes/kubernetes.io~empty-dir/pages';
    await expect(mounter.mountHugetlbfs(dir, '1Gi')).rejects.toThrow(
      `mount failed: mount: only root can use "--options" option\nMounting command: mount\nMounting arguments: -t hugetlbfs -o pagesize=1Gi nodev ${dir}`,
    );
    expect(await mounter.unmountUnder('/var/lib/statelet/pods/u5')).toEqual([]);
  });
});
