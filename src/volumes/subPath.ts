/**
 * Mounting a path inside a volume instead of its root (kubelet_pods.go makeMounts,
 * pkg/volume/util/subpath/subpath_linux.go): a subPath that does not exist is made as a
 * directory with the volume root's mode; then the path is resolved through its symlinks and must
 * still be inside the volume, or the container does not start. What is mounted is the resolved
 * path, so a subPath into a ConfigMap volume pins the file it resolved to and does not follow
 * later updates, as with the kubelet. (The kubelet also bind-mounts the path it opened, against a
 * symlink swapped in between; statelet hands the runtime the resolved path.)
 */
import { mkdir, realpath, stat } from 'node:fs/promises';
import path from 'node:path';
import type { Mount } from '../runtime/types.ts';
import type { VolumeMountPlan } from './plan.ts';

export async function resolveSubPaths(plans: readonly VolumeMountPlan[], containerName: string): Promise<{ mounts: Mount[] } | { error: string }> {
  const mounts: Mount[] = [];
  for (const plan of plans) {
    const { subPath, volumeName, ...mount } = plan;
    if (!subPath) {
      mounts.push(mount);
      continue;
    }
    const failed = { error: `failed to prepare subPath for volumeMount "${volumeName}" of container "${containerName}"` };
    try {
      const root = await realpath(plan.hostPath);
      const target = path.join(plan.hostPath, subPath);
      if (!(await stat(target).catch(() => null))) await mkdir(target, { recursive: true, mode: (await stat(root)).mode & 0o7777 });
      const resolved = await realpath(target);
      if (resolved !== root && !resolved.startsWith(`${root}/`)) return failed;
      mounts.push({ ...mount, hostPath: resolved });
    } catch {
      return failed;
    }
  }
  return { mounts };
}
