/**
 * The eviction manager's registration (kubelet.go starts the eviction manager beside the sync
 * loop): every node watches its thresholds, standalone or in a cluster. Its thresholds come from
 * the four eviction settings, checked here with the kubelet's messages, so a wrong one stops the
 * agent at start.
 */
import { defineNodeLoop } from '../nodeloop/nodeLoop.ts';
import { createEvictionEffects } from './effects.ts';
import { evictionManagerMachine, evictionManagerMachineWith } from './evictionManager.ts';
import { formatThresholdValue, parseThresholds, readableAmount } from './thresholds.ts';

/** How often the signals are read (evictionMonitoringPeriod in kubelet.go). */
const MONITORING_INTERVAL_MS = 10_000;

export const evictionManagerLoop = defineNodeLoop({
  name: 'evictionManager',
  machine: evictionManagerMachine,
  start: ({ config, containerGc, imageGc, stats, pods, recorder, clock, log }) => {
    const thresholds = parseThresholds(config);
    const now = () => clock.now();
    const effects = createEvictionEffects({
      nodeName: config.nodeName,
      stats,
      // Those already on their way out are not ranked again (a second kill could only shorten their grace).
      activePods: () => pods.active().filter((pod) => !pods.stages.isTerminationRequested(pod.metadata.uid)),
      podCleanedUp: (uid) => pods.stages.isFinished(uid),
      // The node's container GC (ContainerGC.DeleteAllUnusedContainers).
      deleteAllUnusedContainers: async () => void (await containerGc.deleteAllUnusedContainers()),
      // The node's image GC, whose records say which images are old enough to go.
      deleteUnusedImages: async () => {
        await imageGc.deleteUnusedImages();
      },
      recorder,
      now,
      log,
    });
    return {
      logic: evictionManagerMachineWith(effects),
      input: {
        thresholds,
        monitoringIntervalMs: MONITORING_INTERVAL_MS,
        transitionPeriodMs: config.evictionPressureTransitionPeriodMs,
        maxPodGracePeriodSeconds: config.evictionMaxPodGracePeriod,
      },
    };
  },
  accepts: [],
  /** `MemoryPressure · memory.available 412Mi (evicts below 500Mi) · 1 evicted, last default/hog`. */
  summary: (c) => {
    const pressure = c.conditions.length ? c.conditions.join(', ') : 'no pressure';
    const signals = c.thresholds
      .map((t) => {
        const observed = c.observations[t.signal];
        return observed ? `${t.signal} ${readableAmount(t.signal, observed.available)} (${t.gracePeriodMs ? 'soft' : 'evicts'} below ${formatThresholdValue(t.value)})` : null;
      })
      .filter((line) => line !== null)
      .join(', ');
    const evictions = c.evictions ? ` · ${c.evictions} evicted, last ${c.lastEviction?.pod}` : '';
    const trouble = c.lastError ? ` · ${c.lastError}` : '';
    return `${pressure}${signals ? ` · ${signals}` : ''}${evictions}${trouble}`;
  },
});
