import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { Pod } from '../../src/api/types.ts';
import { Annotation } from '../../src/kuberuntime/labels.ts';
import {
  type ExitedContainer,
  type FileMessage,
  TerminationMessages,
  chooseMessage,
  joinMessages,
  messageLimitPerContainer,
  needsLogTail,
  readTerminationMessage,
  terminationMessageMount,
  truncateMessage,
} from '../../src/kuberuntime/terminationMessage.ts';
import type { ContainerStatus } from '../../src/runtime/types.ts';

const failed: ExitedContainer = { exitCode: 1, reason: 'Error', policy: 'FallbackToLogsOnError' };

describe('chooseMessage: which source gives the message', () => {
  const cases: [string, ExitedContainer, FileMessage, boolean, string][] = [
    ['the file, under File', { ...failed, policy: 'File' }, { text: 'DONE' }, false, 'DONE'],
    ['an empty file under File: nothing, never the log', { ...failed, policy: 'File' }, { text: '' }, false, ''],
    ['the file first, under FallbackToLogsOnError', failed, { text: 'DONE' }, false, 'DONE'],
    ['the log for an empty file after a failure', failed, { text: '' }, true, 'from log'],
    ['the log for a missing file (or no mount) after a failure', failed, { missing: true }, true, 'from log'],
    ['not the log after exit 0', { ...failed, exitCode: 0 }, { text: '' }, false, ''],
    ['not the log of a container that could not run', { ...failed, reason: 'ContainerCannotRun' }, { missing: true }, false, ''],
    ['the read error, never the log', failed, { error: 'Error on reading termination log /x: EACCES' }, false, 'Error on reading termination log /x: EACCES'],
  ];
  it.each(cases)('%s', (_, container, file, wantsLog, message) => {
    expect(needsLogTail(container, file)).toBe(wantsLog);
    expect(chooseMessage(container, file, 'from log')).toBe(message);
  });
});

describe('joinMessages', () => {
  it.each([
    ['', '', ''],
    ['', 'DONE', 'DONE'],
    ['OOM', '', 'OOM'],
    ['OOM', 'DONE', 'OOM: DONE'],
  ])('%j + %j = %j', (runtime, termination, joined) => expect(joinMessages(runtime, termination)).toBe(joined));
});

describe('the pod status share of 12 KiB', () => {
  const pod = (containers: number, inits: number) =>
    ({ metadata: { name: 'p', namespace: 'd', uid: 'u' }, spec: { containers: Array(containers).fill({ name: 'c' }), initContainers: Array(inits).fill({ name: 'i' }) } }) as unknown as Pod;
  it.each([
    [1, 0, 12_288],
    [2, 1, 4_096],
    [5, 0, 2_457],
  ])('%i containers and %i init containers: %i bytes each', (containers, inits, limit) => expect(messageLimitPerContainer(pod(containers, inits))).toBe(limit));

  it('keeps the first bytes', () => {
    expect(truncateMessage('abcdef', 4)).toBe('abcd');
    expect(truncateMessage('abc', 4)).toBe('abc');
  });
});

describe('reading the message of an exited container', () => {
  let dir = '';
  afterEach(() => rmSync(dir, { recursive: true, force: true }));
  const tmp = () => (dir = mkdtempSync(path.join(os.tmpdir(), 'statelet-termmsg-')));

  const exited = (over: Partial<ContainerStatus> & { policy?: string; file?: string }): ContainerStatus => ({
    id: 'c1',
    metadata: { name: 'app', attempt: 0 },
    state: 'CONTAINER_EXITED',
    createdAt: 1,
    startedAt: 1,
    finishedAt: 2,
    exitCode: 1,
    image: 'busybox',
    imageRef: 'busybox',
    reason: 'Error',
    message: '',
    labels: {},
    annotations: { [Annotation.terminationMessagePath]: '/dev/termination-log', [Annotation.terminationMessagePolicy]: over.policy ?? 'File' },
    mounts: over.file ? [{ containerPath: '/dev/termination-log', hostPath: over.file, readonly: false }] : [],
    logPath: path.join(dir, 'log'),
    ...over,
  });

  it('reads the last 4096 bytes of the mounted file; a missing file gives nothing', async () => {
    tmp();
    const file = path.join(dir, 'msg');
    writeFileSync(file, `${'x'.repeat(10)}${'y'.repeat(4096)}`);
    expect(await readTerminationMessage(exited({ file }))).toBe('y'.repeat(4096));
    expect(await readTerminationMessage(exited({ file: path.join(dir, 'gone') }))).toBe('');
  });

  it('falls back to the last 80 lines of the log, at most their last 2048 bytes', async () => {
    tmp();
    const file = path.join(dir, 'msg');
    writeFileSync(file, '');
    const lines = Array.from({ length: 100 }, (_, i) => `2024-01-01T00:00:00.000000000Z stdout F line ${i}\n`).join('');
    writeFileSync(path.join(dir, 'log'), `${lines}2024-01-01T00:00:00.000000000Z stdout P DONE\n`);
    const message = await readTerminationMessage(exited({ file, policy: 'FallbackToLogsOnError' }));
    expect(message.endsWith('line 99\nDONE')).toBe(true);
    expect(Buffer.byteLength(message)).toBeLessThanOrEqual(2048);
    const short = Array.from({ length: 100 }, (_, i) => `2024-01-01T00:00:00.000000000Z stdout F ${i}\n`).join('');
    writeFileSync(path.join(dir, 'log'), short);
    expect(await readTerminationMessage(exited({ file, policy: 'FallbackToLogsOnError' }))).toBe(Array.from({ length: 80 }, (_, i) => `${i + 20}\n`).join(''));
  });

  it('reads each container once and forgets the ones the runtime no longer lists', async () => {
    let reads = 0;
    const messages = new TerminationMessages(async (s) => `read ${s.id} ${++reads}`);
    tmp();
    expect(await messages.of(exited({ id: 'a' }))).toBe('read a 1');
    expect(await messages.of(exited({ id: 'a' }))).toBe('read a 1');
    messages.retain(new Set(['b']));
    expect(await messages.of(exited({ id: 'a' }))).toBe('read a 2');
  });

  it('makes an empty 0666 file per container start under the pod directory, mounted at the path', async () => {
    tmp();
    const pod = { metadata: { name: 'p', namespace: 'd', uid: 'uid-1' }, spec: { containers: [] } } as unknown as Pod;
    const errors: unknown[] = [];
    const first = await terminationMessageMount(dir, pod, { name: 'app', image: 'i', terminationMessagePath: '/dev/custom-log' }, (e) => errors.push(e));
    const second = await terminationMessageMount(dir, pod, { name: 'app', image: 'i' }, (e) => errors.push(e));
    expect(errors).toEqual([]);
    expect(first).toMatchObject({ containerPath: '/dev/custom-log', readonly: false });
    expect(second?.containerPath).toBe('/dev/termination-log');
    expect(path.dirname(first!.hostPath)).toBe(path.join(dir, 'uid-1', 'containers', 'app'));
    expect(first!.hostPath).not.toBe(second!.hostPath);
    expect(readFileSync(first!.hostPath, 'utf8')).toBe('');
    expect(statSync(first!.hostPath).mode & 0o777).toBe(0o666);
  });
});
