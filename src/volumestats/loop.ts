/**
 * The volume stats calculator's registration (kubelet.go starts the stats provider's
 * fs_resource_analyzer with the node): on every node whose `volumeStatsAggPeriod` is not 0, each
 * round measuring the volumes of the pods the node runs, through the node's stats provider.
 */
import { defineNodeLoop } from '../nodeloop/nodeLoop.ts';
import { volumeStatsCalculatorMachine, volumeStatsCalculatorMachineWith } from './volumeStatsCalculator.ts';

export const volumeStatsCalculatorLoop = defineNodeLoop({
  name: 'volumeStatsCalculator',
  machine: volumeStatsCalculatorMachine,
  start: ({ config, stats, pods, log }) => {
    if (config.volumeStatsAggPeriodMs <= 0) {
      log('info', 'Volume stats collection disabled');
      return null;
    }
    return {
      logic: volumeStatsCalculatorMachineWith({
        calculate: () => stats.calculateVolumeStats(pods.active().map((pod) => ({ uid: pod.metadata.uid, namespace: pod.metadata.namespace, name: pod.metadata.name }))),
      }),
      input: { periodMs: config.volumeStatsAggPeriodMs },
    };
  },
  accepts: [],
  /** `every 1m · 3 volumes measured, 1 failing`, and what failed last. */
  summary: (c) => {
    const failing = c.failed > 0 ? `, ${c.failed} failing` : '';
    const trouble = c.lastError ? ` · ${c.lastError}` : '';
    return `every ${c.periodMs / 1000}s · ${c.measured} volumes measured${failing}${trouble}`;
  },
});
