/**
 * OOM kills read from the kernel's log, pure (cadvisor utils/oomparser/oomparser.go, as the
 * kubelet's OOM watcher uses it): an OOM starts at a line with `invoked oom-killer:` and ends at
 * the kernel's `oom-kill:` summary line (Linux 5.0 and later) or its `Killed process <pid> (<name>)`
 * line. The summary names the cgroup whose limit was hit (`oom_memcg=`); a whole-machine OOM names
 * none (`global_oom`, or no summary at all), and its victim cgroup is `/`.
 */

/** One OOM kill. */
export interface OomKill {
  /** The process killed, and its pid (0 when the log did not say). */
  process: string;
  pid: number;
  /** The cgroup that ran out: `/` for the whole machine. */
  victimCgroup: string;
  /** CONSTRAINT_NONE, CONSTRAINT_MEMCG, … ('' when the log did not say). */
  constraint: string;
}

const START = /invoked oom-killer:/;
const SUMMARY = /oom-kill:constraint=([^,]*),.*?(?:,oom_memcg=([^,]*))?,task_memcg=([^,]*),task=([^,]*),pid=(\d+),uid=\d+/;
const KILLED = /Killed process (\d+) \((.+?)\)/;

/** Reads kernel log lines one at a time and returns each OOM kill once its last line is read. */
export class OomParser {
  private current: OomKill | null = null;

  /** A line of the kernel's log (its text, without the `[seconds]` prefix or not); an OOM when this line ends one. */
  feed(line: string): OomKill | null {
    if (START.test(line)) {
      this.current = { process: '', pid: 0, victimCgroup: '/', constraint: '' };
      return null;
    }
    if (!this.current) return null;
    const summary = SUMMARY.exec(line);
    if (summary) {
      const [, constraint, oomMemcg, , task, pid] = summary;
      return this.finish({ process: task ?? '', pid: Number(pid), victimCgroup: oomMemcg || '/', constraint: constraint ?? '' });
    }
    const killed = KILLED.exec(line);
    if (killed) return this.finish({ ...this.current, pid: Number(killed[1]), process: killed[2] ?? '' });
    return null;
  }

  private finish(kill: OomKill): OomKill {
    this.current = null;
    return kill;
  }
}

/**
 * The Node event for an OOM of the whole machine (pkg/kubelet/oom/oom_watcher_linux.go Start):
 * `System OOM encountered, victim process: <name>, pid: <pid>`; null for a cgroup's OOM, which
 * the container's status tells (OOMKilled).
 */
export function systemOomMessage(kill: OomKill): string | null {
  if (kill.victimCgroup !== '/') return null;
  return kill.process && kill.pid ? `System OOM encountered, victim process: ${kill.process}, pid: ${kill.pid}` : 'System OOM encountered';
}
