/**
 * The status writer loop: the pods' news it is passed reach its writer, its resync tick comes every
 * period on the actor system's clock, and the writer's progress shows in its context (its summary
 * on the visualizer) at most once a second.
 */
import { SimulatedClock, createActor } from 'xstate';
import { describe, expect, it, vi } from 'vitest';
import type { WriterNews } from '../../src/statuswriter/statusWriter.ts';
import { statusWriter } from '../../src/statuswriter/effects.ts';
import { statusWriterLoop } from '../../src/statuswriter/loop.ts';
import { statusWriterMachineWith } from '../../src/statuswriter/statusWriter.ts';
import { StatusManager } from '../../src/status/manager.ts';
import { silentLogger } from '../../src/log.ts';
import { MemoryApi } from '../support/memoryApi.ts';
import { apiPod } from '../support/pods.ts';

describe('statusWriter loop', () => {
  it('passes the pods\' news to its writer and tells it to resync every period', () => {
    const clock = new SimulatedClock();
    const told: string[] = [];
    const writer = ({ receive }: { receive: (listener: (event: WriterNews) => void) => void }) => receive((event) => void told.push('uid' in event ? `${event.type} ${event.uid}` : event.type));
    const actor = createActor(statusWriterMachineWith({ writer }), { clock, input: { resyncMs: 10_000 } }).start();
    actor.send({ type: 'POD.TERMINATED', uid: 'a' });
    actor.send({ type: 'POD.FINISHED', uid: 'a', restartRequested: false });
    actor.send({ type: 'STATUS.REWRITE', uid: 'b' });
    clock.increment(9_999);
    expect(told).toEqual(['POD.TERMINATED a', 'POD.FINISHED a', 'STATUS.REWRITE b']);
    clock.increment(1);
    clock.increment(10_000);
    expect(told.slice(3)).toEqual(['STATUS.RESYNC', 'STATUS.RESYNC']);
    actor.stop();
  });

  it('shows what its writer did, told at most once a second, and the metrics each change', async () => {
    const clock = new SimulatedClock();
    const api = new MemoryApi();
    const pod = api.putPod(apiPod('web'));
    const statuses = new StatusManager();
    const metrics: number[] = [];
    const writer = statusWriter({
      api,
      statuses,
      pod: (uid) => (uid === 'uid-web' ? pod : undefined),
      stages: { isFinished: () => false, couldHaveRunningContainers: () => true },
      clock,
      log: silentLogger,
      metrics: (progress) => void metrics.push(progress.writes),
    });
    const actor = createActor(statusWriterMachineWith({ writer }), { clock, input: { resyncMs: 10_000 } }).start();
    statuses.setPodStatus('uid-web', { phase: 'Running' });
    await vi.waitFor(() => expect(metrics.at(-1)).toBe(1));
    // Written, and not yet told to the loop: its report waits for the second to end.
    expect(api.count('patchPodStatus')).toBe(1);
    expect(actor.getSnapshot().context.writes).toBe(0);
    clock.increment(1_000);
    expect(actor.getSnapshot().context).toMatchObject({ writes: 1, queued: 0, lastError: null });
    expect(statusWriterLoop.summary(actor.getSnapshot().context)).toBe('1 written · 0 deleted · 0 queued');
    actor.stop();
  });
});
