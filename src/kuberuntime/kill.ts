/**
 * Killing one container: the kubelet's killContainer (pkg/kubelet/kuberuntime/kuberuntime_container.go
 * killContainer). In order:
 *   1. the spec: the container's entry in the pod, or, when the pod does not know it (an orphan
 *      after an agent restart), what the container's annotations kept: grace periods, preStop
 *      handler, ports (`restoreKillSpec`);
 *   2. the grace period: `deletionGracePeriodSeconds`; else the liveness/startup probe's own
 *      `terminationGracePeriodSeconds` when killing for that probe; else the pod's; else 2. An
 *      explicit override replaces it, BEFORE the preStop hook (newest kubelet: the override used to
 *      be applied after the clamp below; it is not any more);
 *   3. the preStop hook, if any and the grace is > 0, waited for at most the grace; the whole
 *      seconds it took are subtracted;
 *   4. with a termination ordering (sidecars, see terminationOrder.ts), wait for this container's
 *      turn, at most what is left; the whole seconds waited are subtracted;
 *   5. at least 2 seconds, so the container always gets a chance to shut down; StopContainer with
 *      that timeout (NotFound counts as stopped).
 *
 * A kill can be issued again for the same container while the first is in flight (a shorter
 * `POD.KILL` aborts the running termination and starts another). The preStop hook must not run
 * twice: its run is kept in a `PreStopRuns` record that the caller keeps per pod, and a second kill
 * waits for the same run, counting the grace from when that run started. The hook itself is not
 * bound to any one kill's signal; it ends when the container has been stopped (or the caller
 * forgets the record).
 */
import type { Container, LifecycleHandler, Pod } from '../api/types.ts';
import { containerSpecOf, podRef } from '../api/types.ts';
import type { KillReason } from './computePodActions.ts';
import type { CallOptions, ContainerStatus, KeyValueMap } from '../runtime/types.ts';
import { isNotFound } from '../runtime/types.ts';
import { settlesWithin } from './deadline.ts';
import { realHookIO, runLifecycleHandler } from './hooks.ts';
import { errorText } from './images.ts';
import { Annotation, Label } from './labels.ts';
import { podReference } from '../eventrecorder/recorder.ts';
import type { PodWork } from './podWork.ts';
import type { TerminationOrdering } from './terminationOrder.ts';

/** The minimum StopContainer timeout the kubelet ever asks for, so containers can shut down. */
const minimumGracePeriodSeconds = 2;

/** What a kill reads of the node. */
export type KillWork = Pick<PodWork, 'cri' | 'host' | 'observe'>;

/** A preStop hook under way or finished, for a container not yet stopped. */
interface PreStopRun {
  done: Promise<void>;
  startedAt: number;
  /** Ends the hook (its exec, its sleep, its request) once nobody needs it any more. */
  cancel: AbortController;
}

/** The preStop runs of one pod, by container ID. */
export type PreStopRuns = Map<string, PreStopRun>;

interface KillRequest {
  /** The pod; a container it does not list has its spec restored from annotations. */
  pod: Pod | undefined;
  target: { id: string; name: string };
  /** Why (logged); the kubelet's default is "Stopping container <name>". */
  message?: string;
  /** Selects a probe's grace period when killing for that probe. */
  reason?: KillReason;
  gracePeriodOverride?: number;
  ordering?: TerminationOrdering | undefined;
  /** Where httpGet hooks without a host go. */
  podIP(): Promise<string>;
  /** Where preStop runs are kept across kills of the same pod; without it, each kill runs its own. */
  preStops?: PreStopRuns | undefined;
}

/** Grace period before the preStop hook, the ordering wait and the clamp (steps 2 of the header). */
export function killGracePeriod(pod: Pod, container: Container, reason: KillReason | undefined, override: number | undefined): number {
  if (override !== undefined) return override;
  if (pod.metadata.deletionGracePeriodSeconds !== undefined) return pod.metadata.deletionGracePeriodSeconds;
  const podGrace = pod.spec.terminationGracePeriodSeconds;
  if (podGrace === undefined) return minimumGracePeriodSeconds;
  const probe = reason === 'LivenessProbe' ? container.livenessProbe : reason === 'StartupProbe' ? container.startupProbe : undefined;
  return probe?.terminationGracePeriodSeconds ?? podGrace;
}

function optionalInt(annotations: KeyValueMap, key: string): number | undefined {
  const value = Number.parseInt(annotations[key] ?? '', 10);
  return Number.isFinite(value) ? value : undefined;
}

function optionalJson<T>(annotations: KeyValueMap, key: string): T | undefined {
  const text = annotations[key];
  if (text === undefined) return undefined;
  try {
    return JSON.parse(text) as T;
  } catch {
    return undefined;
  }
}

