/**
 * What a pod's `securityContext.fsGroup` does to the files of a volume the node sets up, pure
 * (pkg/volume/volume_linux.go: changeFilePermission, skipPermissionChange,
 * requiresPermissionChange): every path of the volume goes to group fsGroup (its owner kept); a
 * file gains group and owner read and write (read only, for a volume its plugin mounts
 * read-only: configMap, secret, downwardAPI, projected), a directory the same plus their search
 * bits and setgid, so that what the container creates in it belongs to fsGroup too. A symlink
 * changes group only: its mode means nothing and chmod would go through it to its target.
 *
 * With `fsGroupChangePolicy: OnRootMismatch` the walk is skipped when the volume's root already
 * has group fsGroup, setgid and at least those bits. The plugins statelet has (emptyDir,
 * configMap, secret, downwardAPI, projected) pass no policy to SetVolumeOwnership (each SetUpAt
 * gives it nil), so for them the walk always runs, as in the kubelet; the rule is here for the
 * volume types that pass the pod's.
 */

/** Group read and write (pkg/volume/volume_linux.go rwMask). */
const RW_MASK = 0o660;
/** Group read, for a volume mounted read-only (roMask). */
const RO_MASK = 0o440;
/** The search bits a directory gains (execMask). */
const EXEC_MASK = 0o110;
const SETGID = 0o2000;

/** What the walk knows of one path: its permission bits (with setuid, setgid, sticky) and its kind, from lstat. */
export interface PathFacts {
  mode: number;
  isDirectory: boolean;
  isSymbolicLink: boolean;
}

/** The group a path is given, and its new mode (null: its mode is left alone, a symlink). */
export interface OwnershipChange {
  gid: number;
  mode: number | null;
}

/** What SetVolumeOwnership does to one path of a volume (changeFilePermission). */
export function ownershipChange(path: PathFacts, fsGroup: number, readOnly: boolean): OwnershipChange {
  if (path.isSymbolicLink) return { gid: fsGroup, mode: null };
  const mask = (readOnly ? RO_MASK : RW_MASK) | (path.isDirectory ? SETGID | EXEC_MASK : 0);
  return { gid: fsGroup, mode: (path.mode & 0o7777) | mask };
}

/** The mode a regular file of the volume ends with, for one written with `mode` (the atomic writer compares it). */
export function fileModeWithFsGroup(mode: number, readOnly: boolean): number {
  return ownershipChange({ mode, isDirectory: false, isSymbolicLink: false }, 0, readOnly).mode!;
}

/** The volume root as stat (following a symlink) sees it; null when it could not be read. */
export interface RootFacts {
  gid: number;
  mode: number;
  isDirectory: boolean;
}

/**
 * Whether the recursive change may be skipped (skipPermissionChange): only under
 * `OnRootMismatch`, when the root is a directory of group fsGroup with setgid and every bit the
 * change would give it; an unreadable root is changed.
 */
export function skipOwnershipChange(policy: string | undefined, root: RootFacts | null, fsGroup: number, readOnly: boolean): boolean {
  if (policy !== 'OnRootMismatch') return false;
  if (!root || root.gid !== fsGroup || !root.isDirectory) return false;
  const wanted = (readOnly ? RO_MASK : RW_MASK) | EXEC_MASK;
  return (root.mode & wanted) === wanted && (root.mode & SETGID) !== 0;
}
