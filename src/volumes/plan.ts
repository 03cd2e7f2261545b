/**
 * Where a pod's volumes live on the node and how containers mount them, pure
 * (pkg/kubelet/kubelet_pods.go makeMounts, getPodVolumeDir; pkg/volume plugin names):
 * `<pods dir>/<uid>/volumes/kubernetes.io~<plugin>/<name>`, a `volumeMount` naming an unknown
 * volume fails the container's config with the kubelet's message, a relative `mountPath` is made
 * absolute, and `readOnly` is carried to the runtime.
 *
 * Plugins built: emptyDir. A volume of another plugin (hostPath, configMap, secret, downwardAPI,
 * projected — the service-account token every API pod carries) is not mounted: the container runs
 * without it, and the pod gets a Warning event naming the volume (`unsupportedVolumes`).
 */
import path from 'node:path';
import type { Container, Pod } from '../api/types.ts';

export interface PodVolume {
  name: string;
  emptyDir?: { medium?: string; sizeLimit?: string | number };
  [plugin: string]: unknown;
}

export interface VolumeMountPlan {
  containerPath: string;
  hostPath: string;
  readonly: boolean;
}

/** The plugin directory names (`kubernetes.io/empty-dir` with `/` as `~`). */
export const PLUGIN_DIRS = { emptyDir: 'kubernetes.io~empty-dir' } as const;

export function podVolumes(pod: Pod): PodVolume[] {
  const volumes = pod.spec['volumes'];
  return Array.isArray(volumes) ? (volumes as PodVolume[]) : [];
}

/** The volume's directory on the node. */
export function volumeDir(podsDir: string, pod: Pod, volume: PodVolume): string {
  return path.join(podsDir, pod.metadata.uid, 'volumes', PLUGIN_DIRS.emptyDir, volume.name);
}

/** Why a volume is not set up by this node, or null when it is. */
export function unsupportedVolume(volume: PodVolume): string | null {
  if (volume.emptyDir) return null;
  const plugin = Object.keys(volume).find((k) => k !== 'name') ?? 'unknown';
  return `volume "${volume.name}" (${plugin}) is not mounted: this node does not support ${plugin} volumes yet`;
}

/** What the pod's mounted volumes leave out, one message each (the VolumeNotSupported events). */
export function unsupportedVolumes(pod: Pod): string[] {
  return mountedVolumes(pod).map(unsupportedVolume).filter((m): m is string => m !== null);
}

/** The volumes some container of the pod mounts (only those are set up, as the kubelet's populator). */
export function mountedVolumes(pod: Pod): PodVolume[] {
  const used = new Set([...(pod.spec.initContainers ?? []), ...pod.spec.containers].flatMap((c) => (c.volumeMounts ?? []).map((m) => m.name)));
  return podVolumes(pod).filter((v) => used.has(v.name));
}

/** The container's mounts, or the error that keeps it from starting. */
export function containerMounts(podsDir: string, pod: Pod, container: Container): { mounts: VolumeMountPlan[] } | { error: string } {
  const volumes = new Map(podVolumes(pod).map((v) => [v.name, v]));
  const mounts: VolumeMountPlan[] = [];
  for (const mount of container.volumeMounts ?? []) {
    const volume = volumes.get(mount.name);
    if (!volume) return { error: `cannot find volume "${mount.name}" to mount into container "${container.name}"` };
    if (unsupportedVolume(volume)) continue;
    const containerPath = mount.mountPath.startsWith('/') ? mount.mountPath : `/${mount.mountPath}`;
    mounts.push({ containerPath, hostPath: volumeDir(podsDir, pod, volume), readonly: mount.readOnly === true });
  }
  return { mounts };
}
