/**
 * The agent process's own limits, set once at start as the kubelet sets its own
 * (cmd/kubelet/app/server.go run: `oomAdjuster.ApplyOOMScoreAdj(0, oomScoreAdj)`, so that the
 * kernel's OOM killer takes the pods' processes before the node agent, and
 * `rlimit.SetNumFiles(maxOpenFiles)`, soft and hard). A failure (not root: lowering the score or
 * raising the hard limit needs privileges) is logged, as there, and the agent runs on.
 */
import { execFile } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import { promisify } from 'node:util';
import type { Logger } from '../log.ts';

export interface ProcessLimits {
  oomScoreAdj: number;
  maxOpenFiles: number;
}

/** How the limits reach the process (a test gives its own). */
export interface ProcessLimitSetters {
  /** Writes `/proc/self/oom_score_adj`. */
  oomScoreAdj(value: number): Promise<void>;
  /** Sets RLIMIT_NOFILE, soft and hard (Node has no setrlimit: util-linux's prlimit on this process). */
  openFiles(value: number): Promise<void>;
}

const systemSetters: ProcessLimitSetters = {
  oomScoreAdj: (value) => writeFile('/proc/self/oom_score_adj', String(value)),
  openFiles: async (value) => {
    await promisify(execFile)('prlimit', ['--pid', String(process.pid), `--nofile=${value}:${value}`]);
  },
};

const errorText = (err: unknown) => (err instanceof Error ? err.message.trim() : String(err));

export async function applyProcessLimits(limits: ProcessLimits, log: Logger, setters: ProcessLimitSetters = systemSetters): Promise<void> {
  await setters.oomScoreAdj(limits.oomScoreAdj).then(
    () => log('info', 'Set the agent process\'s OOM score adjustment', { oomScoreAdj: limits.oomScoreAdj }),
    (err: unknown) => log('info', 'Failed to ApplyOOMScoreAdj', { oomScoreAdj: limits.oomScoreAdj, err: errorText(err) }),
  );
  await setters.openFiles(limits.maxOpenFiles).catch((err: unknown) => log('error', 'Failed to set rlimit on max file handles', { maxOpenFiles: limits.maxOpenFiles, err: errorText(err) }));
}
