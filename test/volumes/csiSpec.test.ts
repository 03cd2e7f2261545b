/**
 * The CSI plugin's rules over a volume and its CSIDriver, table-tested (pkg/volume/csi
 * csi_plugin.go skipAttach, csi_mounter.go supportsVolumeLifecycleMode, getFSGroupPolicy,
 * supportsFSGroup), and the names the volume manager gives CSI volumes (GetUniqueVolumeNameFromSpec).
 */
import { describe, expect, it } from 'vitest';
import type { CSIDriver, PersistentVolume } from '../../src/api/storage.ts';
import type { Pod } from '../../src/api/types.ts';
import { desiredVolume } from '../../src/volumes/desired.ts';
import { inlineVolumeHandle } from '../../src/volumes/csi/paths.ts';
import { attachRequired, fsGroupPolicyOf, kubeletAppliesFsGroup, lifecycleModeProblem, persistentCsiVolume } from '../../src/volumes/csi/spec.ts';

const driver = (spec: CSIDriver['spec']): CSIDriver => ({ metadata: { name: 'd.example.com' }, spec });
const pv = (spec: Record<string, unknown> = {}, csi: Record<string, unknown> = {}): PersistentVolume => ({
  metadata: { name: 'pv-1' },
  spec: { claimRef: { uid: 'c1' }, csi: { driver: 'd.example.com', volumeHandle: 'vol-9', ...csi }, ...spec },
});
const pod = { metadata: { name: 'web', namespace: 'shop', uid: 'u1' }, spec: { containers: [] } } as unknown as Pod;

describe('CSI volume rules', () => {
  it.each([
    [null, true],
    [driver({}), true],
    [driver({ attachRequired: true }), true],
    [driver({ attachRequired: false }), false],
  ])('attach is required for CSIDriver %j: %s', (d, required) => {
    expect(attachRequired(d)).toBe(required);
  });

  it.each([
    ['Persistent', null, null],
    ['Ephemeral', null, 'volume mode "Ephemeral" not supported by driver d.example.com (no CSIDriver object)'],
    ['Persistent', driver({}), null],
    ['Ephemeral', driver({}), 'volume mode "Ephemeral" not supported by driver d.example.com (only supports ["Persistent"])'],
    ['Persistent', driver({ volumeLifecycleModes: ['Ephemeral'] }), 'volume mode "Persistent" not supported by driver d.example.com (only supports ["Ephemeral"])'],
    ['Ephemeral', driver({ volumeLifecycleModes: ['Persistent', 'Ephemeral'] }), null],
  ] as const)('lifecycle mode %s with CSIDriver %j', (mode, d, problem) => {
    expect(lifecycleModeProblem('d.example.com', mode, d)).toBe(problem);
  });

  it('takes the fsGroup policy of the CSIDriver, ReadWriteOnceWithFSType without one, and refuses an empty one', () => {
    expect(fsGroupPolicyOf(null)).toEqual({ policy: 'ReadWriteOnceWithFSType' });
    expect(fsGroupPolicyOf(driver({ fsGroupPolicy: 'None' }))).toEqual({ policy: 'None' });
    expect(fsGroupPolicyOf(driver({}))).toEqual({ error: 'kubernetes.io/csi: expected valid fsGroupPolicy, received nil value or empty string' });
  });

  const persistent = { readOnly: false, fsType: 'ext4', accessModes: ['ReadWriteOnce'], lifecycleMode: 'Persistent' as const };
  it.each([
    ['no fsGroup', persistent, undefined, 'File', false],
    ['policy None', persistent, 1000, 'None', false],
    ['read-only', { ...persistent, readOnly: true }, 1000, 'File', false],
    ['policy File, no fsType', { ...persistent, fsType: '' }, 1000, 'File', true],
    ['RWO with fsType', persistent, 1000, 'ReadWriteOnceWithFSType', true],
    ['RWO without fsType', { ...persistent, fsType: '' }, 1000, 'ReadWriteOnceWithFSType', false],
    ['ReadWriteMany', { ...persistent, accessModes: ['ReadWriteMany'] }, 1000, 'ReadWriteOnceWithFSType', false],
    ['no access modes', { ...persistent, accessModes: null }, 1000, 'ReadWriteOnceWithFSType', false],
    ['inline with fsType', { ...persistent, accessModes: null, lifecycleMode: 'Ephemeral' as const }, 1000, 'ReadWriteOnceWithFSType', true],
  ] as const)('the kubelet applies the fsGroup: %s', (_case, volume, fsGroup, policy, applies) => {
    expect(kubeletAppliesFsGroup(volume, fsGroup, policy)).toBe(applies);
  });

  it("reads a PV's csi source: the first access mode (ReadWriteOnce when none), readOnly from the claim or the source, mount options", () => {
    expect(persistentCsiVolume(pv({ accessModes: ['ReadOnlyMany', 'ReadWriteOnce'], mountOptions: ['ro'] }), false, null)).toMatchObject({ accessMode: 'ReadOnlyMany', mountOptions: ['ro'], readOnly: false, attachable: true, fsType: '' });
    expect(persistentCsiVolume(pv({}, { readOnly: true }), false, driver({ attachRequired: false }))).toMatchObject({ accessMode: 'ReadWriteOnce', readOnly: true, attachable: false });
    expect(persistentCsiVolume(pv(), true, null).readOnly).toBe(true);
  });

  it('names a CSI PV by driver and handle for every pod, an inline CSI volume per pod', () => {
    const claim = { claim: { namespace: 'shop', name: 'data', uid: 'c1' }, pv: pv(), readOnly: false };
    expect(desiredVolume(pod, { name: 'data', persistentVolumeClaim: { claimName: 'data' } }, claim, null)).toMatchObject({ kind: 'csiPV', uniqueName: 'kubernetes.io/csi/d.example.com^vol-9', specName: 'pv-1', attachable: true });
    // A raw block volume has the same name, mapped instead of mounted (csi/block.ts).
    expect(desiredVolume(pod, { name: 'data', persistentVolumeClaim: { claimName: 'data' } }, { ...claim, pv: pv({ volumeMode: 'Block' }) }, null)).toMatchObject({ kind: 'csiPV', uniqueName: 'kubernetes.io/csi/d.example.com^vol-9', map: true });
    const inline = desiredVolume(pod, { name: 'scratch', csi: { driver: 'd.example.com', nodePublishSecretRef: { name: 's' } } });
    expect(inline).toMatchObject({ kind: 'csiInline', uniqueName: 'kubernetes.io/csi/u1-scratch', specName: 'scratch', attachable: false });
    expect(inline).toHaveProperty('csi', expect.objectContaining({ volumeHandle: inlineVolumeHandle('u1', 'scratch'), lifecycleMode: 'Ephemeral', nodePublishSecretRef: { name: 's', namespace: 'shop' } }));
  });
});
