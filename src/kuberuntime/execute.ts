/**
 * Carries out a `PodActions` plan against the runtime (pkg/kubelet/kuberuntime/kuberuntime_manager.go
 * SyncPod): kill what must die (kill.ts: preStop, grace periods, sidecar order), (re)create the
 * sandbox, resize running containers in place (resize.ts), start the ephemeral containers, the init containers in order and the regular containers (startContainer.ts: back-off,
 * image, config, create, start, postStart). Every failure is turned into a waiting reason for the
 * container it concerns; one container's failure never stops the others from starting. Also here:
 * a pod's runtime objects killed or removed, and its volumes set up and torn down at each sync.
 */
import { type Container, type Pod, isSidecar } from '../api/types.ts';
import type { RuntimeContainerStatus, RuntimePodStatus, WaitingReason } from '../api/runtimeView.ts';
import { podReference } from '../eventrecorder/recorder.ts';
import type { CallOptions, PodSandboxConfig } from '../runtime/types.ts';
import { isNotFound } from '../runtime/types.ts';
import { makePodDataDirs, tearDownPodVolumes } from '../volumes/setUp.ts';
import { VolumeWaitError } from '../volumes/world.ts';
import { mkdirAll } from '../volumes/mkdirAll.ts';
import { diskOnly } from '../volumes/mounter.ts';
import type { PodActions } from './computePodActions.ts';
import type { PodWork, StartedContainerType } from './podWork.ts';
import { sandboxConfig } from './configs.ts';
import { sandboxRuntime } from './sandboxRuntime.ts';
import { podDns } from './dns.ts';
import { hookHost } from './hooks.ts';
import { errorText } from './images.ts';
import { dynamicResourcesError } from './dynamicResources.ts';
import { type PreStopRuns, killContainer } from './kill.ts';
import type { ContainerType } from './labels.ts';
import { podPullSecrets } from './pullSecrets.ts';
import { type ExecuteResult, type StartContext, type SyncMemory, startContainer } from './startContainer.ts';
import { TerminationOrdering } from './terminationOrder.ts';
import { type PodResizeActions, hasResizeWork, withoutZeros } from './podResize.ts';
import { type ActuatedStore, type PodResizeDeps, executePodResize } from './resize.ts';
import { containerResources } from './resources.ts';

const STARTED_TYPE: Record<ContainerType, StartedContainerType> = { container: 'container', init: 'init_container', ephemeral: 'ephemeral_container' };

/**
 * Kills every running container of the pod, then stops every ready sandbox (the kubelet's
 * killPodWithSyncResult). Containers are killed in parallel, each with its own preStop hook; a pod
 * with sidecars stops them last, in reverse order (terminationOrder.ts). `pod` may be undefined or
 * may not list a container (orphans): its kill settings then come from the container's annotations.
 */
export async function killPodRuntime(
  deps: PodWork,
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
      await deps.cri.runtime.stopPodSandbox(sandbox.id, opts);
    } catch (err) {
      if (!isNotFound(err)) throw err;
    }
  }
}

/** Removes every container and sandbox of the pod (used once a deleted pod has terminated). */
export async function removePodRuntime(deps: PodWork, status: RuntimePodStatus, opts: CallOptions): Promise<void> {
  // Oldest first, as the container GC removes (kuberuntime_gc.go removeOldestN): a status read while
  // this runs still shows the newest container and its restart count, never an older one (a container
  // an agent killed inside CreateContainer left created, never started) as if it were current.
  for (const container of [...status.containers].reverse()) {
    try {
      await deps.cri.runtime.removeContainer(container.id, opts);
    } catch (err) {
      if (!isNotFound(err)) throw err;
    }
  }
  for (const sandbox of status.sandboxes) {
    try {
      await deps.cri.runtime.removePodSandbox(sandbox.id, opts);
    } catch (err) {
      if (!isNotFound(err)) throw err;
    }
  }
}

/**
 * The pod's directories and the volume step of SyncPod (makePodDataDirs, WaitForAttachAndMount):
 * the pod's volumes set up by the volume manager, or the reason they are not. A FailedMount event
 * (`Unable to attach or mount volumes: …`) when the pod's volumes could not be processed (a claim
 * not bound); none when the wait ran out, as the kubelet's (the volumes' own FailedMount events say
 * why). The containers wait in ContainerCreating and the sync is retried.
 */
