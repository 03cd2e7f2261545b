/**
 * The pure parts of the CSI client: access modes, paths and names, vol_data.json, and the
 * kubelet's final/uncertain classification of errors (pkg/volume/csi).
 */
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { csiAccessMode } from '../../src/volumes/csi/accessMode.ts';
import { CsiError, isFinalError, type GrpcCode } from '../../src/volumes/csi/errors.ts';
import { attachmentName, escapeQualifiedName, inlineVolumeHandle, podVolumeDir, publishTargetPath, stagingTargetPath } from '../../src/volumes/csi/paths.ts';
import { decodeVolumeData, deviceVolumeData, encodeVolumeData, podVolumeData } from '../../src/volumes/csi/volData.ts';
import { loadVolumeData, saveVolumeData } from '../../src/volumes/csi/volDataFile.ts';

// sha256 hex digests of the inputs, from sha256sum(1): `printf %s vol-1 | sha256sum`.
const SHA_VOL_1 = 'd2e8363faaac7ae76def3b14091d8eb5755f6b92e9531627aeec833a8731cc49';
const SHA_VOL_1_MOCK_NODE_A = '844da1c74e34abed72f63cd62b546c50ffa987837ecbbb1c80ac1e6496e85691';
const SHA_UID_1_SCRATCH = 'dbb0679aff4cd169bdff30971c95fc0154613c7de99b0b41837f7dde06906390';

describe('csiAccessMode (csi_client.go asCSIAccessModeV1, asSingleNodeMultiWriterCapableCSIAccessModeV1)', () => {
  it.each([
    ['ReadWriteOnce', false, 'SINGLE_NODE_WRITER'],
    ['ReadOnlyMany', false, 'MULTI_NODE_READER_ONLY'],
    ['ReadWriteMany', false, 'MULTI_NODE_MULTI_WRITER'],
    ['ReadWriteOncePod', false, 'SINGLE_NODE_WRITER'],
    ['ReadWriteOnce', true, 'SINGLE_NODE_MULTI_WRITER'],
    ['ReadOnlyMany', true, 'MULTI_NODE_READER_ONLY'],
    ['ReadWriteMany', true, 'MULTI_NODE_MULTI_WRITER'],
    ['ReadWriteOncePod', true, 'SINGLE_NODE_SINGLE_WRITER'],
    ['ReadWriteSometimes', false, 'UNKNOWN'],
    ['toString', true, 'UNKNOWN'],
  ])('%s, SINGLE_NODE_MULTI_WRITER %s: %s', (mode, multiWriter, expected) => {
    expect(csiAccessMode(mode, multiWriter)).toBe(expected);
  });
});

describe('paths and names', () => {
  it('stages a volume under the plugin directory by the sha256 of its handle (csi_attacher.go makeDeviceMountPath)', () => {
    expect(stagingTargetPath('/var/lib/kubelet', 'io.kubernetes.storage.mock', 'vol-1')).toBe(`/var/lib/kubelet/plugins/kubernetes.io/csi/io.kubernetes.storage.mock/${SHA_VOL_1}/globalmount`);
  });

  it("publishes into the pod's volume directory, escaping the plugin and the spec name (csi_mounter.go getTargetPath)", () => {
    expect(podVolumeDir('/r', 'uid-1', 'pv-a')).toBe('/r/pods/uid-1/volumes/kubernetes.io~csi/pv-a');
    expect(publishTargetPath('/r', 'uid-1', 'pv-a')).toBe('/r/pods/uid-1/volumes/kubernetes.io~csi/pv-a/mount');
    expect(publishTargetPath('/r', 'uid-1', 'odd/name')).toBe('/r/pods/uid-1/volumes/kubernetes.io~csi/odd~name/mount');
    expect(escapeQualifiedName('a/b/c')).toBe('a~b~c');
  });

  it('names an inline volume by pod UID and volume name, and a VolumeAttachment by handle, driver and node', () => {
    expect(inlineVolumeHandle('0b6f2c1e-uid-1', 'scratch')).toBe(`csi-${SHA_UID_1_SCRATCH}`);
    expect(attachmentName('vol-1', 'io.kubernetes.storage.mock', 'node-a')).toBe(`csi-${SHA_VOL_1_MOCK_NODE_A}`);
  });
});

