/**
 * Removes an agent's directory after a test. A stopped agent leaves its pods running, and with
 * them the tmpfs mounts of their memory-backed volumes (as the kubelet does): those come off
 * first, or the removal would fail on a busy mount point. A runtime call the agent made just before
 * it stopped may still be finishing (sim:// making a container's cgroup directory): the removal is
 * tried again when a directory filled up under it (ENOTEMPTY), as `rm`'s own retries do.
 */
import { execFile } from 'node:child_process';
import { readFile, rm } from 'node:fs/promises';
import { promisify } from 'node:util';
import { mountPointsUnder } from '../../src/volumes/mounter.ts';

export async function removeAgentDir(dir: string): Promise<void> {
  const mountinfo = await readFile('/proc/self/mountinfo', 'utf8').catch(() => '');
  for (const point of mountPointsUnder(mountinfo, dir)) await promisify(execFile)('umount', [point]);
  await rm(dir, { recursive: true, force: true, maxRetries: 5, retryDelay: 50 });
}
