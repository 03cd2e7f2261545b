/**
 * The API-server faults episode (test/chaos/apiFaults.ts) on sim://, against a real API server
 * (skipped loudly where the control plane cannot be built, failing on CI). Its seed is printed:
 * `CHAOS_SEED=<seed> npx vitest run test/chaos/apiFaults.test.ts` replays it.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ControlPlane, startControlPlane } from '../support/controlPlane.ts';
import { API_FAULTS, apiFaultsProblems, runApiFaults } from './apiFaults.ts';

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
    console.log(`chaos API faults seed ${seed}: ${report.faults.map((f) => `${f.fault} (${f.detail}) converged in ${Math.round(f.convergeMs)} ms`).join('; ')}`);
    expect(report.faults.map((f) => f.fault).sort(), `seed ${seed}`).toEqual([...API_FAULTS].sort());
    expect(apiFaultsProblems(report), `seed ${seed}: ${JSON.stringify(report.injected)}`).toEqual([]);
  });
});
