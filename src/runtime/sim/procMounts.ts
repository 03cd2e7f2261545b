/**
 * A sim:// container's `/proc/mounts` for its CRI mounts, pure: each mount shows the filesystem
 * its host path lies on, as the kernel's table gives it (/proc/self/mountinfo), so a volume the
 * agent put on tmpfs (`medium: Memory`, secrets, tokens) or on hugetlbfs (`medium: HugePages`, with
 * its `pagesize`) reads as it does in a containerd container. The root filesystem, /proc, /dev
 * and /sys are not listed: sim:// models a container's mounts, not an image's layers.
 *
 * A line is `<source> <mount point> <type> <options> 0 0`, the options the mount's own and then
 * its filesystem's (fs/proc_namespace.c show_vfsmnt); a read-only CRI mount shows `ro`.
 */

export interface ContainerMount {
  containerPath: string;
  hostPath: string;
  readonly: boolean;
}

interface HostMount {
  point: string;
  options: string[];
  type: string;
  source: string;
  superOptions: string[];
}

/** Octal escapes of mountinfo (`\040` for a space) decoded. */
const unescape = (field: string) => field.replace(/\\([0-7]{3})/g, (_, octal: string) => String.fromCharCode(parseInt(octal, 8)));

/** The mounts of a /proc/self/mountinfo text (proc(5): fields, optional ones, `-`, type, source, super options). */
export function parseMountinfo(text: string): HostMount[] {
  const mounts: HostMount[] = [];
  for (const line of text.split('\n')) {
    const fields = line.split(' ');
    const dash = fields.indexOf('-', 6);
    if (dash < 0 || fields.length < dash + 4) continue;
    mounts.push({
      point: unescape(fields[4]!),
      options: fields[5]!.split(','),
      type: fields[dash + 1]!,
      source: unescape(fields[dash + 2]!),
      superOptions: fields[dash + 3]!.split(','),
    });
  }
  return mounts;
}

/** The mount `hostPath` lies on: the last-mounted one of the longest mount point over it. */
function hostMountOf(mounts: readonly HostMount[], hostPath: string): HostMount | undefined {
  let found: HostMount | undefined;
  for (const mount of mounts) {
    const over = mount.point === '/' || hostPath === mount.point || hostPath.startsWith(`${mount.point}/`);
    if (over && (!found || mount.point.length >= found.point.length)) found = mount;
  }
  return found;
}

/** `/proc/mounts` of a container with these CRI mounts, over the host's mount table. */
export function procMounts(mounts: readonly ContainerMount[], mountinfo: string): string {
  const host = parseMountinfo(mountinfo);
  const escape = (path: string) => path.replace(/[ \t\n\\]/g, (c) => `\\${c.charCodeAt(0).toString(8).padStart(3, '0')}`);
  return mounts
    .map((mount) => {
      const on = hostMountOf(host, mount.hostPath);
      if (!on) return '';
      const own = on.options.map((o) => (mount.readonly && o === 'rw' ? 'ro' : o));
      const options = [...own, ...on.superOptions.filter((o) => o !== 'rw' && o !== 'ro' && !own.includes(o))];
      return `${escape(on.source)} ${escape(mount.containerPath)} ${on.type} ${options.join(',')} 0 0\n`;
    })
    .join('');
}
