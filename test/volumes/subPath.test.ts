/** subPath mounts resolved on disk (subPath.ts): made when missing, symlinks resolved, escapes refused. */
import { mkdir, mkdtemp, realpath, rm, stat, symlink, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { resolveSubPaths } from '../../src/volumes/subPath.ts';

const dirs: string[] = [];
afterEach(async () => {
  for (const dir of dirs.splice(0)) await rm(dir, { recursive: true, force: true });
});

async function volume() {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'statelet-subpath-'));
  dirs.push(dir);
  const root = path.join(dir, 'vol');
  await mkdir(root, { mode: 0o777 });
  return { dir, root };
}

const plan = (hostPath: string, subPath?: string) => ({ volumeName: 'data', containerPath: '/data', hostPath, readonly: false, ...(subPath ? { subPath } : {}) });

describe('resolveSubPaths', () => {
  it('mounts a missing subPath as a new directory with the mode of the volume root, and a whole volume as is', async () => {
    const { root } = await volume();
    const result = await resolveSubPaths([plan(root, 'logs/app'), plan(root)], 'app');
    expect(result).toEqual({ mounts: [{ containerPath: '/data', hostPath: path.join(await realpath(root), 'logs/app'), readonly: false }, { containerPath: '/data', hostPath: root, readonly: false }] });
    expect((await stat(path.join(root, 'logs/app'))).isDirectory()).toBe(true);
  });

  it("mounts the file a ConfigMap key's symlinks resolve to (pinned: later updates swap ..data, not this file)", async () => {
    const { root } = await volume();
    await mkdir(path.join(root, '..2026_11_25_10_00_00.1'));
    await writeFile(path.join(root, '..2026_11_25_10_00_00.1', 'MODE'), 'fast');
    await symlink('..2026_11_25_10_00_00.1', path.join(root, '..data'));
    await symlink('..data/MODE', path.join(root, 'MODE'));
    const result = await resolveSubPaths([plan(root, 'MODE')], 'app');
    expect('mounts' in result && result.mounts[0]!.hostPath.endsWith('..2026_11_25_10_00_00.1/MODE')).toBe(true);
  });

  it('refuses a subPath whose symlink leads out of the volume, naming the mount and container', async () => {
    const { dir, root } = await volume();
    await mkdir(path.join(dir, 'outside'));
    await symlink(path.join(dir, 'outside'), path.join(root, 'escape'));
    expect(await resolveSubPaths([plan(root, 'escape')], 'app')).toEqual({ error: 'failed to prepare subPath for volumeMount "data" of container "app"' });
  });
});
