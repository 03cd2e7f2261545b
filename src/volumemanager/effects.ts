/**
 * The volume manager's effects over the node's parts: the upkeep's (the mount table, the token
 * cache) and each pod volume's operations, which set a volume up or tear it down with its plugin
 * (src/volumes/setUp.ts in-process, src/volumes/csi/operations.ts through a CSI driver) and record
 * the outcome in the volume world's actual state. A failed set-up is the pod's Warning
 * `FailedMount` event, worded as the kubelet's operation generator words it
 * (`MountVolume.SetUp failed for volume "<name>" : <cause>`), except the attach verification's,
 * which the kubelet only logs. A raw block volume (`map`) is mapped instead (src/volumes/localBlock.ts,
 * src/volumes/csi/block.ts): its failure is `FailedMapVolume` (GenerateMapVolumeFunc's
 * eventRecorderFunc), and its teardown unmaps it.
 * A claim's CSI volume whose PV is already larger than its claim is expanded before it counts as
 * mounted; a mounted one whose PV grew is expanded online (`expand`), a failure being the pod's
 * Warning `VolumeResizeFailed` (src/volumes/nodeExpander.ts). At start, the volumes an earlier run
 * left set up are reconstructed into the volume world and the CSI plugin's state (`reconstructVolumes`).
 */
import type { Pod } from '../api/types.ts';
import type { EventRecorder } from '../eventrecorder/recorder.ts';
import { podReference } from '../eventrecorder/recorder.ts';
import type { PodVolumeRef } from '../events.ts';
import type { Logger } from '../log.ts';
import { type CsiOperations, type CsiPodVolume, CsiOperationError } from '../volumes/csi/operations.ts';
import { type CsiKind, type DesiredVolume, type InTreeKind, isCsiKind } from '../volumes/desired.ts';
import { type VolumeDeps, setUpVolume, tearDownVolume } from '../volumes/setUp.ts';
import { tearDownLocalDevice } from '../volumes/persistent.ts';
import type { BoundClaim } from '../volumes/claims.ts';
import { csiNodeExpand } from '../volumes/csi/expand.ts';
import type { CsiVolume } from '../volumes/csi/spec.ts';
import { type VolumeExpansionParts, expandInUseVolume, expandVolumeDuringMount } from '../volumes/nodeExpander.ts';
import { reconstructPodVolumes } from '../volumes/reconstruct.ts';
import type { LoopDevices } from '../volumes/blockMap.ts';
import type { CsiBlockOperations } from '../volumes/csi/block.ts';
import { mapLocalBlockVolume, releaseLocalBlockVolume, unmapLocalBlockVolume } from '../volumes/localBlock.ts';
import type { VolumeWorld } from '../volumes/world.ts';
import type { PodVolumeEffects } from './podVolume.ts';

export interface PodVolumeParts {
  world: VolumeWorld;
  /** The plugins' dependencies as they are now (the node's allocatable memory may change). */
  deps(): VolumeDeps;
  recorder: EventRecorder;
  log: Logger;
  /** The CSI plugin's operations (its driver table, the attach state). */
  csi: CsiOperations;
  /** The raw block volumes' parts: the CSI block mapper, and the loop devices a mapped device is held open by. */
  block: { csi: CsiBlockOperations; loops: LoopDevices };
  /** In a cluster: the online expansion's parts (a standalone node has no claims). */
  expansion?: VolumeExpansionParts;
}

const errorText = (err: unknown) => (err instanceof Error ? err.message : String(err));
const csiRef = (ref: PodVolumeRef & { kind: CsiKind }): CsiPodVolume => ({ id: ref.id, uid: ref.uid, uniqueName: ref.uniqueName, specName: ref.specName, kind: ref.kind });
const isCsiRef = (ref: PodVolumeRef): ref is PodVolumeRef & { kind: CsiKind } => isCsiKind(ref.kind);

export interface ReconstructionParts {
  world: VolumeWorld;
  csi: CsiOperations;
  /** The CSI block mapper, which adopts the mapped CSI volumes found. */
  csiBlock: CsiBlockOperations;
  podsDir: string;
  /** The Node's `status.volumesAttached` names; absent on a node without an API server. */
  volumesAttached?: () => Promise<string[]>;
  log: Logger;
}

/**
 * reconstruct.go reconstructVolumes, once at the volume manager's start: the volumes found under the
 * pods directory, mounted and mapped, enter the actual state as uncertain, those the Node lists attached marked attached
 * (updateReconstructedFromNodeStatus, so they stay in `volumesInUse` until unmounted); what cannot be
 * reconstructed is logged and left to the orphan cleanup. Returns how many were reconstructed.
 */
