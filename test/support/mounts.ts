/**
 * What node agents leave mounted when they stop (their pods' volumes; the kubelet its root
 * directory bind-mounted on itself), unmounted by the runners that start them: the conformance
 * runner and the benchmark.
 */
import { execFile } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { promisify } from 'node:util';

const run = promisify(execFile);

/** Lazily unmounts every mount point under `dir`, the deepest first; says which could not be. */
export async function unmountUnder(dir: string, log: (line: string) => void = console.error): Promise<void> {
  const mountinfo = await readFile('/proc/self/mountinfo', 'utf8');
  // The fifth field is the mount point, with spaces and the like written as octal escapes.
  const points = mountinfo
    .split('\n')
    .map((line) => line.split(' ')[4]?.replace(/\\([0-7]{3})/g, (_, octal: string) => String.fromCharCode(parseInt(octal, 8))))
    .filter((point): point is string => !!point && (point === dir || point.startsWith(`${dir}/`)))
    .sort((a, b) => b.length - a.length);
  for (const point of points) await run('umount', ['-l', point]).catch((err: unknown) => log(`could not unmount ${point}: ${String(err)}`));
}
