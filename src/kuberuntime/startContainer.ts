/**
 * One container's start (pkg/kubelet/kuberuntime/kuberuntime_container.go startContainer): its
 * crash-loop back-off first, then its image (images.ts ensureImage), its config
 * (generateContainerConfig.ts), CreateContainer and StartContainer, each failure turned into the
 * container's waiting reason with the kubelet's event; then its postStart hook, which the sync
 * waits for and whose failure kills the container (PostStartHookError). What it reads of the node
 * is StartWork.
 */
import type { Container, EphemeralContainer, LifecycleHandler, Pod } from '../api/types.ts';
import { podRef } from '../api/types.ts';
import { type RuntimePodStatus, type WaitingReason, newestContainer } from '../api/runtimeView.ts';
import { podReference } from '../eventrecorder/recorder.ts';
import { type PullSecret, credentialsFor } from '../credentialprovider/keyring.ts';
import { type CallOptions, type PodSandboxConfig, definedOnly } from '../runtime/types.ts';
import { type BackoffTable, backoffRemainingMs, nextBackoff } from './backoff.ts';
import { ContainerConfigError } from './configs.ts';
import { generateContainerConfig, imageUserOf } from './generateContainerConfig.ts';
import { containerHash } from './hash.ts';
import { HookError, type HookTarget, realHookIO, runLifecycleHandler } from './hooks.ts';
import { ensureImage, errorText } from './images.ts';
import { type PreStopRuns, killContainer } from './kill.ts';
import { podPullContext } from './pullSecrets.ts';
import type { PodWork } from './podWork.ts';
import type { ContainerType } from './labels.ts';

/** What a container's start reads of the node. */
export type StartWork = Pick<PodWork, 'cri' | 'host' | 'cluster' | 'observe'>;

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

function crashLoopKey(pod: Pod, container: Container): string {
  const { name, namespace, uid } = pod.metadata;
  return `${name}_${namespace}_${uid}_${container.name}_${containerHash(container)}`;
}

/** Go's duration formatting for whole seconds (`10s`, `2m40s`, `5m0s`), as kubelet messages use. */
function goDuration(ms: number): string {
  const total = Math.round(ms / 1000);
  const minutes = Math.floor(total / 60);
  const seconds = total % 60;
  return minutes > 0 ? `${minutes}m${seconds}s` : `${seconds}s`;
}

function noteRetry(result: ExecuteResult, ms: number | undefined): void {
  if (ms === undefined) return;
  result.retryAfterMs = result.retryAfterMs === undefined ? ms : Math.min(result.retryAfterMs, ms);
}

/**
 * The container whose pid namespace an ephemeral container joins: its `targetContainerName`'s
 * newest instance in the runtime, whatever its state (the runtime refuses one that is not running).
 * None for other containers and for an ephemeral container without a target; an error, in the
 * kubelet's words, when the target has no instance (kuberuntime_container.go startSpec.getTargetID).
 */
export function namespaceTarget(container: EphemeralContainer, type: ContainerType, status: RuntimePodStatus): { id?: string } | { error: string } {
  const name = type === 'ephemeral' ? container.targetContainerName : undefined;
  if (!name) return {};
  const target = newestContainer(status, name);
  return target ? { id: target.id } : { error: `unable to find target container ${name}` };
}

/** What every start of one sync shares. */
export interface StartContext {
  status: RuntimePodStatus;
  sandboxId: string;
  sandbox: PodSandboxConfig;
  result: ExecuteResult;
  opts: CallOptions;
  /** The address of the sandbox the containers start in, for httpGet hooks. */
  podIP(): Promise<string>;
  /** The pod's image pull secrets as this sync read them (pullSecrets.ts). */
  pullSecrets: readonly PullSecret[];
  preStops: PreStopRuns | undefined;
}

