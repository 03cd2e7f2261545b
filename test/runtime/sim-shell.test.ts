import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { connect, createServer } from 'node:net';
import { describe, expect, it } from 'vitest';
import { ManualClock } from '../support/manualClock.ts';
import { SimFs } from '../../src/runtime/sim/fs.ts';
import { SimNetwork } from '../../src/runtime/sim/net.ts';
import { EXIT_KILL, EXIT_TERM, ShellProcess, programFor } from '../../src/runtime/sim/shell.ts';
import { parse, ShellSyntaxError } from '../../src/runtime/sim/shell-parse.ts';

interface Harness {
  clock: ManualClock;
  fs: SimFs;
  proc: ShellProcess;
  stdout: string[];
  stderr: string[];
  /** Exit status once exited, else null. */
  exit(): number | null;
}

function start(argv: string[], options: { pid1?: boolean; env?: Record<string, string>; fs?: SimFs; network?: SimNetwork } = {}): Harness {
  const clock = new ManualClock();
  const fs = options.fs ?? new SimFs();
  const stdout: string[] = [];
  const stderr: string[] = [];
  let exitCode: number | null = null;
  const proc = new ShellProcess({
    argv,
    clock,
    fs,
    pid1: options.pid1 ?? true,
    env: options.env ?? {},
    ...(options.network ? { network: options.network } : {}),
    output: { stdout: (t) => stdout.push(t), stderr: (t) => stderr.push(t) },
    onExit: (code) => {
      expect(exitCode).toBeNull();
      exitCode = code;
    },
  });
  proc.start();
  return { clock, fs, proc, stdout, stderr, exit: () => exitCode };
}

const sh = (script: string, options?: Parameters<typeof start>[1]): Harness => start(['sh', '-c', script], options);

describe('programFor', () => {
  it('interprets sh -c scripts and runs other argv directly', () => {
    expect(programFor(['sh', '-c', 'exit 1'])).toEqual({ kind: 'script', source: 'exit 1' });
    expect(programFor(['/bin/sh', '-c', 'x', 'argv0'])).toEqual({ kind: 'script', source: 'x' });
    expect(programFor(['sleep', '10'])).toEqual({ kind: 'argv', argv: ['sleep', '10'] });
    expect(programFor([])).toEqual({ kind: 'pause' });
    expect(programFor(['sh', '-c']).kind).toBe('usage-error');
  });
});

describe('parser', () => {
  it('rejects what the subset does not support instead of misreading it', () => {
    expect(() => parse('echo a | cat')).toThrow(ShellSyntaxError);
    expect(() => parse('echo $(date)')).toThrow(ShellSyntaxError);
    expect(() => parse('(exit 1)')).toThrow(ShellSyntaxError);
    expect(() => parse('while true; do sleep 1')).toThrow(ShellSyntaxError);
  });

  it('reports a syntax error as exit 2 with a message', () => {
    const h = sh('if true; then echo x');
    expect(h.exit()).toBe(2);
    expect(h.stderr.join('')).toMatch(/^sh: syntax error/);
  });
});

describe('sleep and exit', () => {
  it('sleeps on the clock, then exits with the script status', () => {
    const h = sh('sleep 2; exit 3');
    expect(h.exit()).toBeNull();
    h.clock.advance(1999);
    expect(h.exit()).toBeNull();
    h.clock.advance(1);
    expect(h.exit()).toBe(3);
    expect(h.clock.pendingTimers).toBe(0);
  });

  it('accepts fractions and unit suffixes, and sums operands', () => {
    const h = sh('sleep 0.5 1m; true');
    h.clock.advance(60_499);
    expect(h.exit()).toBeNull();
    h.clock.advance(1);
    expect(h.exit()).toBe(0);
  });

  it('sleep infinity holds no timer', () => {
    const h = start(['sleep', 'infinity']);
    expect(h.clock.pendingTimers).toBe(0);
    h.clock.advance(1e9);
    expect(h.exit()).toBeNull();
    h.proc.signal('KILL');
    expect(h.exit()).toBe(EXIT_KILL);
  });

  it('the exit status of the last command is the process status; exit wraps at 256', () => {
    expect(sh('false').exit()).toBe(1);
    expect(sh('true').exit()).toBe(0);
    expect(sh('exit 257').exit()).toBe(1);
    expect(sh('false; exit').exit()).toBe(1);
    expect(sh('').exit()).toBe(0);
  });
});

