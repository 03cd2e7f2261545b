/**
 * Writes a set of files into a volume directory so that a reader sees the whole old set or the
 * whole new one, never a mix (pkg/volume/util/atomic_writer.go Write): the files live in a hidden
 * timestamped directory, each visible top-level name is a symlink through `..data`, and a new set
 * becomes visible by one rename of the `..data` symlink. An unchanged set is left alone.
 */
import { randomBytes } from 'node:crypto';
import { chmod, mkdir, readdir, readFile, readlink, rename, rm, stat, symlink, writeFile } from 'node:fs/promises';
import path from 'node:path';

interface FileToWrite {
  /** Relative path inside the volume. */
  path: string;
  content: Buffer;
  mode: number;
}

const DATA = '..data';

/** The kubelet's checks on a payload path: relative, no `..` element, not starting with `..`. */
export function payloadPathProblem(file: string): string | null {
  if (file === '') return 'invalid path: must not be empty';
  if (path.isAbsolute(file)) return `invalid path: must be relative path: ${file}`;
  if (file.length > 4096) return `invalid path: must be less than or equal to 4096 characters: ${file}`;
  const parts = file.split('/');
  if (parts.includes('..')) return `invalid path: must not contain '..': ${file}`;
  if (parts[0]!.startsWith('..')) return `invalid path: must not start with '..': ${file}`;
  return null;
}

/** `2006_01_02_15_04_05` in UTC, as the kubelet names its data directories. */
const stamp = (now: Date) => now.toISOString().replace(/\.\d+Z$/, '').replace(/[-:T]/g, '_');

async function unchanged(dir: string, files: readonly FileToWrite[], diskMode: (mode: number) => number): Promise<boolean> {
  const old = await readlink(path.join(dir, DATA)).catch(() => null);
  if (!old) return false;
  const visible = (await readdir(dir)).filter((name) => !name.startsWith('..'));
  const wanted = new Set(files.map((f) => f.path.split('/')[0]!));
  if (visible.length !== wanted.size || visible.some((name) => !wanted.has(name))) return false;
  for (const file of files) {
    const at = path.join(dir, old, file.path);
    const [content, info] = await Promise.all([readFile(at).catch(() => null), stat(at).catch(() => null)]);
    if (!content || !info || !content.equals(file.content) || (info.mode & 0o777) !== diskMode(file.mode)) return false;
  }
  return true;
}

/**
 * What a volume's plugin does to the files besides writing them: `setPerms` runs once a new set is
 * written, before it becomes visible, and fails the write with its error (the plugins give the
 * volume to the pod's fsGroup there: atomic_writer.go Write, step 7); `diskMode` is the mode a
 * file written with `mode` has once it ran, for telling an unchanged set.
 */
interface WriteOptions {
  setPerms?: () => Promise<void>;
  diskMode?: (mode: number) => number;
}

/** Writes `files` into `dir`; returns whether anything changed. */
export async function writeAtomically(dir: string, files: readonly FileToWrite[], now: Date, options: WriteOptions = {}): Promise<boolean> {
  for (const file of files) {
    const problem = payloadPathProblem(file.path);
    if (problem) throw new Error(problem);
  }
  await mkdir(dir, { recursive: true });
  if (await unchanged(dir, files, options.diskMode ?? ((mode) => mode))) return false;
  const old = await readlink(path.join(dir, DATA)).catch(() => null);
  const fresh = `..${stamp(now)}.${randomBytes(5).toString('hex')}`;
  await mkdir(path.join(dir, fresh), { mode: 0o755 });
  await chmod(path.join(dir, fresh), 0o755);
  for (const file of files) {
    const at = path.join(dir, fresh, file.path);
    await mkdir(path.dirname(at), { recursive: true });
    await writeFile(at, file.content);
    await chmod(at, file.mode);
  }
  await options.setPerms?.();
  const tmp = path.join(dir, `${DATA}_tmp`);
  await rm(tmp, { force: true });
  await symlink(fresh, tmp);
  await rename(tmp, path.join(dir, DATA));
  const wanted = new Set(files.map((f) => f.path.split('/')[0]!));
  for (const name of wanted) {
    const link = path.join(dir, name);
    if ((await readlink(link).catch(() => null)) === path.join(DATA, name)) continue;
    await rm(link, { recursive: true, force: true });
    await symlink(path.join(DATA, name), link);
  }
  for (const name of await readdir(dir)) {
    if (!name.startsWith('..') && !wanted.has(name)) await rm(path.join(dir, name), { recursive: true, force: true });
  }
  if (old && old !== fresh) await rm(path.join(dir, old), { recursive: true, force: true });
  return true;
}
