/**
 * Rotating the logs of running containers (pkg/kubelet/logs/container_log_manager.go): each pass
 * looks at every running container's log (where the agent put it, from the container's labels:
 * no runtime call per container), and one that reached `maxSizeBytes` is rotated by the plan of
 * logRotation.ts: leftovers and excess files removed, older rotated files gzipped (through a
 * `.tmp` file, so a crash leaves nothing half-written under the final name), the live file
 * renamed and the runtime told to reopen it (ReopenContainerLog); if that fails the rename is
 * undone. A missing live file is reopened too. One container's failure does not stop the others.
 */
import { createReadStream, createWriteStream } from 'node:fs';
import { readdir, rename, rm, stat } from 'node:fs/promises';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import { createGzip } from 'node:zlib';
import type { RuntimeService } from '../runtime/types.ts';
import { containerLogPath, rotationPlan } from './logRotation.ts';

export interface LogRotationPolicy {
  maxSizeBytes: number;
  maxFiles: number;
}

export interface LogPassResult {
  checked: number;
  rotated: number;
  failures: string[];
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
      result.failures.push(`container ${container.metadata.name} (${container.id}): ${err instanceof Error ? err.message : String(err)}`);
    }
  }
  return result;
}