export async function setUpVolumes(deps: PodWork, pod: Pod, signal?: AbortSignal): Promise<string | null> {
  if (!deps.host.podsDir) return null;
  try {
    await (deps.host.dataDirs ? deps.host.dataDirs.make(pod.metadata.uid) : makePodDataDirs(deps.host.podsDir, pod.metadata.uid));
  } catch (err) {
    const message = `error making pod data directories: ${errorText(err)}`;
    deps.observe.recorder.event(podReference(pod), 'Warning', 'FailedToMakePodDataDirectories', message);
    return `FailedToMakePodDataDirectories: ${message}`;
  }
  try {
    await deps.host.volumes.waitForAttachAndMount(pod, signal);
    return null;
  } catch (err) {
    if (signal?.aborted) throw err;
    // Its directories may be what is missing: looked at again at the next sync.
    deps.host.dataDirs?.forget(pod.metadata.uid);
    if (err instanceof VolumeWaitError && err.timedOut) {
      deps.observe.log('warn', 'Unable to attach or mount volumes for pod; skipping pod', { pod: `${pod.metadata.namespace}/${pod.metadata.name}`, err: err.message });
    } else {
      deps.observe.recorder.event(podReference(pod), 'Warning', 'FailedMount', `Unable to attach or mount volumes: ${errorText(err)}`);
    }
    return `FailedMount: ${errorText(err)}`;
  }
}

/**
 * The pod's volumes torn down by the volume manager once it has terminated (WaitForUnmount); with
 * `removeDir`, its directory removed too (its runtime objects are gone already). Whatever is still
 * mounted under its directory (an earlier run's) is unmounted before anything is removed.
 */
export async function tearDownVolumes(deps: PodWork, uid: string, options: { removeDir: boolean }): Promise<void> {
  if (!deps.host.podsDir) return;
  await deps.host.volumes.unmountPod(uid);
  if (options.removeDir) deps.host.dataDirs?.forget(uid);
  await tearDownPodVolumes({ podsDir: deps.host.podsDir, mounter: deps.host.mounter ?? diskOnly, ...(deps.cluster ? { tokens: deps.cluster.tokens } : {}) }, uid, options);
  // Its user namespace's block is free once its directory, which records it, is gone (userns_manager.go CleanupOrphanedPodUsernsAllocations).
  if (options.removeDir) await deps.host.userNamespaces.release(uid);
}

/** What carrying out a plan gives: the sync's memory and errors, and a resize's error (the PodResizeInProgress condition's message). */
export interface PlanResult extends ExecuteResult {
  resizeError?: string;
}

