/**
 * Container termination messages, as the kubelet makes them (pkg/kubelet/kuberuntime
 * kuberuntime_container.go makeMounts, getTerminationMessage, readLastStringFromContainerLogs and
 * their caller in getPodContainerStatuses; pkg/kubelet/status normalizeStatus).
 *
 * - Before each start, the container gets an empty file of its own, mode 0666, at
 *   `<root-dir>/pods/<uid>/containers/<name>/<random id>`, mounted at its terminationMessagePath
 *   (`terminationMessageMount`). It goes with the pod's directory.
 * - Once the container has exited, its message is the last 4096 bytes of that file (found among
 *   the mounts its ContainerStatus reports); with FallbackToLogsOnError, a failed exit (not
 *   ContainerCannotRun) and an empty or missing file, the last 80 lines of its log, at most 2048
 *   bytes. It follows the runtime's own message after ": " (`joinMessages`).
 * - The pod's status cuts each terminated state's message to 12 KiB shared among the pod's
 *   containers (`messageLimitPerContainer`).
 *
 * An exited container's message never changes, so `TerminationMessages` reads it once per
 * container ID and keeps it for as long as the runtime still lists the container: a sync does not
 * read a file per exited container forever.
 */
import { randomBytes } from 'node:crypto';
import { chmod, open, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { Container, Pod } from '../api/types.ts';
import type { ContainerStatus, Mount } from '../runtime/types.ts';
import { mkdirAll } from '../volumes/mkdirAll.ts';
import { Annotation } from './labels.ts';
import { readContainerLog } from './logs/reader.ts';

/** kubecontainer.MaxContainerTerminationMessageLength: what is read of the file, from its end. */
export const MAX_MESSAGE_FILE_BYTES = 4096;
/** kubecontainer.MaxContainerTerminationMessageLogLines: the log lines a fallback reads. */
export const MAX_MESSAGE_LOG_LINES = 80;
/** kubecontainer.MaxContainerTerminationMessageLogLength: what a fallback keeps of them, from their end. */
export const MAX_MESSAGE_LOG_BYTES = 2048;
/** kubecontainer.MaxPodTerminationMessageLogLength: the pod's status holds at most this much of all its messages. */
export const MAX_POD_MESSAGE_BYTES = 12 * 1024;

const DEFAULT_PATH = '/dev/termination-log';

/** What the rule reads of an exited container (the runtime's status and its kubelet annotations). */
export interface ExitedContainer {
  exitCode: number;
  reason: string;
  policy: 'File' | 'FallbackToLogsOnError';
}

/** Whether the log may stand in for an empty file: FallbackToLogsOnError, a failed exit, and a process that ran (ContainerCannotRun has no logs). */
export function mayFallBackToLogs(c: ExitedContainer): boolean {
  return c.policy === 'FallbackToLogsOnError' && c.exitCode !== 0 && c.reason !== 'ContainerCannotRun';
}

/** What the file gave: its text, nothing (missing, or no mount at the path), or an error to report instead. */
export type FileMessage = { text: string } | { missing: true } | { error: string };

/** Whether the log's tail is wanted: the file gave nothing (empty, missing, no mount) and the log may stand in for it. */
export function needsLogTail(c: ExitedContainer, file: FileMessage): boolean {
  if ('error' in file) return false;
  return !('text' in file && file.text !== '') && mayFallBackToLogs(c);
}

/** The termination message from what the file gave and the log's tail, read only when needsLogTail (getTerminationMessage's rule). */
export function chooseMessage(c: ExitedContainer, file: FileMessage, logTail: string): string {
  if ('error' in file) return file.error;
  if (needsLogTail(c, file)) return logTail;
  return 'text' in file ? file.text : '';
}

/** The runtime's message, then the termination message after ": " when both are there. */
export function joinMessages(runtimeMessage: string, terminationMessage: string): string {
  if (!terminationMessage) return runtimeMessage;
  return runtimeMessage ? `${runtimeMessage}: ${terminationMessage}` : terminationMessage;
}

/** The last `max` bytes of `bytes`, as text. */
export function lastBytes(bytes: Buffer, max: number): string {
  return (bytes.length > max ? bytes.subarray(bytes.length - max) : bytes).toString('utf8');
}

/** normalizeStatus: each terminated state's message gets 12 KiB divided by the pod's containers of all kinds (status_manager.go). */
export function messageLimitPerContainer(pod: Pod): number {
  const containers = pod.spec.containers.length + (pod.spec.initContainers?.length ?? 0) + (pod.spec.ephemeralContainers?.length ?? 0);
  return containers > 0 ? Math.floor(MAX_POD_MESSAGE_BYTES / containers) : MAX_POD_MESSAGE_BYTES;
}

/** The first `max` bytes of `message` (normalizeStatus cuts bytes; a cut character becomes U+FFFD, as in the API's JSON). */
export function truncateMessage(message: string, max: number): string {
  const bytes = Buffer.from(message, 'utf8');
  return bytes.length > max ? bytes.subarray(0, max).toString('utf8') : message;
}

/**
 * makeMounts' termination message file: a fresh empty file (0666, whatever the umask) under
 * `<podsDir>/<uid>/containers/<name>/`, mounted at the container's terminationMessagePath. A file
 * that cannot be made is only reported, as by the kubelet: the container starts without it.
 */
export async function terminationMessageMount(podsDir: string, pod: Pod, container: Container, onError: (err: unknown) => void): Promise<Mount | null> {
  const containerPath = container.terminationMessagePath ?? DEFAULT_PATH;
  if (!containerPath) return null;
  const dir = path.join(podsDir, pod.metadata.uid, 'containers', container.name);
  const file = path.join(dir, randomBytes(4).toString('hex'));
  try {
    await mkdirAll(dir, 0o750);
    await writeFile(file, '');
    await chmod(file, 0o666);
  } catch (err) {
    onError(err);
    return null;
  }
  return { containerPath, hostPath: file, readonly: false };
}

/** The last `max` bytes of the file (tail.ReadAtMost). */
async function readAtMost(file: string, max: number): Promise<Buffer> {
  const handle = await open(file, 'r');
  try {
    const { size } = await handle.stat();
    const length = Math.min(size, max);
    const buffer = Buffer.alloc(length);
    const { bytesRead } = await handle.read(buffer, 0, length, size - length);
    return buffer.subarray(0, bytesRead);
  } finally {
    await handle.close();
  }
}

async function readMessageFile(status: ContainerStatus, containerPath: string): Promise<FileMessage> {
  const mount = containerPath ? status.mounts.find((m) => m.containerPath === containerPath) : undefined;
  if (!mount) return { missing: true };
  try {
    return { text: (await readAtMost(mount.hostPath, MAX_MESSAGE_FILE_BYTES)).toString('utf8') };
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return { missing: true };
    return { error: `Error on reading termination log ${mount.hostPath}: ${err instanceof Error ? err.message : String(err)}` };
  }
}

/** readLastStringFromContainerLogs: the last 80 lines of the log as `kubectl logs` shows them, at most their last 2048 bytes. */
async function readLogTail(logPath: string): Promise<string> {
  const chunks: Buffer[] = [];
  try {
    await readContainerLog(logPath, { tailLines: MAX_MESSAGE_LOG_LINES }, (_, chunk) => chunks.push(chunk), {
      isRunning: async () => false,
      signal: new AbortController().signal,
    });
  } catch (err) {
    return `Error on reading termination message from logs: ${err instanceof Error ? err.message : String(err)}`;
  }
  return lastBytes(Buffer.concat(chunks), MAX_MESSAGE_LOG_BYTES);
}

/** The termination message of an exited container, read from its file and perhaps its log. */
export async function readTerminationMessage(status: ContainerStatus): Promise<string> {
  const policy = status.annotations[Annotation.terminationMessagePolicy] === 'FallbackToLogsOnError' ? 'FallbackToLogsOnError' : 'File';
  const exited: ExitedContainer = { exitCode: status.exitCode, reason: status.reason, policy };
  const file = await readMessageFile(status, status.annotations[Annotation.terminationMessagePath] ?? '');
  return chooseMessage(exited, file, needsLogTail(exited, file) ? await readLogTail(status.logPath) : '');
}

/**
 * One pod's termination messages by container ID, each read once, when the container is first
 * seen exited (it does not change after). `retain` drops the containers the runtime no longer lists.
 */
export class TerminationMessages {
  private readonly byId = new Map<string, string>();

  constructor(private readonly read: (status: ContainerStatus) => Promise<string> = readTerminationMessage) {}

  async of(status: ContainerStatus): Promise<string> {
    let message = this.byId.get(status.id);
    if (message === undefined) {
      message = await this.read(status);
      this.byId.set(status.id, message);
    }
    return message;
  }

  retain(ids: ReadonlySet<string>): void {
    for (const id of this.byId.keys()) if (!ids.has(id)) this.byId.delete(id);
  }
}
