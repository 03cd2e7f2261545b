/**
 * How the kubelet exposes a raw block volume to a pod once its plugin has a device path for it
 * (pkg/volume/util/util.go MapBlockVolume and UnmapBlockVolume over
 * pkg/volume/util/volumepathhandler volume_path_handler.go and volume_path_handler_linux.go):
 *
 *   global map   the device bind-mounted onto a file named by the pod's UID in the plugin's global
 *                map directory (`<root>/plugins/<plugin>/volumeDevices/<pv>` for a local volume,
 *                `<root>/plugins/kubernetes.io/csi/volumeDevices/<pv>/dev` for CSI), one per pod;
 *   pod link     a symlink `<root>/pods/<uid>/volumeDevices/<escaped plugin>/<pv>` to the device
 *                path: what the container runtime is given as the device's host path
 *                (kubelet_pods.go makeBlockVolumes), and which it resolves;
 *   fd lock      a loop device over the global map file (`losetup -f`), which holds the device open
 *                so that it cannot silently be replaced by another under the same name.
 *
 * Unmapping runs in reverse: the loop device detached, the link removed, the bind mount undone and
 * its file removed; the global map directory goes when the volume's last pod has gone
 * (GenerateUnmapDeviceFunc RemoveMapPath). Where this node may not mount (not root), the global
 * map and its loop device are left out and the pod link alone exposes the device, as a local
 * volume's own path is used when the node cannot bind-mount it.
 */
