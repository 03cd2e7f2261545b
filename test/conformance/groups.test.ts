import { describe, expect, it } from 'vitest';
import { groupOf, parseGroups, selection } from '../../scripts/conformance/groups.ts';

/** Spec names as `e2e.test --list-tests` prints them (v1.37.2). */
const specs = {
  nodeConformance: '[sig-node] Pods should get a host IP [NodeConformance] [Conformance]',
  nodeStorageConformance: '[sig-storage] EmptyDir volumes should support (root,0644,tmpfs) [LinuxOnly] [NodeConformance] [Conformance]',
  runtimeHandler: '[sig-node] RuntimeClass should run a Pod requesting a RuntimeClass with a configured handler [NodeFeature:RuntimeHandler] [Feature:RuntimeHandler]',
  localDir: '[sig-storage] In-tree Volumes [Driver: local] [LocalVolumeType: dir] [Testpattern: Pre-provisioned PV (default fs)] subPath should support existing directory',
  localBlock: '[sig-storage] In-tree Volumes [Driver: local] [LocalVolumeType: block] [Testpattern: Pre-provisioned PV (block volmode)] volumes should store data',
  hostPathSymlink: '[sig-storage] In-tree Volumes [Driver: hostPathSymlink] [Testpattern: Inline-volume (default fs)] volumes should store data',
  pvLocal: '[sig-storage] PersistentVolumes-local [LocalVolumeType: tmpfs] Two pods mounting a local volume at the same time should be able to write from pod1 and read from pod2',
  subpathConformance: '[sig-storage] Subpath Atomic writer volumes should support subpaths with configmap pod [Conformance]',
  secondNode: "[sig-storage] PersistentVolumes-local Pod with node different from PV's NodeAffinity should fail scheduling due to different NodeAffinity",
  selinux: '[sig-storage] In-tree Volumes [Driver: local] [LocalVolumeType: dir] [Testpattern: Pre-provisioned PV (default fs)] [Feature:SELinux] [FeatureGate:SELinuxMountReadWriteOncePod] [Beta] mount should be the same [Slow]',
  slow: '[sig-storage] In-tree Volumes [Driver: hostPath] [Testpattern: Inline-volume (default fs)] subPath should support creating multiple subpath from same volumes [Slow]',
  csi: '[sig-storage] CSI Volumes [Driver: csi-hostpath] [Testpattern: Dynamic PV (default fs)] volumes should store data',
};

const selected = (groups: Parameters<typeof selection>[0]) => {
  const { focus, skip } = selection(groups);
  return Object.entries(specs)
    .filter(([, name]) => new RegExp(focus).test(name) && !new RegExp(skip).test(name))
    .map(([key]) => key);
};

describe('the focus groups', () => {
  it.each([
    [['node'], ['nodeConformance', 'nodeStorageConformance', 'runtimeHandler']],
    [['storage'], ['localDir', 'localBlock', 'hostPathSymlink', 'pvLocal', 'subpathConformance']],
    [['node', 'storage'], ['nodeConformance', 'nodeStorageConformance', 'runtimeHandler', 'localDir', 'localBlock', 'hostPathSymlink', 'pvLocal', 'subpathConformance']],
  ] as const)('%j selects the specs of its suites, without the ones that cannot run here', (groups, keys) => {
    expect(selected(groups)).toEqual(keys);
  });

  it("joins the groups' skips without leaving out a spec of another group", () => {
    expect(selected(['node', 'storage'])).toEqual([...selected(['node']), ...selected(['storage'])]);
    expect(selection(['node', 'storage']).skip.split('|').filter((s) => s === String.raw`\[Slow\]`)).toHaveLength(1);
  });

  it('files a spec under the one group whose focus selects it', () => {
    expect(groupOf(specs.nodeStorageConformance)).toBe('node');
    expect(groupOf(specs.subpathConformance)).toBe('storage');
    expect(groupOf(specs.slow)).toBe('storage');
    expect(groupOf(specs.csi)).toBeUndefined();
  });

  it.each([
    ['node,storage', ['node', 'storage']],
    ['storage', ['storage']],
    [' node , node ', ['node']],
  ])('--groups=%s', (text, groups) => {
    expect(parseGroups(text)).toEqual(groups);
  });

  it.each([
    ['', /name at least one/],
    ['node,disk', /unknown group disk/],
  ])('refuses --groups=%s', (text, message) => {
    expect(() => parseGroups(text)).toThrow(message);
  });
});
