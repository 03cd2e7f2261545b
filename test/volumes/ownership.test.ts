/**
 * A pod's fsGroup on its volumes: the kubelet's rules per path and for OnRootMismatch
 * (ownership.ts, pure), the walk over a real directory (volumeOwnership.ts; giving files to
 * another group needs root: skipped loudly elsewhere, never under CI), and a refusal passed over.
 */
import { chmod, lstat, mkdir, mkdtemp, readdir, rm, stat, symlink, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { fileModeWithFsGroup, ownershipChange, skipOwnershipChange } from '../../src/volumes/ownership.ts';
import { type OwnershipFs, setVolumeOwnership } from '../../src/volumes/volumeOwnership.ts';
import { asRootOrSkip } from '../support/asRoot.ts';

const file = (mode: number) => ({ mode, isDirectory: false, isSymbolicLink: false });
const dir = (mode: number) => ({ mode, isDirectory: true, isSymbolicLink: false });
const octal = (mode: number | null) => (mode === null ? null : mode.toString(8));

describe('ownershipChange (changeFilePermission)', () => {
  it.each([
    ['a file of a writable volume gains group read and write', file(0o644), false, '664'],
    ['a private file of a writable volume', file(0o600), false, '660'],
    ['a file of a read-only volume gains group read only', file(0o600), true, '640'],
    ['an owner-only secret file (0400) of a read-only volume', file(0o400), true, '440'],
    ['a world-readable file of a read-only volume keeps its mode', file(0o644), true, '644'],
    ['setuid on a file is kept', file(0o4755), true, '4755'],
    ["an emptyDir's root (0777) gains setgid", dir(0o777), false, '2777'],
    ['a directory of a writable volume gains group rwx and setgid', dir(0o700), false, '2770'],
    ['a directory of a read-only volume gains group r-x and setgid', dir(0o700), true, '2750'],
    ["the atomic writer's data directory (0755) of a read-only volume", dir(0o755), true, '2755'],
  ])('%s: %s', (_case, facts, readOnly, mode) => {
    expect(ownershipChange(facts, 2000, readOnly)).toEqual({ gid: 2000, mode: parseInt(mode, 8) });
  });

  it('changes only the group of a symlink: its mode means nothing and chmod would reach its target', () => {
    expect(ownershipChange({ mode: 0o777, isDirectory: false, isSymbolicLink: true }, 2000, true)).toEqual({ gid: 2000, mode: null });
  });

  it('tells the atomic writer the mode a payload file ends with', () => {
    expect(octal(fileModeWithFsGroup(0o400, true))).toBe('440');
    expect(octal(fileModeWithFsGroup(0o644, true))).toBe('644');
    expect(octal(fileModeWithFsGroup(0o600, false))).toBe('660');
  });
});

describe('skipOwnershipChange (skipPermissionChange, requiresPermissionChange)', () => {
  const root = (gid: number, mode: number, isDirectory = true) => ({ gid, mode, isDirectory });
  it.each([
    ['no policy: always walked', undefined, root(2000, 0o2777), false, false],
    ['Always: always walked', 'Always', root(2000, 0o2777), false, false],
    ['OnRootMismatch, the root right: skipped', 'OnRootMismatch', root(2000, 0o2770), false, true],
    ['OnRootMismatch, the root with more bits than needed: skipped', 'OnRootMismatch', root(2000, 0o2777), false, true],
    ['OnRootMismatch, another group: walked', 'OnRootMismatch', root(0, 0o2777), false, false],
    ['OnRootMismatch, no setgid: walked', 'OnRootMismatch', root(2000, 0o777), false, false],
    ['OnRootMismatch, the group may not write: walked', 'OnRootMismatch', root(2000, 0o2750), false, false],
    ['OnRootMismatch, read-only volume, group r-x and setgid: skipped', 'OnRootMismatch', root(2000, 0o2750), true, true],
    ['OnRootMismatch, read-only volume, no group search bit: walked', 'OnRootMismatch', root(2000, 0o2740), true, false],
    ['OnRootMismatch, the root is not a directory: walked', 'OnRootMismatch', root(2000, 0o2777, false), false, false],
    ['OnRootMismatch, the root could not be read: walked', 'OnRootMismatch', null, false, false],
  ])('%s', (_case, policy, facts, readOnly, skip) => {
    expect(skipOwnershipChange(policy, facts, 2000, readOnly)).toBe(skip);
  });
});

const dirs: string[] = [];
afterEach(async () => {
  for (const d of dirs.splice(0)) await rm(d, { recursive: true, force: true });
});

/** A volume: `a` (0644), `sub/` (0700) holding `b` (0400), and `link` to a file outside it (0600). */
async function volume() {
  const base = await mkdtemp(path.join(os.tmpdir(), 'statelet-ownership-'));
  dirs.push(base);
  const root = path.join(base, 'vol');
  const outside = path.join(base, 'outside');
  await mkdir(path.join(root, 'sub'), { recursive: true });
  await chmod(root, 0o777);
  await chmod(path.join(root, 'sub'), 0o700);
  await writeFile(path.join(root, 'a'), 'a');
  await chmod(path.join(root, 'a'), 0o644);
  await writeFile(path.join(root, 'sub', 'b'), 'b');
  await chmod(path.join(root, 'sub', 'b'), 0o400);
  await writeFile(outside, 'x');
  await chmod(outside, 0o600);
  await symlink(outside, path.join(root, 'link'));
  return { root, outside };
}

const facts = async (at: string) => {
  const info = await lstat(at);
  return { gid: info.gid, mode: octal(info.mode & 0o7777) };
};

describe('setVolumeOwnership on disk', () => {
  it('gives every path of the volume to fsGroup, directories setgid, a symlink but not its target', async () => {
    if (!asRootOrSkip('the fsGroup walk over a real directory')) return;
    const { root, outside } = await volume();
    const result = await setVolumeOwnership(root, 2000, { readOnly: false });
    expect(result).toEqual({ skipped: false, changed: 5, refusals: [] });
    expect(await facts(root)).toEqual({ gid: 2000, mode: '2777' });
    expect(await facts(path.join(root, 'a'))).toEqual({ gid: 2000, mode: '664' });
    expect(await facts(path.join(root, 'sub'))).toEqual({ gid: 2000, mode: '2770' });
    expect(await facts(path.join(root, 'sub', 'b'))).toEqual({ gid: 2000, mode: '660' });
    expect((await lstat(path.join(root, 'link'))).gid).toBe(2000);
    const target = await stat(outside);
    expect({ gid: target.gid, mode: octal(target.mode & 0o7777) }).toEqual({ gid: process.getgid!(), mode: '600' });
  });

  it('under OnRootMismatch leaves a volume whose root is right as it is, and walks one whose root is not', async () => {
    if (!asRootOrSkip('the fsGroup walk over a real directory')) return;
    const { root } = await volume();
    await setVolumeOwnership(root, 2000, { readOnly: false });
    await chmod(path.join(root, 'a'), 0o600);
    expect(await setVolumeOwnership(root, 2000, { readOnly: false, policy: 'OnRootMismatch' })).toMatchObject({ skipped: true, changed: 0 });
    expect((await facts(path.join(root, 'a'))).mode).toBe('600');
    // Without the policy (as the kubelet's plugins call it) the walk runs every time.
    await setVolumeOwnership(root, 2000, { readOnly: false });
    expect((await facts(path.join(root, 'a'))).mode).toBe('660');
    expect(await setVolumeOwnership(root, 3000, { readOnly: false, policy: 'OnRootMismatch' })).toMatchObject({ skipped: false, changed: 5 });
    expect((await facts(path.join(root, 'sub', 'b'))).gid).toBe(3000);
  });
});

describe('setVolumeOwnership refused', () => {
  /** The system's calls, recording the paths, with lchown refused as for an agent that is not root. */
  function refusingFs(order: string[]): OwnershipFs {
    const eperm = (at: string) => Object.assign(new Error(`EPERM: operation not permitted, lchown '${at}'`), { code: 'EPERM' });
    return {
      lstat: (at) => lstat(at),
      stat: (at) => stat(at),
      readdir: async (at) => (await readdir(at)).sort(),
      lchown: async (at) => {
        order.push(at);
        throw eperm(at);
      },
      chmod: (at, mode) => chmod(at, mode),
    };
  }

  it('passes over what the system refuses, still setting the modes, and walks each directory after what it holds', async () => {
    const { root } = await volume();
    const order: string[] = [];
    const result = await setVolumeOwnership(root, 2000, { readOnly: true }, refusingFs(order));
    expect(result.refusals.map((e) => e.code)).toEqual(['EPERM', 'EPERM', 'EPERM', 'EPERM', 'EPERM']);
    expect(order.map((at) => path.relative(root, at))).toEqual(['a', 'link', 'sub/b', 'sub', '']);
    expect((await facts(path.join(root, 'sub', 'b'))).mode).toBe('440');
    expect((await facts(root)).mode).toBe('2777');
  });

  it('ends the walk with the error of a path it cannot read', async () => {
    const { root } = await volume();
    const fs: OwnershipFs = { ...refusingFs([]), lchown: async () => {}, readdir: async () => ['gone'] };
    await expect(setVolumeOwnership(root, 2000, { readOnly: false }, fs)).rejects.toMatchObject({ code: 'ENOENT' });
  });
});
