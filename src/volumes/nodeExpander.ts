/**
 * The online expansion of a mounted claim's volume, as the kubelet's operation generator runs it
 * (operation_generator.go GenerateExpandInUseVolumeFunc → doOnlineExpansion → nodeExpandVolume,
 * then node_expander.go expandOnPlugin, or legacyCallNodeExpandOnPlugin for a claim an older
 * resizer handles), over the decisions of expansion.ts:
 *
 *   1. the claim read live (its PV's claimRef);
 *   2. recovery path: the size is the claim's allocated storage; the precheck decides whether to
 *      go on; the claim's status patched `NodeResizeInProgress` (unless already updated);
 *   3. the plugin's NodeExpand (src/volumes/csi/expand.ts);
 *   4. success: Normal `FileSystemResizeSuccessful` on the pod and on the claim
 *      (`MountVolume.NodeExpandVolume succeeded for volume "<pv>" <node>`), the claim's status
 *      patched to the new capacity with the resize status and conditions cleared, and the volume
 *      known at the new size (MarkVolumeAsResized);
 *   5. failure: a finished one marks the volume (final error) and the claim (`NodeResizeInfeasible`
 *      for an infeasible one, else a `NodeResizeError` condition); FailedPrecondition means the
 *      driver cannot expand it in use: never again while mounted, and not an error of the
 *      operation; anything else rejects with the operation's message
 *      (`NodeExpandVolume.NodeExpandVolume failed for volume "<pv>" : <err>`), which the caller
 *      records as a Warning `VolumeResizeFailed` on the pod, and the operation is retried.
 * A precheck that says no (the claim is not pending a node resize) ends the operation quietly;
 * the next processing of the pod looks again. The same expansion runs as a claim's volume is
 * mounted (expandVolumeDuringMount), when its PV is already larger than its claim.
 */
import type { ObjectReference } from '../api/cluster.ts';
import type { PersistentVolume, PersistentVolumeClaim } from '../api/storage.ts';
import type { Pod } from '../api/types.ts';
import { apiErrorText } from '../client/api.ts';
import type { EventRecorder } from '../eventrecorder/recorder.ts';
import { podReference } from '../eventrecorder/recorder.ts';
import type { Logger } from '../log.ts';
import { type CsiExpandDeps, NodeExpandError } from './csi/expand.ts';
import {
  type ExpansionRecord,
  allocatedStorageOf,
  bytesOf,
  expansionPath,
  nodeExpansionFailedPatch,
  nodeExpansionFinishedPatch,
  nodeExpansionInfeasiblePatch,
  nodeExpansionPrecheck,
  nodeResizeInProgressPatch,
} from './expansion.ts';

/** The claim reads and status writes of the node's client (the Node authorizer lets a node patch its pods' claims' status). */
export interface ClaimStatusAccess {
  claim(namespace: string, name: string): Promise<PersistentVolumeClaim>;
  patchStatus(namespace: string, name: string, patch: object): Promise<PersistentVolumeClaim>;
}

/** What the online expansion of claims' volumes needs on a node: the claims' status through its client, the CSI plugin's NodeExpand. */
export interface VolumeExpansionParts {
  nodeName: string;
  claims: ClaimStatusAccess;
  csi: CsiExpandDeps;
  now(): number;
}

export interface NodeExpanderDeps {
  nodeName: string;
  claims: ClaimStatusAccess;
  record: ExpansionRecord;
  recorder: EventRecorder;
  log: Logger;
  /** RFC 3339 now, for the conditions' lastTransitionTime. */
  now(): string;
}

/** A mounted volume to expand, as the reconciler hands it over. */
export interface InUseVolume {
  pod: Pod;
  uniqueName: string;
  /** The PersistentVolume's name, what the messages name the volume by. */
  specName: string;
  pv: PersistentVolume;
  /** The size the node knows it at, and its PV's. */
  currentBytes: number;
  desiredBytes: number;
  /** The plugin's NodeExpand to `newBytes`; rejects with a NodeExpandError. */
  nodeExpand(newBytes: number): Promise<void>;
}

const reason = (err: unknown) => (err instanceof Error ? err.message : String(err));

