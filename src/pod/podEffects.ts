/**
 * The pod actor's side effects, against a real (or simulated, or fake) runtime: the kubelet's
 * SyncPod, SyncTerminatingPod and SyncTerminatedPod. Each reads the pod's runtime status fresh,
 * so nothing here waits for a relist: what the runtime says now is what the decision sees.
 */
import { rm } from 'node:fs/promises';
import { podReference } from '../eventrecorder/recorder.ts';
import { type Pod, type PodStatus, isStaticPod, podRef, type ProbeResult } from '../api/types.ts';
import { podLogDirectory } from '../kuberuntime/configs.ts';
import { executePlan, killPodRuntime, removePodRuntime, setUpVolumes, tearDownVolumes } from '../kuberuntime/execute.ts';
import type { PodCri, PodWork } from '../kuberuntime/podWork.ts';
import type { PreStopRuns } from '../kuberuntime/kill.ts';
import { type CallTrace, allOf, tracedImages, tracedPulls, tracedRuntime } from '../runtime/callTrace.ts';
import type { CallsInFlight } from '../runtime/callsInFlight.ts';
import type { RuntimePodStatus } from '../api/runtimeView.ts';
import { readPodStatus } from '../kuberuntime/podStatus.ts';
import { TerminationMessages } from '../kuberuntime/terminationMessage.ts';
import type { CallOptions } from '../runtime/types.ts';
import { type PodActions, computePodActions, isEmptyPlan, noProbeResults } from '../kuberuntime/computePodActions.ts';
import { podNetworkError } from './network.ts';
import { podProgress } from './progress.ts';
import { runtimeSeen } from './runtimeSeen.ts';
import type { PodEffects, PodProbeResults, SyncOutcome } from './pod.ts';
import type { SyncMemory } from '../kuberuntime/startContainer.ts';
import type { KillStatus } from '../events.ts';
import { generatePodStatus, isTerminalPhase } from '../status/generate.ts';
import { type PodResizeActions, hasResizeWork, isPodResizeInProgress, noResize, planPodResize } from '../kuberuntime/podResize.ts';
import { resizeEventMessage } from '../status/resize.ts';
import type { PodStatusPublisher } from '../status/manager.ts';

interface PodEffectsDeps {
  /** What the work uses of the node, by concern (kuberuntime/podWork.ts). */
  work: PodWork;
  statuses: PodStatusPublisher;
  /** The runtime's name, for `containerID: <runtime>://<id>`. */
  runtimeName: string;
  hostIP?: string;
  /** The node's register of calls under way, which names the ones that hang. */
  callsInFlight?: CallsInFlight;
  /**
   * The runtime's network error as the node last polled its Status (the kubelet's
   * runtimeState.networkErrors), null while it is ready; absent: always ready.
   */
  networkError?: () => string | null;
}

