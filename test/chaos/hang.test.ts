/**
 * The hanging-call episode (test/chaos/hang.ts) in the short reliability suite: one call of a
 * terminating pod hangs for 30 s, past two 10 s deadlines, while the node churns around it. The
 * seed is printed; `CHAOS_SEED=<seed> npx vitest run test/chaos/hang.test.ts` replays it.
 */
import { describe, expect, it } from 'vitest';
import { containerdForDescribe } from '../containerd/forDescribe.ts';
import { BUSYBOX_IMAGE } from '../containerd/harness.ts';
import { type HangOptions, runHang } from './hang.ts';

const seed = Number(process.env.CHAOS_SEED ?? Math.floor(Math.random() * 2 ** 31));

/** Runs the episode: 30 s of hanging, past two 10 s deadlines, with 6 pods around it. */
async function hangHoldsItsPodOnly(runtime: string, options: Pick<HangOptions, 'image' | 'endpoint'>): Promise<void> {
  console.log(`chaos hang (${runtime}) seed ${seed} (replay: CHAOS_SEED=${seed} npx vitest run test/chaos/hang.test.ts)`);
  const report = await runHang({ seed, ...options, pods: 6, hangMs: 30_000, requestTimeoutMs: 10_000 });
  console.log(`hung ${report.call} for 30 s: held ${report.heldCalls} calls, named after ${report.named?.afterMs} ms, ${report.changes} changes around it converged (max ${Math.round(Math.max(...report.convergeMs))} ms), pod finished ${Math.round(report.releasedConvergeMs ?? -1)} ms after the answer`);
  const context = `seed ${seed}: ${JSON.stringify({ ...report, violations: undefined })}`;
  expect(report.violations, context).toEqual([]);
  expect(report.notConverged, context).toEqual([]);
  // Pods around it converged, round after round, while it hung.
  expect(report.convergeMs.length, context).toBeGreaterThanOrEqual(3);
  expect(report.healthzStatuses.length, context).toBeGreaterThan(0);
  expect(new Set(report.healthzStatuses), context).toEqual(new Set([200]));
  const rpc = report.call.charAt(0).toUpperCase() + report.call.slice(1);
  expect(report.named?.line, context).toMatch(new RegExp(`^${rpc} .*for pod default/stuck-chaos-node: no answer for \\d+s$`));
  // It met its deadline and the pod's next attempt was held again.
  expect(report.heldCalls, context).toBeGreaterThanOrEqual(2);
  expect(report.releasedConvergeMs, context).not.toBeNull();
}

describe('a runtime call that hangs, on sim://', () => {
  it('holds its own pod only: the node churns around it, stays healthy, names the call, and the pod finishes once the runtime answers', async () => {
    await hangHoldsItsPodOnly('sim://', { image: 'statelet.local/busybox:1' });
  }, 180_000);
});

describe('a runtime call that hangs, on containerd (through a CRI proxy)', () => {
  const containerd = containerdForDescribe();

  it('holds its own pod only, with real containers around it', async ({ skip }) => {
    const instance = containerd();
    if (!instance) return skip('containerd not available here (see the message above)');
    await hangHoldsItsPodOnly('containerd', { image: BUSYBOX_IMAGE, endpoint: instance.endpoint });
  }, 240_000);
});
