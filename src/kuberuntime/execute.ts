/**
 * Carries out a `PodActions` plan against the runtime (KUBELET_BEHAVIOR §6.4–6.5, §7): kill what
 * must die, (re)create the sandbox, start init containers in order and the regular containers,
 * each start guarded by the crash-loop backoff and preceded by the image check. Every failure is
 * turned into a waiting reason for the container it concerns; one container's failure never stops
 * the others from starting.
 */
import type { Container, Pod } from '../api/types.ts';
import { podRef } from '../api/types.ts';
import type { PodActions } from '../machines/decide/computePodActions.ts';
import { isSidecar } from '../machines/decide/computePodActions.ts';
import {
  type BackoffPolicy,
  type BackoffTable,
  backoffRemainingMs,
  nextBackoff,
} from '../machines/decide/backoff.ts';
import type { WaitingReason } from '../status/generate.ts';
import type { CallOptions, ImageService, RuntimeService } from '../runtime/types.ts';
import { isNotFound } from '../runtime/types.ts';
import { ContainerConfigError, containerConfig, sandboxConfig } from './configs.ts';
import { containerHash } from './hash.ts';
import { type ImagePuller, ensureImage, errorText } from './images.ts';
import type { ContainerType } from './labels.ts';
import type { RuntimeContainerStatus, RuntimePodStatus } from './podStatus.ts';
import { newestContainer } from './podStatus.ts';

export interface RuntimeDeps {
  runtime: RuntimeService;
  images: ImageService;
  puller: ImagePuller;
  /** Where pod log directories go (the kubelet uses /var/log/pods). */
  podLogsRoot: string;
  crashLoop: BackoffPolicy;
  now(): number;
  log: (level: 'info' | 'warn' | 'error', message: string, fields: Record<string, unknown>) => void;
}

/** What a sync keeps between runs: backoff tables and the last start failure of each container. */
export interface SyncMemory {
  backoff: BackoffTable;
  reasons: Readonly<Record<string, WaitingReason>>;
}

export interface ExecuteResult extends SyncMemory {
  /** The earliest time (ms from now) a backoff expires and another sync could make progress. */
  retryAfterMs?: number;
  /** Errors that should make the sync count as failed (and be retried). */
  errors: string[];
}

/** The minimum StopContainer timeout the kubelet ever asks for, so containers can shut down. */
export const minimumGracePeriodSeconds = 2;

export function containerGracePeriod(pod: Pod, override?: number): number {
  if (override !== undefined) return override;
  const base = pod.metadata.deletionGracePeriodSeconds ?? pod.spec.terminationGracePeriodSeconds ?? minimumGracePeriodSeconds;
  return Math.max(base, minimumGracePeriodSeconds);
}

export async function stopContainer(
  deps: RuntimeDeps,
  pod: Pod,
  container: { id: string; name: string },
  gracePeriodSeconds: number,
  reason: string,
  opts: CallOptions,
): Promise<void> {
  deps.log('info', 'Killing container', { pod: podRef(pod), container: container.name, gracePeriodSeconds, reason });
  try {
    // The call must outlive the grace period it asks the runtime to wait.
    await deps.runtime.stopContainer(container.id, gracePeriodSeconds, { ...opts, timeoutMs: gracePeriodSeconds * 1000 + 30_000 });
  } catch (err) {
    if (!isNotFound(err)) throw err;
  }
}

/** Stops every running container in parallel, then every sandbox of the pod. */
export async function killPodRuntime(
  deps: RuntimeDeps,
  pod: Pod,
  status: RuntimePodStatus,
  gracePeriodOverride: number | undefined,
  opts: CallOptions,
): Promise<void> {
  const running = status.containers.filter((c) => c.state === 'CONTAINER_RUNNING' || c.state === 'CONTAINER_UNKNOWN');
  const grace = containerGracePeriod(pod, gracePeriodOverride);
  const results = await Promise.allSettled(running.map((c) => stopContainer(deps, pod, c, grace, 'Need to kill Pod', opts)));
  const failed = results.filter((r): r is PromiseRejectedResult => r.status === 'rejected');
  if (failed.length) throw new Error(`failed to kill ${failed.length} container(s): ${errorText(failed[0]?.reason)}`);
  for (const sandbox of status.sandboxes) {
    if (sandbox.state !== 'SANDBOX_READY') continue;
    try {
      await deps.runtime.stopPodSandbox(sandbox.id, opts);
    } catch (err) {
      if (!isNotFound(err)) throw err;
    }
  }
}

