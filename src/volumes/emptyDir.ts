/**
 * Setting up a pod's emptyDir volumes on disk (pkg/volume/emptydir/empty_dir.go SetUpAt): the
 * directory, mode exactly 0777 whatever the umask, then the `ready` marker under
 * `plugins/kubernetes.io~empty-dir/<name>`; idempotent. They go with the pod's directory when
 * the pod is cleaned up. `medium: Memory` (tmpfs) is not built: such a volume is on disk too.
 */
import { chmod, mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { Pod } from '../api/types.ts';
import { PLUGIN_DIRS, mountedVolumes, unsupportedVolume, volumeDir } from './plan.ts';

/** Sets up the pod's mounted emptyDir volumes (others are left out: plan.ts unsupportedVolumes). */
export async function setUpPodVolumes(podsDir: string, pod: Pod): Promise<void> {
  for (const volume of mountedVolumes(pod)) {
    if (unsupportedVolume(volume)) continue;
    const dir = volumeDir(podsDir, pod, volume);
    await mkdir(dir, { recursive: true, mode: 0o777 });
    await chmod(dir, 0o777);
    const marker = path.join(podsDir, pod.metadata.uid, 'plugins', PLUGIN_DIRS.emptyDir, volume.name);
    await mkdir(marker, { recursive: true, mode: 0o750 });
    await writeFile(path.join(marker, 'ready'), '');
  }
}