const claimReference = (pvc: PersistentVolumeClaim): ObjectReference => ({
  kind: 'PersistentVolumeClaim',
  apiVersion: 'v1',
  namespace: pvc.metadata.namespace ?? '',
  name: pvc.metadata.name ?? '',
  uid: pvc.metadata.uid ?? '',
});

/** GenerateExpandInUseVolumeFunc's operation; rejects with its VolumeResizeFailed message. */
export async function expandInUseVolume(deps: NodeExpanderDeps, volume: InUseVolume): Promise<void> {
  try {
    const resized = await nodeExpandVolume(deps, volume);
    if (resized !== null) deps.record.markResized(volume.uniqueName, resized);
  } catch (err) {
    throw new Error(`NodeExpandVolume.NodeExpandVolume failed for volume ${JSON.stringify(volume.specName)} : ${reason(err)}`);
  }
}

/**
 * operation_generator.go expandVolumeDuringMount, after a claim's volume is set up for a pod and
 * before it counts as mounted: a PV larger than its claim's capacity (expanded while no pod used
 * it) is expanded now, so the pod starts on the new size. A read-only volume is not: Warning
 * `FileSystemResizeFailed` on the pod and the claim, and the mount goes on. Rejects with the cause
 * (the caller words it `MountVolume.Setup failed while expanding volume`).
 */
export async function expandVolumeDuringMount(deps: NodeExpanderDeps, volume: Omit<InUseVolume, 'currentBytes' | 'desiredBytes'> & { readOnly: boolean }): Promise<void> {
  const pvc = await claimOf(deps, volume.pv);
  const currentBytes = bytesOf(pvc.status?.capacity?.['storage']);
  const desiredBytes = bytesOf(volume.pv.spec?.capacity?.['storage']);
  if (currentBytes >= desiredBytes) return;
  if (volume.readOnly) {
    const message = `MountVolume.NodeExpandVolume failed for volume ${JSON.stringify(volume.specName)} requested read-only file system`;
    deps.recorder.event(podReference(volume.pod), 'Warning', 'FileSystemResizeFailed', message);
    deps.recorder.event(claimReference(pvc), 'Warning', 'FileSystemResizeFailed', message);
    return;
  }
  const sized = { ...volume, currentBytes, desiredBytes };
  await (expansionPath(pvc) === 'recovery' ? expandOnPlugin(deps, sized, pvc) : legacyExpandOnPlugin(deps, sized, pvc));
}

/** The PV's claim, read live (the error as nodeExpandVolume words it). */
async function claimOf(deps: NodeExpanderDeps, pv: PersistentVolume): Promise<PersistentVolumeClaim> {
  const ref = pv.spec?.claimRef;
  try {
    return await deps.claims.claim(ref?.namespace ?? '', ref?.name ?? '');
  } catch (err) {
    throw new Error(`mountVolume.NodeExpandVolume get PVC failed : ${apiErrorText(err)}`);
  }
}

/** nodeExpandVolume: the size the volume is now known at, or null when it was not resized (nothing to do yet). */
async function nodeExpandVolume(deps: NodeExpanderDeps, volume: InUseVolume): Promise<number | null> {
  if (volume.desiredBytes <= volume.currentBytes) return null;
  const pvc = await claimOf(deps, volume.pv);
  return expansionPath(pvc) === 'recovery' ? expandOnPlugin(deps, volume, pvc) : legacyExpandOnPlugin(deps, volume, pvc);
}

/** resize_util.go PatchPVCStatus's error. */
async function patchStatus(deps: NodeExpanderDeps, pvc: PersistentVolumeClaim, patch: object): Promise<PersistentVolumeClaim> {
  try {
    return await deps.claims.patchStatus(pvc.metadata.namespace ?? '', pvc.metadata.name ?? '', patch);
  } catch (err) {
    throw new Error(`patchPVCStatus failed to patch PVC ${JSON.stringify(pvc.metadata.name)}: ${apiErrorText(err)}`);
  }
}

function succeeded(deps: NodeExpanderDeps, volume: InUseVolume, pvc: PersistentVolumeClaim): void {
  const message = `MountVolume.NodeExpandVolume succeeded for volume ${JSON.stringify(volume.specName)} ${deps.nodeName}`;
  deps.recorder.event(podReference(volume.pod), 'Normal', 'FileSystemResizeSuccessful', message);
  deps.recorder.event(claimReference(pvc), 'Normal', 'FileSystemResizeSuccessful', message);
}