/** Removes every container and sandbox of the pod (used once a deleted pod has terminated). */
export async function removePodRuntime(deps: RuntimeDeps, status: RuntimePodStatus, opts: CallOptions): Promise<void> {
  for (const container of status.containers) {
    try {
      await deps.runtime.removeContainer(container.id, opts);
    } catch (err) {
      if (!isNotFound(err)) throw err;
    }
  }
  for (const sandbox of status.sandboxes) {
    try {
      await deps.runtime.removePodSandbox(sandbox.id, opts);
    } catch (err) {
      if (!isNotFound(err)) throw err;
    }
  }
}

export function crashLoopKey(pod: Pod, container: Container): string {
  const { name, namespace, uid } = pod.metadata;
  return `${name}_${namespace}_${uid}_${container.name}_${containerHash(container)}`;
}

/** Go's duration formatting for whole seconds (`10s`, `2m40s`, `5m0s`), as kubelet messages use. */
export function goDuration(ms: number): string {
  const total = Math.round(ms / 1000);
  const minutes = Math.floor(total / 60);
  const seconds = total % 60;
  return minutes > 0 ? `${minutes}m${seconds}s` : `${seconds}s`;
}

export async function executePlan(
  deps: RuntimeDeps,
  pod: Pod,
  status: RuntimePodStatus,
  actions: PodActions,
  memory: SyncMemory,
  opts: CallOptions,
): Promise<ExecuteResult> {
  const reasons: Record<string, WaitingReason> = { ...memory.reasons };
  const result: ExecuteResult = { backoff: memory.backoff, reasons, errors: [] };
  const ref = podRef(pod);

  if (actions.createSandbox && actions.sandboxId) {
    deps.log('info', 'Pod sandbox changed, it will be killed and re-created', { pod: ref, sandbox: actions.sandboxId });
  }
  if (actions.killPod) {
    await killPodRuntime(deps, pod, status, undefined, opts);
    if (actions.createSandbox) {
      // A new sandbox starts initialization from scratch: old init containers would confuse it.
      const initNames = new Set((pod.spec.initContainers ?? []).map((c) => c.name));
      await removeContainers(deps, status.containers.filter((c) => initNames.has(c.name)), opts);
    }
  } else {
    for (const target of actions.containersToKill) {
      await stopContainer(deps, pod, target, containerGracePeriod(pod), target.message, opts);
    }
  }
  await pruneInitContainers(deps, pod, status, opts);

  let sandboxId = actions.sandboxId;
  const config = sandboxConfig(pod, actions.attempt, deps.podLogsRoot);
  if (actions.createSandbox) {
    try {
      sandboxId = await deps.runtime.runPodSandbox(config, opts);
    } catch (err) {
      result.errors.push(`CreatePodSandboxError: ${errorText(err)}`);
      deps.log('error', 'Failed to create pod sandbox', { pod: ref, err: errorText(err) });
      return result;
    }
  } else if (!sandboxId || actions.killPod) {
    return result;
  }

  const start = async (container: Container, type: ContainerType): Promise<boolean> => {
    const outcome = await startContainer(deps, pod, container, type, status, sandboxId, config, result, opts);
    if (outcome === true) delete reasons[container.name];
    else reasons[container.name] = outcome;
    return outcome === true;
  };
  for (const index of actions.initContainersToStart) {
    const container = pod.spec.initContainers?.[index];
    if (!container) continue;
    // A regular init container that fails to start blocks the ones after it; a sidecar does not.
    if (!(await start(container, 'init')) && !isSidecar(container)) return result;
  }
  await Promise.all(
    actions.containersToStart.map((index) => {
      const container = pod.spec.containers[index];
      return container ? start(container, 'container') : undefined;
    }),
  );
  return result;
}

