/**
 * Carries out a `PodActions` plan against the runtime (pkg/kubelet/kuberuntime/kuberuntime_manager.go
 * SyncPod, kuberuntime_container.go startContainer): kill what
 * must die (kill.ts: preStop, grace periods, sidecar order), (re)create the sandbox, start init
 * containers in order and the regular containers, each start guarded by the crash-loop backoff and
 * preceded by the image check, and followed by its postStart hook, which the sync waits for. Every
 * failure is turned into a waiting reason for the container it concerns; one container's failure
 * never stops the others from starting.
 */
import type { Container, LifecycleHandler, Pod } from '../api/types.ts';
import { podRef } from '../api/types.ts';
import type { PodActions } from './computePodActions.ts';
import { isSidecar } from '../api/podSpec.ts';
import {
  type BackoffPolicy,
  type BackoffTable,
  backoffRemainingMs,
  nextBackoff,
} from './backoff.ts';
import type { ImagePulls } from '../runtime/callTrace.ts';
import type { CallOptions, ImageService, Mount } from '../runtime/types.ts';
import { isNotFound } from '../runtime/types.ts';
import { ContainerConfigError, containerConfig, expandVars, sandboxConfig } from './configs.ts';
import { containerHash } from './hash.ts';
import { ensureImage, errorText } from './images.ts';
import { HookError, type HookTarget, hookHost, realHookIO, runLifecycleHandler } from './hooks.ts';
import { type KillDeps, type PreStopRuns, killContainer } from './kill.ts';
import type { ContainerType } from './labels.ts';
import { type RuntimeContainerStatus, type RuntimePodStatus, type WaitingReason, newestContainer } from '../api/runtimeView.ts';
import { TerminationOrdering } from './terminationOrder.ts';
import { makeEnvironment, readReferencedObjects } from './envVars.ts';
import type { ObjectReader } from '../client/objects.ts';
import { type NodeDns, podDns } from './dns.ts';
import { ETC_HOSTS, managedHostsContent, mountsManagedHosts, podHostnameAndDomain } from './hosts.ts';
import { chmod, readFile, writeFile } from 'node:fs/promises';
import { makePodDataDirs, setUpPodVolumes, tearDownPodVolumes } from '../volumes/setUp.ts';
import { mkdirAll } from '../volumes/mkdirAll.ts';
import { type Mounter, diskOnly } from '../volumes/mounter.ts';
import type { TokenManager } from '../volumes/tokens.ts';
import { containerMounts, unsupportedVolumes } from '../volumes/plan.ts';
import { resolveSubPaths } from '../volumes/subPath.ts';
import path from 'node:path';
import type { ResourceAmounts } from '../api/quantity.ts';
import type { Service } from '../api/cluster.ts';
import { podReference } from '../record/recorder.ts';

export interface RuntimeDeps extends KillDeps {
  images: ImageService;
  puller: ImagePulls;
  /** Where pod log directories go (the kubelet uses /var/log/pods). */
  podLogsRoot: string;
  crashLoop: BackoffPolicy;
  /** The node's addresses (--node-ip), first the primary: `status.hostIP(s)` in environments. */
  hostIPs?: string[];
  /** The node's allocatable amounts once known: the limit a container leaves unset (resourceFieldRef). */
  allocatable?: () => ResourceAmounts | undefined;
  /** Reads the ConfigMaps and Secrets environments refer to; absent: a node without an API server. */
  objects?: ObjectReader;
  /** The node's DNS settings (--cluster-dns, --cluster-domain, --resolv-conf): each sandbox's DNSConfig. */
  dns?: NodeDns;
  /** The cluster's Services as last listed (null: not yet); absent: a node without an API server. */
  services?: () => readonly Service[] | null;
  /** `<root-dir>/pods`: each pod's directory (its managed /etc/hosts, its volumes); absent: no files for pods. */
  podsDir?: string;
  /** Service-account tokens for projected volumes; absent: a node without an API server. */
  tokens?: TokenManager;
  /** Puts memory-backed volumes on tmpfs; absent: they are on disk. */
  mounter?: Mounter;
  /**
   * Told of every container start attempted (not one held back by its crash-loop backoff), with
   * the waiting reason it failed with: the kubelet's started-containers metrics.
   */
  containerStarted?: (type: StartedContainerType, failure: string | null) => void;
  /** Told when an image pull for a pod starts and when it succeeds: the pod startup SLI leaves pulls out. */
  imagePull?: (podUid: string, stage: 'started' | 'finished') => void;
}

