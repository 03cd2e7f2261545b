/**
 * Removing the directory of a pod nobody owns, once its volumes are torn down (pkg/kubelet
 * kubelet_volumes.go cleanupOrphanedPodDirs, removeOrphanedPodVolumeDirs): nothing is deleted
 * through a mount, and a volume directory is only ever rmdir'ed, so a volume's data the agent did
 * not put there is never removed with it.
 *
 *   1. Anything still mounted under the pod's directory (a CSI driver's publish): nothing is
 *      touched (podVolumesExist), the caller tries again at the next housekeeping.
 *   2. The agent's own plugins' directories (emptyDir, configMap, secret, downwardAPI, projected)
 *      lose their contents, as their TearDown removes them.
 *   3. A CSI volume's directory whose `mount` is not a mount point loses its empty `mount` and its
 *      `vol_data.json` (csi_orphan_cleanup.go CleanupUnmountedVolumeArtifacts): otherwise a driver
 *      that never unpublished (a node reboot, a driver gone) blocks the cleanup for good
 *      (kubernetes#102576).
 *   4. Each `volumes/<plugin>/<volume>` is rmdir'ed, then the `volumes` tree, directories only
 *      (removeall.RemoveDirsOneFilesystem: a file left fails it); each failure is the kubelet's
 *      error and the pod's directory stays.
 *   5. The pod's other subdirectories are removed with what they hold, then the pod's directory.
 * statelet keeps no `volume-subpaths` (its subPath mounts are the runtime's), so there are none to remove.
 */
import type { Dirent } from 'node:fs';
import { lstat, readdir, rm, rmdir, unlink } from 'node:fs/promises';
import path from 'node:path';
import { VOL_DATA_FILE } from './csi/volData.ts';
import type { Mounter } from './mounter.ts';
import { PLUGIN_DIRS } from './plan.ts';

/** The directories of the plugins whose files are the agent's own: their teardown removes what they hold. */
const OWN_PLUGIN_DIRS: ReadonlySet<string> = new Set([PLUGIN_DIRS.emptyDir, PLUGIN_DIRS.configMap, PLUGIN_DIRS.secret, PLUGIN_DIRS.downwardAPI, PLUGIN_DIRS.projected]);
const CSI_PLUGIN_DIR = 'kubernetes.io~csi';

const reason = (err: unknown) => (err instanceof Error ? err.message : String(err));
const missing = (err: unknown) => (err as NodeJS.ErrnoException).code === 'ENOENT';

async function entries(dir: string): Promise<Dirent[]> {
  return readdir(dir, { withFileTypes: true }).catch((err: unknown) => (missing(err) ? [] : Promise.reject(err)));
}

/**
 * csi_orphan_cleanup.go CleanupUnmountedVolumeArtifacts: a CSI volume directory's `mount`, when it
 * is not a mount point and is empty (or a link), and its `vol_data.json`; anything else is left. True when the
 * file was removed.
 */
export async function cleanupUnmountedCsiArtifacts(volumeDir: string, mountPoints: readonly string[]): Promise<boolean> {
  const mountPath = path.join(volumeDir, 'mount');
  if (mountPoints.includes(mountPath)) return false;
  if (await lstat(mountPath).catch(() => null)) {
    try {
      // os.Remove: a driver's link where it could not mount goes as a file, an empty directory as one.
      await unlink(mountPath).catch((err: unknown) => ((err as NodeJS.ErrnoException).code === 'EISDIR' ? rmdir(mountPath) : Promise.reject(err)));
    } catch (err) {
      throw new Error(`failed to remove unmounted CSI mount path ${JSON.stringify(mountPath)}: ${reason(err)}`);
    }
  }
  try {
    await unlink(path.join(volumeDir, VOL_DATA_FILE));
  } catch (err) {
    if (missing(err)) return false;
    throw new Error(`failed to remove CSI volume data file ${JSON.stringify(path.join(volumeDir, VOL_DATA_FILE))}: ${reason(err)}`);
  }
  return true;
}

/** removeall.RemoveDirsOneFilesystem: the tree's directories, deepest first; anything but a directory fails it. */
async function removeDirs(dir: string): Promise<void> {
  for (const entry of await entries(dir)) {
    const at = path.join(dir, entry.name);
    if (!entry.isDirectory()) throw new Error(`not a directory: ${at}`);
    await removeDirs(at);
  }
  await rmdir(dir).catch((err: unknown) => (missing(err) ? undefined : Promise.reject(err)));
}

/**
 * Removes `<podsDir>/<uid>` of a pod nobody owns whose volumes the volume manager has torn down
 * and whose own mounts the agent has unmounted; rejects with the first of the kubelet's errors,
 * leaving the directory, when anything is still mounted under it or a volume directory is not empty.
 */
export async function removeOrphanedPodDir(deps: { podsDir: string; mounter: Pick<Mounter, 'mountedUnder'> }, uid: string): Promise<void> {
  const podDir = path.join(deps.podsDir, uid);
  const volumesDir = path.join(podDir, 'volumes');
  const plugins = await entries(volumesDir);
  // Only a driver mounts here without the agent: the mount table is read only where one may have.
  const mountPoints = plugins.some((p) => p.name === CSI_PLUGIN_DIR) ? await deps.mounter.mountedUnder(podDir) : [];
  if (mountPoints.length > 0) throw new Error(`orphaned pod "${uid}" found, but volume paths are still present on disk: ${mountPoints.join(', ')}`);
  const errors: string[] = [];
  for (const plugin of plugins.filter((p) => p.isDirectory())) {
    const pluginDir = path.join(volumesDir, plugin.name);
    for (const volume of await entries(pluginDir)) {
      const volumeDir = path.join(pluginDir, volume.name);
      try {
        if (OWN_PLUGIN_DIRS.has(plugin.name)) await rm(volumeDir, { recursive: true, force: true });
        else if (plugin.name === CSI_PLUGIN_DIR) await cleanupUnmountedCsiArtifacts(volumeDir, mountPoints);
        await rmdir(volumeDir).catch((err: unknown) => (missing(err) ? undefined : Promise.reject(err)));
      } catch (err) {
        errors.push(`orphaned pod "${uid}" found, but failed to rmdir() volume at path ${volumeDir}: ${reason(err)}`);
      }
    }
  }
  if (errors.length === 0) {
    try {
      await removeDirs(volumesDir);
    } catch (err) {
      errors.push(`orphaned pod "${uid}" found, but error occurred when trying to remove the volumes dir: ${reason(err)}`);
    }
  }
  if (errors.length > 0) throw new Error(errors.join('; '));
  for (const sub of await entries(podDir)) await rm(path.join(podDir, sub.name), { recursive: true, force: true });
  await rmdir(podDir).catch((err: unknown) => (missing(err) ? undefined : Promise.reject(err)));
}
