/**
 * Online expansion's decisions (src/volumes/expansion.ts), the operation over them
 * (src/volumes/nodeExpander.ts) and the CSI plugin's NodeExpand (src/volumes/csi/expand.ts),
 * against the kubelet's: checkVolumeFSResize/volumeNeedsExpansion, checkForRecoveryFromExpansion,
 * node_expander.go runPreCheck and expandOnPlugin, legacyCallNodeExpandOnPlugin, resize_util.go's
 * patches, expander.go's error classes.
 */
import { describe, expect, it } from 'vitest';
import type { PersistentVolume, PersistentVolumeClaim } from '../../src/api/storage.ts';
import type { Pod } from '../../src/api/types.ts';
import { ApiError } from '../../src/client/api.ts';
import type { EventType } from '../../src/eventrecorder/recorder.ts';
import type { CsiNode, NodeCapability, NodeExpandVolumeArgs } from '../../src/volumes/csi/client.ts';
import { CsiError } from '../../src/volumes/csi/errors.ts';
import { NodeExpandError, csiNodeExpand } from '../../src/volumes/csi/expand.ts';
import type { CsiVolume } from '../../src/volumes/csi/spec.ts';
import {
  ExpansionRecord,
  bytesOf,
  expansionPath,
  fsResizeRequired,
  nodeExpansionFailedPatch,
  nodeExpansionFinishedPatch,
  nodeExpansionInfeasiblePatch,
  nodeExpansionPrecheck,
  nodeResizeInProgressPatch,
} from '../../src/volumes/expansion.ts';
import { type InUseVolume, expandInUseVolume, expandVolumeDuringMount } from '../../src/volumes/nodeExpander.ts';

const Gi = 2 ** 30;

const claim = (status: NonNullable<PersistentVolumeClaim['status']>, spec: Partial<NonNullable<PersistentVolumeClaim['spec']>> = {}, annotations?: Record<string, string>): PersistentVolumeClaim => ({
  metadata: { name: 'data', namespace: 'shop', uid: 'claim-uid', resourceVersion: '42', ...(annotations ? { annotations } : {}) },
  spec: { volumeName: 'pv-1', accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '2Gi' } }, ...spec },
  status: { phase: 'Bound', ...status },
});

/** As the external resizer leaves a claim it expanded on the controller side and wants expanded on the node. */
const pendingOnNode = claim({
  capacity: { storage: '1Gi' },
  allocatedResources: { storage: '2Gi' },
  allocatedResourceStatuses: { storage: 'NodeResizePending' },
  conditions: [
    { type: 'FileSystemResizePending', status: 'True', message: 'Waiting for user to (re-)start a pod to finish file system resize of volume on node.' },
    { type: 'ModifyingVolume', status: 'True' },
  ],
});

describe('fsResizeRequired', () => {
  it.each([
    ['the PV grew past the known size', { readOnly: false, desiredBytes: 2 * Gi, currentBytes: Gi, inUseError: false }, true],
    ['the same size', { readOnly: false, desiredBytes: Gi, currentBytes: Gi, inUseError: false }, false],
    ['a read-only volume', { readOnly: true, desiredBytes: 2 * Gi, currentBytes: Gi, inUseError: false }, false],
    ['the driver cannot expand it in use', { readOnly: false, desiredBytes: 2 * Gi, currentBytes: Gi, inUseError: true }, false],
    ['no known size (the claim shows no capacity)', { readOnly: false, desiredBytes: 2 * Gi, currentBytes: 0, inUseError: false }, false],
    ['no PV capacity', { readOnly: false, desiredBytes: 0, currentBytes: Gi, inUseError: false }, false],
  ])('%s', (_, volume, expected) => {
    expect(fsResizeRequired(volume)).toBe(expected);
  });
});