async function removeContainers(deps: RuntimeDeps, containers: RuntimeContainerStatus[], opts: CallOptions): Promise<void> {
  for (const c of containers) {
    try {
      await deps.runtime.removeContainer(c.id, opts);
    } catch (err) {
      if (!isNotFound(err)) throw err;
    }
  }
}

/** Keeps only the newest exited instance of each init container, so dead ones do not pile up. */
async function pruneInitContainers(deps: RuntimeDeps, pod: Pod, status: RuntimePodStatus, opts: CallOptions): Promise<void> {
  const surplus: RuntimeContainerStatus[] = [];
  for (const init of pod.spec.initContainers ?? []) {
    const exited = status.containers.filter((c) => c.name === init.name && c.state === 'CONTAINER_EXITED');
    surplus.push(...exited.slice(1));
  }
  await removeContainers(deps, surplus, opts);
}

function noteRetry(result: ExecuteResult, ms: number | undefined): void {
  if (ms === undefined) return;
  result.retryAfterMs = result.retryAfterMs === undefined ? ms : Math.min(result.retryAfterMs, ms);
}

/** Starts one container; returns true, or the waiting reason that explains why it did not start. */
async function startContainer(
  deps: RuntimeDeps,
  pod: Pod,
  container: Container,
  type: ContainerType,
  status: RuntimePodStatus,
  sandboxId: string,
  sandbox: ReturnType<typeof sandboxConfig>,
  result: ExecuteResult,
  opts: CallOptions,
): Promise<true | WaitingReason> {
  const ref = podRef(pod);
  const previous = newestContainer(status, container.name);
  const now = deps.now();
  if (previous?.state === 'CONTAINER_EXITED') {
    const key = crashLoopKey(pod, container);
    const remaining = backoffRemainingMs(result.backoff, key, previous.finishedAt, now, deps.crashLoop);
    if (remaining > 0) {
      noteRetry(result, remaining);
      const delay = result.backoff[key]?.delayMs ?? remaining;
      const { name, namespace, uid } = pod.metadata;
      return {
        reason: 'CrashLoopBackOff',
        message: `back-off ${goDuration(delay)} restarting failed container=${container.name} pod=${name}_${namespace}(${uid})`,
      };
    }
    result.backoff = nextBackoff(result.backoff, key, previous.finishedAt, now, deps.crashLoop);
  }

  const image = await ensureImage({
    images: deps.images,
    puller: deps.puller,
    podUid: pod.metadata.uid,
    container,
    backoff: result.backoff,
    nowMs: now,
    opts,
  });
  result.backoff = image.backoff;
  if (!image.ok) {
    noteRetry(result, image.retryAfterMs);
    deps.log('warn', 'Image not ready', { pod: ref, container: container.name, reason: image.reason, message: image.message });
    return { reason: image.reason, message: image.message };
  }

  const restartCount = previous ? previous.restartCount + 1 : 0;
  let config;
  try {
    config = containerConfig(pod, container, type, restartCount, image.image);
  } catch (err) {
    if (err instanceof ContainerConfigError) return { reason: 'CreateContainerConfigError', message: err.message };
    throw err;
  }
  let containerId: string;
  try {
    containerId = await deps.runtime.createContainer(sandboxId, config, sandbox, opts);
  } catch (err) {
    deps.log('warn', 'Failed to create container', { pod: ref, container: container.name, err: errorText(err) });
    result.errors.push(`CreateContainerError: ${errorText(err)}`);
    return { reason: 'CreateContainerError', message: errorText(err) };
  }
  try {
    await deps.runtime.startContainer(containerId, opts);
  } catch (err) {
    deps.log('warn', 'Failed to start container', { pod: ref, container: container.name, err: errorText(err) });
    result.errors.push(`RunContainerError: ${errorText(err)}`);
    return { reason: 'RunContainerError', message: errorText(err) };
  }
  deps.log('info', 'Started container', { pod: ref, container: container.name, restartCount });
  return true;
}
