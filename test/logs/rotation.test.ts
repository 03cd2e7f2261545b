/** Log rotation: the loop's decision (rotationPlan.ts) and its effects (effects.ts) on a temporary directory. */
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { gunzipSync } from 'node:zlib';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { logRotationFailures, rotateContainerLogs, rotateLog } from '../../src/logs/effects.ts';
import { type Logger, RepeatedFailures } from '../../src/log.ts';
import { rotationPlan } from '../../src/logs/rotationPlan.ts';

const NOW = new Date('2026-11-25T10:20:30Z');

describe('rotationPlan', () => {
  it.each<[string, string[], number, unknown]>([
    ['nothing rotated yet', ['0.log'], 5, { remove: [], compress: [], rotatedName: '0.log.20261125-102030' }],
    ['the last rotated file is compressed now', ['0.log', '0.log.20261125-100000'], 5, { remove: [], compress: ['0.log.20261125-100000'], rotatedName: '0.log.20261125-102030' }],
    [
      'leftovers of an interrupted rotation go',
      ['0.log', '0.log.20261125-090000.gz', '0.log.20261125-090000', '0.log.20261125-095000.tmp'],
      5,
      { remove: ['0.log.20261125-090000', '0.log.20261125-095000.tmp'], compress: [], rotatedName: '0.log.20261125-102030' },
    ],
    [
      'beyond maxFiles − 2 rotated, the oldest go',
      ['0.log', '0.log.20261125-070000.gz', '0.log.20261125-080000.gz', '0.log.20261125-090000.gz', '0.log.20261125-100000'],
      5,
      { remove: ['0.log.20261125-070000.gz'], compress: ['0.log.20261125-100000'], rotatedName: '0.log.20261125-102030' },
    ],
    ['other containers\' files are left alone', ['0.log', '1.log', '1.log.20261125-100000', '10.log.x'], 2, { remove: [], compress: [], rotatedName: '0.log.20261125-102030' }],
  ])('%s', (_, siblings, maxFiles, expected) => {
    const plan = rotationPlan('0.log', siblings, maxFiles, NOW);
    expect({ ...plan, remove: [...plan.remove].sort() }).toEqual(expected);
  });
});

