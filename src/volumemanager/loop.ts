/**
 * The volume manager's registration (kubelet.go starts the volume manager beside the sync loop):
 * every node adopts the tmpfs mounts of an earlier run and, in a cluster, drops expired
 * service-account tokens each minute.
 */
import { defineNodeLoop } from '../nodeloop/nodeLoop.ts';
import { volumeManagerMachine, volumeManagerMachineWith } from './volumeManager.ts';

export const volumeManagerLoop = defineNodeLoop({
  name: 'volumeManager',
  machine: volumeManagerMachine,
  start: ({ mounter, tokens }) => ({
    logic: volumeManagerMachineWith({
      adopt: async () => {
        await mounter.adopt?.();
        return { mounts: mounter.mounted, tokens: tokens?.size ?? 0 };
      },
      collect: async () => {
        const dropped = tokens?.collectExpired() ?? 0;
        return { mounts: mounter.mounted, tokens: tokens?.size ?? 0, dropped };
      },
    }),
    input: undefined,
  }),
  accepts: [],
  /** `3 tmpfs mounts · 12 tokens (2 expired dropped)`, and the last failure. */
  summary: (c) => {
    const dropped = c.dropped ? ` (${c.dropped} expired dropped)` : '';
    const trouble = c.lastError ? ` · ${c.lastError}` : '';
    return `${c.mounts} tmpfs mounts · ${c.tokens} tokens${dropped}${trouble}`;
  },
});
