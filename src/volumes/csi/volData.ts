/**
 * The `vol_data.json` files the kubelet keeps beside a CSI volume's mounts, pure: what they hold
 * and their bytes. Unmounting, unstaging and reconstruction after a restart read them back
 * (pkg/volume/csi/csi_util.go saveVolumeData/loadVolumeData; the keys: csi_mounter.go volDataKey).
 */
import { attachmentName } from './paths.ts';

/** The file's name (csi_plugin.go volDataFileName). */
export const VOL_DATA_FILE = 'vol_data.json';

/** The keys of both files (csi_mounter.go volDataKey). */
export const VOL_DATA_KEY = {
  specVolID: 'specVolID',
  volumeHandle: 'volumeHandle',
  driverName: 'driverName',
  nodeName: 'nodeName',
  attachmentID: 'attachmentID',
  volumeLifecycleMode: 'volumeLifecycleMode',
  seLinuxMountContext: 'seLinuxMountContext',
} as const;

/** What a file holds: a flat object of strings (Go's map[string]string). */
export type VolumeData = Readonly<Record<string, string>>;

/** A CSIDriver's volumeLifecycleModes value (storage/v1 VolumeLifecycleMode). */
export type VolumeLifecycleMode = 'Persistent' | 'Ephemeral';

/**
 * The pod's file, in `<pod volume dir>` beside `mount`, written before NodePublishVolume
 * (csi_mounter.go SetUpAt). `seLinuxMountContext` only when the volume is mounted with one.
 */
export function podVolumeData(volume: {
  specName: string;
  volumeHandle: string;
  driverName: string;
  nodeName: string;
  lifecycleMode: VolumeLifecycleMode;
  seLinuxMountContext?: string;
}): VolumeData {
  return {
    [VOL_DATA_KEY.specVolID]: volume.specName,
    [VOL_DATA_KEY.volumeHandle]: volume.volumeHandle,
    [VOL_DATA_KEY.driverName]: volume.driverName,
    [VOL_DATA_KEY.nodeName]: volume.nodeName,
    [VOL_DATA_KEY.volumeLifecycleMode]: volume.lifecycleMode,
    [VOL_DATA_KEY.attachmentID]: attachmentName(volume.volumeHandle, volume.driverName, volume.nodeName),
    ...(volume.seLinuxMountContext !== undefined ? { [VOL_DATA_KEY.seLinuxMountContext]: volume.seLinuxMountContext } : {}),
  };
}

/**
 * The node's file, beside the staging path `globalmount`, written before NodeStageVolume
 * (csi_attacher.go MountDevice), which UnmountDevice reads to unstage.
 */
export function deviceVolumeData(volume: { volumeHandle: string; driverName: string; seLinuxMountContext?: string }): VolumeData {
  return {
    [VOL_DATA_KEY.volumeHandle]: volume.volumeHandle,
    [VOL_DATA_KEY.driverName]: volume.driverName,
    ...(volume.seLinuxMountContext !== undefined ? { [VOL_DATA_KEY.seLinuxMountContext]: volume.seLinuxMountContext } : {}),
  };
}

/**
 * The file's bytes as Go's json.Encoder writes a map[string]string: keys sorted, no spaces, `<`,
 * `>`, `&`, U+2028 and U+2029 escaped, a newline at the end. So a file statelet writes is the
 * kubelet's byte for byte.
 */
export function encodeVolumeData(data: VolumeData): string {
  const sorted: Record<string, string> = {};
  for (const key of Object.keys(data).sort()) sorted[key] = data[key]!;
  const escaped = JSON.stringify(sorted).replace(/[<>&\u2028\u2029]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
  return `${escaped}\n`;
}

/** The file's contents read back; throws, saying what is wrong, unless it is a JSON object of strings. */
export function decodeVolumeData(text: string): VolumeData {
  const value: unknown = JSON.parse(text);
  if (value === null || typeof value !== 'object' || Array.isArray(value)) throw new Error(`want a JSON object, got ${Array.isArray(value) ? 'an array' : value === null ? 'null' : typeof value}`);
  for (const [key, member] of Object.entries(value)) {
    if (typeof member !== 'string') throw new Error(`the value of ${JSON.stringify(key)} is a ${member === null ? 'null' : typeof member}, not a string`);
  }
  return value as VolumeData;
}