describe('lists', () => {
  it('runs ; sequences, && and || with short-circuit', () => {
    const h = sh('echo a; false && echo b || echo c; true || echo d\necho e');
    expect(h.stdout.join('')).toBe('a\nc\ne\n');
    expect(h.exit()).toBe(0);
  });

  it('&& after a failure keeps the failure status', () => {
    expect(sh('false && true').exit()).toBe(1);
    expect(sh('! true').exit()).toBe(1);
  });

  it('$? is the last status', () => {
    const h = sh('false; echo "status $?"');
    expect(h.stdout.join('')).toBe('status 1\n');
  });

  it('if/elif/else, while, until, for, break', () => {
    const h = sh(`
      if false; then echo no; elif true; then echo yes; else echo no; fi
      for x in a b c; do echo "x=$x"; done
      n=0
      while true; do
        if [ -e /tmp/stop ]; then break; fi
        touch /tmp/stop
        echo loop
      done
      until [ -e /tmp/go ]; do touch /tmp/go; done
    `);
    expect(h.stdout.join('')).toBe('yes\nx=a\nx=b\nx=c\nloop\n');
    expect(h.exit()).toBe(0);
  });

  it('continue and break, by one level or several, and the status a loop leaves in $?', () => {
    const h = sh(`
      for i in 1 2 3; do
        for j in a b c; do
          [ "$j" = b ] && continue
          [ "$i" = 2 ] && continue 2
          [ "$i" = 3 ] && break 2
          echo "$i$j"
        done
        echo "end $i"
      done
      echo "after $?"
      for k in x; do false; done; echo "body $?"
      while true; do break; done; echo "break $?"
      for k in x; do sleep 1; echo slept; done
    `);
    expect(h.stdout.join('')).toBe('1a\n1c\nend 1\nafter 0\nbody 1\nbreak 0\n');
    h.clock.advance(1000);
    expect(h.stdout.join('')).toBe('1a\n1c\nend 1\nafter 0\nbody 1\nbreak 0\nslept\n');
    expect(h.exit()).toBe(0);
  });

  it('break and continue as busybox ash\'s (breakcmd): N loops out at most, nothing outside a loop, a count that is not a positive number ends the shell with 2', () => {
    const cases: [script: string, stdout: string, stderr: string, status: number][] = [
      [':; echo "colon $?"', 'colon 0\n', '', 0],
      ['break; echo "after $?"', 'after 0\n', '', 0],
      ['continue; echo after', 'after\n', '', 0],
      ['while true; do break 5; done; echo out', 'out\n', '', 0],
      ['for i in 1 2; do while true; do continue 9; done; echo never; done; echo out', 'out\n', '', 0],
      ['until false; do break; done; echo "until $?"', 'until 0\n', '', 0],
      ['while break; do echo never; done; echo "condition $?"', 'condition 0\n', '', 0],
      ['for i in 1 2; do sh -c "break; echo nested $i"; done', 'nested 1\nnested 2\n', '', 0],
      ['while true; do break x; done; echo never', '', 'sh: break: Illegal number: x\n', 2],
      ['for i in 1; do continue 0; done; echo never', '', 'sh: continue: Illegal number: 0\n', 2],
      ['while true; do break -1; done', '', 'sh: break: Illegal number: -1\n', 2],
    ];
    for (const [script, stdout, stderr, status] of cases) {
      const h = sh(script);
      expect([script, h.stdout.join(''), h.stderr.join(''), h.exit()]).toEqual([script, stdout, stderr, status]);
    }
  });

  it('a loop that never blocks yields 1 ms of clock at a time instead of hanging', () => {
    const h = sh('while true; do true; done');
    expect(h.exit()).toBeNull();
    expect(h.clock.pendingTimers).toBe(1);
    h.proc.signal('KILL');
    expect(h.exit()).toBe(EXIT_KILL);
  });

  it('exec replaces the shell: the command (by its path too) runs in place, its status is the shell\'s, nothing after it runs', () => {
    const h = sh('echo before; exec /bin/sleep 2; echo never');
    h.clock.advance(1999);
    expect(h.exit()).toBeNull();
    h.clock.advance(1);
    expect(h.exit()).toBe(0);
    expect(h.stdout.join('')).toBe('before\n');
    const failed = sh("trap 'echo trap' EXIT; exec false || echo never");
    expect(failed.exit()).toBe(1);
    expect(failed.stdout).toEqual([]);
    expect(sh('exec echo hi; echo never').stdout.join('')).toBe('hi\n');
    expect(sh('exec; echo still').stdout.join('')).toBe('still\n');
    expect(sh("sh -c 'exec false'; echo \"nested $?\"").stdout.join('')).toBe('nested 1\n');
  });

  it("sleep's bad operands are said on stderr (or where it is redirected) and fail, without blocking", () => {
    const h = sh('sleep; echo "missing $?"; sleep soon; echo "invalid $?"; sleep 0; echo "zero $?"');
    expect(h.exit()).toBe(0);
    expect(h.stdout.join('')).toBe('missing 1\ninvalid 1\nzero 0\n');
    expect(h.stderr.join('')).toBe("sleep: missing operand\nsleep: invalid number 'soon'\n");
    const redirected = sh('sleep x 2>&1; echo done');
    expect(redirected.stdout.join('')).toBe("sleep: invalid number 'x'\ndone\n");
    expect(redirected.stderr).toEqual([]);
  });

  it('a command with redirections writes where they say, the next one without them to the standard streams again', () => {
    const h = sh('echo one > /tmp/f; echo two; cat /tmp/f; echo oops >&2; echo back');
    expect(h.stdout.join('')).toBe('two\none\nback\n');
    expect(h.stderr.join('')).toBe('oops\n');
  });

  it('while with sleep loops on the clock', () => {
    const h = sh('while true; do echo tick; sleep 1; done');
    h.clock.advance(2500);
    expect(h.stdout).toEqual(['tick\n', 'tick\n', 'tick\n']);
  });
});