export async function reconstructVolumes({ world, csi, csiBlock, podsDir, volumesAttached, log }: ReconstructionParts): Promise<number> {
  const { volumes, failed } = await reconstructPodVolumes(podsDir).catch((err: unknown) => {
    log('error', 'Cannot get volumes from disk, skip sync states for volume reconstruction', { err: errorText(err) });
    return { volumes: [], failed: [] };
  });
  for (const { volume, error } of failed) log('info', 'Could not construct volume information', { podUID: volume.uid, volumeSpecName: volume.specName, err: error });
  if (volumesAttached && volumes.length > 0) {
    try {
      const attached = new Set(await volumesAttached());
      for (const volume of volumes) if (attached.has(volume.uniqueName)) world.markAttached(volume.uniqueName);
    } catch (err) {
      log('warn', 'Failed to get Node status to reconstruct device paths', { err: errorText(err) });
    }
  }
  const added = world.addReconstructed(volumes, (volume) => {
    if (volume.kind === 'localPV') return;
    if (volume.map) csiBlock.adoptReconstructed(volume);
    else csi.adoptReconstructed({ uid: volume.uid, uniqueName: volume.uniqueName, kind: volume.kind });
  });
  for (const volume of added) log('info', 'Volume is marked as uncertain and added into the actual state', { podUID: volume.uid, volumeName: volume.uniqueName });
  log('info', 'Volume reconstruction finished', { volumes: added.length });
  return added.length;
}

/** metav1.Now() as the API writes it: RFC 3339 to the second. */
const rfc3339 = (ms: number) => new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z');

