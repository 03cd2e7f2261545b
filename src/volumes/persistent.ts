/**
 * The in-tree plugins of persistent volumes this node serves:
 * - hostPath (pkg/volume/hostpath/host_path.go, the same plugin as the pod's inline hostPath): the
 *   PersistentVolume's path itself, checked by its `type`; nothing is mounted;
 * - local (pkg/volume/local/local.go): a directory of the node bind-mounted into the pod's directory
 *   at `volumes/kubernetes.io~local-volume/<pv>` (read-only for a read-only claim, with the
 *   PersistentVolume's mountOptions), given to the pod's fsGroup when writable, and unmounted and
 *   removed at teardown. Where the agent may not mount (not root), the container gets the local
 *   directory itself: the same files, without the mount.
 * A local volume on a block device is formatted when blank (ext4 unless `fsType` says) and mounted
 * once at `<root-dir>/plugins/kubernetes.io/local-volume/mounts/<pv>` (local.go MountDevice,
 * SafeFormatAndMount), then bind-mounted into each pod's directory like a directory; the device
 * mount comes off when the last pod's bind mount has (UnmountDevice). A node that may not mount
 * (not root) cannot serve it and says so.
 */
import { rmdir, stat } from 'node:fs/promises';
import path from 'node:path';
import type { PersistentVolume } from '../api/storage.ts';
import { mkdirAll } from './mkdirAll.ts';
import { type Mounter, localDeviceMountsDir } from './mounter.ts';

/** The pod's directory of a local volume (localVolume.GetPath). */
export function localVolumeDir(podsDir: string, uid: string, pvName: string): string {
  return path.join(podsDir, uid, 'volumes', 'kubernetes.io~local-volume', pvName);
}

/** What is at a path, as the kubelet's host utilities name it (hostutil GetFileType); null: nothing. */
export type FileType = 'directory' | 'file' | 'socket' | 'char' | 'block' | 'other';

/** hostutil_linux.go getFileType: the path stat'ed, a symlink followed to what it names (a local volume of type dir-link). */
export async function fileTypeAt(at: string): Promise<FileType | null> {
  const info = await stat(at).catch((err: NodeJS.ErrnoException) => (err.code === 'ENOENT' ? null : Promise.reject(err)));
  if (!info) return null;
  if (info.isDirectory()) return 'directory';
  if (info.isFile()) return 'file';
  if (info.isSocket()) return 'socket';
  if (info.isCharacterDevice()) return 'char';
  return info.isBlockDevice() ? 'block' : 'other';
}

/** Why a local volume's path cannot be bind-mounted (getGlobalLocalPath, SetUpAt's checks), or null. */
export function localPathProblem(pv: PersistentVolume, found: FileType | null): string | null {
  const local = pv.spec?.local;
  if (!local?.path) return 'local volume source is nil or local path is not set';
  if (local.path.split('/').includes('..')) return `invalid path: ${local.path} must not contain '..'`;
  if (found === null) return `path "${local.path}" does not exist`;
  if (found !== 'directory' && found !== 'block') return 'only directory and block device are supported';
  return null;
}

/**
 * Sets a local volume up for a pod; returns the path its containers mount: the pod's directory,
 * bind-mounted, or the volume's own directory where the node cannot mount.
 */
export async function setUpLocalVolume(mounter: Mounter, podsDir: string, uid: string, pv: PersistentVolume, readOnly: boolean): Promise<string> {
  const path0 = pv.spec?.local?.path ?? '';
  const found = path0 ? await fileTypeAt(path0) : null;
  const problem = localPathProblem(pv, found);
  if (problem) throw new Error(problem);
  const source = found === 'block' ? await mountLocalDevice(mounter, podsDir, pv, readOnly) : path0;
  const target = localVolumeDir(podsDir, uid, pv.metadata.name);
  await mkdirAll(target, 0o750);
  const mounted = await mounter.bindMount(source, target, { readOnly, mountOptions: pv.spec?.mountOptions ?? [] }).catch(async (err: unknown) => {
    // A failed mount leaves no directory behind (SetUpAt).
    await rmdir(target).catch(() => {});
    throw err;
  });
  return mounted ? target : source;
}

/** Where a block-backed local volume is mounted for all its pods (local.go generateBlockDeviceBaseGlobalPath). */
export function localDeviceMountPath(podsDir: string, pvName: string): string {
  return path.join(localDeviceMountsDir(podsDir), pvName);
}

/** One device operation at a time per volume: two pods starting together mount a device once. */
const deviceOperations = new Map<string, Promise<unknown>>();

function onDevice<T>(key: string, op: () => Promise<T>): Promise<T> {
  const run = (deviceOperations.get(key) ?? Promise.resolve()).catch(() => {}).then(op);
  deviceOperations.set(key, run);
  void run.finally(() => deviceOperations.get(key) === run && deviceOperations.delete(key)).catch(() => {});
  return run;
}

/** MountDevice: the device formatted if blank and mounted at its global path, once; returns that path. */
async function mountLocalDevice(mounter: Mounter, podsDir: string, pv: PersistentVolume, readOnly: boolean): Promise<string> {
  const device = pv.spec!.local!.path;
  const global = localDeviceMountPath(podsDir, pv.metadata.name);
  return onDevice(global, async () => {
    await mkdirAll(global, 0o750);
    const options = { fsType: pv.spec?.local?.fsType || 'ext4', readOnly, mountOptions: pv.spec?.mountOptions ?? [] };
    try {
      await mounter.formatAndMount(device, global, options);
    } catch (err) {
      throw new Error(`MountVolume.MountDevice failed for volume "${pv.metadata.name}" : ${err instanceof Error ? err.message : String(err)}`);
    }
    return global;
  });
}

/** UnmountDevice: a block-backed local volume's device mount, once no pod's bind mount uses it. */
export async function tearDownLocalDevice(mounter: Mounter, podsDir: string, pvName: string): Promise<void> {
  const global = localDeviceMountPath(podsDir, pvName);
  await onDevice(global, async () => {
    if (!(await mounter.unmount(global))) return;
    await rmdir(global).catch((err: NodeJS.ErrnoException) => (err.code === 'ENOENT' ? undefined : Promise.reject(err)));
  });
}

/** Unmounts a local volume from the pod's directory and removes that directory (util.UnmountPath). */
export async function tearDownLocalVolume(mounter: Mounter, podsDir: string, uid: string, pvName: string): Promise<void> {
  const target = localVolumeDir(podsDir, uid, pvName);
  await mounter.unmount(target);
  await rmdir(target).catch((err: NodeJS.ErrnoException) => (err.code === 'ENOENT' ? undefined : Promise.reject(err)));
}
