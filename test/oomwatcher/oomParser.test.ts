import { describe, expect, it } from 'vitest';
import { type OomKill, OomParser, systemOomMessage } from '../../src/oomwatcher/oomParser.ts';

/** What the parser makes of `lines`, fed one at a time. */
function parse(lines: readonly string[]): OomKill[] {
  const parser = new OomParser();
  return lines.map((line) => parser.feed(line)).filter((kill): kill is OomKill => kill !== null);
}

const invoked = '[ 4242.123456] dd invoked oom-killer: gfp_mask=0xcc0(GFP_KERNEL), order=0, oom_score_adj=985';

describe('OOM kills read from the kernel log', () => {
  it.each<[string, string[], OomKill[]]>([
    [
      "a container's cgroup over its limit (Linux 5.0+): the victim cgroup is the limit's",
      [
        invoked,
        '[ 4242.123500] memory: usage 32768kB, limit 32768kB, failcnt 12',
        '[ 4242.123600] oom-kill:constraint=CONSTRAINT_MEMCG,nodemask=(null),cpuset=/,mems_allowed=0,oom_memcg=/kubepods/burstable/podab/c1,task_memcg=/kubepods/burstable/podab/c1,task=dd,pid=4321,uid=0',
        '[ 4242.123700] Memory cgroup out of memory: Killed process 4321 (dd) total-vm:206000kB',
      ],
      [{ process: 'dd', pid: 4321, victimCgroup: '/kubepods/burstable/podab/c1', constraint: 'CONSTRAINT_MEMCG' }],
    ],
    [
      'the whole machine (global_oom): the victim cgroup is /',
      [invoked, '[ 4242.2] oom-kill:constraint=CONSTRAINT_NONE,nodemask=(null),cpuset=/,mems_allowed=0,global_oom,task_memcg=/user.slice/x,task=stress,pid=77,uid=1000', '[ 4242.3] Out of memory: Killed process 77 (stress)'],
      [{ process: 'stress', pid: 77, victimCgroup: '/', constraint: 'CONSTRAINT_NONE' }],
    ],
    [
      'an older kernel without the summary line: the Killed process line ends it, on the machine',
      [invoked, '[ 4242.3] Out of memory: Kill process 99 (java) score 900 or sacrifice child', '[ 4242.4] Killed process 99 (java) total-vm:1kB'],
      [{ process: 'java', pid: 99, victimCgroup: '/', constraint: '' }],
    ],
    ['lines outside an OOM, and a summary without its start', ['[ 1.0] eth0: link up', '[ 2.0] oom-kill:constraint=CONSTRAINT_NONE,nodemask=(null),cpuset=/,mems_allowed=0,global_oom,task_memcg=/,task=x,pid=1,uid=0'], []],
    [
      'two OOMs in a row, each once',
      [invoked, '[ 5.0] Killed process 1 (a)', invoked, '[ 6.0] Killed process 2 (b)', '[ 6.1] Killed process 3 (c)'],
      [
        { process: 'a', pid: 1, victimCgroup: '/', constraint: '' },
        { process: 'b', pid: 2, victimCgroup: '/', constraint: '' },
      ],
    ],
  ])('%s', (_name, lines, expected) => {
    expect(parse(lines)).toEqual(expected);
  });
});

describe("the Node's SystemOOM message", () => {
  it.each<[string, OomKill, string | null]>([
    ['the machine, with the victim', { process: 'stress', pid: 77, victimCgroup: '/', constraint: 'CONSTRAINT_NONE' }, 'System OOM encountered, victim process: stress, pid: 77'],
    ['the machine, the victim not named', { process: '', pid: 0, victimCgroup: '/', constraint: '' }, 'System OOM encountered'],
    ["a container's cgroup: none (its status says OOMKilled)", { process: 'dd', pid: 4321, victimCgroup: '/kubepods/pod1/c', constraint: 'CONSTRAINT_MEMCG' }, null],
  ])('%s', (_name, kill, message) => {
    expect(systemOomMessage(kill)).toBe(message);
  });
});
