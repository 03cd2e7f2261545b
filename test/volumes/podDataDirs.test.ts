/** A pod's data directories are made at its first sync, and not looked for again until it is forgotten. */
import { mkdtemp, rm, stat } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { PodDataDirs } from '../../src/volumes/setUp.ts';

const isDir = (dir: string) => stat(dir).then((s) => s.isDirectory(), () => false);

describe('PodDataDirs', () => {
  it('makes <pods>/<uid>, volumes and plugins once, and again only after being told to forget the pod', async () => {
    const podsDir = await mkdtemp(path.join(os.tmpdir(), 'statelet-datadirs-'));
    try {
      const dirs = new PodDataDirs(podsDir);
      await dirs.make('uid-1');
      for (const sub of ['', 'volumes', 'plugins']) expect(await isDir(path.join(podsDir, 'uid-1', sub))).toBe(true);
      await rm(path.join(podsDir, 'uid-1'), { recursive: true });
      await dirs.make('uid-1');
      expect(await isDir(path.join(podsDir, 'uid-1'))).toBe(false);
      dirs.forget('uid-1');
      await dirs.make('uid-1');
      expect(await isDir(path.join(podsDir, 'uid-1', 'plugins'))).toBe(true);
    } finally {
      await rm(podsDir, { recursive: true, force: true });
    }
  });
});
