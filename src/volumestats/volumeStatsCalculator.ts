/**
 * The volume stats calculator (pkg/kubelet/server/stats/fs_resource_analyzer.go Start,
 * updateCachedPodVolumeStats, volume_stat_calculator.go): a node-level loop that measures the
 * usage of the pods' persistent and CSI volumes every `volumeStatsAggPeriod` (1 m by default)
 * and keeps it for `/stats/summary` and the `kubelet_volume_stats_*` gauges, which read what the
 * last round found and never measure on the request's path (a CSI driver is asked once a period,
 * not at each scrape).
 *
 *   calculating  one round (`calculate`) over the pods the node runs → `waiting`.
 *   waiting      `periodMs` → `calculating`.
 *
 * The first round runs as the loop starts (wait.Forever runs before it waits). The kubelet
 * jitters each pod's calculator apart; here a round measures every pod's volumes in turn, a period
 * after the last ended. A period of 0 disables it (the loop does not start: "Volume stats
 * collection disabled"). Context: rounds, the last round's counts, the last failure.
 */
import { assign, fromPromise, setup } from 'xstate';
import { notProvided } from '../notProvided.ts';
import type { VolumeStatsRound } from '../stats/volumeStats.ts';

export interface VolumeStatsCalculatorEffects {
  calculate(): Promise<VolumeStatsRound>;
}

interface VolumeStatsCalculatorContext extends VolumeStatsRound {
  periodMs: number;
  rounds: number;
  /** Why the last round failed as a whole; null once one succeeds. */
  lastError: string | null;
}

const errorText = (error: unknown) => (error instanceof Error ? error.message : String(error));

export const volumeStatsCalculatorMachine = setup({
  types: {
    context: {} as VolumeStatsCalculatorContext,
    input: {} as { periodMs: number },
  },
  actors: {
    calculate: fromPromise<VolumeStatsRound>(notProvided('volumeStatsCalculator', 'calculate')),
  },
  delays: {
    period: ({ context }) => context.periodMs,
  },
}).createMachine({
  id: 'volumeStatsCalculator',
  context: ({ input }) => ({ periodMs: input.periodMs, rounds: 0, measured: 0, failed: 0, lastError: null }),
  initial: 'calculating',
  states: {
    calculating: {
      invoke: {
        src: 'calculate',
        onDone: { target: 'waiting', actions: assign(({ context, event }) => ({ ...event.output, rounds: context.rounds + 1, lastError: null })) },
        onError: { target: 'waiting', actions: assign(({ context, event }) => ({ rounds: context.rounds + 1, lastError: errorText(event.error) })) },
      },
    },
    waiting: {
      after: { period: 'calculating' },
    },
  },
});

export function volumeStatsCalculatorMachineWith(effects: VolumeStatsCalculatorEffects) {
  return volumeStatsCalculatorMachine.provide({ actors: { calculate: fromPromise(() => effects.calculate()) } });
}