import { execFile } from 'node:child_process';
import { lstat, mkdir, readFile, readdir, realpath, rm, symlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import type { Mounter } from './mounter.ts';

/** kubeletconfig DefaultKubeletVolumeDevicesDirName. */
export const VOLUME_DEVICES_DIR = 'volumeDevices';

/** `/` as `~` (k8s.io/utils/strings EscapeQualifiedName). */
const escape = (name: string) => name.replaceAll('/', '~');

/** The pod's directory of a plugin's device links (kubelet_getters.go getPodVolumeDeviceDir): `<root>/pods/<uid>/volumeDevices/<escaped plugin>`. */
export function podDeviceMapDir(podsDir: string, uid: string, pluginName: string): string {
  return path.join(podsDir, uid, VOLUME_DEVICES_DIR, escape(pluginName));
}

/** Runs a command; rejects with its output on failure. */
export type RunCommand = (file: string, args: string[]) => Promise<{ stdout: string }>;

const runCommand: RunCommand = async (file, args) => {
  const { stdout } = await promisify(execFile)(file, args, { encoding: 'utf8' });
  return { stdout };
};

/** The loop devices the fd lock uses (volume_path_handler_linux.go AttachFileDevice, DetachFileDevice). */
export interface LoopDevices {
  /** A loop device over `file`, made unless one is there; returns its path. */
  attach(file: string): Promise<string>;
  /** Detaches the loop device over `file`, if there is one. */
  detach(file: string): Promise<void>;
}

/** The system's loop devices, found by their backing files in sysfs (getLoopDeviceFromSysfs), made and removed with losetup. */
export function systemLoopDevices(run: RunCommand = runCommand, sysBlock = '/sys/block'): LoopDevices {
  const find = async (file: string): Promise<string | null> => {
    const real = await realpath(file).catch(() => file);
    for (const name of (await readdir(sysBlock).catch(() => [] as string[])).filter((n) => n.startsWith('loop'))) {
      const backing = await readFile(path.join(sysBlock, name, 'loop', 'backing_file'), 'utf8').catch(() => null);
      // cleanBackingFilePath: the kernel marks a removed backing file "(deleted)".
      const cleaned = backing?.trim().replace(/\(deleted\)$/, '').trim();
      if (cleaned === file || cleaned === real) return `/dev/${name}`;
    }
    return null;
  };
  return {
    async attach(file) {
      const found = await find(file);
      if (found) return found;
      await run('losetup', ['-f', file]).catch((err: unknown) => {
        throw new Error(`makeLoopDevice failed for path ${file}: losetup -f ${file} failed: ${errorText(err)}`);
      });
      const made = await find(file);
      if (!made) throw new Error(`makeLoopDevice failed for path ${file}: ${ERR_DEVICE_NOT_FOUND}`);
      return made;
    },
    async detach(file) {
      const found = await find(file);
      if (!found) return;
      await run('losetup', ['-d', found]).catch(async (err: unknown) => {
        // removeLoopDevice: a device gone meanwhile is detached.
        if (await lstat(found).catch(() => null)) throw new Error(`removeLoopDevice failed for path ${file}: losetup -d ${found} failed: ${errorText(err)}`);
      });
    },
  };
}

/** volumepathhandler ErrDeviceNotFound. */
const ERR_DEVICE_NOT_FOUND = 'device not found';

const errorText = (err: unknown) => (err instanceof Error ? err.message.trim() : String(err));
const gone = (err: NodeJS.ErrnoException) => (err.code === 'ENOENT' ? undefined : Promise.reject(err));

export interface BlockMapDeps {
  mounter: Mounter;
  loops: LoopDevices;
}

/** Where a volume is mapped for one pod: the plugin's global map directory, and the pod's link directory and name. */
export interface BlockMapPaths {
  globalMapPath: string;
  podDeviceMapDir: string;
  /** The link's name: the PersistentVolume's name. */
  volumeMapName: string;
  uid: string;
}

/** A volume mapped for a pod: the link its containers get, and the two directories the kubelet's success events name. */
export interface BlockMapping {
  link: string;
  globalMapPath: string;
  /** The pod's directory of the plugin's links (GetPodDeviceMapPath). */
  volumeMapPath: string;
}

/**
 * MapBlockVolume: `devicePath` bind-mounted at `<globalMapPath>/<uid>`, linked from the pod's
 * directory, and held open by a loop device; returns the link (the container's device host path).
 * Each step's failure is worded as the kubelet words it.
 */
export async function mapBlockVolume(deps: BlockMapDeps, devicePath: string, paths: BlockMapPaths): Promise<BlockMapping> {
  const { globalMapPath, podDeviceMapDir: linkDir, volumeMapName, uid } = paths;
  let bound: boolean;
  try {
    bound = await mapBindMountDevice(deps.mounter, devicePath, globalMapPath, uid);
  } catch (err) {
    throw new Error(`blkUtil.MapDevice failed. devicePath: ${devicePath}, globalMapPath:${globalMapPath}, podUID: ${uid}, bindMount: true: ${errorText(err)}`);
  }
  try {
    await mapSymlinkDevice(devicePath, linkDir, volumeMapName);
  } catch (err) {
    throw new Error(`blkUtil.MapDevice failed. devicePath: ${devicePath}, podVolumeMapPath:${linkDir}, volumeMapName: ${volumeMapName}, bindMount: false: ${errorText(err)}`);
  }
  if (bound) {
    try {
      await deps.loops.attach(path.join(globalMapPath, uid));
    } catch (err) {
      throw new Error(`blkUtil.AttachFileDevice failed. globalMapPath:${globalMapPath}, podUID: ${uid}: ${errorText(err)}`);
    }
  }
  return { link: path.join(linkDir, volumeMapName), globalMapPath, volumeMapPath: linkDir };
}

/** UnmapBlockVolume: the loop device detached, the pod's link removed, the global bind mount undone and its file removed. */
export async function unmapBlockVolume(deps: BlockMapDeps, paths: BlockMapPaths): Promise<void> {
  const { globalMapPath, podDeviceMapDir: linkDir, volumeMapName, uid } = paths;
  const file = path.join(globalMapPath, uid);
  try {
    await deps.loops.detach(file);
  } catch (err) {
    throw new Error(`blkUtil.DetachFileDevice failed. globalUnmapPath:${globalMapPath}, podUID: ${uid}: ${errorText(err)}`);
  }
  try {
    const link = path.join(linkDir, volumeMapName);
    if ((await lstat(link).catch(() => null))?.isSymbolicLink()) await rm(link);
  } catch (err) {
    throw new Error(`blkUtil.DetachFileDevice failed. podDeviceUnmapPath:${linkDir}, volumeMapName: ${volumeMapName}, bindMount: false: ${errorText(err)}`);
  }
  try {
    await deps.mounter.unmount(file);
    await rm(file).catch(gone);
  } catch (err) {
    throw new Error(`blkUtil.DetachFileDevice failed. globalUnmapPath:${globalMapPath}, podUID: ${uid}, bindMount: true: ${errorText(err)}`);
  }
}

/** RemoveMapPath: the volume's global map directory, once its last pod has unmapped it. */
export async function removeMapPath(globalMapPath: string): Promise<void> {
  await rm(globalMapPath, { recursive: true, force: true }).catch((err: unknown) => {
    throw new Error(`failed to remove directory ${globalMapPath}: ${errorText(err)}`);
  });
}

/** mapBindMountDevice: a file `<mapPath>/<linkName>` made (0750) and the device bind-mounted on it; false where the node may not mount. */
async function mapBindMountDevice(mounter: Mounter, devicePath: string, mapPath: string, linkName: string): Promise<boolean> {
  await mkdir(mapPath, { recursive: true, mode: 0o750 });
  const linkPath = path.join(mapPath, linkName);
  const existing = await lstat(linkPath).catch((err: NodeJS.ErrnoException) => (err.code === 'ENOENT' ? null : Promise.reject(err)));
  // A device file there is the bind mount made already.
  if (existing?.isBlockDevice()) return true;
  if (!existing) await writeFile(linkPath, '', { mode: 0o750 });
  const bound = await mounter.bindMount(devicePath, linkPath, { readOnly: false }).catch((err: unknown) => {
    throw new Error(`failed to bind mount devicePath: ${devicePath} to linkPath ${linkPath}: ${errorText(err)}`);
  });
  if (!bound) await rm(linkPath).catch(gone);
  return bound;
}

/** mapSymlinkDevice: `<mapPath>/<linkName>` → devicePath, replacing what was there. */
async function mapSymlinkDevice(devicePath: string, mapPath: string, linkName: string): Promise<void> {
  await mkdir(mapPath, { recursive: true, mode: 0o750 });
  const linkPath = path.join(mapPath, linkName);
  await rm(linkPath).catch(gone);
  await symlink(devicePath, linkPath);
}
