/**
 * The runtime's view of one pod: its sandboxes and containers as CRI reports them, grouped by the
 * `io.kubernetes.pod.uid` label and sorted newest first. This is what every decision reads; it is
 * always fetched fresh from the runtime at the start of a sync (see `readPodStatus`), so a sync
 * never acts on an older picture than the one the runtime holds: the IDs may come from what the
 * agent knows (podIds.ts), the state of each is asked for every time. An exited container's message
 * carries its termination message (terminationMessage.ts), read once and kept by the caller.
 */
import type { CallOptions, PodSandbox, PodSandboxStatus, RuntimeService } from '../runtime/types.ts';
import { isNotFound } from '../runtime/types.ts';
import type { RuntimeContainerStatus, RuntimePodStatus, SandboxSummary } from '../api/runtimeView.ts';
import { Annotation, Label, intAnnotation } from './labels.ts';
import type { KnownPodIds, RuntimePodIds } from './podIds.ts';
import { type TerminationMessages, joinMessages } from './terminationMessage.ts';

/** Newest first; the attempt number breaks ties between instances created in the same instant. */
const newestFirst = (a: { createdAt: number; attempt: number }, b: { createdAt: number; attempt: number }) =>
  b.createdAt - a.createdAt || b.attempt - a.attempt;

/**
 * Reads the pod's sandboxes and containers from the runtime: the status of each one `ids` knows
 * of, or, when it knows none or is not sure (podIds.ts), of each one a listing by the pod's UID
 * finds. A container or sandbox that vanishes between the list and its status call is left out
 * rather than failing the read: it is gone, and the next read agrees.
 */
export async function readPodStatus(
  runtime: RuntimeService,
  uid: string,
  opts?: CallOptions,
  /** The pod's termination messages, read once per exited container; absent: none are read (a kill or removal does not show them). */
  terminationMessages?: TerminationMessages,
  ids?: RuntimePodIds,
): Promise<RuntimePodStatus> {
  const known = ids?.of(uid);
  const { sandboxList, containerList, newest } = known ? await readKnown(runtime, known, ids!, opts) : await readListed(runtime, uid, ids, opts);
  const sandboxes: SandboxSummary[] = sandboxList.map((sandbox) => ({
    id: sandbox.id,
    state: sandbox.state,
    attempt: sandbox.metadata.attempt,
    createdAt: sandbox.createdAt,
    // Only the newest sandbox's network matters: it is the one the pod runs in.
    ip: sandbox === sandboxList[0] ? (newest?.network?.ip ?? '') : '',
    networkMode: sandbox === sandboxList[0] ? newest?.networkMode : undefined,
  }));
  const statuses = await Promise.all(
    containerList.map((c) => ignoreNotFound(runtime.containerStatus(c.id, opts), () => ids?.gone(c.id))),
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

type Listed = Pick<PodSandbox, 'id' | 'state' | 'metadata' | 'createdAt'>;
interface Found {
  /** Newest first. */
  sandboxList: Listed[];
  containerList: { id: string; podSandboxId: string }[];
  /** The newest sandbox's status, when it is ready. */
  newest: PodSandboxStatus | undefined;
}

const sortSandboxes = (list: Listed[]) =>
  list.sort((a, b) => newestFirst({ createdAt: a.createdAt, attempt: a.metadata.attempt }, { createdAt: b.createdAt, attempt: b.metadata.attempt }));

/** The pod's sandboxes and containers by a listing (ListPodSandbox, ListContainers), told to `ids`. */
async function readListed(runtime: RuntimeService, uid: string, ids: RuntimePodIds | undefined, opts?: CallOptions): Promise<Found> {
  const selector = { labelSelector: { [Label.podUid]: uid } };
  const [sandboxList, containerList] = await Promise.all([runtime.listPodSandbox(selector, opts), runtime.listContainers(selector, opts)]);
  ids?.listed(uid, sandboxList.map((s) => s.id), containerList);
  sortSandboxes(sandboxList);
  const first = sandboxList[0];
  const newest = first?.state === 'SANDBOX_READY' ? await ignoreNotFound(runtime.podSandboxStatus(first.id, opts)) : undefined;
  return { sandboxList, containerList, newest };
}

/** The pod's sandboxes and containers by their known IDs: one PodSandboxStatus per sandbox, nothing listed. */
async function readKnown(runtime: RuntimeService, known: KnownPodIds, ids: RuntimePodIds, opts?: CallOptions): Promise<Found> {
  const containerList = [...known.containers].map(([id, podSandboxId]) => ({ id, podSandboxId }));
  const found = await Promise.all([...known.sandboxes].map((id) => ignoreNotFound(runtime.podSandboxStatus(id, opts), () => ids.gone(id))));
  const sandboxList = sortSandboxes(found.filter((s): s is PodSandboxStatus => s !== undefined));
  const first = sandboxList[0] as PodSandboxStatus | undefined;
  return { sandboxList, containerList, newest: first?.state === 'SANDBOX_READY' ? first : undefined };
}

async function ignoreNotFound<T>(call: Promise<T>, onNotFound?: () => void): Promise<T | undefined> {
  try {
    return await call;
  } catch (err) {
    if (isNotFound(err)) {
      onNotFound?.();
      return undefined;
    }
    throw err;
  }
}
