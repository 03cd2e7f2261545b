/**
 * Rotating the logs of running containers (pkg/kubelet/logs/container_log_manager.go): each pass
 * looks at every running container's log (where the agent put it, from the container's labels:
 * no runtime call per container), and one that reached `maxSizeBytes` is rotated by the plan of
 * rotationPlan.ts: leftovers and excess files removed, older rotated files gzipped (through a
 * `.tmp` file, so a crash leaves nothing half-written under the final name), the live file
 * renamed and the runtime told to reopen it (ReopenContainerLog); if that fails the rename is
 * undone. A missing live file is reopened too. One container's failure does not stop the others;
 * each failure names the pod, the container and the file (Node's errors of a write do not), with
 * a cause that stays the same when the same failure comes back at the next pass (a full or
 * read-only disk fails every pass), for the caller to log it once.
 */
import { createReadStream, createWriteStream } from 'node:fs';
import { readdir, rename, rm, stat } from 'node:fs/promises';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import { createGzip } from 'node:zlib';
import type { Logger, RepeatedFailures } from '../log.ts';
import type { RuntimeService } from '../runtime/types.ts';
import { Label } from '../kuberuntime/labels.ts';
import { containerLogPath } from '../kuberuntime/configs.ts';
import { rotationPlan } from './rotationPlan.ts';

interface LogRotationPolicy {
  maxSizeBytes: number;
  maxFiles: number;
}

interface LogFailure {
  /** The container's pod (`namespace/name`), the container, and its live log file. */
  pod: string;
  container: string;
  path: string;
  error: string;
  /** The error without what changes from one attempt to the next (a rotated file's timestamp): its errno and call, or its message. */
  cause: string;
}

export interface LogPassResult {
  checked: number;
  rotated: number;
  failures: LogFailure[];
}

async function gzipFile(file: string): Promise<void> {
  const tmp = `${file}.tmp`;
  await pipeline(createReadStream(file), createGzip(), createWriteStream(tmp));
  await rename(tmp, `${file}.gz`);
  await rm(file, { force: true });
}

/** Rotates one live log file now. */
export async function rotateLog(runtime: Pick<RuntimeService, 'reopenContainerLog'>, containerId: string, file: string, maxFiles: number, now: Date): Promise<void> {
  const dir = path.dirname(file);
  const plan = rotationPlan(path.basename(file), await readdir(dir), maxFiles, now);
  for (const name of plan.remove) await rm(path.join(dir, name), { force: true });
  for (const name of plan.compress) await gzipFile(path.join(dir, name));
  const rotated = path.join(dir, plan.rotatedName);
  await rename(file, rotated);
  try {
    await runtime.reopenContainerLog(containerId);
  } catch (err) {
    await rename(rotated, file).catch(() => undefined);
    throw err;
  }
}

/** One pass over the running containers' logs. */
export async function rotateContainerLogs(
  runtime: Pick<RuntimeService, 'listContainers' | 'reopenContainerLog'>,
  podLogsDir: string,
  policy: LogRotationPolicy,
  now: () => Date,
): Promise<LogPassResult> {
  const result: LogPassResult = { checked: 0, rotated: 0, failures: [] };
  const running = await runtime.listContainers({ state: 'CONTAINER_RUNNING' });
  for (const container of running) {
    const file = containerLogPath(podLogsDir, container);
    if (!file) continue;
    result.checked++;
    try {
      const info = await stat(file).catch(() => null);
      if (!info) {
        await runtime.reopenContainerLog(container.id);
        continue;
      }
      if (info.size < policy.maxSizeBytes) continue;
      await rotateLog(runtime, container.id, file, policy.maxFiles, now());
      result.rotated++;
    } catch (err) {
      const error = err instanceof Error ? err.message : String(err);
      const { code, syscall } = err as NodeJS.ErrnoException;
      result.failures.push({
        pod: `${container.labels[Label.podNamespace]}/${container.labels[Label.podName]}`,
        container: container.metadata.name,
        path: file,
        error,
        cause: code && syscall ? `${code} ${syscall}` : error,
      });
    }
  }
  return result;
}

/**
 * Logs a pass's failures (container_log_manager.go "Failed to rotate log for container"), once
 * per file and cause: a full or read-only disk fails the same rotation at every pass. A file that
 * rotated fine, or went, is forgotten, so that its next failure is news.
 */
export function logRotationFailures(pass: LogPassResult, seen: RepeatedFailures, log: Logger): void {
  const failing = new Set(pass.failures.map((f) => f.path));
  seen.retain((file) => failing.has(file));
  for (const f of pass.failures) {
    if (seen.isNews(f.path, f.cause)) log('error', 'Failed to rotate log for container', { pod: f.pod, container: f.container, path: f.path, err: f.error });
  }
}
