/**
 * The volume manager's registration (kubelet.go starts the volume manager beside the sync loop):
 * every node adopts the mounts of an earlier run and reconstructs the volumes it left set up, runs one actor per volume of each pod (set up,
 * refreshed and torn down as the pods' syncs ask through the volume world) and, in a cluster,
 * drops expired service-account tokens each minute.
 */
import { defineNodeLoop } from '../nodeloop/nodeLoop.ts';
import { createPodVolumeEffects, reconstructVolumes } from './effects.ts';
import { volumeManagerMachine, volumeManagerMachineWith } from './volumeManager.ts';

export const volumeManagerLoop = defineNodeLoop({
  name: 'volumeManager',
  machine: volumeManagerMachine,
  start: ({ config, cluster, mounter, tokens, volumes, recorder, log }) => {
    // From now until its start has reconstructed, no orphaned pod's directory is removed.
    volumes.world.expectReconstruction();
    return {
      logic: volumeManagerMachineWith(
        {
          adopt: async () => {
            // Reconstruction runs whatever the mount table's read gave: orphaned pod directories wait for it.
            const unread = await (mounter.adopt?.() ?? Promise.resolve()).then(() => null, (err: unknown) => ({ err }));
            const volumesAttached = cluster && (async () => ((await cluster.api.getNode(config.nodeName)).status?.volumesAttached ?? []).map((v) => v.name));
            const reconstructed = await reconstructVolumes({ world: volumes.world, csi: volumes.csi, csiBlock: volumes.block.csi, podsDir: volumes.deps().podsDir, log, ...(volumesAttached ? { volumesAttached } : {}) });
            if (unread) throw unread.err;
            return { mounts: mounter.mounted, tokens: tokens?.size ?? 0, reconstructed };
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
    };
  },
  accepts: [],
  /** `4 pod volumes · 3 mounts · 12 tokens (2 expired dropped) · 2 reconstructed at start`, and the last failure. */
  summary: (c) => {
    const dropped = c.dropped ? ` (${c.dropped} expired dropped)` : '';
    const reconstructed = c.reconstructed ? ` · ${c.reconstructed} reconstructed at start` : '';
    const trouble = c.lastError ? ` · ${c.lastError}` : '';
    return `${c.podVolumes} pod volumes · ${c.mounts} mounts · ${c.tokens} tokens${dropped}${reconstructed}${trouble}`;
  },
});