describe('signals', () => {
  it('a TERM trap runs at once, interrupting sleep', () => {
    const h = sh("trap 'echo bye; exit 0' TERM; sleep 3600");
    h.proc.signal('TERM');
    expect(h.exit()).toBe(0);
    expect(h.stdout.join('')).toBe('bye\n');
    expect(h.clock.pendingTimers).toBe(0);
  });

  it('the busybox idiom: trap + while sleep', () => {
    const h = sh("trap 'exit 0' TERM; while true; do sleep 1; done");
    h.clock.advance(5000);
    h.proc.signal('TERM');
    expect(h.exit()).toBe(0);
  });

  it("a trap that does not exit cuts a loop's sleep short: 143 is the body's status, and the loop goes on", () => {
    const h = sh(`trap 'echo trapped; touch /tmp/stop' TERM; while [ ! -e /tmp/stop ]; do sleep 10; done; echo "after $?"; /bin/sleep 2; echo "slept $?"`);
    h.clock.advance(25_000);
    expect(h.stdout.join('')).toBe('');
    h.proc.signal('TERM');
    expect(h.stdout.join('')).toBe('trapped\nafter 143\n');
    h.clock.advance(2000);
    expect(h.stdout.join('')).toBe('trapped\nafter 143\nslept 0\n');
    expect(h.exit()).toBe(0);
    expect(h.clock.pendingTimers).toBe(0);
  });

  it('sleep & wait: TERM interrupts the wait', () => {
    const h = sh("trap 'exit 7' TERM; sleep 3600 & wait");
    h.clock.advance(1000);
    expect(h.exit()).toBeNull();
    h.proc.signal('TERM');
    expect(h.exit()).toBe(7);
    expect(h.clock.pendingTimers).toBe(0);
  });

  it('wait returns when background jobs finish', () => {
    const h = sh('sleep 2 & sleep 1 & wait; echo done');
    h.clock.advance(1000);
    expect(h.exit()).toBeNull();
    h.clock.advance(1000);
    expect(h.stdout.join('')).toBe('done\n');
    expect(h.exit()).toBe(0);
  });

  it('a trap that does not exit lets the script continue after the interrupted command', () => {
    const h = sh("trap 'echo got TERM' TERM; sleep 100; echo after $?; sleep 100; exit 4");
    h.proc.signal('TERM');
    expect(h.stdout.join('')).toBe(`got TERM\nafter ${EXIT_TERM}\n`);
    h.clock.advance(100_000);
    expect(h.exit()).toBe(4);
  });

  it('PID 1 without a trap ignores TERM (the runtime kills after the grace period)', () => {
    const script = sh('sleep 3600');
    script.proc.signal('TERM');
    expect(script.exit()).toBeNull();
    script.proc.signal('KILL');
    expect(script.exit()).toBe(EXIT_KILL);

    const bare = start(['sleep', '3600']);
    bare.proc.signal('TERM');
    expect(bare.exit()).toBeNull();
  });

  it('trap "" TERM ignores TERM even outside PID 1', () => {
    const h = sh("trap '' TERM; sleep 10", { pid1: false });
    h.proc.signal('TERM');
    expect(h.exit()).toBeNull();
  });

  it('not PID 1 (exec): untrapped TERM kills with 143', () => {
    const h = sh('sleep 10', { pid1: false });
    h.proc.signal('TERM');
    expect(h.exit()).toBe(EXIT_TERM);
  });

  it('no argv at all behaves like pause: exits 0 on TERM', () => {
    const h = start([]);
    expect(h.clock.pendingTimers).toBe(0);
    h.proc.signal('TERM');
    expect(h.exit()).toBe(0);
  });

  it('an EXIT trap runs at normal exit', () => {
    const h = sh("trap 'echo cleanup' EXIT; exit 5");
    expect(h.stdout.join('')).toBe('cleanup\n');
    expect(h.exit()).toBe(5);
  });
});