export function createPodVolumeEffects({ world, deps, recorder, log, csi, block, expansion }: PodVolumeParts): PodVolumeEffects {
  const expander = (parts: VolumeExpansionParts) => ({ nodeName: parts.nodeName, claims: parts.claims, record: world.expansion, recorder, log, now: () => rfc3339(parts.now()) });
  /** expandVolumeDuringMount: a claim's PV already larger than its claim is expanded before the volume counts as mounted. */
  const expandDuringMount = async (parts: VolumeExpansionParts, pod: Pod, ref: PodVolumeRef, claim: BoundClaim, volume: CsiVolume, targetPath: string) => {
    const pv = claim.pv;
    try {
      await expandVolumeDuringMount(expander(parts), {
        ...{ pod, uniqueName: ref.uniqueName, specName: ref.specName, pv, readOnly: claim.readOnly },
        nodeExpand: (newBytes) => csiNodeExpand(parts.csi, { pv, volume, targetPath, newBytes }),
      });
    } catch (err) {
      throw new Error(`MountVolume.Setup failed while expanding volume for volume ${JSON.stringify(ref.specName)} : ${errorText(err)}`);
    }
  };
  const blockDeps = () => ({ podsDir: deps().podsDir, mounter: deps().mounter, loops: block.loops });
  /** A raw block volume's map: a local volume's device, or a CSI volume staged, published and mapped. */
  const mapVolume = (pod: Pod, ref: PodVolumeRef, volume: DesiredVolume) =>
    isCsiRef(ref) ? block.csi.map(pod, csiRef(ref), volume.csi!) : mapLocalBlockVolume(blockDeps(), ref.uid, volume.claim!.pv);
  const unmapVolume = async (ref: PodVolumeRef) => {
    if (isCsiRef(ref)) {
      await block.csi.unmap(csiRef(ref));
      world.markUnmounted(ref.uid, ref.outerName, ref.uniqueName);
      await block.csi.release(csiRef(ref));
      return;
    }
    await unmapLocalBlockVolume(blockDeps(), ref.uid, ref.specName);
    world.markUnmounted(ref.uid, ref.outerName, ref.uniqueName);
    // The global map directory goes with the volume's last pod (GenerateUnmapDeviceFunc).
    if (!world.inUse(ref.uniqueName)) await releaseLocalBlockVolume(deps().podsDir, ref.specName);
  };
  return {
    async mount(ref: PodVolumeRef) {
      const wanted = world.desiredVolume(ref.uid, ref.outerName);
      // The pod no longer wants it (its teardown is asked for already): nothing to set up.
      if (!wanted || wanted.volume.uniqueName !== ref.uniqueName) return;
      const { pod, volume } = wanted;
      let path: string;
      try {
        if (ref.map) {
          const mapping = await mapVolume(pod, ref, volume);
          path = mapping.link;
          // GenerateMapVolumeFunc's two Normal events (GenerateMsg: `<op> for volume "<spec>" <detail>`).
          for (const detail of [`globalMapPath ${JSON.stringify(mapping.globalMapPath)}`, `volumeMapPath ${JSON.stringify(mapping.volumeMapPath)}`]) {
            recorder.event(podReference(pod), 'Normal', 'SuccessfulMountVolume', `MapVolume.MapPodDevice succeeded for volume ${JSON.stringify(ref.specName)} ${detail}`);
          }
        } else {
          path = isCsiRef(ref) ? await csi.mount(pod, csiRef(ref), volume.csi!) : await setUpVolume(deps(), pod, volume as typeof volume & { kind: InTreeKind });
          if (ref.kind === 'csiPV' && volume.claim && volume.csi && expansion) await expandDuringMount(expansion, pod, ref, volume.claim, volume.csi, path);
        }
      } catch (err) {
        const message = errorText(err);
        if (!(err instanceof CsiOperationError) || err.recordEvent) recorder.event(podReference(pod), 'Warning', ref.map ? 'FailedMapVolume' : 'FailedMount', message);
        log('warn', ref.map ? 'Volume map failed' : 'Volume set-up failed', { pod: ref.pod, volume: ref.outerName, err: message });
        throw err;
      }
      const claim = volume.claim;
      world.markMounted(ref.uid, {
        outerName: ref.outerName,
        uniqueName: ref.uniqueName,
        kind: ref.kind,
        path,
        ...(ref.map ? { mapped: true as const } : {}),
        readOnly: volume.csi?.readOnly ?? claim?.readOnly ?? false,
        ...(claim?.supplementalGroup !== undefined ? { supplementalGroup: claim.supplementalGroup } : {}),
        ...(claim ? { claim: { namespace: claim.claim.namespace, name: claim.claim.name } } : {}),
        ...(volume.csi ? { csi: { driver: volume.csi.driver, volumeHandle: volume.csi.volumeHandle } } : {}),
      });
    },
    async expand(ref: PodVolumeRef) {
      const wanted = world.volumeToExpand(ref.uid, ref.outerName);
      // Nothing to expand any more (expanded, its pod gone), or no API server to read the claim from.
      if (!wanted || wanted.volume.uniqueName !== ref.uniqueName || !expansion) return;
      const { pod, volume, currentBytes, desiredBytes } = wanted;
      const pv = volume.claim.pv;
      const targetPath = world.mountedVolumes(ref.uid).get(ref.outerName)?.path ?? '';
      try {
        await expandInUseVolume(expander(expansion), {
          ...{ pod, uniqueName: ref.uniqueName, specName: ref.specName, pv, currentBytes, desiredBytes },
          nodeExpand: (newBytes) => csiNodeExpand(expansion.csi, { pv, volume: volume.csi!, targetPath, newBytes }),
        });
      } catch (err) {
        const message = errorText(err);
        recorder.event(podReference(pod), 'Warning', 'VolumeResizeFailed', message);
        log('warn', 'Volume expansion failed', { pod: ref.pod, volume: ref.outerName, err: message });
        throw err;
      }
    },
    async unmount(ref: PodVolumeRef) {
      if (ref.map) {
        try {
          await unmapVolume(ref);
        } catch (err) {
          log('warn', 'Volume unmap failed', { pod: ref.pod, volume: ref.outerName, err: errorText(err) });
          throw err;
        }
        world.operationEnded(ref.id);
        return;
      }
      if (isCsiRef(ref)) {
        // The publish goes first, and the pod's volume with it; the device is the volume's, unmounted after its last pod.
        try {
          await csi.unpublish(csiRef(ref));
          world.markUnmounted(ref.uid, ref.outerName, ref.uniqueName);
          await csi.release(csiRef(ref));
        } catch (err) {
          log('warn', 'Volume teardown failed', { pod: ref.pod, volume: ref.outerName, err: errorText(err) });
          throw err;
        }
        world.operationEnded(ref.id);
        return;
      }
      try {
        // Not a CSI kind (above).
        await tearDownVolume(deps(), ref.uid, { ...ref, kind: ref.kind as InTreeKind });
      } catch (err) {
        log('warn', 'Volume teardown failed', { pod: ref.pod, volume: ref.outerName, err: err instanceof Error ? err.message : String(err) });
        throw new Error(`UnmountVolume.TearDown failed for volume "${ref.outerName}" (UniqueName: "${ref.uniqueName}") pod "${ref.uid}": ${err instanceof Error ? err.message : String(err)}`);
      }
      world.markUnmounted(ref.uid, ref.outerName, ref.uniqueName);
      // A block-backed local volume's device mount goes with its last pod (reconciler unmountDetachDevices).
      if (ref.kind === 'localPV' && !world.inUse(ref.uniqueName)) await tearDownLocalDevice(deps().mounter, deps().podsDir, ref.specName);
      world.operationEnded(ref.id);
    },
  };
}