export async function executePlan(
  deps: PodWork,
  pod: Pod,
  status: RuntimePodStatus,
  actions: PodActions,
  memory: SyncMemory,
  opts: CallOptions,
  preStops?: PreStopRuns,
  resize?: PodResizeActions,
): Promise<PlanResult> {
  const reasons: Record<string, WaitingReason> = { ...memory.reasons };
  const result: PlanResult = { backoff: memory.backoff, reasons, errors: [] };
  // Read at every sync, as the kubelet's SyncPod reads them before the runtime's (kubelet.go SyncPod).
  const pullSecrets = await podPullSecrets(pod, deps.cluster, deps.observe);

  if (actions.createSandbox && actions.sandboxId) {
    deps.observe.recorder.event(podReference(pod), 'Normal', 'SandboxChanged', 'Pod sandbox changed, it will be killed and re-created.');
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
  if (!actions.createSandbox && (!sandboxId || actions.killPod)) return result;
  const dns = deps.host.dns ? podDns(pod, deps.host.dns) : undefined;
  if (actions.createSandbox) {
    // The pod's dynamic resources are prepared before its sandbox (kuberuntime_manager.go SyncPod).
    const unprepared = dynamicResourcesError(pod);
    if (unprepared) {
      result.errors.push(`FailedPrepareDynamicResources: ${unprepared}`);
      deps.observe.recorder.event(podReference(pod), 'Warning', 'FailedPrepareDynamicResources', `Failed to prepare dynamic resources: ${unprepared}`);
      return result;
    }
  }
  let config: PodSandboxConfig;
  try {
    // The handler and the user namespace are settled with the config, at each sync: the containers' configs carry the namespace too
    // (kuberuntime_manager.go SyncPod generatePodSandboxConfig; kuberuntime_container_linux.go generateLinuxContainerConfig).
    const runtime = await sandboxRuntime(deps, pod);
    config = sandboxConfig(pod, actions.attempt, deps.host.podLogsRoot, {
      dns: dns?.config,
      cgroupParent: deps.host.podCgroups?.parentOf(pod),
      userns: runtime.userns,
      clusterDomain: deps.host.dns?.clusterDomain,
      volumeGroups: deps.host.volumes.extraSupplementalGroups(pod.metadata.uid),
    });
    if (actions.createSandbox) {
      for (const warning of dns?.warnings ?? []) deps.observe.recorder.event(podReference(pod), 'Warning', warning.reason, warning.message);
      // The pod's log directory first, for the runtime to write the containers' logs in (kuberuntime_sandbox.go createPodSandbox).
      await mkdirAll(config.logDirectory, 0o755);
      sandboxId = await deps.cri.runtime.runPodSandbox(config, runtime.runtimeHandler, opts);
    }
  } catch (err) {
    if (!actions.createSandbox) {
      // No event: the sandbox runs, its new containers wait (SyncPod's ConfigPodSandbox result).
      result.errors.push(`ConfigPodSandboxError: ${errorText(err)}`);
      return result;
    }
    result.errors.push(`CreatePodSandboxError: ${errorText(err)}`);
    deps.observe.recorder.event(podReference(pod), 'Warning', 'FailedCreatePodSandBox', `Failed to create pod sandbox: ${errorText(err)}`);
    return result;
  }
  if (!sandboxId) return result;

  // Step 6 of the kubelet's SyncPod: the running containers and the pod's cgroup resized in place, before anything starts.
  if (resize && deps.resize && hasResizeWork(resize)) {
    const error = await executePodResize(resizeDeps(deps, deps.resize.actuated), pod, status, resize, opts);
    if (error !== null) {
      result.resizeError = error;
      result.errors.push(`ResizePodInPlace: ${error}`);
    }
  }
  const podIP = sandboxAddress(deps, pod, status, sandboxId, opts);
  const context: StartContext = { status, sandboxId, sandbox: config, result, opts, podIP, preStops, pullSecrets };
  const start = async (container: Container, type: ContainerType): Promise<boolean> => {
    const outcome = await startContainer(deps, pod, container, type, context);
    // Counted as the kubelet counts (kuberuntime_manager.go startContainer): every attempt past the backoff, and each failure by its reason.
    if (outcome === true || outcome.reason !== 'CrashLoopBackOff') deps.observe.containerStarted?.(STARTED_TYPE[type], outcome === true ? null : outcome.reason);
    // A created container runs with its spec's resources: they are the actuated ones now (kuberuntime_container.go startContainer).
    if (outcome === true && type !== 'ephemeral') deps.resize?.actuated.set(pod.metadata.uid, container.name, withoutZeros(container.resources ?? {}));
    if (outcome === true) delete reasons[container.name];
    else reasons[container.name] = outcome;
    return outcome === true;
  };
  // Ephemeral containers first, so that a debugger can start while an init container keeps failing
  // (kuberuntime_manager.go SyncPod, step 7); one that fails to start blocks nothing.
  for (const index of actions.ephemeralContainersToStart) {
    const container = pod.spec.ephemeralContainers?.[index];
    if (container) await start(container, 'ephemeral');
  }
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

/** What a resize reads of the node: the runtime, the pod's cgroup where there is one, and the containers' CRI values. */
function resizeDeps(deps: PodWork, actuated: ActuatedStore): PodResizeDeps {
  const cgroups = deps.host.podCgroups;
  return {
    runtime: deps.cri.runtime,
    actuated,
    containerResources: (pod, container) => containerResources(pod, container, { memoryCapacityBytes: deps.host.memoryCapacityBytes, ...deps.host.memoryFeatures }),
    ...(cgroups?.podResources && cgroups.resizeConfig && cgroups.setPodResources
      ? { cgroups: { podResources: cgroups.podResources.bind(cgroups), resizeConfig: cgroups.resizeConfig.bind(cgroups), setPodResources: cgroups.setPodResources.bind(cgroups) } }
      : {}),
  };
}

async function removeContainers(deps: PodWork, containers: RuntimeContainerStatus[], opts: CallOptions): Promise<void> {
  for (const c of containers) {
    try {
      await deps.cri.runtime.removeContainer(c.id, opts);
    } catch (err) {
      if (!isNotFound(err)) throw err;
    }
  }
}

/** Keeps only the newest exited instance of each init container, so dead ones do not pile up. */
async function pruneInitContainers(deps: PodWork, pod: Pod, status: RuntimePodStatus, opts: CallOptions): Promise<void> {
  const surplus: RuntimeContainerStatus[] = [];
  for (const init of pod.spec.initContainers ?? []) {
    const exited = status.containers.filter((c) => c.name === init.name && c.state === 'CONTAINER_EXITED');
    surplus.push(...exited.slice(1));
  }
  await removeContainers(deps, surplus, opts);
}

/** The address of `sandboxId`, read once and only if a hook asks: a new sandbox is not in `status`. */
function sandboxAddress(deps: PodWork, pod: Pod, status: RuntimePodStatus, sandboxId: string, opts: CallOptions): () => Promise<string> {
  let address: Promise<string> | undefined;
  return () => {
    const newest = status.sandboxes[0];
    if (newest?.id === sandboxId) return Promise.resolve(hookHost(pod, newest));
    address ??= deps.cri.runtime
      .podSandboxStatus(sandboxId, opts)
      .then((s) => hookHost(pod, { state: s.state, ip: s.network?.ip ?? '', networkMode: s.networkMode }));
    return address;
  };
}

