/**
 * The volume manager's registration (kubelet.go starts the volume manager beside the sync loop):
 * every node adopts the mounts of an earlier run, runs one actor per volume of each pod (set up,
 * refreshed and torn down as the pods' syncs ask through the volume world) and, in a cluster,
 * drops expired service-account tokens each minute.
 */
import { defineNodeLoop } from '../nodeloop/nodeLoop.ts';
import { createPodVolumeEffects } from './effects.ts';
import { volumeManagerMachine, volumeManagerMachineWith } from './volumeManager.ts';

export const volumeManagerLoop = defineNodeLoop({
  name: 'volumeManager',
  machine: volumeManagerMachine,
  start: ({ mounter, tokens, volumes, recorder, log }) => ({
    logic: volumeManagerMachineWith(
      {
        adopt: async () => {
          await mounter.adopt?.();
          return { mounts: mounter.mounted, tokens: tokens?.size ?? 0 };
        },
        collect: async () => {
          const dropped = tokens?.collectExpired() ?? 0;
          return { mounts: mounter.mounted, tokens: tokens?.size ?? 0, dropped };
        },
        listen: (changed) => volumes.world.listen(changed),
      },
      createPodVolumeEffects({ world: volumes.world, deps: volumes.deps, csi: volumes.csi, block: volumes.block, recorder, log, ...(volumes.expansion ? { expansion: volumes.expansion } : {}) }),
    ),
    input: undefined,
  }),
  accepts: [],
  /** `4 pod volumes · 3 mounts · 12 tokens (2 expired dropped)`, and the last failure. */
  summary: (c) => {
    const dropped = c.dropped ? ` (${c.dropped} expired dropped)` : '';
    const trouble = c.lastError ? ` · ${c.lastError}` : '';
    return `${c.podVolumes} pod volumes · ${c.mounts} mounts · ${c.tokens} tokens${dropped}${trouble}`;
  },
});
