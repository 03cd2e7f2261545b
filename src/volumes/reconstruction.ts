/**
 * The volumes an earlier run of the agent left set up, reconstructed from what is on disk, pure
 * (pkg/kubelet/volumemanager/reconciler reconstruct_common.go getVolumesFromPodDir and
 * reconstructVolume; the plugins' ConstructVolumeSpec: pkg/volume/csi csi_plugin.go, pkg/volume/local
 * local.go). Each directory `<pods>/<uid>/volumes/<escaped plugin>/<spec name>` is a volume of that
 * pod; a plugin whose volumes hold state outside the agent's own files (a CSI driver's publish and
 * stage, a local volume's bind mount) gives back its unique name and what its teardown needs:
 *
 *   kubernetes.io/csi            `vol_data.json` in the directory: `volumeLifecycleMode: Ephemeral`
 *                                is an inline volume, `<plugin>/<pod uid>-<spec name>`; otherwise the
 *                                PersistentVolume `<plugin>/<driver>^<volume handle>`, whose stage
 *                                is shared by its pods.
 *   kubernetes.io/local-volume   the PersistentVolume of the directory's name (local.go
 *                                ConstructVolumeSpec); its bind mount and, on a block device, its
 *                                device mount are the mounter's, learnt from the mount table at start
 *                                (mounter.ts), so its teardown unmounts them without a device path.
 *
 * The modern kubelet checks no mount point: a directory found is a volume, uncertain until the
 * pod's processing mounts it again or its teardown unmounts it. The agent's own plugins (emptyDir,
 * configMap, secret, downwardAPI, projected) are not reconstructed: their files are the agent's,
 * set up again by a running pod's sync and removed with an orphaned pod's directory.
 * Raw block directories (`volumeDevices/`) are found and not reconstructed (not built yet: a gone
 * pod's map is left behind).
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
  /** A CSI volume's `vol_data.json`, or why it could not be read. */
  volumeData?: VolumeData | { error: string };
}

/** reconstructVolume: the volume, or why it cannot be reconstructed (it is then left to the orphan cleanup). */
export function reconstructVolume(found: FoundVolume, disk: OnDisk): ReconstructedVolume | { error: string } {
  const base = { uid: found.uid, specName: found.specName };
  // statelet maps raw block volumes (src/volumes/blockMap.ts) but does not reconstruct them yet.
  if (found.mode === 'Block') return { error: `raw block volume ${JSON.stringify(found.specName)} (plugin ${JSON.stringify(found.plugin)}) of pod ${JSON.stringify(found.uid)}: this node does not reconstruct raw block volumes` };
  if (found.plugin === LOCAL_PLUGIN_NAME) return { ...base, kind: 'localPV', uniqueName: `${LOCAL_PLUGIN_NAME}/${found.specName}` };
  if (found.plugin !== CSI_PLUGIN_NAME) return { error: `no volume plugin matched name: ${found.plugin}` };
  const data = disk.volumeData;
  // csi_plugin.go ConstructVolumeSpec.
  if (!data || 'error' in data) return { error: `${CSI_PLUGIN_NAME}: plugin.ConstructVolumeSpec failed loading volume data using [${found.path}]: ${data && 'error' in data ? data.error : 'no data'}` };
  const specName = data[VOL_DATA_KEY.specVolID] ?? found.specName;
  const driver = data[VOL_DATA_KEY.driverName] ?? '';
  if (data[VOL_DATA_KEY.volumeLifecycleMode] === 'Ephemeral') return { ...base, kind: 'csiInline', uniqueName: `${CSI_PLUGIN_NAME}/${found.uid}-${specName}` };
  return { ...base, kind: 'csiPV', uniqueName: `${CSI_PLUGIN_NAME}/${driver}^${data[VOL_DATA_KEY.volumeHandle] ?? ''}` };
}
