/** Reading a log file (reader.ts): tail, follow to the container's end, rotation, a client going away. */
import { appendFile, mkdtemp, rename, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { LogOptions } from '../../../src/kuberuntime/logs/format.ts';
import { readContainerLog } from '../../../src/kuberuntime/logs/reader.ts';

const dirs: string[] = [];
afterEach(async () => {
  for (const dir of dirs.splice(0)) await rm(dir, { recursive: true, force: true });
});

const cri = (text: string, stream = 'stdout') => `2026-11-25T10:00:00.000000001Z ${stream} F ${text}\n`;

async function logFile(content: string) {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'statelet-logs-'));
  dirs.push(dir);
  const file = path.join(dir, '0.log');
  await writeFile(file, content);
  return file;
}

function collect() {
  const chunks: string[] = [];
  return { chunks, write: (_: string, chunk: Buffer) => void chunks.push(chunk.toString()), text: () => chunks.join('') };
}

describe('readContainerLog', () => {
  it('writes the last lines of both streams, without following', async () => {
    const file = await logFile(cri('one') + cri('two', 'stderr') + cri('three'));
    const out = collect();
    await readContainerLog(file, { tailLines: 2 }, out.write, { isRunning: async () => true, signal: new AbortController().signal });
    expect(out.text()).toBe('two\nthree\n');
  });

  it('follows what is appended until the container stops, then ends', async () => {
    const file = await logFile(cri('first'));
    const out = collect();
    let running = true;
    const options: LogOptions = { follow: true };
    const reading = readContainerLog(file, options, out.write, { isRunning: async () => running, signal: new AbortController().signal, recheckMs: 50 });
    await expect.poll(() => out.text()).toBe('first\n');
    await appendFile(file, cri('second'));
    await expect.poll(() => out.text()).toBe('first\nsecond\n');
    await appendFile(file, cri('last'));
    running = false;
    await reading;
    expect(out.text()).toBe('first\nsecond\nlast\n');
  });

  it('reads on in the new file after a rotation, never the rotated one again', async () => {
    const file = await logFile(cri('before'));
    const out = collect();
    let running = true;
    const reading = readContainerLog(file, { follow: true }, out.write, { isRunning: async () => running, signal: new AbortController().signal, recheckMs: 50 });
    await expect.poll(() => out.text()).toBe('before\n');
    await rename(file, `${file}.20261125-100000`);
    await writeFile(file, cri('after'));
    await expect.poll(() => out.text()).toBe('before\nafter\n');
    running = false;
    await reading;
  });

  it('ends a follow when the client goes away', async () => {
    const file = await logFile(cri('x'));
    const client = new AbortController();
    const reading = readContainerLog(file, { follow: true }, () => {}, { isRunning: async () => true, signal: client.signal, recheckMs: 10_000 });
    client.abort();
    await reading;
  });
});
