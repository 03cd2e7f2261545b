/**
 * The churn episode (test/chaos/churn.ts) in the short reliability suite, part of `npm test`
 * (`npm run chaos:short` runs test/chaos alone; `npm run chaos` the long run). Each episode's seed
 * is printed: `CHAOS_SEED=<seed> npx vitest run test/chaos/churn.test.ts` replays it.
 */
import { describe, expect, it } from 'vitest';
import { containerdForDescribe } from '../containerd/forDescribe.ts';
import { BUSYBOX_IMAGE } from '../containerd/harness.ts';
import { type ChurnOptions, runChurn } from './churn.ts';

const seed = Number(process.env.CHAOS_SEED ?? Math.floor(Math.random() * 2 ** 31));

/** Runs the churn episode with the run's seed: no violation, every fault injected, converged after each and at the end. */
async function churnClean(runtime: string, options: Omit<ChurnOptions, 'seed'>): Promise<void> {
  console.log(`chaos churn (${runtime}) seed ${seed} (replay: CHAOS_SEED=${seed} npx vitest run test/chaos/churn.test.ts)`);
  const report = await runChurn({ seed, ...options });
  console.log(`converged after: ${report.faults.map((f) => `${f.fault} ${Math.round(f.convergeMs)} ms`).join(', ')}`);
  const context = `seed ${seed}: ${JSON.stringify({ faults: report.faults, notConverged: report.notConverged })}`;
  expect(report.violations, context).toEqual([]);
  expect(report.faults, context).toHaveLength(options.kills + (options.runtimeRestarts ?? 0) + (options.podFailures ?? 0));
  expect(report.faults.filter((f) => f.convergeMs < 0), context).toEqual([]);
  // The runtime's outage was told by /healthz (then healthy again: the watch ends at a 200).
  for (const restart of report.faults.filter((f) => f.fault === 'runtimeRestart')) {
    expect(restart.healthz, context).toMatch(/^\[-\]runtime: /);
    expect(restart.healthz, context).not.toContain('not healthy again');
  }
  expect(report.finalConvergeMs, context).not.toBeNull();
}

describe('chaos on sim://', () => {
  it('churns pods through 10 agent SIGKILLs at random points, a runtime restart, crashed containers and lost sandboxes: no invariant broken, converged after each', async () => {
    await churnClean('sim://', { pods: 12, rounds: 28, kills: 10, runtimeRestarts: 1, podFailures: 4, image: 'statelet.local/busybox:1' });
  }, 15 * 60_000);
});

describe('chaos on containerd', () => {
  const containerd = containerdForDescribe();

  it('churns real containers through 3 agent SIGKILLs and a containerd restart: no invariant broken, converged after each', async ({ skip }) => {
    const instance = containerd();
    if (!instance) return skip('containerd not available here (see the message above)');
    await churnClean('containerd', {
      pods: 8,
      rounds: 12,
      kills: 3,
      runtimeRestarts: 1,
      image: BUSYBOX_IMAGE,
      endpoint: instance.endpoint,
      restartRuntime: (down) => instance.restart(down),
    });
  }, 15 * 60_000);
});
