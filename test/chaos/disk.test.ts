/**
 * The disk episode (disk.ts) in `npm test`: the filesystem under --root-dir and --pod-logs-dir full
 * for 10 s, then read-only for 10 s, while pods come and go. Its seed is printed:
 * `CHAOS_SEED=<seed> npx vitest run test/chaos/disk.test.ts` replays it. Root only (it mounts a
 * tmpfs); skipped loudly elsewhere, never under CI.
 */
import { describe, expect, it } from 'vitest';
import { rootOrSkip } from '../support/smallFilesystem.ts';
import { diskProblems, runDiskEpisode } from './disk.ts';

const seed = Number(process.env.CHAOS_SEED ?? Math.floor(Math.random() * 2 ** 31));

describe.skipIf(!rootOrSkip('the disk episode (test/chaos/disk.test.ts)'))('the disk under --root-dir full, then read-only', () => {
  it('the agent lives, running pods keep their containers, errors name the pod or the path once per cause, and everything converges once the disk is back', async () => {
    console.log(`chaos disk seed ${seed} (replay: CHAOS_SEED=${seed} npx vitest run test/chaos/disk.test.ts)`);
    const report = await runDiskEpisode({ seed, pods: 6, faultMs: 10_000, changesPerFault: 2, image: 'statelet.local/busybox:1' });
    for (const f of report.faults) {
      console.log(`${f.fault}: ${f.added} pods added, ${f.deleted} deleted; converged ${Math.round(f.convergeMs)} ms after the disk came back; ${f.lines} warning/error lines, ${f.causes.length} distinct, at most ${Math.max(0, ...f.causes.map((c) => c.count))} of one`);
    }
    const { output, ...summary } = report;
    const context = `seed ${seed}: ${JSON.stringify(summary, null, 1)}\nagent log:\n${output}`;
    expect(report.faults.map((f) => [f.fault, f.added, f.deleted]), context).toEqual([
      ['full', 2, 2],
      ['readOnly', 2, 2],
    ]);
    expect(diskProblems(report), context).toEqual([]);
  }, 4 * 60_000);
});
