/** Making directories as os.MkdirAll does (mkdirAll.ts): parents made, what is there left alone, the kernel's own error. */
import { mkdtemp, rm, stat, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { mkdirAll } from '../../src/volumes/mkdirAll.ts';
import { mountSmallFilesystem, rootOrSkip } from '../support/smallFilesystem.ts';

const dirs: string[] = [];
afterEach(async () => {
  for (const dir of dirs.splice(0)) await rm(dir, { recursive: true, force: true });
});
const tempDir = async () => {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'statelet-mkdirall-'));
  dirs.push(dir);
  return dir;
};

describe('mkdirAll', () => {
  it('makes the missing parents with the mode, and leaves a directory that is there alone', async () => {
    const base = await tempDir();
    const deep = path.join(base, 'a', 'b', 'c');
    await mkdirAll(deep, 0o750);
    expect((await stat(deep)).mode & 0o777).toBe(0o750);
    expect((await stat(path.join(base, 'a'))).mode & 0o777).toBe(0o750);
    await mkdirAll(base, 0o700);
    expect((await stat(base)).mode & 0o777).toBe(0o700);
  });

  it('fails where a file stands in the way', async () => {
    const base = await tempDir();
    await writeFile(path.join(base, 'file'), '');
    await expect(mkdirAll(path.join(base, 'file'), 0o750)).rejects.toThrow(/EEXIST/);
    await expect(mkdirAll(path.join(base, 'file', 'sub'), 0o750)).rejects.toThrow(/ENOTDIR/);
  });

  describe.skipIf(!rootOrSkip('mkdirAll on a read-only filesystem'))('on a read-only filesystem', () => {
    it('says EROFS and names the directory (Node\'s recursive mkdir says ENOENT), and succeeds where the directory is there', async () => {
      const fs = await mountSmallFilesystem(path.join(await tempDir(), 'fs'));
      try {
        await mkdirAll(path.join(fs.dir, 'there'), 0o750);
        await fs.readOnly();
        await mkdirAll(path.join(fs.dir, 'there'), 0o750);
        const missing = path.join(fs.dir, 'there', 'a', 'b');
        await expect(mkdirAll(missing, 0o750)).rejects.toThrow(`EROFS: read-only file system, mkdir '${path.join(fs.dir, 'there', 'a')}'`);
      } finally {
        await fs.remove();
      }
    });
  });
});