describe('expansionPath', () => {
  it.each([
    ['a resize status', claim({ allocatedResourceStatuses: { storage: 'NodeResizePending' } }), 'recovery'],
    ['allocated resources only', claim({ allocatedResources: { storage: '2Gi' } }), 'recovery'],
    ['neither (an older resizer)', claim({ capacity: { storage: '1Gi' } }), 'legacy'],
  ] as const)('%s: %s', (_, pvc, expected) => {
    expect(expansionPath(pvc)).toBe(expected);
  });
});

describe('nodeExpansionPrecheck', () => {
  it.each([
    ['pending on the node', pendingOnNode, false, { allow: true, pvcAlreadyUpdated: false, markInfeasibleOnFailure: false }],
    ['in progress on the node', claim({ capacity: { storage: '1Gi' }, allocatedResourceStatuses: { storage: 'NodeResizeInProgress' } }), false, { allow: true, pvcAlreadyUpdated: false, markInfeasibleOnFailure: false }],
    ['still on the controller', claim({ capacity: { storage: '1Gi' }, allocatedResourceStatuses: { storage: 'ControllerResizeInProgress' } }), false, { allow: false, pvcAlreadyUpdated: false, markInfeasibleOnFailure: false }],
    ['infeasible already', claim({ capacity: { storage: '1Gi' }, allocatedResourceStatuses: { storage: 'NodeResizeInfeasible' } }), false, { allow: false, pvcAlreadyUpdated: false, markInfeasibleOnFailure: false }],
    ['expanded already (no status, the capacity there)', claim({ capacity: { storage: '2Gi' }, allocatedResources: { storage: '2Gi' } }), false, { allow: false, pvcAlreadyUpdated: true, markInfeasibleOnFailure: false }],
    ['RWX expanded on another node: expanded here too', claim({ capacity: { storage: '2Gi' }, allocatedResources: { storage: '2Gi' } }, { accessModes: ['ReadWriteMany'] }), false, { allow: true, pvcAlreadyUpdated: true, markInfeasibleOnFailure: false }],
    [
      'RWX the driver needs no node expansion for',
      claim({ capacity: { storage: '2Gi' }, allocatedResources: { storage: '2Gi' } }, { accessModes: ['ReadWriteMany'] }, { 'volume.kubernetes.io/node-expansion-not-required': 'true' }),
      false,
      { allow: false, pvcAlreadyUpdated: true, markInfeasibleOnFailure: false },
    ],
    ['the user changed the request after a final error', claim({ capacity: { storage: '1Gi' }, allocatedResourceStatuses: { storage: 'NodeResizeInProgress' } }, { resources: { requests: { storage: '3Gi' } } }), true, { allow: true, pvcAlreadyUpdated: false, markInfeasibleOnFailure: true }],
  ] as const)('%s', (_, pvc, finalError, expected) => {
    expect(nodeExpansionPrecheck(pvc, 2 * Gi, finalError)).toEqual(expected);
  });
});

describe('claim status patches', () => {
  it('marks the node resize in progress with the claim resourceVersion', () => {
    expect(nodeResizeInProgressPatch(pendingOnNode)).toEqual({ metadata: { resourceVersion: '42' }, status: { allocatedResourceStatuses: { storage: 'NodeResizeInProgress' } } });
  });

  it('finishes: the new capacity, the resize status dropped, the resize conditions removed and the others kept', () => {
    expect(nodeExpansionFinishedPatch(pendingOnNode, '2Gi')).toEqual({
      metadata: { resourceVersion: '42' },
      status: { capacity: { storage: '2Gi' }, allocatedResourceStatuses: { storage: null }, conditions: [{ $patch: 'replace' }, { type: 'ModifyingVolume', status: 'True' }] },
    });
  });

  it('marks a failure: a NodeResizeError condition beside the others; infeasible also sets the status', () => {
    const now = '2026-12-07T18:00:00Z';
    const error = { type: 'NodeResizeError', status: 'True', lastTransitionTime: now, message: 'failed to expand pvc with boom' };
    expect(nodeExpansionFailedPatch(pendingOnNode, 'boom', now)).toEqual({ status: { conditions: [{ $patch: 'replace' }, ...pendingOnNode.status!.conditions!, error] } });
    expect(nodeExpansionInfeasiblePatch(pendingOnNode, 'boom', now)).toEqual({
      status: { allocatedResourceStatuses: { storage: 'NodeResizeInfeasible' }, conditions: [{ $patch: 'replace' }, ...pendingOnNode.status!.conditions!, error] },
    });
    // A NodeResizeError already there with the same status stays as it was.
    const failedBefore = claim({ conditions: [{ type: 'NodeResizeError', status: 'True', message: 'failed to expand pvc with earlier' }] });
    expect(nodeExpansionFailedPatch(failedBefore, 'boom', now)).toEqual({ status: { conditions: [{ $patch: 'replace' }, { type: 'NodeResizeError', status: 'True', message: 'failed to expand pvc with earlier' }] } });
  });

  it('counts sizes in bytes, rounded up', () => {
    expect(bytesOf('2Gi')).toBe(2 * Gi);
    expect(bytesOf('1.5k')).toBe(1500);
    expect(bytesOf('0.5')).toBe(1);
    expect(bytesOf(undefined)).toBe(0);
  });
});

