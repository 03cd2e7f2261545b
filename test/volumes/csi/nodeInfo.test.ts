/**
 * How a CSI driver's registration changes the node's objects (nodeinfomanager.go), pure: the
 * Node's node-ID annotation and topology labels, the CSINode's driver entries and annotation.
 */
import { describe, expect, it } from 'vitest';
import type { CSINode, NodeObject } from '../../../src/api/cluster.ts';
import {
  MIGRATED_PLUGINS_ANNOTATION,
  NODE_ID_ANNOTATION,
  csiNodeInitialized,
  csiNodeOwner,
  csiNodeWithDriver,
  csiNodeWithoutDriver,
  newCsiNode,
  nodeInstallPatch,
  nodeUninstallPatch,
} from '../../../src/volumes/csi/nodeInfo.ts';

const node = (annotations: Record<string, string> = {}, labels: Record<string, string> = {}): NodeObject => ({ metadata: { name: 'n1', uid: 'u1', annotations, labels } });
const MIGRATED = 'kubernetes.io/aws-ebs,kubernetes.io/azure-disk,kubernetes.io/azure-file,kubernetes.io/cinder,kubernetes.io/gce-pd,kubernetes.io/portworx-volume,kubernetes.io/vsphere-volume';

describe('the Node on a driver registration', () => {
  it.each([
    ['a first driver', node(), 'd1', 'id-1', {}, { annotations: { [NODE_ID_ANNOTATION]: '{"d1":"id-1"}' } }],
    ['merged into the map, keys sorted', node({ [NODE_ID_ANNOTATION]: '{"z":"id-z"}' }), 'a', 'id-a', {}, { annotations: { [NODE_ID_ANNOTATION]: '{"a":"id-a","z":"id-z"}' } }],
    ['the same ID again: nothing', node({ [NODE_ID_ANNOTATION]: '{"d1":"id-1"}' }), 'd1', 'id-1', {}, null],
    ['a changed ID replaces the old', node({ [NODE_ID_ANNOTATION]: '{"d1":"old"}' }), 'd1', 'new', {}, { annotations: { [NODE_ID_ANNOTATION]: '{"d1":"new"}' } }],
    ['topology labels added', node({ [NODE_ID_ANNOTATION]: '{"d1":"id-1"}' }), 'd1', 'id-1', { 'topology.d1/zone': 'a' }, { labels: { 'topology.d1/zone': 'a' } }],
  ])('%s', (_name, before, driver, id, topology, patch) => {
    expect(nodeInstallPatch(before, driver, id, topology)).toEqual(patch);
  });

  it('refuses a topology that contradicts a label, in the kubelet words', () => {
    expect(() => nodeInstallPatch(node({}, { 'topology.kubernetes.io/zone': 'b' }), 'd1', 'id-1', { 'topology.kubernetes.io/zone': 'a' })).toThrow(
      'detected topology value collision: driver reported "topology.kubernetes.io/zone":"a" but existing label is "topology.kubernetes.io/zone":"b"',
    );
  });

  it('refuses an annotation that is not a JSON map', () => {
    expect(() => nodeInstallPatch(node({ [NODE_ID_ANNOTATION]: '[1]' }), 'd1', 'id-1', {})).toThrow(/failed to parse node's "csi.volume.kubernetes.io\/nodeid" annotation value/);
  });

  it.each([
    ['the last driver: the annotation goes', node({ [NODE_ID_ANNOTATION]: '{"d1":"id-1"}' }), { annotations: { [NODE_ID_ANNOTATION]: null } }],
    ['one of two: the other stays', node({ [NODE_ID_ANNOTATION]: '{"d1":"id-1","d2":"id-2"}' }), { annotations: { [NODE_ID_ANNOTATION]: '{"d2":"id-2"}' } }],
    ['not there: nothing', node({ [NODE_ID_ANNOTATION]: '{"d2":"id-2"}' }), null],
  ])('deregistration, %s', (_name, before, patch) => {
    expect(nodeUninstallPatch(before, 'd1')).toEqual(patch);
  });
});

describe('the CSINode', () => {
  it('is created owned by the Node, with no drivers and the migrated plugins annotated', () => {
    expect(newCsiNode('n1', 'u1')).toEqual({
      metadata: { name: 'n1', ownerReferences: [{ apiVersion: 'v1', kind: 'Node', name: 'n1', uid: 'u1' }], annotations: { [MIGRATED_PLUGINS_ANNOTATION]: MIGRATED } },
      spec: { drivers: [] },
    });
  });

  it.each([
    ['the Node with its UID', [{ apiVersion: 'v1', kind: 'Node', name: 'n1', uid: 'u1' }], { owned: true, ownerUid: 'u1' }],
    ['an earlier Node of the name', [{ apiVersion: 'v1', kind: 'Node', name: 'n1', uid: 'u0' }], { owned: false, ownerUid: 'u0' }],
    ['no owner', [], { owned: false, ownerUid: '' }],
  ])('is owned by %s?', (_name, ownerReferences, owner) => {
    expect(csiNodeOwner({ metadata: { name: 'n1', ownerReferences }, spec: { drivers: [] } }, 'n1', 'u1')).toEqual(owner);
  });

  const initialized = newCsiNode('n1', 'u1');

  it('needs its annotation set when it lacks it or lists other plugins, and nothing when it lists them in any order', () => {
    expect(csiNodeInitialized({ metadata: { name: 'n1' }, spec: { drivers: [] } })?.metadata.annotations).toEqual({ [MIGRATED_PLUGINS_ANNOTATION]: MIGRATED });
    expect(csiNodeInitialized({ metadata: { name: 'n1', annotations: { [MIGRATED_PLUGINS_ANNOTATION]: 'kubernetes.io/gce-pd' } }, spec: { drivers: [] } })).not.toBeNull();
    const shuffled = MIGRATED.split(',').reverse().join(',');
    expect(csiNodeInitialized({ metadata: { name: 'n1', annotations: { [MIGRATED_PLUGINS_ANNOTATION]: shuffled } }, spec: { drivers: [] } })).toBeNull();
  });

  it.each([
    ['with a limit and topology', 5, { 'b/zone': 'x', 'a/rack': 'y' }, { name: 'd1', nodeID: 'id-1', topologyKeys: ['a/rack', 'b/zone'], allocatable: { count: 5 } }],
    ['no limit: no allocatable', 0, {}, { name: 'd1', nodeID: 'id-1', topologyKeys: [] }],
    ['a limit beyond int32 truncated', 2 ** 40, {}, { name: 'd1', nodeID: 'id-1', topologyKeys: [], allocatable: { count: 2 ** 31 - 1 } }],
    ['a negative limit left out', -1, {}, { name: 'd1', nodeID: 'id-1', topologyKeys: [] }],
  ])('gets the driver entry %s', (_name, max, topology, entry) => {
    expect(csiNodeWithDriver(initialized, 'd1', 'id-1', max, topology)?.spec.drivers).toEqual([entry]);
  });

  it('replaces the driver entry, keeps the others, and is left alone when the entry is already so', () => {
    const withTwo: CSINode = { ...initialized, spec: { drivers: [{ name: 'd0', nodeID: 'x' }, { name: 'd1', nodeID: 'old', topologyKeys: [] }] } };
    const updated = csiNodeWithDriver(withTwo, 'd1', 'id-1', 3, {});
    expect(updated?.spec.drivers).toEqual([{ name: 'd0', nodeID: 'x' }, { name: 'd1', nodeID: 'id-1', topologyKeys: [], allocatable: { count: 3 } }]);
    expect(csiNodeWithDriver(updated!, 'd1', 'id-1', 3, {})).toBeNull();
    expect(csiNodeWithDriver(updated!, 'd1', 'id-1', 4, {})).not.toBeNull();
  });

  it('loses the driver entry on deregistration; without one nothing changes', () => {
    const registered = csiNodeWithDriver(initialized, 'd1', 'id-1', 0, {})!;
    expect(csiNodeWithoutDriver(registered, 'd1')?.spec.drivers).toEqual([]);
    expect(csiNodeWithoutDriver(initialized, 'd1')).toBeNull();
  });
});
