/**
 * Online expansion of a mounted volume, the kubelet's decisions (pure), and the actual state's
 * record of sizes they read:
 *
 *   - when (desired_state_of_world_populator.go checkVolumeFSResize, actual_state_of_world.go
 *     volumeNeedsExpansion): at each processing of the pod, a claim's volume that is mounted and
 *     writable wants expansion once its PersistentVolume's capacity is above the size the node
 *     last knew it at (the claim's `status.capacity` when first seen mounted, then each size it
 *     was expanded to), unless the driver said it cannot expand it in use (FailedPrecondition);
 *   - which way (operation_generator.go checkForRecoveryFromExpansion, RecoverVolumeExpansionFailure
 *     GA since 1.34): a claim whose `status.allocatedResourceStatuses.storage` or
 *     `status.allocatedResources` the resizer set takes the node expander (node_expander.go) to the
 *     allocated size; one with neither (an older resizer) the legacy call to the PV's size;
 *   - whether the node expander proceeds (node_expander.go runPreCheck);
 *   - the claim status patches (pkg/volume/util/resize_util.go MarkNodeExpansionInProgress,
 *     MarkNodeExpansionFinishedWithRecovery / MarkFSResizeFinished, MarkNodeExpansionInfeasible,
 *     MarkNodeExpansionFailedCondition), as strategic merge patches of `pvc/status`. Those that
 *     PatchPVCStatus sends carry the claim's resourceVersion (a claim changed meanwhile is a 409,
 *     retried with the operation).
 * The operation that runs them is src/volumes/nodeExpander.ts.
 */
import { quantityValue } from '../api/quantity.ts';
import type { PersistentVolumeClaim, PersistentVolumeClaimCondition } from '../api/storage.ts';

const STORAGE = 'storage';

/** v1.ClaimResourceStatus values. */
const NODE_RESIZE_PENDING = 'NodeResizePending';
const NODE_RESIZE_IN_PROGRESS = 'NodeResizeInProgress';
const NODE_RESIZE_INFEASIBLE = 'NodeResizeInfeasible';

/** resize_util.go knownResizeConditions: the conditions a finished node expansion clears. */
const RESIZE_CONDITIONS: ReadonlySet<string> = new Set(['FileSystemResizePending', 'Resizing', 'ControllerResizeError', 'NodeResizeError']);
const NODE_RESIZE_ERROR = 'NodeResizeError';

/** volumetypes.NodeExpansionNotRequired: an RWX claim already expanded on some node that needs no expansion on the others. */
const NODE_EXPANSION_NOT_REQUIRED_ANNOTATION = 'volume.kubernetes.io/node-expansion-not-required';

/** A quantity's bytes, rounded up as resource.Quantity.Value() rounds; 0 when absent. */
export const bytesOf = (quantity: string | undefined) => Math.ceil(quantityValue(quantity));

/** The claim's storage resize status (`allocatedResourceStatuses.storage`), '' when none. */
const resizeStatusOf = (pvc: PersistentVolumeClaim) => pvc.status?.allocatedResourceStatuses?.[STORAGE] ?? '';

/**
 * volumeNeedsExpansion over what checkVolumeFSResize recorded: a read-only volume is never
 * expanded (its desired size is not recorded); either size unknown (0) is not a reason to.
 */
export function fsResizeRequired(volume: { readOnly: boolean; desiredBytes: number; currentBytes: number; inUseError: boolean }): boolean {
  if (volume.readOnly || volume.inUseError) return false;
  if (volume.currentBytes === 0 || volume.desiredBytes === 0) return false;
  return volume.desiredBytes > volume.currentBytes;
}

/**
 * checkForRecoveryFromExpansion: the node expander to the allocated size (`recovery`), or, with a
 * resizer that sets neither the status nor the allocated resources, the legacy call (`legacy`).
 */
export function expansionPath(pvc: PersistentVolumeClaim): 'recovery' | 'legacy' {
  return resizeStatusOf(pvc) === '' && pvc.status?.allocatedResources === undefined ? 'legacy' : 'recovery';
}

/** The size the node expander expands to: the claim's allocated storage (nodeExpandVolume). */
export const allocatedStorageOf = (pvc: PersistentVolumeClaim) => pvc.status?.allocatedResources?.[STORAGE];

export interface NodeExpansionPrecheck {
  /** The driver is to be called. */
  allow: boolean;
  /** The claim already shows the new size and no resize status (expanded elsewhere): no status patch. */
  pvcAlreadyUpdated: boolean;
  /** A failure marks the claim's expansion infeasible (the user changed the request after a final error). */
  markInfeasibleOnFailure: boolean;
}

/**
 * node_expander.go runPreCheck for an expansion to `newBytes`; `failedWithFinalError`: this node's
 * last expansion of the volume ended with a final error (CheckVolumeInFailedExpansionWithFinalErrors).
 */
