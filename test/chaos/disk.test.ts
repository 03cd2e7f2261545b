/**
 * The disk episode (disk.ts) in `npm test`: the filesystem under --root-dir and --pod-logs-dir full
 * for 10 s, then read-only for 10 s, while pods come and go. Its seed is printed:
 * `CHAOS_SEED=<seed> npx vitest run test/chaos/disk.test.ts` replays it. Root only (it mounts a
 * tmpfs); skipped loudly elsewhere, never under CI.
 */
import { describe, expect, it } from 'vitest';
import { rootOrSkip } from '../support/smallFilesystem.ts';
import { runDiskEpisode } from './disk.ts';

const seed = Number(process.env.CHAOS_SEED ?? Math.floor(Math.random() * 2 ** 31));
/** The most times one line may come back during a 10 s fault: a pod's warning event at each retry of its sync (10 s back-off), not a line per pass or per second. */
const MAX_REPEATS = 3;

describe.skipIf(!rootOrSkip('the disk episode (test/chaos/disk.test.ts)'))('the disk under --root-dir full, then read-only', () => {
  it('the agent lives, running pods keep their containers, errors name the pod or the path once per cause, and everything converges once the disk is back', async () => {
    console.log(`chaos disk seed ${seed} (replay: CHAOS_SEED=${seed} npx vitest run test/chaos/disk.test.ts)`);
    const report = await runDiskEpisode({ seed, pods: 6, faultMs: 10_000, changesPerFault: 2, image: 'statelet.local/busybox:1' });
    const { output, ...summary } = report;
    const context = `seed ${seed}: ${JSON.stringify(summary, null, 1)}\nagent log:\n${output}`;
    for (const f of report.faults) {
      console.log(`${f.fault}: ${f.added} pods added, ${f.deleted} deleted; converged ${Math.round(f.convergeMs)} ms after the disk came back; ${f.lines} warning/error lines, ${f.causes.length} distinct, at most ${Math.max(0, ...f.causes.map((c) => c.count))} of one`);
    }

    expect(report.agentExited, context).toBeNull();
    expect(report.violations, context).toEqual([]);
    expect(report.restarted, context).toEqual([]);
    expect(report.unclear, context).toEqual([]);
    expect(report.faults.map((f) => f.fault), context).toEqual(['full', 'readOnly']);
    for (const f of report.faults) {
      expect(f.notConverged, context).toBeUndefined();
      expect(f.convergeMs, context).toBeGreaterThanOrEqual(0);
      expect([f.added, f.deleted], context).toEqual([2, 2]);
      expect(f.causes.filter((c) => c.count > MAX_REPEATS), context).toEqual([]);
    }
    // Each fault was said, by the pods it stopped: the kernel's own words and the path.
    const [full, readOnly] = report.faults;
    expect(full!.causes.some((c) => /pod="[^"]+".*ENOSPC: no space left on device, \w+ '\//.test(c.cause)), context).toBe(true);
    expect(readOnly!.causes.some((c) => /pod="[^"]+".*EROFS: read-only file system, \w+ '\//.test(c.cause)), context).toBe(true);
  }, 4 * 60_000);
});