/** node_expander.go expandOnPlugin, to the claim's allocated size. */
async function expandOnPlugin(deps: NodeExpanderDeps, volume: InUseVolume, claim: PersistentVolumeClaim): Promise<number | null> {
  let pvc = claim;
  const newSize = allocatedStorageOf(pvc) ?? '0';
  const newBytes = bytesOf(newSize);
  const check = nodeExpansionPrecheck(pvc, newBytes, deps.record.failedWithFinalError(volume.uniqueName));
  if (!check.allow) return check.pvcAlreadyUpdated ? newBytes : null;
  if (!check.pvcAlreadyUpdated) pvc = await patchStatus(deps, pvc, nodeResizeInProgressPatch(pvc));
  try {
    await volume.nodeExpand(newBytes);
  } catch (err) {
    const failure = err instanceof NodeExpandError ? err.failure : 'finished';
    if (failure === 'notSupported' && check.pvcAlreadyUpdated) return newBytes;
    if (failure !== 'transient') {
      deps.record.markFinalError(volume.uniqueName);
      const patch = failure === 'infeasible' || check.markInfeasibleOnFailure ? nodeExpansionInfeasiblePatch(pvc, reason(err), deps.now()) : nodeExpansionFailedPatch(pvc, reason(err), deps.now());
      await patchStatus(deps, pvc, patch).catch((patchErr: unknown) =>
        deps.log('error', 'MountVolume.NodeExpandVolume failed to mark node expansion as failed', { pod: `${volume.pod.metadata.namespace}/${volume.pod.metadata.name}`, volume: volume.specName, err: reason(patchErr) }),
      );
    }
    if (failure === 'failedPrecondition') {
      deps.record.markInUseError(volume.uniqueName);
      deps.log('error', `MountVolume.NodeExpandVolume failed with ${reason(err)}`, { pod: `${volume.pod.metadata.namespace}/${volume.pod.metadata.name}`, volume: volume.specName });
      return null;
    }
    throw err;
  }
  succeeded(deps, volume, pvc);
  if (check.pvcAlreadyUpdated) return newBytes;
  try {
    await deps.claims.patchStatus(pvc.metadata.namespace ?? '', pvc.metadata.name ?? '', nodeExpansionFinishedPatch(pvc, newSize));
  } catch (err) {
    throw new Error(`mountVolume.NodeExpandVolume update pvc status failed: patchPVCStatus failed to patch PVC ${JSON.stringify(pvc.metadata.name)}: ${apiErrorText(err)}`);
  }
  return newBytes;
}

/** legacyCallNodeExpandOnPlugin, to the PV's size, for a claim whose resizer sets no allocated resources. */
async function legacyExpandOnPlugin(deps: NodeExpanderDeps, volume: InUseVolume, pvc: PersistentVolumeClaim): Promise<number | null> {
  const newSize = volume.pv.spec?.capacity?.['storage'] ?? '0';
  const newBytes = volume.desiredBytes;
  try {
    await volume.nodeExpand(newBytes);
  } catch (err) {
    const failure = err instanceof NodeExpandError ? err.failure : 'finished';
    if (failure === 'notSupported') return newBytes;
    if (failure === 'failedPrecondition') {
      deps.record.markInUseError(volume.uniqueName);
      deps.log('error', `MountVolume.NodeExpandVolume failed for volume ${JSON.stringify(volume.specName)} : ${reason(err)}`, { pod: `${volume.pod.metadata.namespace}/${volume.pod.metadata.name}` });
      return newBytes;
    }
    throw err;
  }
  succeeded(deps, volume, pvc);
  if (bytesOf(pvc.status?.capacity?.['storage']) >= newBytes) return newBytes;
  try {
    await deps.claims.patchStatus(pvc.metadata.namespace ?? '', pvc.metadata.name ?? '', nodeExpansionFinishedPatch(pvc, newSize));
  } catch (err) {
    throw new Error(`mountVolume.NodeExpandVolume update PVC status failed : patchPVCStatus failed to patch PVC ${JSON.stringify(pvc.metadata.name)}: ${apiErrorText(err)}`);
  }
  return newBytes;
}
