/**
 * The API-server faults episode (test/chaos/apiFaults.ts) on sim://, against a real API server
 * (skipped loudly where the control plane cannot be built, failing on CI). Its seed is printed:
 * `CHAOS_SEED=<seed> npx vitest run test/chaos/apiFaults.test.ts` replays it.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ControlPlane, startControlPlane } from '../support/controlPlane.ts';
import { API_FAULTS, runApiFaults } from './apiFaults.ts';

const NODE = 'chaos-api-node';
const seed = Number(process.env.CHAOS_SEED ?? Math.floor(Math.random() * 2 ** 31));
let cp: ControlPlane | null = null;

beforeAll(async () => {
  cp = await startControlPlane({ nodeNames: [NODE] });
}, 15 * 60_000);

afterAll(async () => {
  await cp?.close();
});

describe('API server faults (sim://)', () => {
  it('cuts watches, forces 410 Gone, refuses status writes and restarts the API server under churn: no invariant broken, converged after each', { timeout: 240_000 }, async ({ skip }) => {
    if (!cp) return skip();
    console.log(`chaos API faults seed ${seed} (replay: CHAOS_SEED=${seed} npx vitest run test/chaos/apiFaults.test.ts)`);
    const report = await runApiFaults({ seed, controlPlane: cp, node: NODE, pods: 8, rounds: 8 });
    const context = `seed ${seed}: ${JSON.stringify({ faults: report.faults, notConverged: report.notConverged, injected: report.injected })}`;
    console.log(`chaos API faults seed ${seed}: ${report.faults.map((f) => `${f.fault} (${f.detail}) converged in ${Math.round(f.convergeMs)} ms`).join('; ')}`);
    expect(report.violations, context).toEqual([]);
    expect(report.faults.map((f) => f.fault).sort(), context).toEqual([...API_FAULTS].sort());
    expect(report.faults.filter((f) => f.convergeMs < 0), context).toEqual([]);
    expect(report.finalConvergeMs, context).not.toBeNull();
    // The faults really happened, and the checks had something to check.
    expect(report.injected.watchesCut, context).toBeGreaterThanOrEqual(3);
    expect(report.injected.watchesExpired, context).toBeGreaterThanOrEqual(2);
    expect(report.injected.requestsFailed, context).toBeGreaterThan(0);
    expect(report.statusWrites, context).toBeGreaterThan(0);
  });
});
