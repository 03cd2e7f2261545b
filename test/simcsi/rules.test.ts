/** The decisions of sim://'s CSI driver (src/simcsi/rules.ts), table by table. */
import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { CsiRefusal, checkRequest, checkStaged, isEphemeral, requestedCapacity, volumeFileName, volumeUsage } from '../../src/simcsi/rules.ts';

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');
const refusal = (fn: () => unknown): { code: string; message: string } | null => {
  try {
    fn();
    return null;
  } catch (err) {
    if (!(err instanceof CsiRefusal)) throw err;
    return { code: err.code, message: err.message };
  }
};

describe('volumeFileName', () => {
  it.each([
    ['plain-id_1', 'plain-id_1'],
    ['vol/1', 'vol%2F1'],
    ['..', '%2E%2E'],
    ['a.b', 'a%2Eb'],
    ['é', '%C3%A9'],
  ])('%s → %s', (id, name) => expect(volumeFileName(id, sha256)).toBe(name));
  it('names an ID too long for a file name by its SHA-256', () => {
    const id = 'x'.repeat(201);
    expect(volumeFileName(id, sha256)).toBe(`sha256-${sha256(id)}`);
  });
});

describe('checkRequest', () => {
  const mount = { mount: {} };
  it.each([
    [{ volumeId: '', stagingTargetPath: '/s' }, mount, 'Volume ID cannot be empty'],
    [{ volumeId: 'v', stagingTargetPath: '' }, mount, 'Staging Target Path cannot be empty'],
    [{ volumeId: 'v', stagingTargetPath: '/s' }, null, 'Volume Capability cannot be empty'],
    [{ volumeId: 'v', stagingTargetPath: '/s' }, {}, 'Volume Capability must have an access type: block or mount'],
    [{ volumeId: 'v', stagingTargetPath: '/s' }, mount, null],
    [{ volumeId: 'v', stagingTargetPath: '/s' }, { block: {} }, null],
  ])('%j with capability %j → %s', (request, capability, message) => {
    expect(refusal(() => checkRequest(request, ['volumeId', 'stagingTargetPath'], capability))).toEqual(message === null ? null : { code: 'INVALID_ARGUMENT', message });
  });
});

describe('checkStaged', () => {
  it.each([
    ['staged there', '/s', '/s', false, null],
    ['staged elsewhere', '/s', '/t', false, 'volume "v" must be staged before publishing'],
    ['never staged', '/s', undefined, false, 'volume "v" must be staged before publishing'],
    ['inline (ephemeral)', '', undefined, true, null],
  ])('%s', (_, given, stagedAt, ephemeral, message) => {
    const result = refusal(() => checkStaged('v', given, stagedAt, ephemeral));
    expect(result === null ? null : result.message).toBe(message);
  });
  it('says what an inline volume without pod info lacks', () => {
    expect(refusal(() => checkStaged('v', '', undefined, false))).toEqual({ code: 'FAILED_PRECONDITION', message: expect.stringContaining('podInfoOnMount: true') });
  });
});

describe('isEphemeral and requestedCapacity', () => {
  it('reads the pod info and the size', () => {
    expect(isEphemeral({ 'csi.storage.k8s.io/ephemeral': 'true' })).toBe(true);
    expect(isEphemeral({ 'csi.storage.k8s.io/ephemeral': 'false' })).toBe(false);
    expect(isEphemeral({})).toBe(false);
    expect(requestedCapacity({ size: '1Gi' })).toBe(1024 ** 3);
    expect(requestedCapacity({ size: '500M' })).toBe(500e6);
    expect(requestedCapacity({})).toBeUndefined();
    expect(refusal(() => requestedCapacity({ size: '0' }))?.code).toBe('INVALID_ARGUMENT');
    expect(refusal(() => requestedCapacity({ size: 'lots' }))?.message).toBe('volume_context size "lots" is not a positive quantity such as 1Gi');
  });
});

describe('volumeUsage', () => {
  const fs = { totalBytes: 100_000, availableBytes: 40_000, totalInodes: 1000, freeInodes: 600 };
  it.each([
    ['no size: the filesystem', undefined, 5_000, { total: 100_000, available: 40_000, used: 5_000 }],
    ['a size with room', 20_000, 5_000, { total: 20_000, available: 15_000, used: 5_000 }],
    ['a size larger than the room left', 80_000, 5_000, { total: 80_000, available: 40_000, used: 5_000 }],
    ['a size used up', 4_000, 5_000, { total: 4_000, available: 0, used: 5_000 }],
  ])('%s', (_, capacityBytes, usedBytes, bytes) => {
    expect(volumeUsage({ usedBytes, usedInodes: 7, capacityBytes, fs })).toEqual([
      { unit: 'BYTES', ...bytes },
      { unit: 'INODES', total: 1000, available: 600, used: 7 },
    ]);
  });
});
