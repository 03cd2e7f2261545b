/**
 * The OOM watcher's effect: the node's kernel log followed from now on, each line through the
 * parser, a `SystemOOM` Warning event on the Node for each OOM of the whole machine
 * (oom_watcher_linux.go Start), and the loop told of it.
 */
import { type EventRecorder, nodeReference } from '../eventrecorder/recorder.ts';
import type { OomWatcherEvent } from '../events.ts';
import type { Logger } from '../log.ts';
import type { KernelLog } from '../node/kernelLog.ts';
import { OomParser, systemOomMessage } from './oomParser.ts';

interface FollowDeps {
  kernelLog: KernelLog;
  nodeName: string;
  recorder: EventRecorder;
  log: Logger;
}

/** The `followKernelLog` callback actor: follows until stopped; tells OOM.SYSTEM and OOM.LOG_ENDED. */
export function followKernelLog(deps: FollowDeps) {
  return ({ sendBack }: { sendBack: (event: OomWatcherEvent) => void }) => {
    const parser = new OomParser();
    return deps.kernelLog.follow(
      (line) => {
        const kill = parser.feed(line);
        const message = kill && systemOomMessage(kill);
        if (!kill || !message) return;
        deps.log('info', 'Got sys oom event', { process: kill.process, pid: kill.pid, constraint: kill.constraint });
        deps.recorder.event(nodeReference(deps.nodeName), 'Warning', 'SystemOOM', message);
        sendBack({ type: 'OOM.SYSTEM', process: kill.process, pid: kill.pid });
      },
      (error) => {
        deps.log('warn', 'Cannot follow the kernel log: system OOMs will not be reported', { err: error });
        sendBack({ type: 'OOM.LOG_ENDED', error: error.message });
      },
    );
  };
}
