/**
 * A container's simulated filesystem: just the paths a shell script has touched. Files hold
 * their text content; directories are tracked so that `test -d` and `mkdir` behave, but the model
 * is lenient — writing a file creates its parent directories implicitly — because the point is
 * to let readiness files and probe targets (`touch /tmp/ready`, `cat /tmp/healthy`) work, not to
 * emulate a kernel.
 *
 * The container's CRI mounts are real: a path at or under a mount's `containerPath` is the host
 * file at the same place under its `hostPath` (read and written through, as a bind mount), so the
 * files the agent prepares for a container (its /etc/hosts, volumes) are what its script sees.
 * The host may refuse (its disk full, read-only): that is a `HostFsError` the shell reports as sh
 * does, and the container goes on. `/proc/mounts` lists those mounts on the host's filesystems
 * (procMounts.ts): a tmpfs or hugetlbfs volume shows as one.
 *
 * The agent's own process does the writing, so the host would let it write wherever the agent may.
 * A container process that is not root is held, under a mount, to the host file's permission bits
 * as Linux holds it (owner, else group, else other; its uid, gid and groups from its identity): a
 * file must be writable to be written, a directory writable and searchable to make or remove an
 * entry in it, else "Permission denied". Root passes, as with the runtime's default
 * CAP_DAC_OVERRIDE. What the container made under a mount is its own (on the host it is the
 * agent's: `stat` shows the agent as its owner). Nothing else (reads, the container's own layer,
 * ACLs) is checked.
 */
