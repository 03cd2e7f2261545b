/**
 * The host's kernel log, followed from now on through util-linux's `dmesg --follow-new` (cadvisor
 * reads /dev/kmsg; a blocking read of it would hold one of Node's few I/O threads for good, so a
 * child process reads it instead). Reading the log needs root (or CAP_SYSLOG): otherwise dmesg
 * ends at once with its reason, which `onEnd` gets.
 */
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';

/**
 * The kernel's log, followed from now on: each line as it comes, `onEnd` when it cannot be read
 * (not root) or ends; the result stops following.
 */
export interface KernelLog {
  follow(onLine: (line: string) => void, onEnd: (error: Error) => void): () => void;
}

export const hostKernelLog: KernelLog = {
  follow(onLine, onEnd) {
    const child = spawn('dmesg', ['--follow-new'], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stopped = false;
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    createInterface({ input: child.stdout }).on('line', onLine);
    child.once('error', (err) => {
      if (!stopped) onEnd(err);
      stopped = true;
    });
    child.once('exit', (code, signal) => {
      if (stopped) return;
      stopped = true;
      onEnd(new Error(`dmesg --follow-new ended (${signal ?? `exit code ${code}`})${stderr.trim() ? `: ${stderr.trim()}` : ''}`));
    });
    return () => {
      stopped = true;
      child.kill();
    };
  },
};
