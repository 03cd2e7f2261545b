/**
 * The volume manager's effects over the node's parts: the upkeep's (the mount table, the token
 * cache) and each pod volume's operations, which set a volume up or tear it down with its plugin
 * (src/volumes/setUp.ts) and record the outcome in the volume world's actual state. A failed set-up
 * is the pod's Warning `FailedMount` event, worded as the kubelet's operation generator words it
 * (`MountVolume.SetUp failed for volume "<name>" : <cause>`).
 */
import type { EventRecorder } from '../eventrecorder/recorder.ts';
import { podReference } from '../eventrecorder/recorder.ts';
import type { PodVolumeRef } from '../events.ts';
import type { Logger } from '../log.ts';
import { type VolumeDeps, setUpVolume, tearDownVolume } from '../volumes/setUp.ts';
import type { VolumeWorld } from '../volumes/world.ts';
import type { PodVolumeEffects } from './podVolume.ts';

export interface PodVolumeParts {
  world: VolumeWorld;
  /** The plugins' dependencies as they are now (the node's allocatable memory may change). */
  deps(): VolumeDeps;
  recorder: EventRecorder;
  log: Logger;
}

export function createPodVolumeEffects({ world, deps, recorder, log }: PodVolumeParts): PodVolumeEffects {
  return {
    async mount(ref: PodVolumeRef) {
      const wanted = world.desiredVolume(ref.uid, ref.outerName);
      // The pod no longer wants it (its teardown is asked for already): nothing to set up.
      if (!wanted || wanted.volume.uniqueName !== ref.uniqueName) return;
      const { pod, volume } = wanted;
      let path: string;
      try {
        path = await setUpVolume(deps(), pod, volume);
      } catch (err) {
        const message = err instanceof Error ? err.message : String(err);
        recorder.event(podReference(pod), 'Warning', 'FailedMount', message);
        log('warn', 'Volume set-up failed', { pod: ref.pod, volume: ref.outerName, err: message });
        throw err;
      }
      const claim = volume.claim;
      world.markMounted(ref.uid, {
        outerName: ref.outerName,
        uniqueName: ref.uniqueName,
        kind: ref.kind,
        path,
        readOnly: claim?.readOnly ?? false,
        ...(claim?.supplementalGroup !== undefined ? { supplementalGroup: claim.supplementalGroup } : {}),
        ...(claim ? { claim: { namespace: claim.claim.namespace, name: claim.claim.name } } : {}),
      });
    },
    async unmount(ref: PodVolumeRef) {
      try {
        await tearDownVolume(deps(), ref.uid, ref);
      } catch (err) {
        log('warn', 'Volume teardown failed', { pod: ref.pod, volume: ref.outerName, err: err instanceof Error ? err.message : String(err) });
        throw new Error(`UnmountVolume.TearDown failed for volume "${ref.outerName}" (UniqueName: "${ref.uniqueName}") pod "${ref.uid}": ${err instanceof Error ? err.message : String(err)}`);
      }
      world.markUnmounted(ref.uid, ref.outerName, ref.uniqueName);
      world.operationEnded(ref.id);
    },
  };
}