/** The kubelet's `container_type` label of the started-containers metrics. */
export type StartedContainerType = 'container' | 'init_container' | 'ephemeral_container';
const STARTED_TYPE: Record<ContainerType, StartedContainerType> = { container: 'container', init: 'init_container', ephemeral: 'ephemeral_container' };

/** The node's own hosts file, which host-network pods see under the kubelet's header. */
const NODE_HOSTS_FILE = '/etc/hosts';

/**
 * Writes the pod's managed hosts file (again: at each container start) in the pod's directory
 * (made by makePodDataDirs) and returns its mount. A disk that refuses it fails the container's
 * configuration (kubelet_pods.go makeMounts → ensureHostsFile), with the file named: Node's
 * write errors do not name it.
 */
async function hostsMount(podsDir: string, pod: Pod, podIPs: readonly string[], clusterDomain: string): Promise<Mount> {
  const nodeHosts = pod.spec.hostNetwork ? await readFile(NODE_HOSTS_FILE, 'utf8').catch(() => '') : '';
  const file = path.join(podsDir, pod.metadata.uid, 'etc-hosts');
  try {
    await writeFile(file, managedHostsContent(pod, podIPs, podHostnameAndDomain(pod, clusterDomain), nodeHosts));
    await chmod(file, 0o644);
  } catch (err) {
    throw new ContainerConfigError(`failed to write the pod's hosts file ${file}: ${errorText(err)}`);
  }
  return { containerPath: ETC_HOSTS, hostPath: file, readonly: false };
}

/** What a sync keeps between runs: backoff tables and the last start failure of each container. */
interface SyncMemory {
  backoff: BackoffTable;
  reasons: Readonly<Record<string, WaitingReason>>;
}

export interface ExecuteResult extends SyncMemory {
  /** The earliest time (ms from now) a backoff expires and another sync could make progress. */
  retryAfterMs?: number;
  /** Errors that should make the sync count as failed (and be retried). */
  errors: string[];
}

/**
 * Kills every running container of the pod, then stops every ready sandbox (the kubelet's
 * killPodWithSyncResult). Containers are killed in parallel, each with its own preStop hook; a pod
 * with sidecars stops them last, in reverse order (terminationOrder.ts). `pod` may be undefined or
 * may not list a container (orphans): its kill settings then come from the container's annotations.
 */
