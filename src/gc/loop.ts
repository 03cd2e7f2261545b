/**
 * The garbage collector's registration (kubelet.go StartGarbageCollection, called as the kubelet
 * starts): every node collects its dead containers and its unused images, with the node's one
 * image GC manager, whose records the eviction manager's reclaim shares.
 */
import { imageGcPolicy } from '../cli/config.ts';
import { formatSize, imageGcOff } from '../kuberuntime/imageGC.ts';
import { defineNodeLoop } from '../nodeloop/nodeLoop.ts';
import { createGarbageCollectorEffects } from './effects.ts';
import { garbageCollectorMachine, garbageCollectorMachineWith } from './garbageCollector.ts';

/** `14:02`, in UTC as the other loops' lines. */
const clockTime = (ms: number) => new Date(ms).toISOString().slice(11, 16);

export const garbageCollectorLoop = defineNodeLoop({
  name: 'garbageCollector',
  machine: garbageCollectorMachine,
  start: ({ config, imageGc, containerGc, recorder, clock, log }) => {
    const policy = imageGcPolicy(config);
    return {
      logic: garbageCollectorMachineWith(createGarbageCollectorEffects({ imageGc, containerGc, nodeName: config.nodeName, recorder, now: () => clock.now(), log })),
      input: {
        containerGcPeriodMs: config.containerGcPeriodMs,
        imageGcOn: !imageGcOff(policy),
        highThresholdPercent: policy.highThresholdPercent,
        lowThresholdPercent: policy.lowThresholdPercent,
      },
    };
  },
  accepts: [],
  /** `3 images removed (412.0 MiB) · last 14:02, 91 % used · 85 % high, 80 % low`, and what failed last. */
  summary: (c) => {
    const images = c.imageGcOn
      ? [
          `${c.imagesRemoved} images removed (${formatSize(c.bytesFreed)})`,
          ...(c.lastImageRound ? [`last ${clockTime(c.lastImageRound.at)}${c.lastImageRound.usagePercent !== null ? `, ${c.lastImageRound.usagePercent} % used` : ''}`] : []),
          `${c.highThresholdPercent} % high, ${c.lowThresholdPercent} % low`,
        ]
      : ['image GC off (100 % high, no maximum age)'];
    const failures = [...(c.imageFailure ? [c.imageFailure] : []), ...(c.containerFailure ? [`container GC: ${c.containerFailure}`] : [])];
    return [...images, ...failures].join(' · ');
  },
});
