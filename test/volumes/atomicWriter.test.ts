/** The atomic writer (atomic_writer.go): the ..data layout, an unchanged set left alone, a new set swapped in whole. */
import { chmodSync, lstatSync, mkdtempSync, readFileSync, readdirSync, readlinkSync, rmSync, statSync } from 'node:fs';
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

  it("runs the plugin's setPerms once a new set is written and before it is visible, and fails the write with its error", async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'statelet-aw-'));
    await writeAtomically(dir, [file('A', '1')], new Date());
    const first = readlinkSync(path.join(dir, '..data'));
    const seen: string[] = [];
    const setPerms = async () => {
      const fresh = readdirSync(dir).find((n) => n.startsWith('..2') && n !== first)!;
      seen.push(readFileSync(path.join(dir, fresh, 'A'), 'utf8'), readlinkSync(path.join(dir, '..data')));
    };
    await writeAtomically(dir, [file('A', '2')], new Date(), { setPerms });
    expect(seen).toEqual(['2', first]);
    await expect(writeAtomically(dir, [file('A', '3')], new Date(), { setPerms: () => Promise.reject(new Error('walk failed')) })).rejects.toThrow('walk failed');
    expect(readFileSync(path.join(dir, 'A'), 'utf8')).toBe('2');
  });

  it('tells an unchanged set by the modes its files have once setPerms ran (diskMode)', async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'statelet-aw-'));
    const group = (mode: number) => mode | 0o440;
    await writeAtomically(dir, [file('A', '1', 0o400)], new Date(), {
      setPerms: async () => chmodSync(path.join(dir, readdirSync(dir).find((n) => n.startsWith('..2'))!, 'A'), 0o440),
      diskMode: group,
    });
    expect(await writeAtomically(dir, [file('A', '1', 0o400)], new Date(), { diskMode: group })).toBe(false);
    expect(await writeAtomically(dir, [file('A', '1', 0o400)], new Date())).toBe(true);
  });

  it.each([
    ['/etc/passwd', 'invalid path: must be relative path: /etc/passwd'],
    ['a/../../b', "invalid path: must not contain '..': a/../../b"],
    ['..data', "invalid path: must not start with '..': ..data"],
  ])('refuses the path %s', (p, message) => {
    expect(payloadPathProblem(p)).toBe(message);
  });
});
