/**
 * The raw block decisions, pure and table-tested: which devices a container gets
 * (kubelet_pods.go makeBlockVolumes), what a claim of volumeMode Block is to the volume manager
 * (mapped, not mounted; the hostPath plugin has no block mapper), and which local paths can be
 * mapped.
 */
import { describe, expect, it } from 'vitest';
import type { PersistentVolume } from '../../src/api/storage.ts';
import type { Container, Pod } from '../../src/api/types.ts';
import { blockVolumeDevices } from '../../src/kuberuntime/blockVolumes.ts';
import type { BoundClaim } from '../../src/volumes/claims.ts';
import { desiredVolume } from '../../src/volumes/desired.ts';
import { localBlockProblem } from '../../src/volumes/localBlock.ts';
import type { MountedVolume } from '../../src/volumes/world.ts';

const container = (devices: { name: string; devicePath: string }[]) => ({ name: 'app', image: 'busybox', volumeDevices: devices }) as unknown as Container;
const mapped = (path: string, readOnly = false): MountedVolume => ({ outerName: 'data', kind: 'localPV', uniqueName: 'kubernetes.io/local-volume/pv', path, readOnly, mapped: true });

describe('blockVolumeDevices (makeBlockVolumes)', () => {
  const cases: [string, Parameters<typeof container>[0], Record<string, MountedVolume>, ReturnType<typeof blockVolumeDevices>][] = [
    ['a writable mapped volume: mrw at its devicePath', [{ name: 'data', devicePath: '/dev/xvda' }], { data: mapped('/r/pods/u/volumeDevices/p/pv') }, { devices: [{ containerPath: '/dev/xvda', hostPath: '/r/pods/u/volumeDevices/p/pv', permissions: 'mrw' }] }],
    ['a read-only claim: r', [{ name: 'data', devicePath: '/dev/xvda' }], { data: mapped('/l', true) }, { devices: [{ containerPath: '/dev/xvda', hostPath: '/l', permissions: 'r' }] }],
    ['no volumeDevices: none', [], {}, { devices: [] }],
    ['a relative devicePath', [{ name: 'data', devicePath: 'dev/xvda' }], { data: mapped('/l') }, { error: 'error DevicePath `dev/xvda` must be an absolute path' }],
    ['a volume not mapped yet', [{ name: 'data', devicePath: '/dev/xvda' }], {}, { error: 'cannot find volume "data" to pass into container "app"' }],
    ['a mounted (not mapped) volume', [{ name: 'data', devicePath: '/dev/xvda' }], { data: { ...mapped('/l'), mapped: undefined } as unknown as MountedVolume }, { error: 'cannot find volume "data" to pass into container "app"' }],
  ];
  it.each(cases)('%s', (_name, devices, mounted, want) => {
    expect(blockVolumeDevices(container(devices), new Map(Object.entries(mounted)))).toEqual(want);
  });
});

describe('a claim of volumeMode Block in the desired state', () => {
  const pod = { metadata: { name: 'db', namespace: 'shop', uid: 'u1' }, spec: { containers: [] } } as unknown as Pod;
  const volume = { name: 'data', persistentVolumeClaim: { claimName: 'data' } };
  const claim = (spec: Record<string, unknown>): BoundClaim => ({ claim: { namespace: 'shop', name: 'data', uid: 'c' }, pv: { metadata: { name: 'pv-1' }, spec } as PersistentVolume, readOnly: false });
  it.each([
    ['a local Block PV is mapped', { volumeMode: 'Block', local: { path: '/dev/loop3' } }, { kind: 'localPV', map: true, uniqueName: 'kubernetes.io/local-volume/pv-1' }],
    ['a CSI Block PV is mapped', { volumeMode: 'Block', csi: { driver: 'd', volumeHandle: 'h' } }, { kind: 'csiPV', map: true, uniqueName: 'kubernetes.io/csi/d^h' }],
    ['a hostPath Block PV has no mapper', { volumeMode: 'Block', hostPath: { path: '/dev/loop3' } }, { error: 'no volume plugin matched: this node does not map hostPath volumes of volumeMode Block (PersistentVolume pv-1)' }],
  ])('%s', (_name, spec, want) => {
    expect(desiredVolume(pod, volume, claim(spec), null)).toMatchObject(want);
  });
  it('a local Filesystem PV is mounted, not mapped', () => {
    expect(desiredVolume(pod, volume, claim({ local: { path: '/mnt/disk' } }), null)).not.toHaveProperty('map');
  });
});

describe('localBlockProblem', () => {
  const pv = (path?: string) => ({ metadata: { name: 'pv' }, spec: { local: path === undefined ? undefined : { path } } }) as unknown as PersistentVolume;
  it.each([
    ['a block device', pv('/dev/loop3'), 'block', null],
    ['nothing there', pv('/dev/gone'), null, 'path "/dev/gone" does not exist'],
    ['a directory', pv('/mnt/d'), 'directory', 'path "/mnt/d" is not a block device (it is a directory): a volume of volumeMode Block needs one'],
    ['a character device', pv('/dev/null'), 'char', 'path "/dev/null" is not a block device (it is a char): a volume of volumeMode Block needs one'],
    ['no local path', pv(), null, 'local volume source is nil or local path is not set'],
  ] as const)('%s', (_name, volume, found, want) => {
    expect(localBlockProblem(volume, found)).toBe(want);
  });
});
