/**
 * A pod volume backed by a claim, resolved to the PersistentVolume it is bound to, as the kubelet's
 * populator does it each time it processes the pod (pkg/kubelet/volumemanager/populator
 * desired_state_of_world_populator.go createVolumeSpec, getPVCExtractPV, getPVSpec): the claim and
 * the volume read live, and each way they may not fit the pod refused with the kubelet's words.
 * A generic ephemeral volume is the claim `<pod>-<volume>`, which must be the pod's own
 * (component-helpers storage/ephemeral VolumeClaimName, VolumeIsForPod).
 */
import type { Pod } from '../api/types.ts';
import type { PersistentVolume, PersistentVolumeClaim, PersistentVolumeMode } from '../api/storage.ts';
import { apiErrorText } from '../client/api.ts';
import type { PodVolume } from './plan.ts';

/** The finalizer that keeps a claim in use from going (pvc-protection). */
export const PVC_PROTECTION_FINALIZER = 'kubernetes.io/pvc-protection';
/** A PV's annotation naming a group that its pods get as a supplemental group (volume/util VolumeGidAnnotationKey). */
export const VOLUME_GID_ANNOTATION = 'pv.beta.kubernetes.io/gid';

/** The claim a pod volume names, and whether it is the pod's generic ephemeral volume; null: no claim. */
export function claimOf(pod: Pod, volume: PodVolume): { name: string; readOnly: boolean; ephemeral: boolean } | null {
  const claim = volume['persistentVolumeClaim'] as { claimName?: string; readOnly?: boolean } | undefined;
  if (claim) return { name: claim.claimName ?? '', readOnly: claim.readOnly === true, ephemeral: false };
  if (volume['ephemeral']) return { name: `${pod.metadata.name}-${volume.name}`, readOnly: false, ephemeral: true };
  return null;
}

/** getPVCExtractPV's checks of a claim that was read. */
export function claimProblem(pvc: PersistentVolumeClaim): string | null {
  // A claim being deleted still serves the pods that use it while pvc-protection holds it.
  if (pvc.metadata.deletionTimestamp && !(pvc.metadata.finalizers ?? []).includes(PVC_PROTECTION_FINALIZER)) return 'PVC is being deleted';
  if (pvc.status?.phase !== 'Bound') return 'PVC is not bound';
  if (!pvc.spec?.volumeName) return 'PVC has empty pvc.Spec.VolumeName';
  return null;
}

/** ephemeral.VolumeIsForPod: the claim of a generic ephemeral volume must be controlled by the pod. */
export function ephemeralOwnerProblem(pod: Pod, pvc: PersistentVolumeClaim): string | null {
  const owned = pvc.metadata.namespace === pod.metadata.namespace && (pvc.metadata.ownerReferences ?? []).some((ref) => ref.controller === true && ref.uid === pod.metadata.uid);
  return owned ? null : `PVC ${pvc.metadata.namespace}/${pvc.metadata.name} was not created for pod ${pod.metadata.namespace}/${pod.metadata.name} (pod is not owner)`;
}

/** getPVSpec's checks of the volume a claim names. */
export function volumeProblem(pv: PersistentVolume, claimUid: string | undefined): string | null {
  const name = pv.metadata.name;
  const ref = pv.spec?.claimRef;
  if (!ref) return `found PV object ${name} but it has a nil pv.Spec.ClaimRef indicating it is not yet bound to the claim`;
  if ((ref.uid ?? '') !== (claimUid ?? '')) return `found PV object ${name} but its pv.Spec.ClaimRef.UID ${ref.uid ?? ''} does not point to claim.UID ${claimUid ?? ''}`;
  return null;
}

/** createVolumeSpec: a volume's mode must be the way the pod uses it (volumeMounts: Filesystem; volumeDevices: Block). */
export function volumeModeProblem(volumeName: string, mode: PersistentVolumeMode | undefined, use: 'mount' | 'device'): string | null {
  const actual = mode ?? 'Filesystem';
  if (use === 'mount' && actual !== 'Filesystem') return `volume ${volumeName} has volumeMode ${actual}, but is specified in volumeMounts`;
  if (use === 'device' && actual !== 'Block') return `volume ${volumeName} has volumeMode ${actual}, but is specified in volumeDevices`;
  return null;
}

/** What a claim resolved to: the bound volume, read-only as the pod's reference says, and the group its annotation gives. */
export interface BoundClaim {
  claim: { namespace: string; name: string; uid: string };
  pv: PersistentVolume;
  readOnly: boolean;
  /** `pv.beta.kubernetes.io/gid`, when it is a number. */
  supplementalGroup?: number;
}

/** The live reads a resolution makes (the API client; the node authorizer lets a node read its pods' claims and their volumes). */
export interface ClaimReader {
  claim(namespace: string, name: string): Promise<PersistentVolumeClaim>;
  volume(name: string): Promise<PersistentVolume>;
}

/** A claim that cannot serve the pod now: the populator's error for the volume (retried at the pod's next processing). */
export class ClaimError extends Error {
  override readonly name = 'ClaimError';
}


/** createVolumeSpec for a claim-backed volume used by `use` (both, when some container mounts it and another maps it); rejects with a ClaimError worded as the kubelet's. */
export async function resolveClaim(reader: ClaimReader, pod: Pod, volume: PodVolume, use: 'mount' | 'device' | readonly ('mount' | 'device')[]): Promise<BoundClaim> {
  const ref = claimOf(pod, volume);
  if (!ref) throw new ClaimError(`volume ${volume.name} is not backed by a claim`);
  const namespace = pod.metadata.namespace;
  const wrapped = (why: string) => new ClaimError(`error processing PVC ${namespace}/${ref.name}: ${why}`);
  let pvc: PersistentVolumeClaim;
  try {
    pvc = await reader.claim(namespace, ref.name);
  } catch (err) {
    throw wrapped(`failed to fetch PVC from API server: ${apiErrorText(err)}`);
  }
  const problem = claimProblem(pvc);
  if (problem) throw wrapped(problem);
  if (ref.ephemeral) {
    const notOwned = ephemeralOwnerProblem(pod, pvc);
    if (notOwned) throw new ClaimError(notOwned);
  }
  const pvName = pvc.spec!.volumeName!;
  let pv: PersistentVolume;
  try {
    pv = await reader.volume(pvName);
  } catch (err) {
    throw wrapped(`failed to fetch PV ${pvName} from API server: ${apiErrorText(err)}`);
  }
  const mismatch = volumeProblem(pv, pvc.metadata.uid);
  if (mismatch) throw wrapped(mismatch);
  for (const each of typeof use === 'string' ? [use] : use) {
    const modeProblem = volumeModeProblem(volume.name, pv.spec?.volumeMode, each);
    if (modeProblem) throw new ClaimError(modeProblem);
  }
  const gid = pv.metadata.annotations?.[VOLUME_GID_ANNOTATION];
  const supplementalGroup = gid !== undefined && /^\d+$/.test(gid) ? Number(gid) : undefined;
  return {
    claim: { namespace, name: ref.name, uid: pvc.metadata.uid ?? '' },
    pv,
    readOnly: ref.readOnly,
    ...(supplementalGroup !== undefined ? { supplementalGroup } : {}),
  };
}