describe('commands', () => {
  it('an unknown command exits 127 with "not found"', () => {
    const h = sh('nosuchthing --flag');
    expect(h.exit()).toBe(127);
    expect(h.stderr.join('')).toBe('sh: nosuchthing: not found\n');
    expect(start(['nginx', '-g', 'daemon off;']).exit()).toBe(127);
  });

  it('file operations on the simulated filesystem', () => {
    const h = sh(`
      touch /tmp/a && test -e /tmp/a && [ -f /tmp/a ] && echo exists
      rm /tmp/a; [ -e /tmp/a ] || echo gone
      rm /tmp/a || echo "rm failed $?"
      rm -f /tmp/a && echo "rm -f ok"
      echo hello > /tmp/b; echo world >> /tmp/b; cat /tmp/b
      cat /nope
    `);
    expect(h.stdout.join('')).toBe('exists\ngone\nrm failed 1\nrm -f ok\nhello\nworld\n');
    expect(h.stderr.join('')).toBe(
      "rm: can't remove '/tmp/a': No such file or directory\ncat: can't open '/nope': No such file or directory\n",
    );
    expect(h.exit()).toBe(1);
    expect(h.fs.read('/tmp/b')).toBe('hello\nworld\n');
  });

  it('grep: matching lines, -q, -F, and the exit status', () => {
    const h = sh(`
      echo 'nameserver 10.96.0.10' > /etc/resolv.conf; echo 'search a.svc b.local' >> /etc/resolv.conf
      grep nameserver /etc/resolv.conf
      grep -q '^search .*svc' /etc/resolv.conf && echo found
      grep -qF '10.96.0.1' /etc/resolv.conf && echo fixed
      grep -q nothing /etc/resolv.conf || echo "none $?"
      grep x /missing || echo "missing $?"
    `);
    expect(h.stdout.join('')).toBe('nameserver 10.96.0.10\nfound\nfixed\nnone 1\nmissing 2\n');
    expect(h.stderr.join('')).toBe('grep: /missing: No such file or directory\n');
  });

  it('sees its mounts as the host files under them, and cannot write to a read-only one', () => {
    const host = mkdtempSync(path.join(os.tmpdir(), 'statelet-simfs-'));
    try {
      writeFileSync(path.join(host, 'hosts'), '10.0.0.7\tweb\n');
      mkdirSync(path.join(host, 'config'));
      writeFileSync(path.join(host, 'config', 'mode'), 'fast');
      const fs = new SimFs([
        { containerPath: '/etc/hosts', hostPath: path.join(host, 'hosts'), readonly: false },
        { containerPath: '/config', hostPath: path.join(host, 'config'), readonly: true },
      ]);
      const h = sh(`
        grep -q web /etc/hosts && echo resolved
        echo '10.0.0.8 db' >> /etc/hosts
        [ -d /config ] && cat /config/mode && echo
        echo x > /config/mode || echo "refused $?"
        touch /config/new || echo "touch refused $?"
      `, { fs });
      expect(h.stdout.join('')).toBe('resolved\nfast\nrefused 1\ntouch refused 1\n');
      expect(h.stderr.join('')).toMatch(/can't create \/config\/mode: Read-only file system\n.*touch: \/config\/new: Read-only file system/s);
      expect(readFileSync(path.join(host, 'hosts'), 'utf8')).toBe('10.0.0.7\tweb\n10.0.0.8 db\n');
      expect(readFileSync(path.join(host, 'config', 'mode'), 'utf8')).toBe('fast');
    } finally {
      rmSync(host, { recursive: true, force: true });
    }
  });

  it('holds a process that is not root to the host permission bits under its mounts, as Linux does; root passes', () => {
    const host = mkdtempSync(path.join(os.tmpdir(), 'statelet-simfs-'));
    try {
      for (const [name, mode] of [['open', 0o777], ['closed', 0o755], ['team', 0o770]] as const) {
        mkdirSync(path.join(host, name));
        chmodSync(path.join(host, name), mode);
      }
      writeFileSync(path.join(host, 'closed', 'f'), 'agent\n');
      chmodSync(path.join(host, 'closed', 'f'), 0o644);
      const mounts = ['open', 'closed', 'team'].map((name) => ({ containerPath: `/${name}`, hostPath: path.join(host, name), readonly: false }));
      // uid 4242 is neither the agent nor root; the agent's own group is one of its groups or not.
      const agentGroup = process.getgid!();
      const script = `
        touch /open/x && echo x >> /open/x && mkdir -p /open/d/e && echo open
        touch /closed/y || echo "touch $?"
        echo z >> /closed/f || echo "append $?"
        mkdir /closed/d || echo "mkdir $?"
        rm /closed/f || echo "rm $?"
        touch /team/t && echo team
      `;
      const stranger = sh(script, { fs: new SimFs(mounts, false, { uid: 4242, gid: 4242, groups: [4242] }) });
      expect(stranger.stdout.join('')).toBe('open\ntouch 1\nappend 1\nmkdir 1\nrm 1\n');
      expect(stranger.stderr.join('')).toBe(
        [
          'touch: /closed/y: Permission denied',
          "sh: can't create /closed/f: Permission denied",
          "mkdir: can't create directory '/closed/d': Permission denied",
          "rm: can't remove '/closed/f': Permission denied",
          'touch: /team/t: Permission denied',
          '',
        ].join('\n'),
      );
      expect(readFileSync(path.join(host, 'open', 'x'), 'utf8')).toBe('x\n');
      expect(readFileSync(path.join(host, 'closed', 'f'), 'utf8')).toBe('agent\n');
      const member = sh('touch /team/t && echo team', { fs: new SimFs(mounts, false, { uid: 4242, gid: 4242, groups: [4242, agentGroup] }) });
      expect(member.stdout.join('')).toBe('team\n');
      const root = sh('touch /closed/y && echo z >> /closed/f && echo root', { fs: new SimFs(mounts, false, { uid: 0, gid: 0, groups: [0] }) });
      expect(root.stdout.join('')).toBe('root\n');
    } finally {
      rmSync(host, { recursive: true, force: true });
    }
  });

  it('stat -c shows the owner, group and mode of a mounted path, and says what it cannot show', () => {
    const host = mkdtempSync(path.join(os.tmpdir(), 'statelet-simfs-'));
    try {
      mkdirSync(path.join(host, 'data'));
      chmodSync(path.join(host, 'data'), 0o2775);
      writeFileSync(path.join(host, 'data', 'f'), '');
      chmodSync(path.join(host, 'data', 'f'), 0o640);
      const fs = new SimFs([{ containerPath: '/data', hostPath: path.join(host, 'data'), readonly: false }]);
      const h = sh(`
        stat -c %g /data
        stat -c '%u:%g %a %n %%' /data/f
        stat -c %a /data/missing || echo "missing $?"
        stat -c %a /tmp || echo "layer $?"
        stat /data || echo "usage $?"
      `, { fs });
      const [uid, gid] = [process.getuid!(), process.getgid!()];
      expect(h.stdout.join('')).toBe(`${gid}\n${uid}:${gid} 640 /data/f %\nmissing 1\nlayer 1\nusage 1\n`);
      expect(h.stderr.join('')).toBe(
        [
          "stat: can't stat '/data/missing': No such file or directory",
          "stat: sim:// knows owners only of mounted paths: '/tmp'",
          'stat: sim:// supports stat -c FORMAT FILE... with %u %g %a %n %%',
          '',
        ].join('\n'),
      );
      expect(sh('stat -c %a /data', { fs }).stdout.join('')).toBe('2775\n');
    } finally {
      rmSync(host, { recursive: true, force: true });
    }
  });

  it('a write the host refuses (a full disk) fails as in sh, and the script goes on', () => {
    // /dev/full answers every write with ENOSPC; a path under it is not a directory (ENOTDIR).
    const fs = new SimFs([
      { containerPath: '/data/beats', hostPath: '/dev/full', readonly: false },
      { containerPath: '/data/sub', hostPath: '/dev/full/sub', readonly: false },
    ]);
    const h = sh(`
      echo beat >> /data/beats || echo "echo failed $?"
      echo beat > /data/sub/f || echo "redirect failed $?"
      touch /data/sub/g || echo "touch failed $?"
      mkdir -p /data/sub/h || echo "mkdir failed $?"
      echo still running
    `, { fs });
    expect(h.stdout.join('')).toBe('echo failed 1\nredirect failed 1\ntouch failed 1\nmkdir failed 1\nstill running\n');
    expect(h.stderr.join('')).toBe(
      [
        'sh: write error: No space left on device',
        "sh: can't create /data/sub/f: Not a directory",
        'touch: /data/sub/g: Not a directory',
        "mkdir: can't create directory '/data/sub/h': Not a directory",
        '',
      ].join('\n'),
    );
    expect(h.exit()).toBe(0);
  });

  it('mkdir, relative paths, cd, test -d / -s / string comparisons', () => {
    const h = sh(`
      mkdir -p /data/sub && cd /data && touch sub/f && [ -d /data/sub ] && [ -e /data/sub/f ] && echo ok1
      [ -s sub/f ] || echo empty
      [ "$HOME" = /root ] && [ 3 -gt 2 ] && [ -n "x" ] && [ -z "" ] && echo ok2
    `, { env: { HOME: '/root' } });
    expect(h.stdout.join('')).toBe('ok1\nempty\nok2\n');
    expect(h.fs.listFiles()).toEqual(['/data/sub/f']);
  });

  it('echo goes to stdout, >&2 to stderr, quoting and variables', () => {
    const h = sh(`echo "a  b" 'c $X' $X; echo -n no-newline; echo err >&2; echo quiet >/dev/null`, { env: { X: 'ex' } });
    expect(h.stdout).toEqual(['a  b c $X ex\n', 'no-newline']);
    expect(h.stderr).toEqual(['err\n']);
  });

  it('a bare argv runs without a shell: no expansion, metacharacters are literal', () => {
    const h = start(['echo', '$HOME', 'a;b', '&&']);
    expect(h.stdout.join('')).toBe('$HOME a;b &&\n');
    expect(h.exit()).toBe(0);
  });

  it('absolute paths to known commands work', () => {
    const h = start(['/bin/sh', '-c', '/bin/echo hi; /bin/sleep 1']);
    h.clock.advance(1000);
    expect(h.stdout.join('')).toBe('hi\n');
    expect(h.exit()).toBe(0);
  });

  it('a busybox applet by its path as by its name; the shell\'s own builtins have no path', () => {
    const cases: [argv: string[], stderr: RegExp, status: number][] = [
      [['/usr/bin/wget'], /^wget: missing URL\n/, 1],
      [['sh', '-c', '/usr/bin/wget -q -O- http://web/'], /^wget: bad address 'web'\n$/, 1],
      [['/bin/dd', 'if=/dev/zero', 'of=/dev/null', 'count=1'], /^1\+0 records in\n/, 0],
      [['/bin/true'], /^$/, 0],
      [['/bin/:'], /^sh: \/bin\/:: not found\n$/, 127],
      [['sh', '-c', 'for i in 1; do /bin/break; done'], /^sh: \/bin\/break: not found\n$/, 127],
      [['sh', '-c', '/bin/exit 3'], /^sh: \/bin\/exit: not found\n$/, 127],
    ];
    for (const [argv, stderr, status] of cases) {
      const h = start(argv, { network: new SimNetwork('127.9.9.9') });
      expect([argv, h.exit()]).toEqual([argv, status]);
      expect(h.stderr.join('')).toMatch(stderr);
    }
  });

  it('dd as busybox\'s: what it writes to the simulated filesystem, its report, and what the sim refuses', () => {
    const report = (records: string, bytes: number) => `${records} records in\n${records} records out\n${bytes} bytes copied\n`;
    const cases: [script: string, written: number | undefined, stderr: string, status: number][] = [
      ['dd if=/dev/zero of=/tmp/f bs=1M count=2', 2 * 2 ** 20, report('2+0', 2 * 2 ** 20), 0],
      ['dd if=/dev/zero of=/tmp/f count=2', 1024, report('2+0', 1024), 0],
      ['dd if=/dev/zero of=/tmp/f bs=1kB count=3', 3000, report('3+0', 3000), 0],
      ['dd if=/dev/zero of=/tmp/f bs=2kD count=1', 2000, report('1+0', 2000), 0],
      ['dd if=/dev/zero of=/tmp/f bs=1k count=3 status=noxfer', 3072, '3+0 records in\n3+0 records out\n', 0],
      ['dd if=/dev/zero of=/tmp/f bs=1k count=3 status=none', 3072, '', 0],
      ['dd if=/dev/zero of=/dev/null bs=1M count=1', undefined, report('1+0', 2 ** 20), 0],
      ['echo hello > /tmp/in; dd if=/tmp/in of=/tmp/f bs=4', 6, report('1+1', 6), 0],
      ['echo hello > /tmp/in; dd if=/tmp/in of=/tmp/f bs=4 count=1', 4, report('1+0', 4), 0],
      ['dd of=/tmp/f', 0, report('0+0', 0), 0],
      ['dd if=/nope of=/tmp/f', undefined, "dd: can't open '/nope': No such file or directory\n", 1],
      ['dd if=/dev/zero of=/tmp/f bs=0 count=1', undefined, 'dd: number 0 is not in 1..9223372036854775807 range\n', 1],
      ['dd if=/dev/zero of=/tmp/f bs=1Q count=1', undefined, "dd: invalid number '1Q'\n", 1],
      ['dd if=/dev/zero of=/tmp/f count=many', undefined, "dd: invalid number 'many'\n", 1],
      ['dd of=/tmp/f status=progress', undefined, "dd: invalid argument 'progress' to 'status'\n", 1],
      ['dd if=/dev/zero of=/tmp/f size=1', undefined, 'Usage: dd [if=FILE] [of=FILE] [ibs=N obs=N/bs=N] [count=N] [skip=N] [seek=N]\n', 1],
      ['dd if=/dev/zero of=/tmp/f bs=1k count=1 seek=4', undefined, 'dd: seek= is not supported by the sim\n', 1],
      ['dd if=/dev/zero of=/tmp/f bs=1k count=1 conv=notrunc', undefined, 'dd: conv= is not supported by the sim\n', 1],
      ['dd if=/dev/zero bs=1k count=1', undefined, 'dd: writing to stdout is not supported by the sim: give of=FILE or of=/dev/null\n', 1],
      ['dd if=/dev/zero of=/tmp/f', undefined, 'dd: if=/dev/zero without count= is not supported by the sim\n', 1],
    ];
    for (const [script, written, stderr, status] of cases) {
      const h = sh(script);
      expect([script, h.fs.size('/tmp/f'), h.stderr.join(''), h.exit()]).toEqual([script, written, stderr, status]);
    }
  });
});

describe('networking applets', () => {
  it('reject what busybox would reject, without opening a socket', () => {
    const cases: [string, RegExp][] = [
      ['httpd -x', /httpd: invalid option -- 'x'/],
      ['httpd -f -p', /option requires an argument -- 'p'/],
      ['httpd -f -p 8080 -h /nope', /httpd: can't change directory to '\/nope'/],
      ['httpd -f -p 10.1.2.3:8080', /httpd: bind: Cannot assign requested address/],
      ['httpd -f -p web:80', /httpd: bad address 'web:80'/],
      ['httpd -f -p 0.0.0.0:http', /bad port spec/],
      ['httpd -i', /-i is not supported/],
      ['nc 10.0.0.1 80', /only listen mode/],
      ['nc -l', /supports "nc -l -p PORT" only/],
      ['nc -l -p 8080 -e /bin/cat', /-e is not supported/],
      ['wget', /wget: missing URL/],
      ['wget http://web/healthz', /wget: bad address 'web'/],
      ['wget https://10.0.0.1/', /wget: not an http or ftp url: https:\/\/10.0.0.1\//],
      ['wget -c http://10.0.0.1/', /-c is not supported/],
      ['wget --post-data=x http://10.0.0.1/', /unrecognized option '--post-data=x'/],
      ['wget -T soon http://10.0.0.1/', /invalid number 'soon'/],
    ];
    for (const [script, message] of cases) {
      const h = sh(script, { network: new SimNetwork('127.9.9.9') });
      expect([script, h.exit()]).toEqual([script, 1]);
      expect(h.stderr.join('')).toMatch(message);
    }
  });

  it('a pod-network container cannot bind its own 127.0.0.1 (not modelled)', () => {
    const h = sh('httpd -f -p 127.0.0.1:8080', { network: new SimNetwork('127.9.9.9') });
    expect(h.exit()).toBe(1);
    expect(h.stderr.join('')).toMatch(/own loopback is not modelled/);
  });

  it('a TERM trap interrupts a foreground httpd at once and closes its socket', async () => {
    const port = await freePort();
    const network = new SimNetwork('127.0.0.1');
    const h = sh(`trap 'echo bye; exit 0' TERM; httpd -f -p ${port}`, { network });
    await network.whenListening(port);
    h.proc.signal('TERM');
    expect(h.exit()).toBe(0);
    expect(h.stdout.join('')).toBe('bye\n');
    expect(network.isListening(port)).toBe(false);
  });

  it('without a trap, PID 1 ignores TERM while serving; an exec\'d httpd dies of it (143)', async () => {
    const port = await freePort();
    const network = new SimNetwork('127.0.0.1');
    const pid1 = sh(`httpd -f -p ${port}`, { network });
    await network.whenListening(port);
    pid1.proc.signal('TERM');
    expect(pid1.exit()).toBeNull();
    expect(network.isListening(port)).toBe(true);
    pid1.proc.signal('KILL');
    expect(pid1.exit()).toBe(EXIT_KILL);
    expect(network.isListening(port)).toBe(false);

    const exec = start(['httpd', '-f', '-p', String(port)], { pid1: false, network });
    await network.whenListening(port);
    exec.proc.signal('TERM');
    expect(exec.exit()).toBe(EXIT_TERM);
    expect(network.isListening(port)).toBe(false);
  });

  it('a process without a network of its own closes its daemons when it ends', async () => {
    const port = await freePort();
    const h = sh(`httpd -p ${port} && echo up; sleep 5`);
    // The daemon reports success once bound; give the event loop a bounded number of turns.
    for (let turn = 0; turn < 1000 && h.stdout.length === 0 && h.stderr.length === 0; turn++) await new Promise((resolve) => setImmediate(resolve));
    expect(h.stdout.join('')).toBe('up\n');
    expect(await isListening(port)).toBe(true);
    expect(h.exit()).toBeNull();
    h.clock.advance(5000);
    expect(h.exit()).toBe(0);
    expect(await isListening(port)).toBe(false);
  });
});

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen({ host: '0.0.0.0', port: 0 }, resolve);
  });
  const address = server.address();
  await new Promise((resolve) => server.close(resolve));
  if (!address || typeof address === 'string') throw new Error('no port');
  return address.port;
}

/** Whether something accepts connections on 127.0.0.1:port. */
function isListening(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host: '127.0.0.1', port });
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}
