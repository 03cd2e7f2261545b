/**
 * Making a directory and its missing parents as Go's os.MkdirAll does, which the kubelet uses for
 * a pod's directories (pkg/kubelet/kubelet_pods.go makePodDataDirs) and log directories
 * (pkg/kubelet/kuberuntime/kuberuntime_sandbox.go createPodSandbox): a directory that is there
 * already is left alone, written to in no way, so a read-only or full disk does not fail a pod
 * whose directories exist. And the error says what the kernel said: Node's recursive mkdir
 * reports a read-only filesystem as ENOENT ("no such file or directory"); one level at a time,
 * it is EROFS.
 */
import { mkdir, stat } from 'node:fs/promises';
import path from 'node:path';

export async function mkdirAll(dir: string, mode: number): Promise<void> {
  const info = await stat(dir).catch((err: NodeJS.ErrnoException) => (err.code === 'ENOENT' ? null : Promise.reject(err)));
  if (info?.isDirectory()) return;
  const parent = path.dirname(dir);
  if (!info && parent !== dir) await mkdirAll(parent, mode);
  // Made meanwhile by someone else: as good as made here (a file there fails, as it should).
  await mkdir(dir, { mode }).catch(async (err: NodeJS.ErrnoException) => {
    if (err.code !== 'EEXIST' || !(await stat(dir)).isDirectory()) throw err;
  });
}