describe('vol_data.json', () => {
  it("holds the pod's volume with its attachment ID (csi_mounter.go SetUpAt)", () => {
    expect(podVolumeData({ specName: 'pv-a', volumeHandle: 'vol-1', driverName: 'io.kubernetes.storage.mock', nodeName: 'node-a', lifecycleMode: 'Persistent' })).toEqual({
      specVolID: 'pv-a',
      volumeHandle: 'vol-1',
      driverName: 'io.kubernetes.storage.mock',
      nodeName: 'node-a',
      volumeLifecycleMode: 'Persistent',
      attachmentID: `csi-${SHA_VOL_1_MOCK_NODE_A}`,
    });
    expect(podVolumeData({ specName: 's', volumeHandle: 'h', driverName: 'd', nodeName: 'n', lifecycleMode: 'Ephemeral', seLinuxMountContext: 'system_u:object_r:container_file_t:s0' })).toHaveProperty(
      'seLinuxMountContext',
      'system_u:object_r:container_file_t:s0',
    );
  });

  it("holds the node's staged volume (csi_attacher.go MountDevice)", () => {
    expect(deviceVolumeData({ volumeHandle: 'vol-1', driverName: 'd' })).toEqual({ volumeHandle: 'vol-1', driverName: 'd' });
  });

  it("is written as Go's json.Encoder writes a map: sorted keys, HTML characters escaped, a newline", () => {
    // The bytes of `json.NewEncoder(os.Stdout).Encode(map[string]string{…})` with Go 1.26.
    expect(encodeVolumeData({ volumeHandle: 'a<b>&c\u2028', driverName: 'd', specVolID: 'pv-1' })).toBe('{"driverName":"d","specVolID":"pv-1","volumeHandle":"a\\u003cb\\u003e\\u0026c\\u2028"}\n');
    expect(decodeVolumeData(encodeVolumeData({ volumeHandle: 'a<b>&c\u2028', driverName: 'd' }))).toEqual({ volumeHandle: 'a<b>&c\u2028', driverName: 'd' });
  });

  it.each([
    ['[]', 'want a JSON object, got an array'],
    ['null', 'want a JSON object, got null'],
    ['"x"', 'want a JSON object, got string'],
    ['{"volumeHandle": 3}', 'the value of "volumeHandle" is a number, not a string'],
  ])('refuses %s', (text, message) => {
    expect(() => decodeVolumeData(text)).toThrow(message);
  });

  describe('on disk', () => {
    let dir: string;
    beforeEach(async () => {
      dir = await mkdtemp(path.join(os.tmpdir(), 'statelet-voldata-'));
    });
    afterEach(async () => {
      await rm(dir, { recursive: true, force: true });
    });

    it('is saved and loaded back', async () => {
      const data = deviceVolumeData({ volumeHandle: 'vol-1', driverName: 'd' });
      await saveVolumeData(dir, data);
      expect(await readFile(path.join(dir, 'vol_data.json'), 'utf8')).toBe('{"driverName":"d","volumeHandle":"vol-1"}\n');
      expect(await loadVolumeData(dir)).toEqual(data);
    });

    it("says which file is missing or broken, with the kubelet's words (csi_util.go loadVolumeData)", async () => {
      const missing = await loadVolumeData(dir).catch((err: Error) => err);
      expect((missing as Error).message).toMatch(`kubernetes.io/csi: failed to open volume data file [${dir}/vol_data.json]: ENOENT`);
      expect(((missing as Error).cause as NodeJS.ErrnoException).code).toBe('ENOENT');
      await writeFile(path.join(dir, 'vol_data.json'), '{"volumeHandle":');
      await expect(loadVolumeData(dir)).rejects.toThrow(`kubernetes.io/csi: failed to parse volume data file [${dir}/vol_data.json]: `);
      await expect(saveVolumeData(path.join(dir, 'absent'), {})).rejects.toThrow(`kubernetes.io/csi: failed to save volume data file ${dir}/absent/vol_data.json: ENOENT`);
    });
  });
});

describe('isFinalError (csi_client.go)', () => {
  it.each<[GrpcCode | null, boolean]>([
    ['CANCELLED', false],
    ['DEADLINE_EXCEEDED', false],
    ['UNAVAILABLE', false],
    ['RESOURCE_EXHAUSTED', false],
    ['ABORTED', false],
    [null, false],
    ['INVALID_ARGUMENT', true],
    ['NOT_FOUND', true],
    ['ALREADY_EXISTS', true],
    ['FAILED_PRECONDITION', true],
    ['INTERNAL', true],
    ['UNIMPLEMENTED', true],
    ['UNKNOWN', true],
    ['PERMISSION_DENIED', true],
  ])('%s: final %s', (code, final) => {
    expect(isFinalError(code)).toBe(final);
  });

  it("words a status as grpc-go does, which the kubelet's events carry", () => {
    const error = CsiError.status('NodeStageVolume', 'DEADLINE_EXCEEDED', 'context deadline exceeded');
    expect(error.message).toBe('rpc error: code = DeadlineExceeded desc = context deadline exceeded');
    expect(error).toMatchObject({ rpc: 'NodeStageVolume', code: 'DEADLINE_EXCEEDED', final: false });
    expect(CsiError.status('NodePublishVolume', 'CANCELLED', 'x').message).toBe('rpc error: code = Canceled desc = x');
    expect(CsiError.withoutStatus('NodeGetVolumeStats', 'failed to get usage from response. usage is nil')).toMatchObject({ code: null, final: false, message: 'failed to get usage from response. usage is nil' });
    expect(CsiError.notMade('NodePublishVolume', 'missing volume id')).toMatchObject({ code: null, final: true });
  });
});
