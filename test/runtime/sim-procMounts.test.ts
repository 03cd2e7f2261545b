/**
 * sim:// containers' /proc/mounts: each CRI mount on the filesystem its host path lies on, as the
 * host's mountinfo gives it (fs/proc_namespace.c show_vfsmnt for the line's shape).
 */
import { describe, expect, it } from 'vitest';
import { parseMountinfo, procMounts } from '../../src/runtime/sim/procMounts.ts';
import { SimFs } from '../../src/runtime/sim/fs.ts';

const POD = '/var/lib/statelet/pods/u1/volumes';
const MOUNTINFO = [
  '27 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw,errors=remount-ro',
  '22 27 0:21 / /proc rw,relatime - proc proc rw',
  `90 27 0:50 / ${POD}/kubernetes.io~empty-dir/cache rw,relatime shared:40 - tmpfs tmpfs rw,size=65536k`,
  `91 27 0:51 / ${POD}/kubernetes.io~empty-dir/pages rw,relatime shared:41 - hugetlbfs nodev rw,pagesize=2M`,
  `92 27 0:52 / ${POD}/kubernetes.io~empty-dir/with\\040space rw,relatime - tmpfs tmpfs rw`,
].join('\n');

describe('procMounts', () => {
  it.each([
    ['an emptyDir on hugetlbfs, with its page size', `${POD}/kubernetes.io~empty-dir/pages`, '/hugepages', false, 'nodev /hugepages hugetlbfs rw,relatime,pagesize=2M 0 0\n'],
    ['an emptyDir on tmpfs (medium Memory)', `${POD}/kubernetes.io~empty-dir/cache`, '/cache', false, 'tmpfs /cache tmpfs rw,relatime,size=65536k 0 0\n'],
    ['a directory on the disk, read-only', `${POD}/kubernetes.io~configmap/conf`, '/etc/conf', true, '/dev/sda1 /etc/conf ext4 ro,relatime,errors=remount-ro 0 0\n'],
    ['a file under a tmpfs mount', `${POD}/kubernetes.io~empty-dir/cache/sub`, '/sub', false, 'tmpfs /sub tmpfs rw,relatime,size=65536k 0 0\n'],
    ['a mount point with a space, escaped again', `${POD}/kubernetes.io~empty-dir/with space`, '/a b', false, 'tmpfs /a\\040b tmpfs rw,relatime 0 0\n'],
  ])('%s', (_name, hostPath, containerPath, readonly, want) => {
    expect(procMounts([{ hostPath, containerPath, readonly }], MOUNTINFO)).toBe(want);
  });

  it('does not take a sibling with a longer name for the mount over a path', () => {
    const table = parseMountinfo(MOUNTINFO);
    expect(table.map((m) => m.type)).toEqual(['ext4', 'proc', 'tmpfs', 'hugetlbfs', 'tmpfs']);
    expect(procMounts([{ hostPath: `${POD}/kubernetes.io~empty-dir/cache2`, containerPath: '/c', readonly: false }], MOUNTINFO)).toMatch(/^\/dev\/sda1 \/c ext4 /);
  });

  it('lists the mounts in the order given, one line each', () => {
    const lines = procMounts(
      [
        { hostPath: `${POD}/kubernetes.io~empty-dir/cache`, containerPath: '/cache', readonly: false },
        { hostPath: `${POD}/kubernetes.io~empty-dir/pages`, containerPath: '/hugepages', readonly: false },
      ],
      MOUNTINFO,
    ).split('\n');
    expect(lines.map((l) => l.split(' ')[1])).toEqual(['/cache', '/hugepages', undefined]);
  });
});

describe('SimFs /proc/mounts', () => {
  it("reads the host's table: a mount of the host's /proc is a proc filesystem", () => {
    const fs = new SimFs([{ containerPath: '/host-proc', hostPath: '/proc', readonly: true }]);
    expect(fs.isFile('/proc/mounts')).toBe(true);
    expect(fs.read('/proc/mounts')).toMatch(/^proc \/host-proc proc ro[,\s]/);
    expect(fs.read('/proc/self/mounts')).toBe(fs.read('/proc/mounts'));
  });
});