describe('rotating a log', () => {
  // Each test's pod logs root, holding the log directory of one container (shop/web, app).
  let root = '';
  let dir = '';
  beforeEach(async () => {
    root = await mkdtemp(path.join(os.tmpdir(), 'statelet-rotate-'));
    dir = path.join(root, 'shop_web_u1', 'app');
    await mkdir(dir, { recursive: true });
  });
  afterEach(() => rm(root, { recursive: true, force: true }));
  const container = { id: 'c1', metadata: { name: 'app', attempt: 0 }, labels: { 'io.kubernetes.pod.namespace': 'shop', 'io.kubernetes.pod.name': 'web', 'io.kubernetes.pod.uid': 'u1', 'io.kubernetes.container.name': 'app' }, annotations: { 'io.kubernetes.container.restartCount': '0' } };

  it('renames the live file, asks the runtime to reopen it, and compresses the previous one at the next rotation', async () => {
    const reopened: string[] = [];
    const runtime = { reopenContainerLog: async (id: string) => void (reopened.push(id), await writeFile(path.join(dir, '0.log'), '')) };
    await writeFile(path.join(dir, '0.log'), 'first\n');
    await rotateLog(runtime, 'c1', path.join(dir, '0.log'), 3, NOW);
    expect((await readdir(dir)).sort()).toEqual(['0.log', '0.log.20261125-102030']);
    await writeFile(path.join(dir, '0.log'), 'second\n');
    await rotateLog(runtime, 'c1', path.join(dir, '0.log'), 3, new Date('2026-11-25T10:30:00Z'));
    expect((await readdir(dir)).sort()).toEqual(['0.log', '0.log.20261125-102030.gz', '0.log.20261125-103000']);
    expect(gunzipSync(await readFile(path.join(dir, '0.log.20261125-102030.gz'))).toString()).toBe('first\n');
    expect(reopened).toEqual(['c1', 'c1']);
  });

  it('undoes the rename when the runtime cannot reopen', async () => {
    await writeFile(path.join(dir, '0.log'), 'kept\n');
    const runtime = { reopenContainerLog: async () => Promise.reject(new Error('container is not running')) };
    await expect(rotateLog(runtime, 'c1', path.join(dir, '0.log'), 3, NOW)).rejects.toThrow('container is not running');
    expect(await readdir(dir)).toEqual(['0.log']);
  });

  it('rotates only the running containers\' logs that reached the size, and reopens a missing one', async () => {
    await writeFile(path.join(dir, '0.log'), 'x'.repeat(2048));
    const other = { ...container, id: 'c2', labels: { ...container.labels, 'io.kubernetes.container.name': 'side' } };
    const reopened: string[] = [];
    const runtime = {
      listContainers: async () => [container, other] as never,
      reopenContainerLog: async (id: string) => void reopened.push(id),
    };
    const pass = await rotateContainerLogs(runtime, root, { maxSizeBytes: 1024, maxFiles: 5 }, () => NOW);
    expect(pass).toEqual({ checked: 2, rotated: 1, failures: [] });
    expect(reopened.sort()).toEqual(['c1', 'c2']);
  });

  it('names the pod, the container and the file of a rotation that fails, with a cause the next failing pass repeats', async () => {
    await writeFile(path.join(dir, '0.log'), 'x'.repeat(2048));
    const runtime = {
      listContainers: async () => [container] as never,
      reopenContainerLog: async () => Promise.reject(new Error('ReopenContainerLog: UNKNOWN: failed to create and open log file: ENOSPC: no space left on device')),
    };
    const policy = { maxSizeBytes: 1024, maxFiles: 5 };
    const first = await rotateContainerLogs(runtime, root, policy, () => NOW);
    const second = await rotateContainerLogs(runtime, root, policy, () => new Date('2026-11-25T10:30:00Z'));
    expect(first.failures).toEqual([
      { pod: 'shop/web', container: 'app', path: path.join(dir, '0.log'), error: 'ReopenContainerLog: UNKNOWN: failed to create and open log file: ENOSPC: no space left on device', cause: 'ReopenContainerLog: UNKNOWN: failed to create and open log file: ENOSPC: no space left on device' },
    ]);
    expect(second.failures).toEqual(first.failures);
    // A failure of the disk: its cause is the errno and the call (a message may name the rotated file of the moment).
    await mkdir(path.join(dir, '0.log.20261125-100000'));
    const third = await rotateContainerLogs(runtime, root, policy, () => NOW);
    expect(third.failures).toEqual([{ pod: 'shop/web', container: 'app', path: path.join(dir, '0.log'), error: 'EISDIR: illegal operation on a directory, read', cause: 'EISDIR read' }]);
  });
});

describe('logging rotation failures', () => {
  const failure = (path: string, cause: string) => ({ pod: 'shop/web', container: 'app', path, error: `${cause}: at ${path}`, cause });
  const pass = (...failures: ReturnType<typeof failure>[]) => ({ checked: 2, rotated: 0, failures });

  it('says each once per file and cause: not at every pass it repeats, again once the file rotated fine or the cause changed', () => {
    const lines: string[] = [];
    const log: Logger = (level, message, fields = {}) => lines.push(`${level} ${message} ${String(fields['pod'])} ${String(fields['container'])} ${String(fields['path'])}: ${String(fields['err'])}`);
    const seen = new RepeatedFailures();
    logRotationFailures(pass(failure('/a/0.log', 'ENOSPC write'), failure('/b/0.log', 'ENOSPC write')), seen, log);
    logRotationFailures(pass(failure('/a/0.log', 'ENOSPC write'), failure('/b/0.log', 'ENOSPC write')), seen, log);
    expect(lines).toEqual([
      'error Failed to rotate log for container shop/web app /a/0.log: ENOSPC write: at /a/0.log',
      'error Failed to rotate log for container shop/web app /b/0.log: ENOSPC write: at /b/0.log',
    ]);
    // /a rotated fine (it fails no more), /b fails otherwise now.
    logRotationFailures(pass(failure('/b/0.log', 'EROFS rename')), seen, log);
    logRotationFailures(pass(failure('/a/0.log', 'ENOSPC write'), failure('/b/0.log', 'EROFS rename')), seen, log);
    expect(lines.slice(2)).toEqual([
      'error Failed to rotate log for container shop/web app /b/0.log: EROFS rename: at /b/0.log',
      'error Failed to rotate log for container shop/web app /a/0.log: ENOSPC write: at /a/0.log',
    ]);
  });
});
