/**
 * The generated-manifest episode (test/chaos/manifestFuzz.ts) in the short reliability suite:
 * 1,000 generated manifests beside three sentinel pods, on sim:// (`npm run chaos` runs 10,000).
 * The seed is printed: `CHAOS_SEED=<seed> npx vitest run test/chaos/manifestFuzz.test.ts` replays it.
 */
import { describe, expect, it } from 'vitest';
import { runManifestFuzz } from './manifestFuzz.ts';

const seed = Number(process.env.CHAOS_SEED ?? Math.floor(Math.random() * 2 ** 31));

describe('generated manifests on sim://', () => {
  it('takes 1,000 generated manifests beside running pods: never crashes, names the file and field of every rejection, lists the rest, sentinels untouched', async () => {
    console.log(`manifest fuzz seed ${seed} (replay: CHAOS_SEED=${seed} npx vitest run test/chaos/manifestFuzz.test.ts)`);
    const report = await runManifestFuzz({ seed, manifests: 1_000 });
    const context = `seed ${seed}: ${report.failures.slice(0, 20).join('\n')}`;
    expect(report.failures, context).toEqual([]);
    expect(report.violations, context).toEqual([]);
    expect(report.agentCrashes, context).toBe(0);
    expect(report.sentinelRestarts, context).toBe(0);
    expect(report.manifests, context).toBe(1_000);
    // Both outcomes were exercised, and every entry had one.
    expect(report.accepted, context).toBeGreaterThan(0);
    expect(report.rejected, context).toBeGreaterThan(0);
    expect(report.accepted + report.rejected, context).toBe(report.entries);
  }, 15 * 60_000);
});