describe('ExpansionRecord', () => {
  it('keeps the first size seen until the volume is resized, and forgets the volume with its marks', () => {
    const record = new ExpansionRecord();
    record.initializeSize('v', Gi);
    record.initializeSize('v', 5 * Gi);
    expect(record.size('v')).toBe(Gi);
    record.markResized('v', 2 * Gi);
    record.markFinalError('v');
    record.markInUseError('v');
    expect([record.size('v'), record.failedWithFinalError('v'), record.inUseError('v')]).toEqual([2 * Gi, true, true]);
    record.forget('v');
    expect([record.size('v'), record.failedWithFinalError('v'), record.inUseError('v')]).toEqual([0, false, false]);
  });
});

// ---------------------------------------------------------------- the operation

const pod = { metadata: { name: 'web', namespace: 'shop', uid: 'pod-uid' }, spec: { containers: [] } } as unknown as Pod;
const pv: PersistentVolume = {
  metadata: { name: 'pv-1' },
  spec: { capacity: { storage: '2Gi' }, accessModes: ['ReadWriteOnce'], claimRef: { namespace: 'shop', name: 'data', uid: 'claim-uid' }, csi: { driver: 'mock.test', volumeHandle: '1' } },
};

function harness(pvc: PersistentVolumeClaim, nodeExpand: (newBytes: number) => Promise<void>) {
  const events: [string, EventType, string, string][] = [];
  const patches: object[] = [];
  const logs: string[] = [];
  const record = new ExpansionRecord();
  record.initializeSize('kubernetes.io/csi/mock.test^1', Gi);
  let failPatch: ApiError | null = null;
  const deps = {
    nodeName: 'node-a',
    claims: {
      claim: async () => structuredClone(pvc),
      patchStatus: async (_namespace: string, _name: string, patch: object) => {
        if (failPatch) throw failPatch;
        patches.push(patch);
        return { ...structuredClone(pvc), metadata: { ...pvc.metadata, resourceVersion: String(Number(pvc.metadata.resourceVersion) + patches.length) } };
      },
    },
    record,
    recorder: { event: (object: { kind: string }, type: EventType, reason: string, message: string) => void events.push([object.kind, type, reason, message]) },
    log: (_level: string, message: string) => void logs.push(message),
    now: () => '2026-12-07T18:00:00Z',
  };
  const expanded: number[] = [];
  const volume: InUseVolume = {
    pod,
    uniqueName: 'kubernetes.io/csi/mock.test^1',
    specName: 'pv-1',
    pv,
    currentBytes: Gi,
    desiredBytes: 2 * Gi,
    nodeExpand: async (newBytes) => {
      expanded.push(newBytes);
      await nodeExpand(newBytes);
    },
  };
  return { deps, volume, events, patches, logs, record, expanded, failPatches: (err: ApiError) => void (failPatch = err) };
}

