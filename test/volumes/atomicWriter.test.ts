/** The atomic writer (atomic_writer.go): the ..data layout, an unchanged set left alone, a new set swapped in whole. */
import { lstatSync, mkdtempSync, readFileSync, readdirSync, readlinkSync, rmSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { payloadPathProblem, writeAtomically } from '../../src/volumes/atomicWriter.ts';

let dir: string;
afterEach(() => rmSync(dir, { recursive: true, force: true }));
const file = (p: string, text: string, mode = 0o644) => ({ path: p, content: Buffer.from(text), mode });

describe('writeAtomically', () => {
  it('writes the files in a timestamped directory behind ..data, visible through symlinks, with their modes', async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'statelet-aw-'));
    expect(await writeAtomically(dir, [file('MODE', 'fast'), file('conf/app.ini', 'x=1', 0o400)], new Date('2026-11-25T15:31:02.123Z'))).toBe(true);
    const data = readlinkSync(path.join(dir, '..data'));
    expect(data).toMatch(/^\.\.2026_11_25_15_31_02\.[0-9a-f]{10}$/);
    expect(readlinkSync(path.join(dir, 'MODE'))).toBe('..data/MODE');
    expect(readFileSync(path.join(dir, 'MODE'), 'utf8')).toBe('fast');
    expect(readFileSync(path.join(dir, 'conf', 'app.ini'), 'utf8')).toBe('x=1');
    expect(statSync(path.join(dir, 'conf', 'app.ini')).mode & 0o777).toBe(0o400);
  });

  it('leaves an unchanged set alone, swaps a changed one whole and drops names that went away', async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'statelet-aw-'));
    await writeAtomically(dir, [file('A', '1'), file('B', '2')], new Date());
    const first = readlinkSync(path.join(dir, '..data'));
    expect(await writeAtomically(dir, [file('A', '1'), file('B', '2')], new Date())).toBe(false);
    expect(readlinkSync(path.join(dir, '..data'))).toBe(first);
    expect(await writeAtomically(dir, [file('A', 'one')], new Date())).toBe(true);
    expect(readlinkSync(path.join(dir, '..data'))).not.toBe(first);
    expect(readFileSync(path.join(dir, 'A'), 'utf8')).toBe('one');
    expect(() => lstatSync(path.join(dir, 'B'))).toThrow(/ENOENT/);
    // The old data directory is gone: one timestamped directory, ..data, and the visible name.
    expect(readdirSync(dir).filter((n) => n.startsWith('..2')).length).toBe(1);
  });

  it.each([
    ['/etc/passwd', 'invalid path: must be relative path: /etc/passwd'],
    ['a/../../b', "invalid path: must not contain '..': a/../../b"],
    ['..data', "invalid path: must not start with '..': ..data"],
  ])('refuses the path %s', (p, message) => {
    expect(payloadPathProblem(p)).toBe(message);
  });
});
