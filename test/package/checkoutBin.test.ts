/**
 * `bin/statelet.js` in a checkout that has no build: it must run the TypeScript sources (through
 * tsx's register API, which works on Node 20.6+ and 24). The copy below has the checkout's
 * sources and modules but no dist/, so the test does not depend on whether this checkout was
 * built. The built path is what the package suite (packed.test.ts) runs.
 */
import { execFile } from 'node:child_process';
import { copyFile, mkdir, mkdtemp, rm, symlink } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';

const repoRoot = path.resolve(import.meta.dirname, '../..');
const dirs: string[] = [];

afterAll(async () => {
  for (const dir of dirs) await rm(dir, { recursive: true, force: true });
});

describe('bin/statelet.js without a build', () => {
  it('runs the sources through tsx', async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'statelet-checkout-'));
    dirs.push(dir);
    await mkdir(path.join(dir, 'bin'));
    await copyFile(path.join(repoRoot, 'bin/statelet.js'), path.join(dir, 'bin/statelet.js'));
    await copyFile(path.join(repoRoot, 'package.json'), path.join(dir, 'package.json'));
    for (const name of ['src', 'node_modules']) await symlink(path.join(repoRoot, name), path.join(dir, name));
    const { stdout } = await promisify(execFile)(process.execPath, [path.join(dir, 'bin/statelet.js'), '--version']);
    expect(stdout.trim()).toMatch(/^Kubernetes v\d+\.\d+\.\d+-statelet\.\d+\.\d+\.\d+$/);
  });
});
