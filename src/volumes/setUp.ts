/**
 * Setting up a pod's volumes on disk before its containers start (the kubelet's volume manager
 * reconciler and the plugins' SetUpAt), again at every sync so that ConfigMap and Secret changes
 * reach the files:
 * - emptyDir (pkg/volume/emptydir/empty_dir.go): the directory, mode exactly 0777 whatever the
 *   umask, then the `ready` marker under `plugins/kubernetes.io~empty-dir/<name>`; `medium:
 *   Memory` is on disk too (no tmpfs yet);
 * - configMap and secret (pkg/volume/configmap, pkg/volume/secret): the object read with the
 *   node's identity, its files written with the atomic writer (atomicWriter.ts); downwardAPI
 *   (pkg/volume/downwardapi): the pod's own fields, the same way. Secrets are on disk, not tmpfs,
 *   for now;
 * - hostPath (pkg/volume/hostpath): the node's path itself, checked (and created, for the
 *   `…OrCreate` types) by its `type`.
 * Everything goes with the pod's directory when the pod is cleaned up.
 */
import { chmod, lstat, mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { Pod } from '../api/types.ts';
import type { ObjectReader } from '../client/objects.ts';
import { writeAtomically } from './atomicWriter.ts';
import { PLUGIN_DIRS, type PodVolume, downwardPayload, hostPathCheck, keyedPayload, mountedVolumes, pluginOf, volumeDir } from './plan.ts';
import type { ResourceAmounts } from '../api/quantity.ts';

/** A volume that could not be set up, with the kubelet's `MountVolume.SetUp failed …` message. */
export class VolumeSetUpError extends Error {
  override readonly name = 'VolumeSetUpError';
}

export interface VolumeDeps {
  podsDir: string;
  /** Absent: a node without an API server (a configMap or secret volume cannot be set up). */
  objects?: ObjectReader;
  /** The node's allocatable amounts: the limit a container leaves unset (downwardAPI resourceFieldRef). */
  allocatable?: ResourceAmounts;
  now(): number;
}

export async function setUpPodVolumes(deps: VolumeDeps, pod: Pod): Promise<void> {
  for (const volume of mountedVolumes(pod)) {
    const plugin = pluginOf(volume);
    if (!plugin) continue;
    try {
      if (plugin === 'emptyDir') await setUpEmptyDir(deps.podsDir, pod, volume);
      else if (plugin === 'downwardAPI') await setUpDownward(deps, pod, volume);
      else if (plugin === 'hostPath') await checkHostPath(volume.hostPath!);
      else await setUpKeyed(deps, pod, volume);
    } catch (err) {
      throw new VolumeSetUpError(`MountVolume.SetUp failed for volume "${volume.name}" : ${err instanceof Error ? err.message : String(err)}`);
    }
  }
}

async function setUpEmptyDir(podsDir: string, pod: Pod, volume: PodVolume): Promise<void> {
  const dir = volumeDir(podsDir, pod, volume);
  await mkdir(dir, { recursive: true, mode: 0o777 });
  await chmod(dir, 0o777);
  const marker = path.join(podsDir, pod.metadata.uid, 'plugins', PLUGIN_DIRS.emptyDir, volume.name);
  await mkdir(marker, { recursive: true, mode: 0o750 });
  await writeFile(path.join(marker, 'ready'), '');
}

async function setUpKeyed(deps: VolumeDeps, pod: Pod, volume: PodVolume): Promise<void> {
  const ns = pod.metadata.namespace;
  const name = (volume.configMap ? volume.configMap.name : volume.secret?.secretName) ?? '';
  if (!deps.objects) throw new Error(`cannot get ${volume.configMap ? 'configmap' : 'secret'} ${ns}/${name}: this node has no API server`);
  let values: Record<string, Buffer> | null;
  if (volume.configMap) {
    const found = await deps.objects.configMap(ns, name);
    values = found ? { ...Object.fromEntries(Object.entries(found.data).map(([k, v]) => [k, Buffer.from(v)])), ...found.binaryData } : null;
  } else {
    values = await deps.objects.secret(ns, name);
  }
  const payload = keyedPayload(volume, values);
  if ('error' in payload) throw new Error(payload.error);
  await writeAtomically(volumeDir(deps.podsDir, pod, volume), payload.files, new Date(deps.now()));
}

async function setUpDownward(deps: VolumeDeps, pod: Pod, volume: PodVolume): Promise<void> {
  const payload = downwardPayload(pod, volume, deps.allocatable);
  if ('error' in payload) throw new Error(payload.error);
  await writeAtomically(volumeDir(deps.podsDir, pod, volume), payload.files, new Date(deps.now()));
}

async function checkHostPath(volume: { path: string; type?: string }): Promise<void> {
  const info = await lstat(volume.path).catch(() => null);
  const found = !info ? null : info.isDirectory() ? 'directory' : info.isFile() ? 'file' : info.isSocket() ? 'socket' : info.isCharacterDevice() ? 'char' : info.isBlockDevice() ? 'block' : 'other';
  const check = hostPathCheck(volume, found);
  if ('error' in check) throw new Error(check.error);
  if ('create' in check) {
    if (check.create === 'directory') await mkdir(volume.path, { recursive: true, mode: 0o755 });
    // FileOrCreate: the parent must exist already (it is not created).
    else await writeFile(volume.path, '', { flag: 'a', mode: 0o644 });
  }
}
