/**
 * Where the kubelet keeps a CSI volume on the node and the names it derives from it, pure
 * (pkg/volume/csi). A volume of a PersistentVolume is staged once per node at
 * `<root>/plugins/kubernetes.io/csi/<driver>/<sha256(volumeHandle)>/globalmount` and published
 * for each pod at `<root>/pods/<podUID>/volumes/kubernetes.io~csi/<specName>/mount`, where
 * specName is the PV's name (or, for an inline volume, the pod's volume name).
 */
import { createHash } from 'node:crypto';
import path from 'node:path';

/** The plugin's name (csi_plugin.go CSIPluginName). */
export const CSI_PLUGIN_NAME = 'kubernetes.io/csi';

/** The staging directory's last element (csi_attacher.go globalMountInGlobalPath). */
const GLOBAL_MOUNT = 'globalmount';

function sha256Hex(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}

/** `/` as `~`, as the kubelet names a plugin's or a volume's directory (k8s.io/utils/strings EscapeQualifiedName). */
export function escapeQualifiedName(name: string): string {
  return name.replaceAll('/', '~');
}

/**
 * The staging target path of a PersistentVolume's CSI volume (csi_attacher.go
 * makeDeviceMountPath: the plugin directory `<root>/plugins/kubernetes.io/csi`, the driver, the
 * sha256 of the volume handle, `globalmount`). Its parent holds the volume's `vol_data.json`.
 */
export function stagingTargetPath(rootDir: string, driver: string, volumeHandle: string): string {
  return path.join(rootDir, 'plugins', CSI_PLUGIN_NAME, driver, sha256Hex(volumeHandle), GLOBAL_MOUNT);
}

/**
 * The pod's directory of a CSI volume (csi_mounter.go getTargetPath: the kubelet's pod volume
 * directory `<root>/pods/<uid>/volumes/<escaped plugin>/<escaped specName>`), which holds the
 * pod's `vol_data.json` and the target path `mount`.
 */
export function podVolumeDir(rootDir: string, podUID: string, specName: string): string {
  return path.join(rootDir, 'pods', podUID, 'volumes', escapeQualifiedName(CSI_PLUGIN_NAME), escapeQualifiedName(specName));
}

/** The target path of NodePublishVolume, the container mount's host path (csi_util.go GetCSIMounterPath). */
export function publishTargetPath(rootDir: string, podUID: string, specName: string): string {
  return path.join(podVolumeDir(rootDir, podUID, specName), 'mount');
}

/** The volume_id of an inline (ephemeral) CSI volume (csi_mounter.go makeVolumeHandle). */
export function inlineVolumeHandle(podUID: string, volumeName: string): string {
  return `csi-${sha256Hex(podUID + volumeName)}`;
}

/** The VolumeAttachment's name for a volume on a node (csi_attacher.go getAttachmentName). */
export function attachmentName(volumeHandle: string, driver: string, nodeName: string): string {
  return `csi-${sha256Hex(volumeHandle + driver + nodeName)}`;
}