export function createPodEffects(deps: PodEffectsDeps): PodEffects {
  const { work } = deps;
  const { host, observe, resize: resizeRecords } = work;
  /**
   * The preStop hooks under way, per pod UID. A shorter kill aborts the termination in flight and
   * starts another; this is how the second one finds (and waits for) the hooks the first started
   * instead of running them again. Entries go when their container is stopped; the rest when the
   * pod is cleaned up.
   */
  const preStopsByPod = new Map<string, PreStopRuns>();
  const preStopsOf = (uid: string): PreStopRuns => {
    let runs = preStopsByPod.get(uid);
    if (!runs) preStopsByPod.set(uid, (runs = new Map()));
    return runs;
  };
  const forgetPreStops = (uid: string): void => {
    for (const run of preStopsByPod.get(uid)?.values() ?? []) run.cancel.abort();
    preStopsByPod.delete(uid);
  };

  /**
   * The termination messages per pod UID: each exited container's is read once (its file does not
   * change after the exit) and kept while the runtime lists the container; all go at cleanup.
   */
  const messagesByPod = new Map<string, TerminationMessages>();
  const messagesOf = (uid: string): TerminationMessages => {
    let messages = messagesByPod.get(uid);
    if (!messages) messagesByPod.set(uid, (messages = new TerminationMessages()));
    return messages;
  };
  const read = (io: PodWork, pod: Pod, opts: CallOptions) => readPodStatus(io.cri.runtime, pod.metadata.uid, opts, messagesOf(pod.metadata.uid), io.cri.podIds);

  /**
   * The pod's status now: the status last published, or before there is one (the agent's first
   * sync of the pod since it started) the API's own (generateAPIPodStatus: "use the previous pod
   * status, or the api status"), so that after a restart of the agent a pod keeps the start time,
   * the terminal phase and the container states it had, even where the runtime has lost them. A
   * static pod's own status is only its source's default, not something seen: it has none.
   */
  const generate = (pod: Pod, runtime: RuntimePodStatus, memory: SyncMemory, podIsTerminal: boolean, probes?: PodProbeResults, killStatus?: KillStatus | null): PodStatus =>
    generatePodStatus({
      ...(probes ? { readiness: successes(probes.readiness), started: successes(probes.startup) } : {}),
      ...(killStatus ? { killStatus } : {}),
      pod,
      runtime,
      previous: deps.statuses.get(pod.metadata.uid) ?? (isStaticPod(pod) ? undefined : pod.status),
      reasons: memory.reasons,
      podIsTerminal,
      ...(resizeRecords ? { actuated: resizeRecords.actuated.of(pod.metadata.uid), resizeConditions: podIsTerminal ? [] : resizeRecords.conditions(pod.metadata.uid) } : {}),
      nowMs: host.now(),
      runtimeName: deps.runtimeName,
      ...(deps.hostIP ? { hostIP: deps.hostIP } : {}),
    });

  const publish = (pod: Pod, runtime: RuntimePodStatus, memory: SyncMemory, podIsTerminal: boolean, probes?: PodProbeResults, killStatus?: KillStatus | null): PodStatus => {
    const status = generate(pod, runtime, memory, podIsTerminal, probes, killStatus);
    deps.statuses.setPodStatus(pod.metadata.uid, status);
    return status;
  };

  const outcome = (pod: Pod, runtime: RuntimePodStatus, memory: SyncMemory, status: PodStatus, extra: Partial<SyncOutcome> = {}): SyncOutcome => {
    const result: SyncOutcome = {
      memory,
      progress: podProgress(pod, runtime),
      phase: status.phase ?? 'Pending',
      isTerminal: isTerminalPhase(status.phase),
      restarts: [...(status.initContainerStatuses ?? []), ...(status.containerStatuses ?? [])].reduce((sum, c) => sum + c.restartCount, 0),
      errors: [],
      ...extra,
    };
    const deadline = untilActiveDeadlineMs(pod, status, host.now());
    if (deadline !== undefined) result.retryAfterMs = Math.min(result.retryAfterMs ?? Infinity, deadline);
    return result;
  };

  /** The node as one effect run for `pod` sees it: the same groups, the runtime reporting every call it makes to `calls` (and the node's register). */
  const tracedDeps = (pod: Pod, actorCalls: CallTrace, known?: RuntimePodStatus): PodWork => {
    const calls = deps.callsInFlight ? allOf(actorCalls, deps.callsInFlight.forPod(podRef(pod))) : actorCalls;
    const cri: PodCri = {
      ...work.cri,
      runtime: tracedRuntime(work.cri.runtime, calls, known?.containers.map((c) => [c.id, c.name])),
      images: tracedImages(work.cri.images, calls),
      puller: tracedPulls(work.cri.puller, calls),
    };
    return { ...work, cri };
  };

  /**
   * The PodResizeInProgress condition as the runtime stands (kubelet.go SyncPod): set while a
   * running container's allocated resources differ from those it was last given, cleared (with a
   * `ResizeCompleted` event) once they agree. Checked before and after each sync's actions, so a
   * resize done in one sync shows done at its end.
   */
  const trackResize = (pod: Pod, runtime: RuntimePodStatus): void => {
    const resize = resizeRecords;
    if (!resize) return;
    const uid = pod.metadata.uid;
    if (isPodResizeInProgress(pod, runtime, resize.actuated.of(uid))) {
      resize.setInProgress(uid, '', '', pod.metadata.generation ?? 0);
      return;
    }
    const cleared = resize.clearInProgress(uid);
    if (cleared !== null) observe.recorder.event(podReference(pod), 'Normal', 'ResizeCompleted', resizeEventMessage('Pod resize completed', pod, cleared));
  };

  /** A resize that failed: PodResizeInProgress with reason Error and a `ResizeError` event, once per change (kubelet.go SyncPod). */
  const resizeFailed = (pod: Pod, error: string): void => {
    const update = resizeRecords?.setInProgress(pod.metadata.uid, 'Error', error, pod.metadata.generation ?? 0);
    if (update?.changed) observe.recorder.event(podReference(pod), 'Warning', 'ResizeError', resizeEventMessage('Pod resize error', pod, update.generation, error));
  };

  /** Each terminated pod's runtime as its kill last read it, until its cleanup takes it. */
  const terminatedViews = new Map<string, RuntimePodStatus>();

  /** The sync's plan for the pod as `status` shows it: computePodActions, and the resize part over it (computePodResizeAction). */
  const plan = (pod: Pod, status: RuntimePodStatus, probes: PodProbeResults | undefined) => {
    const computed = computePodActions(pod, status, probes ?? noProbeResults);
    return resizeRecords ? planPodResize(pod, status, computed, resizeRecords.actuated.of(pod.metadata.uid)) : { actions: computed, resize: noResize() };
  };
  const isPlanEmpty = (actions: PodActions, resize: PodResizeActions) => isEmptyPlan(actions) && !hasResizeWork(resize);

  return {
    async syncPod({ pod, memory, probes }, signal, calls) {
      const opts = { signal };
      const io = tracedDeps(pod, calls);
      const before = await read(io, pod, opts);
      // The actuated record starts from the allocation (the kubelet does it once the volumes are up;
      // here before anything is compared, so a pod adopted without a record is not taken as resizing).
      resizeRecords?.initializeActuated(pod);
      trackResize(pod, before);
      const current = publish(pod, before, memory, false, probes);
      if (isTerminalPhase(current.phase)) return outcome(pod, before, memory, current);
      // No pod network yet: only a pod on the host's network goes on (kubelet.go SyncPod); the
      // others wait with the status just published, and are retried at the transient period.
      const networkError = podNetworkError(pod, deps.networkError?.() ?? null);
      if (networkError) {
        observe.recorder.event(podReference(pod), 'Warning', 'NetworkNotReady', networkError);
        return outcome(pod, before, memory, current, { errors: [networkError] });
      }
      // The pod's cgroup before anything of it starts (kubelet.go SyncPod, pcm.EnsureExists).
      const cgroupError = await host.podCgroups?.ensurePod(pod).then(() => null, (err: unknown) => (err instanceof Error ? err : new Error(String(err))));
      if (cgroupError) {
        const cause = (cgroupError as Error & { causeText?: string }).causeText ?? cgroupError.message;
        observe.recorder.event(podReference(pod), 'Warning', 'FailedToCreatePodContainer', `unable to ensure pod container exists: ${cause}`);
        return outcome(pod, before, memory, current, { errors: [cgroupError.message] });
      }
      const volumeError = await setUpVolumes(io, pod, signal);
      if (volumeError) return outcome(pod, before, memory, current, { errors: [volumeError] });
      const { actions, resize } = plan(pod, before, probes);
      if (isPlanEmpty(actions, resize)) return outcome(pod, before, memory, current, { seen: runtimeSeen(before) });

      const executed = await executePlan(io, pod, before, actions, memory, opts, preStopsOf(pod.metadata.uid), resizeRecords ? resize : undefined);
      if (executed.resizeError !== undefined) resizeFailed(pod, executed.resizeError);
      const next: SyncMemory = { backoff: executed.backoff, reasons: executed.reasons };
      const after = await read(io, pod, opts);
      trackResize(pod, after);
      const status = publish(pod, after, next, false, probes);
      const extra: Partial<SyncOutcome> = { errors: executed.errors };
      if (executed.retryAfterMs !== undefined) extra.retryAfterMs = executed.retryAfterMs;
      // Where the pod rests, if the plan for it is empty: the PLEG's events about it are no news.
      if (executed.errors.length === 0) {
        const again = plan(pod, after, probes);
        if (isPlanEmpty(again.actions, again.resize)) extra.seen = runtimeSeen(after);
      }
      return outcome(pod, after, next, status, extra);
    },

    async terminatePod({ pod, gracePeriodSeconds, memory, killStatus }, signal, calls) {
      const opts = { signal };
      const io = tracedDeps(pod, calls);
      const before = await read(io, pod, opts);
      // A pod on its way out shows no resize (determinePodResizeStatus).
      resizeRecords?.clearConditions(pod.metadata.uid);
      // An eviction's Failed status is the pod's from the moment its termination starts (syncTerminatingPod applies the kill's PodStatusFunc first).
      if (killStatus) publish(pod, before, memory, true, undefined, killStatus);
      observe.log('info', 'Killing pod', { pod: podRef(pod), gracePeriodSeconds });
      await killPodRuntime(io, pod, before, gracePeriodSeconds, opts, preStopsOf(pod.metadata.uid));
      const after = await read(io, pod, opts);
      const stillRunning = after.containers.filter((c) => c.state === 'CONTAINER_RUNNING');
      if (stillRunning.length > 0) {
        throw new Error(`${stillRunning.length} container(s) still running after kill: ${stillRunning.map((c) => c.name).join(', ')}`);
      }
      publish(pod, after, memory, true);
      terminatedViews.set(pod.metadata.uid, after);
    },

    async cleanupPod({ pod, removeRuntime, memory }, signal, calls) {
      const opts = { signal };
      // What the kill's last read saw: nothing of a terminated pod starts again, so the runtime is
      // not read once more (a container removed since is passed over); a retry reads it afresh.
      const terminated = terminatedViews.get(pod.metadata.uid);
      terminatedViews.delete(pod.metadata.uid);
      const io = tracedDeps(pod, calls, terminated);
      forgetPreStops(pod.metadata.uid);
      resizeRecords?.clearConditions(pod.metadata.uid);
      const status = terminated ?? (await read(io, pod, opts));
      messagesByPod.delete(pod.metadata.uid);
      // The final status: the kubelet's SyncTerminatedPod generates it once more, then TerminatePod.
      deps.statuses.terminatePod(pod, generate(pod, status, memory, true));
      if (!removeRuntime) {
        // Terminated but still desired (a finished Job's pod): its volumes come off, its directory stays.
        await tearDownVolumes(io, pod.metadata.uid, { removeDir: false });
        await host.podCgroups?.destroyPod(pod);
        return;
      }
      await removePodRuntime(io, status, opts);
      await rm(podLogDirectory(host.podLogsRoot, pod), { recursive: true, force: true });
      // The pod's volumes and directory (its managed /etc/hosts) go with it (the volume manager's teardown, cleanupOrphanedPodDirs).
      await tearDownVolumes(io, pod.metadata.uid, { removeDir: true });
      // Its cgroup once nothing of it runs (kubelet.go SyncTerminatedPod, pcm.Destroy).
      await host.podCgroups?.destroyPod(pod);
      observe.log('info', 'Removed pod from runtime', { pod: podRef(pod) });
    },
  };
}

/** Results by container ID as booleans (Success ⇒ true). */
function successes(results: Readonly<Record<string, ProbeResult>>): Record<string, boolean> {
  return Object.fromEntries(Object.entries(results).map(([id, result]) => [id, result === 'Success']));
}

/**
 * How long until the pod's activeDeadlineSeconds runs out, counted from `status.startTime` as the
 * status generator counts it; undefined when the pod has no deadline (or is already past it, when
 * the status says so itself). The sync reports it as `retryAfterMs`, so the next sync, which finds
 * the pod `Failed`/`DeadlineExceeded` and terminates it, comes on the first tick after the deadline.
 */
export function untilActiveDeadlineMs(pod: Pod, status: PodStatus, nowMs: number): number | undefined {
  const deadlineSeconds = pod.spec.activeDeadlineSeconds;
  if (deadlineSeconds === undefined || !status.startTime || isTerminalPhase(status.phase)) return undefined;
  return Math.max(0, Date.parse(status.startTime) + deadlineSeconds * 1000 - nowMs);
}
