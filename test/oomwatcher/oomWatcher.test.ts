import { createActor } from 'xstate';
import { describe, expect, it } from 'vitest';
import type { KernelLog } from '../../src/node/kernelLog.ts';
import { followKernelLog } from '../../src/oomwatcher/effects.ts';
import { oomWatcherMachine, oomWatcherMachineWith } from '../../src/oomwatcher/oomWatcher.ts';
import { silentLogger } from '../../src/log.ts';

/** A kernel log the test writes to. */
function fakeKernelLog() {
  let line: ((text: string) => void) | null = null;
  let end: ((error: Error) => void) | null = null;
  let following = false;
  const log: KernelLog = {
    follow(onLine, onEnd) {
      line = onLine;
      end = onEnd;
      following = true;
      return () => void (following = false);
    },
  };
  return { log, write: (text: string) => line?.(text), end: (error: Error) => end?.(error), following: () => following };
}

function start() {
  const kernel = fakeKernelLog();
  const events: [string, string, string][] = [];
  const recorder = { event: (object: { name?: string }, type: string, reason: string, message: string) => void events.push([`${object.name}`, `${type} ${reason}`, message]) };
  const actor = createActor(oomWatcherMachineWith({ followKernelLog: followKernelLog({ kernelLog: kernel.log, nodeName: 'node-a', recorder, log: silentLogger }) }));
  actor.start();
  return { actor, kernel, events };
}

describe('the OOM watcher', () => {
  it('records SystemOOM on the Node for an OOM of the whole machine, and nothing for a container over its limit', () => {
    const { actor, kernel, events } = start();
    kernel.write('[1.0] dd invoked oom-killer: gfp_mask=0xcc0(GFP_KERNEL), order=0, oom_score_adj=0');
    kernel.write('[1.1] oom-kill:constraint=CONSTRAINT_MEMCG,nodemask=(null),cpuset=/,mems_allowed=0,oom_memcg=/kubepods/pod1/c,task_memcg=/kubepods/pod1/c,task=dd,pid=10,uid=0');
    expect(events).toEqual([]);
    kernel.write('[2.0] stress invoked oom-killer: gfp_mask=0xcc0(GFP_KERNEL), order=0, oom_score_adj=0');
    kernel.write('[2.1] oom-kill:constraint=CONSTRAINT_NONE,nodemask=(null),cpuset=/,mems_allowed=0,global_oom,task_memcg=/x,task=stress,pid=77,uid=0');
    expect(events).toEqual([['node-a', 'Warning SystemOOM', 'System OOM encountered, victim process: stress, pid: 77']]);
    expect(actor.getSnapshot().context).toMatchObject({ systemOoms: 1, lastVictim: 'stress (pid 77)' });
    actor.stop();
    expect(kernel.following()).toBe(false);
  });

  it('stops watching, keeping the reason, when the kernel log cannot be read', () => {
    const { actor, kernel } = start();
    kernel.end(new Error('dmesg --follow-new ended (exit code 1): dmesg: read kernel buffer failed: Operation not permitted'));
    expect(actor.getSnapshot().value).toBe('unavailable');
    expect(actor.getSnapshot().context.lastError).toMatch(/Operation not permitted/);
  });

  it('as drawn, with no effect given, says so and stops', () => {
    const actor = createActor(oomWatcherMachine).start();
    expect(actor.getSnapshot().value).toBe('unavailable');
    expect(actor.getSnapshot().context.lastError).toMatch(/not provided/);
  });
});