/** What killing needs of a pod and container whose spec is gone, from the container's labels and annotations. */
export function restoreKillSpec(status: ContainerStatus): { pod: Pod; container: Container } {
  const { labels, annotations } = status;
  const deletionGrace = optionalInt(annotations, Annotation.podDeletionGracePeriod);
  const terminationGrace = optionalInt(annotations, Annotation.podTerminationGracePeriod);
  const container: Container = { name: labels[Label.containerName] ?? status.metadata.name };
  const preStop = optionalJson<LifecycleHandler>(annotations, Annotation.preStopHandler);
  if (preStop) container.lifecycle = { preStop };
  const ports = optionalJson<Container['ports']>(annotations, Annotation.ports);
  if (ports) container.ports = ports;
  const pod: Pod = {
    metadata: {
      name: labels[Label.podName] ?? '',
      namespace: labels[Label.podNamespace] ?? '',
      uid: labels[Label.podUid] ?? '',
      ...(deletionGrace !== undefined ? { deletionGracePeriodSeconds: deletionGrace } : {}),
    },
    spec: { containers: [container], ...(terminationGrace !== undefined ? { terminationGracePeriodSeconds: terminationGrace } : {}) },
  };
  return { pod, container };
}

/** The container's spec, of any kind, ephemeral ones included (kuberuntime_container.go killContainer, GetContainerSpec). */
function specOf(pod: Pod | undefined, name: string): Container | undefined {
  return pod ? containerSpecOf(pod, name) : undefined;
}

export async function killContainer(deps: KillWork, request: KillRequest, opts: CallOptions): Promise<void> {
  const { target } = request;
  const io = deps.host.hookIO ?? realHookIO;
  const signal = opts.signal ?? new AbortController().signal;
  let pod = request.pod;
  let container = specOf(pod, target.name);
  if (!pod || !container) {
    try {
      ({ pod, container } = restoreKillSpec(await deps.cri.runtime.containerStatus(target.id, opts)));
    } catch (err) {
      if (isNotFound(err)) return;
      throw err;
    }
  }
  let grace = killGracePeriod(pod, container, request.reason, request.gracePeriodOverride);
  const fields = { pod: podRef(pod), container: target.name, containerId: target.id };
  deps.observe.recorder.event(podReference(pod, target.name), 'Normal', 'Killing', request.message ?? `Stopping container ${target.name}`);

  let run: PreStopRun | undefined;
  try {
    const preStop = container.lifecycle?.preStop;
    if (preStop && grace > 0) {
      run = request.preStops?.get(target.id) ?? startPreStop(deps, request, pod, container, preStop, grace);
      request.preStops?.set(target.id, run);
      const completed = await settlesWithin(run.done, grace * 1000 - (deps.host.now() - run.startedAt), io.sleep, signal);
      if (!completed) deps.observe.log('info', 'PreStop hook not completed in grace period', { ...fields, gracePeriodSeconds: grace });
      grace -= Math.floor((deps.host.now() - run.startedAt) / 1000);
    }
    if (request.ordering && grace > 0) {
      const waited = await request.ordering.waitForTurn(target.name, grace, { now: deps.host.now, sleep: io.sleep }, signal);
      grace -= Math.floor(waited);
    }
    grace = Math.max(grace, minimumGracePeriodSeconds);
    deps.observe.log('info', 'Killing container with a grace period', { ...fields, gracePeriodSeconds: grace });
    try {
      // Its deadline is the runtime request timeout on top of the grace period it asks the runtime
      // to wait, as the CRI client gives it (pkg/kubelet/cri/remote/remote_runtime.go StopContainer).
      await deps.cri.runtime.stopContainer(target.id, grace, opts);
    } catch (err) {
      if (!isNotFound(err)) throw err;
    }
  } catch (err) {
    // Keep a shared preStop run for the kill that will be issued again; an unshared one is orphaned.
    if (run && !request.preStops) run.cancel.abort();
    throw err;
  }
  request.preStops?.delete(target.id);
  run?.cancel.abort();
  request.ordering?.containerTerminated(target.name);
}

function startPreStop(
  deps: KillWork,
  request: KillRequest,
  pod: Pod,
  container: Container,
  preStop: LifecycleHandler,
  grace: number,
): PreStopRun {
  const cancel = new AbortController();
  const startedAt = deps.host.now();
  const target = { runtime: deps.cri.runtime, pod, container, containerId: request.target.id, podIP: request.podIP };
  const done = runLifecycleHandler(deps.host.hookIO ?? realHookIO, target, preStop, { signal: cancel.signal, timeoutSeconds: grace }).catch((err: unknown) => {
    // The kubelet records event FailedPreStopHook ("PreStopHook failed") and kills the container anyway.
    if (!cancel.signal.aborted) {
      // The event's message leaves out the hook's output, which may hold secrets; the log has it.
      deps.observe.log('warn', 'PreStop hook failed', { pod: podRef(pod), container: container.name, err: errorText(err) });
      deps.observe.recorder.event(podReference(pod, container.name), 'Warning', 'FailedPreStopHook', 'PreStopHook failed');
    }
  });
  return { done, startedAt, cancel };
}