/** Starts one container; returns true, or the waiting reason that explains why it did not start. */
export async function startContainer(
  deps: StartWork,
  pod: Pod,
  container: Container,
  type: ContainerType,
  context: StartContext,
): Promise<true | WaitingReason> {
  const { status, sandboxId, sandbox, result, opts } = context;
  const containerRef = podReference(pod, container.name);
  const record = (type: 'Normal' | 'Warning', reason: string, message: string) => deps.observe.recorder.event(containerRef, type, reason, message);
  const previous = newestContainer(status, container.name);
  const now = deps.host.now();
  if (previous?.state === 'CONTAINER_EXITED') {
    const key = crashLoopKey(pod, container);
    const remaining = backoffRemainingMs(result.backoff, key, previous.finishedAt, now, deps.host.crashLoop);
    if (remaining > 0) {
      noteRetry(result, remaining);
      const delay = result.backoff[key]?.delayMs ?? remaining;
      const { name, namespace, uid } = pod.metadata;
      deps.observe.recorder.event(containerRef, 'Warning', 'BackOff', `Back-off restarting failed container ${container.name} in pod ${name}_${namespace}(${uid})`);
      return {
        reason: 'CrashLoopBackOff',
        message: `back-off ${goDuration(delay)} restarting failed container=${container.name} pod=${name}_${namespace}(${uid})`,
      };
    }
    result.backoff = nextBackoff(result.backoff, key, previous.finishedAt, now, deps.host.crashLoop);
  }

  const image = await ensureImage({
    images: deps.cri.images,
    puller: deps.cri.puller,
    podUid: pod.metadata.uid,
    container,
    backoff: result.backoff,
    nowMs: now,
    now: deps.host.now,
    record,
    opts,
    credentials: (image: string) => credentialsFor(context.pullSecrets, image, deps.cri.nodeCredentials, podPullContext(pod, deps.cluster)),
    ...(deps.cri.pullRecords ? { records: deps.cri.pullRecords } : {}),
    ...(deps.observe.imagePull ? { pulling: (stage: 'started' | 'finished') => deps.observe.imagePull!(pod.metadata.uid, stage) } : {}),
  });
  result.backoff = image.backoff;
  if (!image.ok) {
    noteRetry(result, image.retryAfterMs);
    record('Warning', 'Failed', `Error: ${image.reason}`);
    return { reason: image.reason, message: image.message };
  }

  const restartCount = previous ? previous.restartCount + 1 : 0;
  const target = namespaceTarget(container, type, status);
  if ('error' in target) {
    record('Warning', 'Failed', `Error: ${target.error}`);
    result.errors.push(`CreateContainerConfigError: ${target.error}`);
    return { reason: 'CreateContainerConfigError', message: target.error };
  }
  let config;
  try {
    config = await generateContainerConfig(deps, {
      pod,
      container,
      type,
      restartCount,
      image: image.image,
      imageUser: imageUserOf(image.info),
      podIP: context.podIP,
      podLogDirectory: sandbox.logDirectory,
      ...(target.id ? { pidTarget: target.id } : {}),
      ...definedOnly({ userns: sandbox.linux?.securityContext?.namespaceOptions?.usernsOptions }),
    });
  } catch (err) {
    if (!(err instanceof ContainerConfigError)) throw err;
    record('Warning', 'Failed', `Error: ${err.message}`);
    // Retried after the sync's error backoff: the ConfigMap or key may appear meanwhile.
    result.errors.push(`CreateContainerConfigError: ${err.message}`);
    return { reason: 'CreateContainerConfigError', message: err.message };
  }
  let containerId: string;
  try {
    containerId = await deps.cri.runtime.createContainer(sandboxId, config, sandbox, opts);
  } catch (err) {
    record('Warning', 'Failed', `Error: ${errorText(err)}`);
    result.errors.push(`CreateContainerError: ${errorText(err)}`);
    return { reason: 'CreateContainerError', message: errorText(err) };
  }
  record('Normal', 'Created', `Created container: ${container.name}`);
  try {
    await deps.cri.runtime.startContainer(containerId, opts);
  } catch (err) {
    record('Warning', 'Failed', `Error: ${errorText(err)}`);
    result.errors.push(`RunContainerError: ${errorText(err)}`);
    return { reason: 'RunContainerError', message: errorText(err) };
  }
  record('Normal', 'Started', `Started container ${container.name}`);
  deps.observe.log('debug', 'Started container', { pod: podRef(pod), container: container.name, restartCount });
  const postStart = container.lifecycle?.postStart;
  if (postStart) {
    const failure = await runPostStart(deps, { runtime: deps.cri.runtime, pod, container, containerId, podIP: context.podIP }, postStart, context);
    if (failure) {
      result.errors.push(`PostStartHookError: ${failure.message}`);
      return failure;
    }
  }
  return true;
}

/**
 * Runs the postStart hook; the sync waits for it, as the kubelet's does. On failure the container is
 * killed (its preStop runs, with the usual grace) and `PostStartHookError` explains why it is not
 * running. A sync cancelled meanwhile just ends: nothing is killed.
 */
async function runPostStart(
  deps: StartWork,
  target: HookTarget,
  postStart: LifecycleHandler,
  context: StartContext,
): Promise<WaitingReason | undefined> {
  const signal = context.opts.signal ?? new AbortController().signal;
  try {
    await runLifecycleHandler(deps.host.hookIO ?? realHookIO, target, postStart, { signal });
    return undefined;
  } catch (err) {
    if (signal.aborted || !(err instanceof HookError)) throw err;
    const fields = { pod: podRef(target.pod), container: target.container.name, containerId: target.containerId };
    // The kubelet's event says only "PostStartHook failed" (the message may hold secrets); the log has it.
    deps.observe.log('warn', 'PostStart hook failed', { ...fields, err: err.message });
    deps.observe.recorder.event(podReference(target.pod, target.container.name), 'Warning', 'FailedPostStartHook', 'PostStartHook failed');
    try {
      const { pod, podIP } = target;
      const killed = { id: target.containerId, name: target.container.name };
      await killContainer(deps, { pod, target: killed, message: 'FailedPostStartHook', podIP, preStops: context.preStops }, context.opts);
    } catch (killErr) {
      if (signal.aborted) throw killErr;
      deps.observe.log('error', 'Failed to kill container', { ...fields, err: errorText(killErr) });
    }
    return { reason: 'PostStartHookError', message: err.message };
  }
}