import { type Stats, appendFileSync, lstatSync, mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { procMounts } from './procMounts.ts';

/** Directories every image is assumed to have. They cannot be removed. */
const BASE_DIRS: ReadonlySet<string> = new Set([
  '/', '/bin', '/dev', '/etc', '/home', '/proc', '/root', '/run', '/sys', '/tmp',
  '/usr', '/usr/bin', '/usr/local', '/var', '/var/log', '/var/run',
]);

/** The one device file scripts commonly name; reads are empty and writes vanish. */
const DEV_NULL = '/dev/null';
/** The kernel's mount table of the container, read from the host's when a process reads it (procMounts.ts). */
const PROC_MOUNTS = new Set(['/proc/mounts', '/proc/self/mounts']);

/**
 * A file of `zeros` NUL bytes (what `dd if=/dev/zero` writes), held by its size only: a container
 * can fill its layer with hundreds of megabytes without the agent's process holding them.
 */
interface ZeroFill {
  zeros: number;
}

type Content = string | ZeroFill;

const contentText = (content: Content): string => (typeof content === 'string' ? content : '\0'.repeat(content.zeros));
const byteLength = (content: Content): number => (typeof content === 'string' ? Buffer.byteLength(content) : content.zeros);

type RemoveResult = 'removed' | 'missing' | 'is-directory' | 'read-only';
type MkdirResult = 'created' | 'exists' | 'no-parent' | 'read-only';

/** The host refused a write under a mount; `text` is the C library's wording (`No space left on device`). */
export class HostFsError extends Error {
  override readonly name = 'HostFsError';
  constructor(readonly text: string) {
    super(text);
  }
}

/** Runs `io` against the host, its errno failure turned into a HostFsError. */
function hostCall<T>(io: () => T): T {
  try {
    return io();
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (!code || !(error instanceof Error)) throw error;
    // Node words it `ENOSPC: no space left on device, write`; sh says `No space left on device`.
    const text = /^[A-Z0-9]+: ([^,]+)/.exec(error.message)?.[1] ?? code;
    throw new HostFsError(text.charAt(0).toUpperCase() + text.slice(1));
  }
}

/** What the host has at `path`; nothing when it cannot say (missing, or under a file: ENOTDIR). */
function hostStat(path: string): Stats | undefined {
  try {
    return statSync(path, { throwIfNoEntry: false });
  } catch {
    return undefined;
  }
}

/**
 * A block device's size, which stat does not give (0): its 512-byte sectors in sysfs
 * (`/sys/dev/block/<major>:<minor>/size`, the device number decoded as glibc's gnu_dev_major/minor).
 */
function blockDeviceBytes(info: Stats): number {
  const rdev = info.rdev;
  const major = Math.floor(rdev / 256) & 0xfff;
  const minor = (rdev & 0xff) | (Math.floor(rdev / 4096) & 0xfff00);
  try {
    return Number(readFileSync(`/sys/dev/block/${major}:${minor}/size`, 'utf8').trim()) * 512;
  } catch {
    return 0;
  }
}

interface SimMount {
  containerPath: string;
  hostPath: string;
  readonly: boolean;
}

/** Who the container's processes are, for the permission checks under mounts. */
interface SimWriter {
  uid: number;
  gid: number;
  groups: readonly number[];
}

/** What `stat` shows of a path: owner, group and mode (with setuid, setgid and sticky). */
export interface SimFileOwner {
  uid: number;
  gid: number;
  mode: number;
}

const WRITE = 2;
const SEARCH = 1;

/** The permission bits (rwx as 4, 2, 1) `who` has on a host file: its owner's, else its group's, else others'. */
function access(info: Stats, who: SimWriter): number {
  if (info.uid === who.uid) return (info.mode >> 6) & 7;
  if (info.gid === who.gid || who.groups.includes(info.gid)) return (info.mode >> 3) & 7;
  return info.mode & 7;
}

export class SimFs {
  private readonly files = new Map<string, Content>();
  private readonly dirs = new Set<string>();
  /** Longest container path first, so a nested mount wins. */
  private readonly mounts: SimMount[];
  /** The host paths this container made under its mounts: its own, whoever owns them on the host. */
  private readonly made = new Set<string>();

  /**
   * `readOnlyRoot`: the container's root filesystem is read-only (readOnlyRootFilesystem); its
   * mounts keep their own mode, and /dev, /proc and /sys are the kernel's, as on Linux.
   */
  constructor(
    mounts: readonly SimMount[] = [],
    private readonly readOnlyRoot = false,
    /** Absent: root (no permission checks). */
    private readonly writer?: SimWriter,
  ) {
    this.mounts = [...mounts].sort((a, b) => b.containerPath.length - a.containerPath.length);
  }

  /** The mount `path` falls in, and the host path it stands for. */
  private mounted(path: string): { mount: SimMount; host: string } | undefined {
    for (const mount of this.mounts) {
      const at = mount.containerPath.replace(/\/+$/, '') || '/';
      if (path === at || path.startsWith(at === '/' ? '/' : `${at}/`)) return { mount, host: mount.hostPath + path.slice(at.length) };
    }
    return undefined;
  }

  /** A path in a read-only mount, or on a read-only root: writes fail there as on a real runtime. */
  isReadOnly(path: string): boolean {
    const m = this.mounted(path);
    if (m) return m.mount.readonly;
    return this.readOnlyRoot && !/^\/(dev|proc|sys)(\/|$)/.test(path);
  }

  /**
   * Throws "Permission denied" when a process that is not root may not write the host file `host`
   * (it exists), or may not make or remove an entry in its directory (it does not, or `entry`).
   */
  private checkWrite(host: string, entry = false): void {
    const who = this.writer;
    if (!who || who.uid === 0) return;
    if (!entry && this.made.has(host)) return;
    const existing = entry ? undefined : hostStat(host);
    let allowed: boolean;
    if (existing) {
      allowed = (access(existing, who) & WRITE) !== 0;
    } else {
      // The nearest directory there is (`mkdir -p` makes the ones between, its own too).
      let dir = parentOf(host);
      const between: string[] = [];
      for (; dir !== '/' && !hostStat(dir); dir = parentOf(dir)) between.push(dir);
      const info = hostStat(dir);
      allowed = info !== undefined && (access(info, who) & (WRITE | SEARCH)) === (WRITE | SEARCH);
      if (allowed) for (const made of [host, ...between]) this.made.add(made);
    }
    if (!allowed) throw new HostFsError('Permission denied');
  }

  /** The owner, group and mode of `path` (not following a last symlink, as `stat` does); null when missing; undefined outside mounts, where sim:// keeps none. */
  owner(path: string): SimFileOwner | null | undefined {
    const m = this.mounted(path);
    if (!m) return undefined;
    try {
      const info = lstatSync(m.host);
      return { uid: info.uid, gid: info.gid, mode: info.mode & 0o7777 };
    } catch {
      return null;
    }
  }

  /** Makes `path` absolute against `cwd` and folds `.`, `..` and repeated slashes. */
  static resolve(path: string, cwd = '/'): string {
    const joined = path.startsWith('/') ? path : `${cwd}/${path}`;
    const parts: string[] = [];
    for (const part of joined.split('/')) {
      if (part === '' || part === '.') continue;
      if (part === '..') parts.pop();
      else parts.push(part);
    }
    return `/${parts.join('/')}`;
  }

  isFile(path: string): boolean {
    const m = this.mounted(path);
    if (m) {
      // A block device (a raw block volume given as a CRI device) reads and writes as a file of its bytes.
      const info = hostStat(m.host);
      return (info?.isFile() || info?.isBlockDevice()) ?? false;
    }
    return path === DEV_NULL || PROC_MOUNTS.has(path) || this.files.has(path);
  }

  isDir(path: string): boolean {
    const m = this.mounted(path);
    if (m) return hostStat(m.host)?.isDirectory() ?? false;
    return BASE_DIRS.has(path) || this.dirs.has(path);
  }

  exists(path: string): boolean {
    return this.isFile(path) || this.isDir(path);
  }

  /** The file's content, or undefined when there is no such file. */
  read(path: string): string | undefined {
    if (path === DEV_NULL) return '';
    if (PROC_MOUNTS.has(path)) return procMounts([...this.mounts].reverse(), hostCall(() => readFileSync('/proc/self/mountinfo', 'utf8')));
    const m = this.mounted(path);
    if (m) return this.isFile(path) ? readFileSync(m.host, 'utf8') : undefined;
    const content = this.files.get(path);
    return content === undefined ? undefined : contentText(content);
  }

  /** The file's size in bytes, or undefined when there is no such file. */
  size(path: string): number | undefined {
    if (path === DEV_NULL) return 0;
    const m = this.mounted(path);
    if (m) {
      if (!this.isFile(path)) return undefined;
      const info = hostStat(m.host);
      return info?.isBlockDevice() ? blockDeviceBytes(info) : info?.size;
    }
    const content = this.files.get(path);
    return content === undefined ? undefined : byteLength(content);
  }

  /** Creates or truncates the file to `bytes` NUL bytes (`dd if=/dev/zero of=…`); under a mount they are written to the host. */
  writeZeros(path: string, bytes: number): void {
    if (path === DEV_NULL) return;
    const m = this.mounted(path);
    if (m) {
      if (m.mount.readonly) return;
      this.checkWrite(m.host);
      return hostCall(() => writeFileSync(m.host, Buffer.alloc(bytes)));
    }
    this.addParents(path);
    this.files.set(path, { zeros: bytes });
  }

  /** Creates or truncates the file to `content` (callers check isReadOnly first); under a mount, throws HostFsError when the host refuses. */
  write(path: string, content: string): void {
    if (path === DEV_NULL) return;
    const m = this.mounted(path);
    if (m) {
      if (m.mount.readonly) return;
      this.checkWrite(m.host);
      return hostCall(() => writeFileSync(m.host, content));
    }
    this.addParents(path);
    this.files.set(path, content);
  }

  append(path: string, text: string): void {
    if (path === DEV_NULL) return;
    const m = this.mounted(path);
    if (m) {
      if (m.mount.readonly) return;
      this.checkWrite(m.host);
      return hostCall(() => appendFileSync(m.host, text));
    }
    this.addParents(path);
    const before = this.files.get(path);
    this.files.set(path, (before === undefined ? '' : contentText(before)) + text);
  }

  /** Creates an empty file when missing; an existing file keeps its content. */
  touch(path: string): void {
    if (!this.exists(path)) this.write(path, '');
  }

  remove(path: string, recursive: boolean): RemoveResult {
    const m = this.mounted(path);
    if (m) {
      if (!this.exists(path)) return 'missing';
      if (this.isDir(path) && !recursive) return 'is-directory';
      if (m.mount.readonly) return 'read-only';
      this.checkWrite(m.host, true);
      hostCall(() => rmSync(m.host, { recursive: true, force: true }));
      return 'removed';
    }
    if (this.files.delete(path)) return 'removed';
    if (!this.isDir(path)) return 'missing';
    if (!recursive) return 'is-directory';
    const prefix = path === '/' ? '/' : `${path}/`;
    for (const file of [...this.files.keys()]) if (file.startsWith(prefix)) this.files.delete(file);
    for (const dir of [...this.dirs]) if (dir === path || dir.startsWith(prefix)) this.dirs.delete(dir);
    return 'removed';
  }

  mkdir(path: string, parents: boolean): MkdirResult {
    if (this.exists(path)) return parents && this.isDir(path) ? 'created' : 'exists';
    const m = this.mounted(path);
    if (m) {
      if (!parents && !this.isDir(parentOf(path))) return 'no-parent';
      if (m.mount.readonly) return 'read-only';
      this.checkWrite(m.host, true);
      hostCall(() => mkdirSync(m.host, { recursive: true }));
      return 'created';
    }
    if (!parents && !this.isDir(parentOf(path))) return 'no-parent';
    this.addParents(path);
    this.dirs.add(path);
    return 'created';
  }

  /**
   * What the container's own layer holds: the bytes of its files' contents (UTF-8) and its inodes
   * (the files and directories it made). Mounted paths are the host's, not counted here.
   */
  usage(): { bytes: number; inodes: number } {
    let bytes = 0;
    for (const content of this.files.values()) bytes += byteLength(content);
    return { bytes, inodes: this.files.size + this.dirs.size };
  }

  /** Every file path, sorted; for tests and debugging. */
  listFiles(): string[] {
    return [...this.files.keys()].sort();
  }

  private addParents(path: string): void {
    for (let dir = parentOf(path); !this.isDir(dir); dir = parentOf(dir)) this.dirs.add(dir);
  }
}

function parentOf(path: string): string {
  const slash = path.lastIndexOf('/');
  return slash <= 0 ? '/' : path.slice(0, slash);
}
