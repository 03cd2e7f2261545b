/**
 * The short reliability suite (issue 13) that `.ci/run` runs; `npm run chaos` runs the long one.
 * Each episode's seed is printed: `CHAOS_SEED=<seed> npx vitest run test/chaos/chaos.test.ts`
 * replays it.
 */
import { describe, expect, it } from 'vitest';
import { runChurn } from './churn.ts';

const seed = Number(process.env.CHAOS_SEED ?? Math.floor(Math.random() * 2 ** 31));

describe('chaos on sim://', () => {
  it('churns pods through 10 agent SIGKILLs at random points: no invariant broken, converged after each', async () => {
    console.log(`chaos churn seed ${seed} (replay: CHAOS_SEED=${seed} npx vitest run test/chaos/chaos.test.ts)`);
    const report = await runChurn({ seed, pods: 12, rounds: 24, kills: 10, image: 'statelet.local/busybox:1' });
    const context = `seed ${seed}: ${JSON.stringify({ kills: report.kills, notConverged: report.notConverged })}`;
    expect(report.violations, context).toEqual([]);
    expect(report.kills, context).toHaveLength(10);
    expect(report.kills.filter((k) => k.convergeMs < 0), context).toEqual([]);
    expect(report.finalConvergeMs, context).not.toBeNull();
  }, 15 * 60_000);
});
