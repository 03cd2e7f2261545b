/**
 * Reconstruction's reads of the node (reconstruct_common.go getVolumesFromPodDir, reconstructVolume
 * over the plugins' ConstructVolumeSpec and ConstructBlockVolumeSpec): the pods directory walked
 * once for volume directories and device links, each CSI volume's `vol_data.json` read (a mapped
 * one's from its plugin's volumeDevices directory), and the decisions of reconstruction.ts applied.
 * Nothing is changed on disk.
 */
import { readdir } from 'node:fs/promises';
import path from 'node:path';
import { csiBlockPaths } from './csi/block.ts';
import { CSI_PLUGIN_NAME } from './csi/paths.ts';
import { loadVolumeData } from './csi/volDataFile.ts';
import { type FoundVolume, type ReconstructedVolume, isReconstructedPlugin, reconstructVolume, unescapeQualifiedName } from './reconstruction.ts';

const reason = (err: unknown) => (err instanceof Error ? err.message : String(err));

/** The names in a directory; none when it is missing or not a directory (a pod without volumes). */
async function names(dir: string, directoriesOnly = false): Promise<string[]> {
  const entries = await readdir(dir, { withFileTypes: true }).catch(() => []);
  return entries.filter((e) => !directoriesOnly || e.isDirectory()).map((e) => e.name);
}

/**
 * getVolumesFromPodDir: every `<podsDir>/<uid>/volumes/<plugin>/<name>` (Filesystem) and
 * `<podsDir>/<uid>/volumeDevices/<plugin>/<name>` (Block), the plugin unescaped.
 */
export async function findPodVolumes(podsDir: string): Promise<FoundVolume[]> {
  const found: FoundVolume[] = [];
  for (const uid of await names(podsDir, true)) {
    for (const [sub, mode] of [
      ['volumes', 'Filesystem'],
      ['volumeDevices', 'Block'],
    ] as const) {
      const volumesDir = path.join(podsDir, uid, sub);
      for (const pluginDir of await names(volumesDir)) {
        for (const specName of await names(path.join(volumesDir, pluginDir))) {
          found.push({ uid, plugin: unescapeQualifiedName(pluginDir), specName, path: path.join(volumesDir, pluginDir, specName), mode });
        }
      }
    }
  }
  return found;
}

export interface Reconstruction {
  volumes: ReconstructedVolume[];
  /** The volumes of reconstructed plugins that could not be reconstructed, with why (the kubelet's "Could not construct volume information"). */
  failed: { volume: FoundVolume; error: string }[];
}

/** The volumes under `podsDir` that hold state outside the agent's own files, reconstructed. */
export async function reconstructPodVolumes(podsDir: string): Promise<Reconstruction> {
  const found = (await findPodVolumes(podsDir)).filter((v) => isReconstructedPlugin(v.plugin) || v.mode === 'Block');
  const result: Reconstruction = { volumes: [], failed: [] };
  // csi_plugin.go ConstructBlockVolumeSpec: a mapped volume's data is kept by its PV's name, beside the pods directory.
  const dataDir = (volume: FoundVolume) => (volume.mode === 'Block' ? csiBlockPaths(path.dirname(podsDir), volume.specName).dataDir : volume.path);
  for (const volume of found) {
    const volumeData = volume.plugin === CSI_PLUGIN_NAME ? await loadVolumeData(dataDir(volume)).catch((err: unknown) => ({ error: reason(err) })) : undefined;
    const outcome = reconstructVolume(volume, volumeData ? { volumeData } : {});
    if ('error' in outcome) result.failed.push({ volume, error: outcome.error });
    else result.volumes.push(outcome);
  }
  return result;
}
