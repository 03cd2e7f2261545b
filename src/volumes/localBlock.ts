/**
 * A local PersistentVolume of volumeMode Block, mapped into a pod as the kubelet's local plugin
 * maps it (pkg/volume/local/local.go localVolumeMapper): no SetUpDevice, and MapPodDevice's device
 * is the PersistentVolume's own path, exposed unformatted through MapBlockVolume (blockMap.ts) with
 * the global map directory `<root>/plugins/kubernetes.io~local-volume/volumeDevices/<pv>` and the
 * pod's link `<root>/pods/<uid>/volumeDevices/kubernetes.io~local-volume/<pv>`.
 *
 * The kubelet takes the path as it is and fails later where it is not a block device (a bind mount
 * refused, or the runtime's CreateContainer); here it is checked first, so that the pod's
 * `FailedMapVolume` event says what is wrong with the path.
 */
import path from 'node:path';
import type { PersistentVolume } from '../api/storage.ts';
import { type BlockMapDeps, type BlockMapPaths, type BlockMapping, VOLUME_DEVICES_DIR, mapBlockVolume, podDeviceMapDir, removeMapPath, unmapBlockVolume } from './blockMap.ts';
import { type FileType, fileTypeAt } from './persistent.ts';

/** local.go localVolumePluginName. */
const LOCAL_PLUGIN_NAME = 'kubernetes.io/local-volume';

/** GetGlobalMapPath: `<root>/plugins/kubernetes.io~local-volume/volumeDevices/<pv>` (the plugin's name escaped, as local.go passes it). */
export function localGlobalMapPath(podsDir: string, pvName: string): string {
  return path.join(path.dirname(podsDir), 'plugins', LOCAL_PLUGIN_NAME.replaceAll('/', '~'), VOLUME_DEVICES_DIR, pvName);
}

/** Why a local volume's path cannot be mapped as a raw block device, or null. */
export function localBlockProblem(pv: PersistentVolume, found: FileType | null): string | null {
  const local = pv.spec?.local?.path;
  if (!local) return 'local volume source is nil or local path is not set';
  if (found === null) return `path "${local}" does not exist`;
  if (found !== 'block') return `path "${local}" is not a block device (it is a ${found === 'other' ? 'special file' : found}): a volume of volumeMode Block needs one`;
  return null;
}

function mapPaths(podsDir: string, uid: string, pvName: string): BlockMapPaths {
  return { globalMapPath: localGlobalMapPath(podsDir, pvName), podDeviceMapDir: podDeviceMapDir(podsDir, uid, LOCAL_PLUGIN_NAME), volumeMapName: pvName, uid };
}

/** Maps the local block device into the pod; resolves with the link its containers get. Rejects with the step's `MapVolume.… failed for volume "<pv>" : …`. */
export async function mapLocalBlockVolume(deps: BlockMapDeps & { podsDir: string }, uid: string, pv: PersistentVolume): Promise<BlockMapping> {
  const name = pv.metadata.name;
  const devicePath = pv.spec?.local?.path ?? '';
  const problem = localBlockProblem(pv, devicePath ? await fileTypeAt(devicePath) : null);
  if (problem) throw new Error(`MapVolume.MapPodDevice failed for volume "${name}" : ${problem}`);
  try {
    return await mapBlockVolume(deps, devicePath, mapPaths(deps.podsDir, uid, name));
  } catch (err) {
    throw new Error(`MapVolume.MapBlockVolume failed for volume "${name}" : ${err instanceof Error ? err.message : String(err)}`);
  }
}

/** UnmapVolume for one pod; after the volume's last pod, `releaseLocalBlockVolume`. */
export async function unmapLocalBlockVolume(deps: BlockMapDeps & { podsDir: string }, uid: string, pvName: string): Promise<void> {
  try {
    await unmapBlockVolume(deps, mapPaths(deps.podsDir, uid, pvName));
  } catch (err) {
    throw new Error(`UnmapVolume.UnmapBlockVolume failed for volume "${pvName}" : ${err instanceof Error ? err.message : String(err)}`);
  }
}

/** GenerateUnmapDeviceFunc for a local volume (no TearDownDevice): its global map directory removed. */
export async function releaseLocalBlockVolume(podsDir: string, pvName: string): Promise<void> {
  await removeMapPath(localGlobalMapPath(podsDir, pvName));
}