export async function killPodRuntime(
  deps: RuntimeDeps,
  pod: Pod | undefined,
  status: RuntimePodStatus,
  gracePeriodOverride: number | undefined,
  opts: CallOptions,
  preStops?: PreStopRuns,
): Promise<void> {
  const running = status.containers.filter((c) => c.state === 'CONTAINER_RUNNING' || c.state === 'CONTAINER_UNKNOWN');
  const ordering = TerminationOrdering.forPod(pod, running.map((c) => c.name));
  const host = hookHost(pod, status.sandboxes[0]);
  const results = await Promise.allSettled(
    running.map((target) =>
      killContainer(deps, { pod, target, gracePeriodOverride, ordering, podIP: async () => host, preStops }, opts),
    ),
  );
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

/**
 * The pod's directories and the volume step of SyncPod (makePodDataDirs, WaitForAttachAndMount),
 * at every sync so that ConfigMap and Secret changes reach the files: the pod's volumes set up, or
 * the reason they are not (a FailedToMakePodDataDirectories or FailedMount event; the containers
 * wait in ContainerCreating and the sync is retried: the disk may have room again, the object may
 * appear).
 */
export async function setUpVolumes(deps: RuntimeDeps, pod: Pod): Promise<string | null> {
  if (!deps.podsDir) return null;
  try {
    await makePodDataDirs(deps.podsDir, pod.metadata.uid);
  } catch (err) {
    const message = `error making pod data directories: ${errorText(err)}`;
    deps.recorder.event(podReference(pod), 'Warning', 'FailedToMakePodDataDirectories', message);
    return `FailedToMakePodDataDirectories: ${message}`;
  }
  try {
    const allocatable = deps.allocatable?.();
    await setUpPodVolumes(
      {
        podsDir: deps.podsDir,
        now: deps.now,
        mounter: deps.mounter ?? diskOnly,
        ...(deps.objects ? { objects: deps.objects } : {}),
        ...(deps.tokens ? { tokens: deps.tokens } : {}),
        ...(allocatable ? { allocatable } : {}),
      },
      pod,
    );
    return null;
  } catch (err) {
    deps.recorder.event(podReference(pod), 'Warning', 'FailedMount', errorText(err));
    return `FailedMount: ${errorText(err)}`;
  }
}

/** The pod's volumes torn down once it has terminated; with `removeDir`, its directory removed (its runtime objects are gone already). */
export async function tearDownVolumes(deps: RuntimeDeps, uid: string, options: { removeDir: boolean }): Promise<void> {
  if (!deps.podsDir) return;
  await tearDownPodVolumes({ podsDir: deps.podsDir, mounter: deps.mounter ?? diskOnly, ...(deps.tokens ? { tokens: deps.tokens } : {}) }, uid, options);
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

export async function executePlan(
  deps: RuntimeDeps,
  pod: Pod,
  status: RuntimePodStatus,
  actions: PodActions,
  memory: SyncMemory,
  opts: CallOptions,
  preStops?: PreStopRuns,
): Promise<ExecuteResult> {
  const reasons: Record<string, WaitingReason> = { ...memory.reasons };
  const result: ExecuteResult = { backoff: memory.backoff, reasons, errors: [] };

  if (actions.createSandbox && actions.sandboxId) {
    deps.recorder.event(podReference(pod), 'Normal', 'SandboxChanged', 'Pod sandbox changed, it will be killed and re-created.');
  }
  if (actions.killPod) {
    await killPodRuntime(deps, pod, status, undefined, opts, preStops);
    if (actions.createSandbox) {
      // A new sandbox starts initialization from scratch: old init containers would confuse it.
      const initNames = new Set((pod.spec.initContainers ?? []).map((c) => c.name));
      await removeContainers(deps, status.containers.filter((c) => initNames.has(c.name)), opts);
    }
  } else {
    const host = hookHost(pod, status.sandboxes[0]);
    for (const target of actions.containersToKill) {
      const { reason, message } = target;
      await killContainer(deps, { pod, target, reason, message, podIP: async () => host, preStops }, opts);
    }
  }
  await pruneInitContainers(deps, pod, status, opts);

  let sandboxId = actions.sandboxId;
  const dns = deps.dns ? podDns(pod, deps.dns) : undefined;
  const config = sandboxConfig(pod, actions.attempt, deps.podLogsRoot, dns?.config);
  if (actions.createSandbox) {
    for (const warning of dns?.warnings ?? []) deps.recorder.event(podReference(pod), 'Warning', warning.reason, warning.message);
    try {
      // The pod's log directory first, for the runtime to write the containers' logs in (kuberuntime_sandbox.go createPodSandbox).
      await mkdirAll(config.logDirectory, 0o755);
      sandboxId = await deps.runtime.runPodSandbox(config, opts);
    } catch (err) {
      result.errors.push(`CreatePodSandboxError: ${errorText(err)}`);
      deps.recorder.event(podReference(pod), 'Warning', 'FailedCreatePodSandBox', `Failed to create pod sandbox: ${errorText(err)}`);
      return result;
    }
  } else if (!sandboxId || actions.killPod) {
    return result;
  }

  if (actions.createSandbox) {
    for (const message of unsupportedVolumes(pod)) deps.recorder.event(podReference(pod), 'Warning', 'VolumeNotSupported', message);
  }
  const podIP = sandboxAddress(deps, pod, status, sandboxId, opts);
  const context: StartContext = { status, sandboxId, sandbox: config, result, opts, podIP, preStops };
  const start = async (container: Container, type: ContainerType): Promise<boolean> => {
    const outcome = await startContainer(deps, pod, container, type, context);
    // Counted as the kubelet counts (kuberuntime_manager.go startContainer): every attempt past the backoff, and each failure by its reason.
    if (outcome === true || outcome.reason !== 'CrashLoopBackOff') deps.containerStarted?.(STARTED_TYPE[type], outcome === true ? null : outcome.reason);
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

/** What every start of one sync shares. */
interface StartContext {
  status: RuntimePodStatus;
  sandboxId: string;
  sandbox: ReturnType<typeof sandboxConfig>;
  result: ExecuteResult;
  opts: CallOptions;
  /** The address of the sandbox the containers start in, for httpGet hooks. */
  podIP(): Promise<string>;
  preStops: PreStopRuns | undefined;
}

/** The address of `sandboxId`, read once and only if a hook asks: a new sandbox is not in `status`. */
function sandboxAddress(deps: RuntimeDeps, pod: Pod, status: RuntimePodStatus, sandboxId: string, opts: CallOptions): () => Promise<string> {
  let address: Promise<string> | undefined;
  return () => {
    const newest = status.sandboxes[0];
    if (newest?.id === sandboxId) return Promise.resolve(hookHost(pod, newest));
    address ??= deps.runtime
      .podSandboxStatus(sandboxId, opts)
      .then((s) => hookHost(pod, { state: s.state, ip: s.network?.ip ?? '', networkMode: s.networkMode }));
    return address;
  };
}

/** Starts one container; returns true, or the waiting reason that explains why it did not start. */
async function startContainer(
  deps: RuntimeDeps,
  pod: Pod,
  container: Container,
  type: ContainerType,
  context: StartContext,
): Promise<true | WaitingReason> {
  const { status, sandboxId, sandbox, result, opts } = context;
  const containerRef = podReference(pod, container.name);
  const record = (type: 'Normal' | 'Warning', reason: string, message: string) => deps.recorder.event(containerRef, type, reason, message);
  const previous = newestContainer(status, container.name);
  const now = deps.now();
  if (previous?.state === 'CONTAINER_EXITED') {
    const key = crashLoopKey(pod, container);
    const remaining = backoffRemainingMs(result.backoff, key, previous.finishedAt, now, deps.crashLoop);
    if (remaining > 0) {
      noteRetry(result, remaining);
      const delay = result.backoff[key]?.delayMs ?? remaining;
      const { name, namespace, uid } = pod.metadata;
      deps.recorder.event(containerRef, 'Warning', 'BackOff', `Back-off restarting failed container ${container.name} in pod ${name}_${namespace}(${uid})`);
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
    now: deps.now,
    record,
    opts,
    ...(deps.imagePull ? { pulling: (stage: 'started' | 'finished') => deps.imagePull!(pod.metadata.uid, stage) } : {}),
  });
  result.backoff = image.backoff;
  if (!image.ok) {
    noteRetry(result, image.retryAfterMs);
    record('Warning', 'Failed', `Error: ${image.reason}`);
    return { reason: image.reason, message: image.message };
  }

  const restartCount = previous ? previous.restartCount + 1 : 0;
  let config;
  try {
    const objects = await readReferencedObjects(deps.objects, pod, container);
    const hostIPs = deps.hostIPs ?? [];
    const podIPs = pod.spec.hostNetwork ? hostIPs : [await context.podIP()].filter(Boolean);
    const allocatable = deps.allocatable?.();
    const services = deps.services ? deps.services() : [];
    const envs = makeEnvironment({ pod, container, podIPs, hostIPs, services, ...objects, ...(allocatable ? { allocatable } : {}) });
    const env = new Map(envs.map((e) => [e.key, e.value]));
    const volumeMounts = deps.podsDir ? containerMounts(deps.podsDir, pod, container, (text) => expandVars(text, env)) : { mounts: [] };
    if ('error' in volumeMounts) throw new ContainerConfigError(volumeMounts.error);
    const resolved = await resolveSubPaths(volumeMounts.mounts, container.name);
    if ('error' in resolved) throw new ContainerConfigError(resolved.error);
    const mounts: Mount[] = [...resolved.mounts];
    if (deps.podsDir && mountsManagedHosts(container, podIPs)) mounts.push(await hostsMount(deps.podsDir, pod, podIPs, deps.dns?.clusterDomain ?? ''));
    // The container's log directory, before the runtime opens its log there (kuberuntime_container.go generateContainerConfig).
    await mkdirAll(path.join(sandbox.logDirectory, container.name), 0o755).catch((err: unknown) => {
      throw new ContainerConfigError(`create container log directory for container ${container.name} failed: ${errorText(err)}`);
    });
    config = containerConfig(pod, container, type, restartCount, image.image, envs, mounts);
  } catch (err) {
    if (!(err instanceof ContainerConfigError)) throw err;
    record('Warning', 'Failed', `Error: ${err.message}`);
    // Retried after the sync's error backoff: the ConfigMap or key may appear meanwhile.
    result.errors.push(`CreateContainerConfigError: ${err.message}`);
    return { reason: 'CreateContainerConfigError', message: err.message };
  }
  let containerId: string;
  try {
    containerId = await deps.runtime.createContainer(sandboxId, config, sandbox, opts);
  } catch (err) {
    record('Warning', 'Failed', `Error: ${errorText(err)}`);
    result.errors.push(`CreateContainerError: ${errorText(err)}`);
    return { reason: 'CreateContainerError', message: errorText(err) };
  }
  record('Normal', 'Created', `Created container: ${container.name}`);
  try {
    await deps.runtime.startContainer(containerId, opts);
  } catch (err) {
    record('Warning', 'Failed', `Error: ${errorText(err)}`);
    result.errors.push(`RunContainerError: ${errorText(err)}`);
    return { reason: 'RunContainerError', message: errorText(err) };
  }
  record('Normal', 'Started', `Started container ${container.name}`);
  deps.log('debug', 'Started container', { pod: podRef(pod), container: container.name, restartCount });
  const postStart = container.lifecycle?.postStart;
  if (postStart) {
    const failure = await runPostStart(deps, { runtime: deps.runtime, pod, container, containerId, podIP: context.podIP }, postStart, context);
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
  deps: RuntimeDeps,
  target: HookTarget,
  postStart: LifecycleHandler,
  context: StartContext,
): Promise<WaitingReason | undefined> {
  const signal = context.opts.signal ?? new AbortController().signal;
  try {
    await runLifecycleHandler(deps.hookIO ?? realHookIO, target, postStart, { signal });
    return undefined;
  } catch (err) {
    if (signal.aborted || !(err instanceof HookError)) throw err;
    const fields = { pod: podRef(target.pod), container: target.container.name, containerId: target.containerId };
    // The kubelet's event says only "PostStartHook failed" (the message may hold secrets); the log has it.
    deps.log('warn', 'PostStart hook failed', { ...fields, err: err.message });
    deps.recorder.event(podReference(target.pod, target.container.name), 'Warning', 'FailedPostStartHook', 'PostStartHook failed');
    try {
      const { pod, podIP } = target;
      const killed = { id: target.containerId, name: target.container.name };
      await killContainer(deps, { pod, target: killed, message: 'FailedPostStartHook', podIP, preStops: context.preStops }, context.opts);
    } catch (killErr) {
      if (signal.aborted) throw killErr;
      deps.log('error', 'Failed to kill container', { ...fields, err: errorText(killErr) });
    }
    return { reason: 'PostStartHookError', message: err.message };
  }
}