describe('expandInUseVolume', () => {
  it('marks the claim in progress, expands to the allocated size, tells pod and claim, and patches the new capacity', async () => {
    const h = harness(pendingOnNode, async () => {});
    await expandInUseVolume(h.deps, h.volume);
    expect(h.expanded).toEqual([2 * Gi]);
    expect(h.patches).toEqual([
      { metadata: { resourceVersion: '42' }, status: { allocatedResourceStatuses: { storage: 'NodeResizeInProgress' } } },
      // The second patch is on the claim as the first patch returned it.
      { metadata: { resourceVersion: '43' }, status: { capacity: { storage: '2Gi' }, allocatedResourceStatuses: { storage: null }, conditions: [{ $patch: 'replace' }, { type: 'ModifyingVolume', status: 'True' }] } },
    ]);
    const message = 'MountVolume.NodeExpandVolume succeeded for volume "pv-1" node-a';
    expect(h.events).toEqual([
      ['Pod', 'Normal', 'FileSystemResizeSuccessful', message],
      ['PersistentVolumeClaim', 'Normal', 'FileSystemResizeSuccessful', message],
    ]);
    expect(h.record.size(h.volume.uniqueName)).toBe(2 * Gi);
  });

  it('does nothing while the claim is not pending a node resize', async () => {
    const h = harness(claim({ capacity: { storage: '1Gi' }, allocatedResourceStatuses: { storage: 'ControllerResizeInProgress' } }), async () => {});
    await expandInUseVolume(h.deps, h.volume);
    expect([h.expanded, h.patches, h.events]).toEqual([[], [], []]);
    expect(h.record.size(h.volume.uniqueName)).toBe(Gi);
  });

  it('records an infeasible failure on the claim, marks the volume, and fails the operation with its message', async () => {
    const h = harness(pendingOnNode, async () => {
      throw new NodeExpandError('Expander.NodeExpand failed to expand the volume rpc error: code = OutOfRange desc = too big', 'infeasible');
    });
    await expect(expandInUseVolume(h.deps, h.volume)).rejects.toThrow('NodeExpandVolume.NodeExpandVolume failed for volume "pv-1" : Expander.NodeExpand failed to expand the volume rpc error: code = OutOfRange desc = too big');
    expect(h.patches[1]).toMatchObject({ status: { allocatedResourceStatuses: { storage: 'NodeResizeInfeasible' } } });
    expect(h.record.failedWithFinalError(h.volume.uniqueName)).toBe(true);
    expect(h.events).toEqual([]);
  });

  it('takes a FailedPrecondition as "not in use": no error, the condition set, never tried again while mounted', async () => {
    const h = harness(pendingOnNode, async () => {
      throw new NodeExpandError('Expander.NodeExpand failed to expand the volume : rpc error: code = FailedPrecondition desc = offline only', 'failedPrecondition');
    });
    await expandInUseVolume(h.deps, h.volume);
    expect(h.patches[1]).toMatchObject({ status: { conditions: [{ $patch: 'replace' }, {}, {}, { type: 'NodeResizeError', message: expect.stringContaining('FailedPrecondition') }] } });
    expect(h.record.inUseError(h.volume.uniqueName)).toBe(true);
    expect(h.record.size(h.volume.uniqueName)).toBe(Gi);
  });

  it('leaves a transient failure (the driver not registered) unmarked, to be retried', async () => {
    const h = harness(pendingOnNode, async () => {
      throw new NodeExpandError('driver name mock.test not found in the list of registered CSI drivers', 'transient');
    });
    await expect(expandInUseVolume(h.deps, h.volume)).rejects.toThrow(/not found in the list of registered CSI drivers/);
    expect(h.patches).toHaveLength(1);
    expect(h.record.failedWithFinalError(h.volume.uniqueName)).toBe(false);
  });

  it('fails when the claim cannot be marked in progress, before calling the driver', async () => {
    const h = harness(pendingOnNode, async () => {});
    h.failPatches(new ApiError(409, 'Conflict', 'the object has been modified', 'PATCH persistentvolumeclaims/status shop/data'));
    await expect(expandInUseVolume(h.deps, h.volume)).rejects.toThrow('NodeExpandVolume.NodeExpandVolume failed for volume "pv-1" : patchPVCStatus failed to patch PVC "data": the object has been modified');
    expect(h.expanded).toEqual([]);
  });

  it('with an older resizer (no allocated resources), expands to the PV size and patches the capacity', async () => {
    const h = harness(claim({ capacity: { storage: '1Gi' } }), async () => {});
    await expandInUseVolume(h.deps, h.volume);
    expect(h.expanded).toEqual([2 * Gi]);
    expect(h.patches).toEqual([{ metadata: { resourceVersion: '42' }, status: { capacity: { storage: '2Gi' }, allocatedResourceStatuses: { storage: null }, conditions: [{ $patch: 'replace' }] } }]);
    expect(h.record.size(h.volume.uniqueName)).toBe(2 * Gi);
  });
});

