/**
 * `vol_data.json` on disk: written into a directory and read back, with the kubelet's messages
 * (pkg/volume/csi/csi_util.go saveVolumeData, loadVolumeData; they carry its `kubernetes.io/csi: `
 * prefix).
 */
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { CSI_PLUGIN_NAME } from './paths.ts';
import { VOL_DATA_FILE, decodeVolumeData, encodeVolumeData, type VolumeData } from './volData.ts';

function reason(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

/** Writes `data` as `<dir>/vol_data.json` (the directory must exist). */
export async function saveVolumeData(dir: string, data: VolumeData): Promise<void> {
  const file = path.join(dir, VOL_DATA_FILE);
  try {
    await writeFile(file, encodeVolumeData(data));
  } catch (err) {
    throw new Error(`${CSI_PLUGIN_NAME}: failed to save volume data file ${file}: ${reason(err)}`, { cause: err });
  }
}

/**
 * Reads `<dir>/vol_data.json`. A missing file rejects with an error whose `cause` has `code`
 * ENOENT (UnmountDevice treats that as nothing to do).
 */
export async function loadVolumeData(dir: string): Promise<VolumeData> {
  const file = path.join(dir, VOL_DATA_FILE);
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (err) {
    throw new Error(`${CSI_PLUGIN_NAME}: failed to open volume data file [${file}]: ${reason(err)}`, { cause: err });
  }
  try {
    return decodeVolumeData(text);
  } catch (err) {
    throw new Error(`${CSI_PLUGIN_NAME}: failed to parse volume data file [${file}]: ${reason(err)}`, { cause: err });
  }
}
