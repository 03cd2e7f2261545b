/**
 * The runtime's view of one pod: its sandboxes and containers as CRI reports them, grouped by the
 * `io.kubernetes.pod.uid` label and sorted newest first. This is what every decision reads; it is
 * always fetched fresh from the runtime at the start of a sync (see `readPodStatus`), so a sync
 * never acts on an older picture than the one the runtime holds. An exited container's message
 * carries its termination message (terminationMessage.ts), read once and kept by the caller.
 */
import type {
  CallOptions,
  RuntimeService,
} from '../runtime/types.ts';
import { isNotFound } from '../runtime/types.ts';
import type { RuntimeContainerStatus, RuntimePodStatus, SandboxSummary } from '../api/runtimeView.ts';
import { Annotation, Label, intAnnotation } from './labels.ts';
import { type TerminationMessages, joinMessages } from './terminationMessage.ts';

/** Newest first; the attempt number breaks ties between instances created in the same instant. */
const newestFirst = (a: { createdAt: number; attempt: number }, b: { createdAt: number; attempt: number }) =>
  b.createdAt - a.createdAt || b.attempt - a.attempt;

/**
 * Reads the pod's sandboxes and containers from the runtime. A container or sandbox that vanishes
 * between the list and its status call is left out rather than failing the read: it is gone, and
 * the next read agrees.
 */
export async function readPodStatus(
  runtime: RuntimeService,
  uid: string,
  opts?: CallOptions,
  /** The pod's termination messages, read once per exited container; absent: none are read (a kill or removal does not show them). */
  terminationMessages?: TerminationMessages,
): Promise<RuntimePodStatus> {
  const selector = { labelSelector: { [Label.podUid]: uid } };
  const [sandboxList, containerList] = await Promise.all([
    runtime.listPodSandbox(selector, opts),
    runtime.listContainers(selector, opts),
  ]);
  sandboxList.sort((a, b) => newestFirst({ createdAt: a.createdAt, attempt: a.metadata.attempt }, { createdAt: b.createdAt, attempt: b.metadata.attempt }));
  const sandboxes: SandboxSummary[] = [];
  for (const [index, sandbox] of sandboxList.entries()) {
    const summary: SandboxSummary = {
      id: sandbox.id,
      state: sandbox.state,
      attempt: sandbox.metadata.attempt,
      createdAt: sandbox.createdAt,
      ip: '',
      networkMode: undefined,
    };
    // Only the newest sandbox's network matters: it is the one the pod runs in.
    if (index === 0 && sandbox.state === 'SANDBOX_READY') {
      const status = await ignoreNotFound(runtime.podSandboxStatus(sandbox.id, opts));
      if (status) {
        summary.ip = status.network?.ip ?? '';
        summary.networkMode = status.networkMode;
      }
    }
    sandboxes.push(summary);
  }
  const statuses = await Promise.all(
    containerList.map((c) => ignoreNotFound(runtime.containerStatus(c.id, opts))),
  );
  const containers: RuntimeContainerStatus[] = [];
  terminationMessages?.retain(new Set(containerList.map((c) => c.id)));
  for (const [i, status] of statuses.entries()) {
    const listed = containerList[i];
    if (!status || !listed) continue;
    // An exited container's message follows the runtime's (getPodContainerStatuses).
    const message = status.state === 'CONTAINER_EXITED' && terminationMessages ? joinMessages(status.message, await terminationMessages.of(status)) : status.message;
    containers.push({
      id: status.id,
      name: status.metadata.name || (status.labels[Label.containerName] ?? ''),
      sandboxId: listed.podSandboxId,
      state: status.state,
      createdAt: status.createdAt,
      startedAt: status.startedAt,
      finishedAt: status.finishedAt,
      exitCode: status.exitCode,
      reason: status.reason,
      message,
      image: status.image,
      imageRef: status.imageRef,
      hash: status.annotations[Annotation.containerHash] ?? '',
      restartCount: intAnnotation(status.annotations, Annotation.restartCount),
      ...(status.user ? { user: status.user } : {}),
      ...(status.resources ? { resources: status.resources } : {}),
    });
  }
  containers.sort((a, b) => newestFirst({ createdAt: a.createdAt, attempt: a.restartCount }, { createdAt: b.createdAt, attempt: b.restartCount }));
  return { uid, sandboxes, containers };
}

async function ignoreNotFound<T>(call: Promise<T>): Promise<T | undefined> {
  try {
    return await call;
  } catch (err) {
    if (isNotFound(err)) return undefined;
    throw err;
  }
}