describe('expandVolumeDuringMount', () => {
  it('expands a volume whose PV is already larger than its claim before it counts as mounted', async () => {
    const h = harness(pendingOnNode, async () => {});
    await expandVolumeDuringMount(h.deps, { ...h.volume, readOnly: false });
    expect(h.expanded).toEqual([2 * Gi]);
    expect(h.patches).toHaveLength(2);
    expect(h.events.map((e) => e[2])).toEqual(['FileSystemResizeSuccessful', 'FileSystemResizeSuccessful']);
  });

  it('does nothing when the claim already shows the PV size', async () => {
    const h = harness(claim({ capacity: { storage: '2Gi' } }), async () => {});
    await expandVolumeDuringMount(h.deps, { ...h.volume, readOnly: false });
    expect([h.expanded, h.patches, h.events]).toEqual([[], [], []]);
  });

  it('does not expand a read-only volume: FileSystemResizeFailed on the pod and the claim, and the mount goes on', async () => {
    const h = harness(pendingOnNode, async () => {});
    await expandVolumeDuringMount(h.deps, { ...h.volume, readOnly: true });
    expect(h.expanded).toEqual([]);
    const message = 'MountVolume.NodeExpandVolume failed for volume "pv-1" requested read-only file system';
    expect(h.events).toEqual([
      ['Pod', 'Warning', 'FileSystemResizeFailed', message],
      ['PersistentVolumeClaim', 'Warning', 'FileSystemResizeFailed', message],
    ]);
  });
});

// ---------------------------------------------------------------- the CSI plugin's NodeExpand

function fakeCsi(capabilities: NodeCapability[], answer: () => Promise<number>): CsiNode & { expands: NodeExpandVolumeArgs[] } {
  const expands: NodeExpandVolumeArgs[] = [];
  const unused = () => Promise.reject(new Error('not used'));
  return {
    expands,
    nodeGetInfo: unused,
    nodeGetCapabilities: async () => capabilities,
    supports: async (c) => capabilities.includes(c),
    nodeStageVolume: unused,
    nodeUnstageVolume: unused,
    nodePublishVolume: unused,
    nodeUnpublishVolume: unused,
    nodeGetVolumeStats: unused,
    nodeExpandVolume: async (args) => {
      expands.push(args);
      return answer();
    },
  };
}

const csiVolume: CsiVolume = {
  driver: 'mock.test',
  volumeHandle: '1',
  lifecycleMode: 'Persistent',
  readOnly: false,
  fsType: 'ext4',
  accessMode: 'ReadWriteOnce',
  accessModes: ['ReadWriteOnce'],
  mountOptions: ['noatime'],
  volumeAttributes: {},
  nodeStageSecretRef: null,
  nodePublishSecretRef: null,
  attachable: false,
};

