/**
 * Gives a volume's files to the pod's fsGroup on disk (pkg/volume/volume_linux.go
 * VolumeOwnership.ChangePermissions, walkDeep): every path under the volume's directory, each
 * directory after what it holds and the root last (so a walk cut short is done again under
 * OnRootMismatch), changed as `ownership.ts` decides. A path whose group or mode the system
 * refuses to change (a node agent that is not root cannot give a file to a group it is not in:
 * EPERM) is passed over, as the kubelet logs and passes it over; the refusals are returned for the
 * caller to report. A path that cannot be read (lstat, readdir) ends the walk with its error.
 */
import type { Stats } from 'node:fs';
import { chmod, lchown, lstat, readdir, stat } from 'node:fs/promises';
import path from 'node:path';
import { ownershipChange, skipOwnershipChange } from './ownership.ts';

/** The filesystem calls the walk makes; a test gives its own. */
export interface OwnershipFs {
  lstat(at: string): Promise<Stats>;
  stat(at: string): Promise<Stats>;
  readdir(dir: string): Promise<string[]>;
  lchown(at: string, uid: number, gid: number): Promise<void>;
  chmod(at: string, mode: number): Promise<void>;
}

const systemFs: OwnershipFs = { lstat: (at) => lstat(at), stat: (at) => stat(at), readdir: (dir) => readdir(dir), lchown, chmod };

export interface OwnershipResult {
  /** The walk was skipped (OnRootMismatch, the root already right). */
  skipped: boolean;
  /** The paths changed (group and, but for symlinks, mode). */
  changed: number;
  /** The changes the system refused, in walk order. */
  refusals: NodeJS.ErrnoException[];
}

export async function setVolumeOwnership(
  dir: string,
  fsGroup: number,
  options: { readOnly: boolean; policy?: string },
  fs: OwnershipFs = systemFs,
): Promise<OwnershipResult> {
  const result: OwnershipResult = { skipped: false, changed: 0, refusals: [] };
  if (options.policy !== undefined) {
    const root = await fs.stat(dir).catch(() => null);
    const facts = root ? { gid: root.gid, mode: root.mode, isDirectory: root.isDirectory() } : null;
    if (skipOwnershipChange(options.policy, facts, fsGroup, options.readOnly)) return { ...result, skipped: true };
  }
  const change = async (at: string, info: Stats) => {
    const wanted = ownershipChange({ mode: info.mode, isDirectory: info.isDirectory(), isSymbolicLink: info.isSymbolicLink() }, fsGroup, options.readOnly);
    // The owner is kept (-1); the group goes to fsGroup.
    await fs.lchown(at, -1, wanted.gid).catch((err: NodeJS.ErrnoException) => void result.refusals.push(err));
    if (wanted.mode !== null) await fs.chmod(at, wanted.mode).catch((err: NodeJS.ErrnoException) => void result.refusals.push(err));
    result.changed++;
  };
  const walk = async (at: string): Promise<void> => {
    const info = await fs.lstat(at);
    if (info.isDirectory()) for (const name of await fs.readdir(at)) await walk(path.join(at, name));
    await change(at, info);
  };
  await walk(dir);
  return result;
}
