/**
 * The volumes an earlier run of the agent left set up, reconstructed from what is on disk, pure
 * (pkg/kubelet/volumemanager/reconciler reconstruct_common.go getVolumesFromPodDir and
 * reconstructVolume; the plugins' ConstructVolumeSpec and ConstructBlockVolumeSpec: pkg/volume/csi
 * csi_plugin.go, pkg/volume/local local.go). Each directory `<pods>/<uid>/volumes/<escaped
 * plugin>/<spec name>` is a mounted volume of that pod, each link `<pods>/<uid>/volumeDevices/
 * <escaped plugin>/<pv>` a mapped (raw block) one; a plugin whose volumes hold state outside the
 * agent's own files (a CSI driver's publish and stage, a local volume's bind mount, a block map's
 * bind mount and loop device) gives back its unique name and what its teardown needs:
 *
 *   kubernetes.io/csi            mounted: `vol_data.json` in the directory; `volumeLifecycleMode:
 *                                Ephemeral` is an inline volume, `<plugin>/<pod uid>-<spec name>`;
 *                                otherwise the PersistentVolume `<plugin>/<driver>^<volume handle>`,
 *                                whose stage is shared by its pods. Mapped: the PersistentVolume of
 *                                `plugins/kubernetes.io/csi/volumeDevices/<pv>/data/vol_data.json`.
 *   kubernetes.io/local-volume   the PersistentVolume of the directory's or link's name (local.go
 *                                ConstructVolumeSpec, ConstructBlockVolumeSpec); its bind mounts
 *                                (into the pod, of a block device's filesystem, of a mapped
 *                                device onto its global map file) are the mounter's, learnt from
 *                                the mount table at start (mounter.ts), so its teardown unmounts
 *                                them without a device path; a mapped device's loop device is found
 *                                by its backing file (blockMap.ts).
 *
 * The modern kubelet checks no mount point: a directory found is a volume, uncertain until the
 * pod's processing mounts (or maps) it again or its teardown unmounts (or unmaps) it. The agent's
 * own plugins (emptyDir, configMap, secret, downwardAPI, projected) are not reconstructed: their
 * files are the agent's, set up again by a running pod's sync and removed with an orphaned pod's
 * directory.
 */
import { CSI_PLUGIN_NAME } from './csi/paths.ts';
import { VOL_DATA_KEY, type VolumeData } from './csi/volData.ts';

/** The local volume plugin's name (local.go localVolumePluginName). */
export const LOCAL_PLUGIN_NAME = 'kubernetes.io/local-volume';

/** A volume directory found under a pod's directory (reconstruct_common.go podVolume). */
export interface FoundVolume {
  uid: string;
  /** The plugin's name, unescaped (`kubernetes.io/csi`). */
  plugin: string;
  /** The directory's name: the PV's name for a claim, the pod's volume name otherwise. */
  specName: string;
  /** The directory. */
  path: string;
  mode: 'Filesystem' | 'Block';
}

/** A volume reconstructed: enough to mount it again for its pod or to tear it down. */
export interface ReconstructedVolume {
  uid: string;
  specName: string;
  uniqueName: string;
  kind: 'csiPV' | 'csiInline' | 'localPV';
  /** A raw block volume, mapped: its teardown unmaps it. */
  map?: true;
}

/** `~` back to `/` (k8s.io/utils/strings UnescapeQualifiedName). */
export function unescapeQualifiedName(name: string): string {
  return name.replaceAll('~', '/');
}

/** The plugins whose volumes are reconstructed (the others hold only the agent's own files). */
export function isReconstructedPlugin(plugin: string): boolean {
  return plugin === CSI_PLUGIN_NAME || plugin === LOCAL_PLUGIN_NAME;
}

/** What reconstructing a found volume read from disk. */
export interface OnDisk {
  /** A CSI volume's `vol_data.json` (a mapped one's in its plugin's volumeDevices directory), or why it could not be read. */
  volumeData?: VolumeData | { error: string };
}

/** reconstructVolume: the volume, or why it cannot be reconstructed (it is then left to the orphan cleanup). */
export function reconstructVolume(found: FoundVolume, disk: OnDisk): ReconstructedVolume | { error: string } {
  const base = { uid: found.uid, specName: found.specName, ...(found.mode === 'Block' ? { map: true as const } : {}) };
  if (found.plugin === LOCAL_PLUGIN_NAME) return { ...base, kind: 'localPV', uniqueName: `${LOCAL_PLUGIN_NAME}/${found.specName}` };
  if (found.plugin !== CSI_PLUGIN_NAME) return { error: `no volume plugin matched name: ${found.plugin}` };
  const data = disk.volumeData;
  // csi_plugin.go ConstructVolumeSpec, ConstructBlockVolumeSpec.
  const construct = found.mode === 'Block' ? 'ConstructBlockVolumeSpec' : 'ConstructVolumeSpec';
  if (!data || 'error' in data) return { error: `${CSI_PLUGIN_NAME}: plugin.${construct} failed loading volume data using [${found.path}]: ${data && 'error' in data ? data.error : 'no data'}` };
  const specName = data[VOL_DATA_KEY.specVolID] ?? found.specName;
  const driver = data[VOL_DATA_KEY.driverName] ?? '';
  if (found.mode === 'Filesystem' && data[VOL_DATA_KEY.volumeLifecycleMode] === 'Ephemeral') return { ...base, kind: 'csiInline', uniqueName: `${CSI_PLUGIN_NAME}/${found.uid}-${specName}` };
  return { ...base, kind: 'csiPV', uniqueName: `${CSI_PLUGIN_NAME}/${driver}^${data[VOL_DATA_KEY.volumeHandle] ?? ''}` };
}