describe('csiNodeExpand', () => {
  const expansion = { pv: { ...pv, spec: { ...pv.spec, csi: { driver: 'mock.test', volumeHandle: '1', nodeExpandSecretRef: { namespace: 'kube-system', name: 'expand' } } } }, volume: csiVolume, targetPath: '/r/pods/pod-uid/volumes/kubernetes.io~csi/pv-1/mount', newBytes: 2 * Gi };
  const deps = (csi: CsiNode, endpoint: string | null = '/csi.sock') => ({
    rootDir: '/r',
    drivers: { endpoint: () => endpoint },
    secret: async (namespace: string, name: string) => {
      if (name !== 'expand') throw new ApiError(404, 'NotFound', `secrets "${name}" not found`, `GET secrets ${namespace}/${name}`);
      return { key: 'value' };
    },
    client: () => csi,
  });

  it("sends the kubelet's arguments: the target and staging paths, the new size, the PV's mode, fsType and mount options, the expand secret", async () => {
    const csi = fakeCsi(['STAGE_UNSTAGE_VOLUME', 'EXPAND_VOLUME'], async () => 2 * Gi);
    await csiNodeExpand(deps(csi), expansion);
    expect(csi.expands).toEqual([
      {
        volumeId: '1',
        volumePath: '/r/pods/pod-uid/volumes/kubernetes.io~csi/pv-1/mount',
        stagingTargetPath: expect.stringMatching(/^\/r\/plugins\/kubernetes.io\/csi\/mock.test\/[0-9a-f]{64}\/globalmount$/),
        newSizeBytes: 2 * Gi,
        accessMode: 'ReadWriteOnce',
        fsType: 'ext4',
        mountOptions: ['noatime'],
        secrets: { key: 'value' },
      },
    ]);
  });

  it.each([
    ['no EXPAND_VOLUME', [] as NodeCapability[], async () => 0, 'notSupported', 'NodeExpand is not supported by the CSI driver mock.test'],
    ['FailedPrecondition', ['EXPAND_VOLUME'] as NodeCapability[], () => Promise.reject(CsiError.status('NodeExpandVolume', 'FAILED_PRECONDITION', 'in use')), 'failedPrecondition', 'Expander.NodeExpand failed to expand the volume : rpc error: code = FailedPrecondition desc = in use'],
    ['OutOfRange', ['EXPAND_VOLUME'] as NodeCapability[], () => Promise.reject(CsiError.status('NodeExpandVolume', 'OUT_OF_RANGE', 'too big')), 'infeasible', 'Expander.NodeExpand failed to expand the volume rpc error: code = OutOfRange desc = too big'],
    ['Unavailable (uncertain, but wrapped: finished)', ['EXPAND_VOLUME'] as NodeCapability[], () => Promise.reject(CsiError.status('NodeExpandVolume', 'UNAVAILABLE', 'gone')), 'finished', 'Expander.NodeExpand failed to expand the volume : rpc error: code = Unavailable desc = gone'],
  ])('%s', async (_, capabilities, answer, failure, message) => {
    const error = await csiNodeExpand(deps(fakeCsi(capabilities, answer)), expansion).catch((err: unknown) => err);
    expect(error).toBeInstanceOf(NodeExpandError);
    expect(error).toMatchObject({ failure, message });
  });

  it('is a transient failure while the driver is not registered, and a finished one when its secret cannot be read', async () => {
    await expect(csiNodeExpand(deps(fakeCsi(['EXPAND_VOLUME'], async () => 0), null), expansion)).rejects.toMatchObject({ failure: 'transient', message: 'driver name mock.test not found in the list of registered CSI drivers' });
    const missing = { ...expansion, pv: { ...pv, spec: { ...pv.spec, csi: { driver: 'mock.test', volumeHandle: '1', nodeExpandSecretRef: { namespace: 'kube-system', name: 'gone' } } } } };
    await expect(csiNodeExpand(deps(fakeCsi(['EXPAND_VOLUME'], async () => 0)), missing)).rejects.toMatchObject({
      failure: 'finished',
      message: 'expander.NodeExpand failed to get NodeExpandSecretRef kube-system/gone: kubernetes.io/csi: failed to find the secret gone in the namespace kube-system with error: secrets "gone" not found',
    });
  });
});
