/**
 * A real small filesystem for the disk tests (issue 13): a tmpfs of a few MiB and a few thousand
 * inodes, which a test fills until the kernel answers ENOSPC (its blocks, then its inodes, so
 * that making a directory fails too, as on ext4) or remounts read-only (EROFS) and back.
 *
 * Mounting needs root. CI runs as root; elsewhere the tests that need it are skipped with a loud
 * message (`rootOrSkip`), and under CI=true they fail instead of being skipped.
 */
import { execFile } from 'node:child_process';
import { mkdir, open, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { removeAgentDir } from './removeAgentDir.ts';

const run = promisify(execFile);

/** True when this process may mount; otherwise says loudly what is skipped (and throws under CI, which must not skip it). */
export function rootOrSkip(what: string): boolean {
  if (process.getuid?.() === 0) return true;
  const message = `${what} needs root to mount a small filesystem (tmpfs); it is SKIPPED here — run it as root, as CI does`;
  if (process.env.CI === 'true') throw new Error(message.replace('it is SKIPPED here', 'CI must not skip it'));
  console.warn(`\n*** ${message} ***\n`);
  return false;
}

export interface SmallFilesystem {
  dir: string;
  /** Writes until ENOSPC: its blocks (a file's content cannot be written, a directory can still be made), then, unless told not to, its inodes. */
  fill(options?: { inodes: boolean }): Promise<void>;
  /** Removes what `fill` wrote. */
  free(): Promise<void>;
  readOnly(): Promise<void>;
  writable(): Promise<void>;
  /** Unmounts it and whatever was mounted under it, and removes the directory. */
  remove(): Promise<void>;
}

export async function mountSmallFilesystem(dir: string, options: { sizeMiB?: number; inodes?: number } = {}): Promise<SmallFilesystem> {
  await mkdir(dir, { recursive: true });
  await run('mount', ['-t', 'tmpfs', '-o', `size=${options.sizeMiB ?? 8}m,nr_inodes=${options.inodes ?? 1024},mode=0755`, 'tmpfs', dir]);
  const filler = path.join(dir, '.fill');
  const remount = (mode: 'ro' | 'rw') => remountWhenIdle(dir, mode);
  return {
    dir,
    fill: (fillOptions = { inodes: true }) => fill(filler, fillOptions.inodes),
    free: () => rm(filler, { recursive: true, force: true }),
    readOnly: () => remount('ro'),
    writable: () => remount('rw'),
    async remove() {
      await remount('rw').catch(() => {});
      await removeAgentDir(dir);
    },
  };
}

/** How many times a read-only remount is tried while a file on it is open for writing. */
const REMOUNT_ATTEMPTS = 200;

/**
 * Remounts `dir`. The kernel refuses a read-only remount ("mount point is busy") while any file
 * on it is open for writing, and the pods' loggers append to their logs all the time (each
 * append opens and closes the file): the remount is tried again, at once, until it finds the
 * filesystem between two writes, as an operator would. Any other failure is passed on.
 */
async function remountWhenIdle(dir: string, mode: 'ro' | 'rw'): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    try {
      await run('mount', ['-o', `remount,${mode}`, dir]);
      if (attempt > 1) console.log(`${dir} remounted ${mode} at attempt ${attempt} (files on it were open for writing before)`);
      return;
    } catch (err) {
      const busy = /busy/.test(String((err as { stderr?: string }).stderr));
      if (!busy || attempt >= REMOUNT_ATTEMPTS) throw err;
    }
  }
}

/** 0 for the kernel's ENOSPC (nothing written); any other failure is passed on. */
const nothingOnNoSpace = (err: NodeJS.ErrnoException): number => {
  if (err.code !== 'ENOSPC') throw err;
  return 0;
};

async function fill(dir: string, inodes: boolean): Promise<void> {
  await mkdir(dir, { recursive: true });
  const file = await open(path.join(dir, 'blocks'), 'w');
  try {
    // Halving the chunk at each short write leaves less than 512 bytes free.
    for (let chunk = 1 << 20; chunk >= 512; chunk >>= 1) {
      const buffer = Buffer.alloc(chunk, 0x61);
      while ((await file.write(buffer).then((r) => r.bytesWritten, nothingOnNoSpace)) === chunk);
    }
  } finally {
    await file.close();
  }
  if (!inodes) return;
  for (let i = 0; (await writeFile(path.join(dir, `inode-${i}`), '').then(() => 1, nothingOnNoSpace)) === 1; i++);
}