export function nodeExpansionPrecheck(pvc: PersistentVolumeClaim, newBytes: number, failedWithFinalError: boolean): NodeExpansionPrecheck {
  const resizeStatus = resizeStatusOf(pvc);
  const markInfeasibleOnFailure = bytesOf(pvc.spec?.resources?.requests?.[STORAGE]) !== newBytes && failedWithFinalError;
  const pvcAlreadyUpdated = bytesOf(pvc.status?.capacity?.[STORAGE]) >= newBytes && resizeStatus === '';
  const rwxElsewhere = pvcAlreadyUpdated && (pvc.spec?.accessModes ?? []).includes('ReadWriteMany') && !(NODE_EXPANSION_NOT_REQUIRED_ANNOTATION in (pvc.metadata.annotations ?? {}));
  const allow = rwxElsewhere || resizeStatus === NODE_RESIZE_PENDING || resizeStatus === NODE_RESIZE_IN_PROGRESS;
  return { allow, pvcAlreadyUpdated, markInfeasibleOnFailure };
}

/** The patch's optimistic-lock part (resize_util.go addResourceVersion). */
const locked = (pvc: PersistentVolumeClaim) => (pvc.metadata.resourceVersion ? { metadata: { resourceVersion: pvc.metadata.resourceVersion } } : {});

/** MarkNodeExpansionInProgress: `allocatedResourceStatuses.storage: NodeResizeInProgress`. */
export function nodeResizeInProgressPatch(pvc: PersistentVolumeClaim): object {
  return { ...locked(pvc), status: { allocatedResourceStatuses: { [STORAGE]: NODE_RESIZE_IN_PROGRESS } } };
}

/**
 * MarkNodeExpansionFinishedWithRecovery and MarkFSResizeFinished (the feature gate on): the new
 * capacity, the storage resize status dropped, every resize condition removed (the others kept).
 */
export function nodeExpansionFinishedPatch(pvc: PersistentVolumeClaim, newSize: string): object {
  const kept = (pvc.status?.conditions ?? []).filter((c) => !RESIZE_CONDITIONS.has(c.type));
  return {
    ...locked(pvc),
    status: {
      capacity: { [STORAGE]: newSize },
      allocatedResourceStatuses: { [STORAGE]: null },
      // The whole list replaced: what CreateTwoWayMergePatch's deletions of the resize conditions amount to.
      conditions: [{ $patch: 'replace' }, ...kept],
    },
  };
}

/** A NodeResizeError condition of the failure, merged into the claim's conditions (MergeResizeConditionOnPVC, old ones kept). */
function nodeResizeErrorConditions(pvc: PersistentVolumeClaim, error: string, now: string): PersistentVolumeClaimCondition[] {
  const condition: PersistentVolumeClaimCondition = { type: NODE_RESIZE_ERROR, status: 'True', lastTransitionTime: now, message: `failed to expand pvc with ${error}` };
  const old = pvc.status?.conditions ?? [];
  const same = old.find((c) => c.type === NODE_RESIZE_ERROR);
  if (!same) return [...old, condition];
  return old.map((c) => (c.type === NODE_RESIZE_ERROR && c.status !== condition.status ? condition : c));
}

/** MarkNodeExpansionInfeasible: `NodeResizeInfeasible` and a NodeResizeError condition (no resourceVersion check). */
export function nodeExpansionInfeasiblePatch(pvc: PersistentVolumeClaim, error: string, now: string): object {
  return { status: { allocatedResourceStatuses: { [STORAGE]: NODE_RESIZE_INFEASIBLE }, conditions: [{ $patch: 'replace' }, ...nodeResizeErrorConditions(pvc, error, now)] } };
}

/** MarkNodeExpansionFailedCondition: a NodeResizeError condition (no resourceVersion check). */
export function nodeExpansionFailedPatch(pvc: PersistentVolumeClaim, error: string, now: string): object {
  return { status: { conditions: [{ $patch: 'replace' }, ...nodeResizeErrorConditions(pvc, error, now)] } };
}

/**
 * The actual state's sizes and marks of the volumes (by unique name) that the node expands: the
 * size each is known at (persistentVolumeSize: InitializeClaimSize, MarkVolumeAsResized), the
 * volumes whose last expansion ended with a final error, and those whose driver cannot expand
 * them in use (MarkForInUseExpansionError). Forgotten with the volume.
 */
export class ExpansionRecord {
  private readonly sizes = new Map<string, number>();
  private readonly finalErrors = new Set<string>();
  private readonly inUseErrors = new Set<string>();

  /** InitializeClaimSize: the claim's status capacity, only while the volume has no size yet. */
  initializeSize(uniqueName: string, bytes: number): void {
    if (!this.sizes.get(uniqueName)) this.sizes.set(uniqueName, bytes);
  }

  size(uniqueName: string): number {
    return this.sizes.get(uniqueName) ?? 0;
  }

  /** MarkVolumeAsResized. */
  markResized(uniqueName: string, bytes: number): void {
    this.sizes.set(uniqueName, bytes);
  }

  markFinalError(uniqueName: string): void {
    this.finalErrors.add(uniqueName);
  }

  failedWithFinalError(uniqueName: string): boolean {
    return this.finalErrors.has(uniqueName);
  }

  markInUseError(uniqueName: string): void {
    this.inUseErrors.add(uniqueName);
  }

  inUseError(uniqueName: string): boolean {
    return this.inUseErrors.has(uniqueName);
  }

  /** The volume left the actual state (its last pod unmounted it). */
  forget(uniqueName: string): void {
    this.sizes.delete(uniqueName);
    this.finalErrors.delete(uniqueName);
    this.inUseErrors.delete(uniqueName);
  }
}
