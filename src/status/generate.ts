/**
 * The API status of a pod, computed from its spec, the runtime's view of it and the last status
 * the agent published: the kubelet's generateAPIPodStatus (pkg/kubelet/kubelet_pods.go), pure. The pod
 * actor calls it after every sync, kill and cleanup, so what `/pods` shows is always derived from
 * what the runtime reported, never from a second record of where the pod is.
 */
import { podQos } from '../api/qos.ts';
import type {
  Container,
  ContainerState,
  ContainerStatus,
  ContainerUser,
  Pod,
  PodCondition,
  PodPhase,
  PodStatus,
} from '../api/types.ts';
import { isStaticPod, isSidecar } from '../api/types.ts';
import { containerShouldRestart } from '../api/containerRestart.ts';
import { sandboxChange, shouldRestart } from '../kuberuntime/computePodActions.ts';
import { messageLimitPerContainer, truncateMessage } from '../kuberuntime/terminationMessage.ts';
import type { RuntimeContainerStatus, RuntimePodStatus, WaitingReason } from '../api/runtimeView.ts';
import type { KillStatus } from '../events.ts';
import type { ContainerUser as RuntimeContainerUser } from '../runtime/types.ts';
import type { ActuatedResources } from '../kuberuntime/podResize.ts';
import { containerStatusResources, reportedResources } from './resize.ts';

export interface StatusInput {
  pod: Pod;
  runtime: RuntimePodStatus;
  /** The status last published for this pod, if any. */
  previous?: PodStatus | undefined;
  /** Waiting reasons by container name (CrashLoopBackOff, ErrImagePull, …). */
  reasons: Readonly<Record<string, WaitingReason>>;
  /** The pod is terminating or terminated: its containers will not be restarted. */
  podIsTerminal: boolean;
  /** Readiness by container ID; containers without a readiness probe are ready when running. */
  readiness?: Readonly<Record<string, boolean>>;
  /**
   * Startup probe success by container ID; containers without a startup probe have started when
   * running. A container that has not started is not ready either (pkg/kubelet/prober/
   * prober_manager.go UpdatePodStatus).
   */
  started?: Readonly<Record<string, boolean>>;
  nowMs: number;
  hostIP?: string;
  /** The runtime's name, as in `containerID: <runtime>://<id>`. */
  runtimeName: string;
  /** A kill that ends the pod Failed with its reason (an eviction). */
  killStatus?: KillStatus;
  /** The resources the runtime last took for each container (in-place resize's actuated record), for `containerStatuses[].resources` where the runtime reports none. */
  actuated?: ActuatedResources;
  /** The pod's PodResizePending and PodResizeInProgress conditions (none for a terminal pod). */
  resizeConditions?: readonly PodCondition[];
}

const toTime = (ms: number): string | undefined =>
  ms > 0 ? new Date(Math.floor(ms / 1000) * 1000).toISOString().replace('.000Z', 'Z') : undefined;

export const ContainerStatusUnknownMessage =
  'The container could not be located when the pod was deleted.  The container used to be Running';

/**
 * normalizeStatus: each terminated state's message (current and last) cut to the container's share
 * of the pod's 12 KiB. A status with nothing to cut is kept as it is (it may be the previous
 * status's own, which is frozen).
 */
function cutTerminationMessages(statuses: ContainerStatus[], maxBytes: number): ContainerStatus[] {
  const cut = (state: ContainerState): ContainerState => {
    const message = state.terminated?.message;
    if (!state.terminated || message === undefined) return state;
    const kept = truncateMessage(message, maxBytes);
    return kept === message ? state : { ...state, terminated: { ...state.terminated, message: kept } };
  };
  return statuses.map((s) => {
    const state = cut(s.state);
    const lastState = cut(s.lastState);
    return state === s.state && lastState === s.lastState ? s : { ...s, state, lastState };
  });
}

export function generatePodStatus(input: StatusInput): PodStatus {
  const { pod, runtime, previous } = input;
  const hasInit = (pod.spec.initContainers ?? []).length > 0;
  const defaultReason = hasInit ? 'PodInitializing' : 'ContainerCreating';

  // Containers that never ran stay waiting here, terminal phase or not: only the end of the pod's
  // termination reports them terminated, and only once the pod has initialized (terminate.ts).
  const messageLimit = messageLimitPerContainer(pod);
  const initContainerStatuses = cutTerminationMessages(
    (pod.spec.initContainers ?? []).map((c) => containerStatus(c, input, defaultReason, previous?.initContainerStatuses, true)),
    messageLimit,
  );
  const containerStatuses = cutTerminationMessages(
    pod.spec.containers.map((c) => containerStatus(c, input, defaultReason, previous?.containerStatuses, false)).sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0)),
    messageLimit,
  );
  const ephemeralContainerStatuses = cutTerminationMessages(ephemeralStatuses(input, defaultReason), messageLimit);

  const podHasInitialized = regularContainerStartedInCurrentSandbox(pod, runtime);
  let phase = computePhase(pod, initContainerStatuses, containerStatuses, input.podIsTerminal, podHasInitialized);
  let reason: string | undefined;
  let message: string | undefined;
  const previousPhase = previous?.phase;
  if (isTerminalPhase(previousPhase) && phase !== previousPhase) {
    // A terminal phase is final, even for another terminal one (pkg/kubelet/kubelet_pods.go
    // generateAPIPodStatus refuses the "illegal phase transition"): a pod Failed by its deadline
    // stays Failed when its containers then exit 0 on SIGTERM.
    phase = previousPhase as PodPhase;
  }
  if (previous && phase === previousPhase) {
    reason = previous.reason;
    message = previous.message;
  }
  const startTime = previous?.startTime ?? toTime(input.nowMs);
  const deadline = pod.spec.activeDeadlineSeconds;
  if (!isTerminalPhase(phase) && deadline !== undefined && startTime) {
    if (input.nowMs - Date.parse(startTime) >= deadline * 1000) {
      phase = 'Failed';
      reason = 'DeadlineExceeded';
      message = 'Pod was active on the node longer than the specified deadline';
    }
  }

  if (input.killStatus && !isTerminalPhase(phase)) {
    phase = 'Failed';
    reason = input.killStatus.reason;
    message = input.killStatus.message;
  }

  const apiPhase = pod.status?.phase;
  if (isTerminalPhase(apiPhase) && phase !== apiPhase) {
    // The API server already shows a terminal phase: transitions out of it are not allowed.
    phase = apiPhase as PodPhase;
  }

  const sandbox = runtime.sandboxes[0];
  const podIP = sandbox?.state === 'SANDBOX_READY' && sandbox.ip ? sandbox.ip : previous?.podIP;
  const status: PodStatus = {
    ...observedGenerationOf(pod, previous),
    phase,
    conditions: conditions(input, phase, initContainerStatuses, containerStatuses),
    startTime,
    qosClass: podQos(pod),
    containerStatuses,
  };
  if (reason !== undefined) status.reason = reason;
  if (message !== undefined) status.message = message;
  if (hasInit) status.initContainerStatuses = initContainerStatuses;
  if (ephemeralContainerStatuses.length) status.ephemeralContainerStatuses = ephemeralContainerStatuses;
  if (pod.spec.hostNetwork && input.hostIP) {
    status.podIP = input.hostIP;
    status.podIPs = [{ ip: input.hostIP }];
  } else if (podIP) {
    status.podIP = podIP;
    status.podIPs = [{ ip: podIP }];
  }
  if (input.hostIP) {
    status.hostIP = input.hostIP;
    status.hostIPs = [{ ip: input.hostIP }];
  }
  return status;
}

/**
 * `status.observedGeneration`: the pod's metadata.generation this status was made from, never
 * lower than the one already reported (status_manager.go SetPodStatus,
 * CalculatePodStatusObservedGeneration, and updateStatusInternal's "prevent sending unnecessary
 * patches"). A pod without a generation (a static pod's own object) reports none.
 */
function observedGenerationOf(pod: Pod, previous: PodStatus | undefined): Pick<PodStatus, 'observedGeneration'> {
  const observed = Math.max(pod.metadata.generation ?? 0, previous?.observedGeneration ?? 0);
  return observed > 0 ? { observedGeneration: observed } : {};
}

/**
 * A condition the agent sets, with the generation it was set from (CalculatePodConditionObservedGeneration:
 * the pod's generation, the PodObservedGenerationTracking feature being GA).
 */
function withGeneration(pod: Pod, condition: PodCondition): PodCondition {
  const generation = pod.metadata.generation ?? 0;
  return generation > 0 ? { ...condition, observedGeneration: generation } : condition;
}

export function isTerminalPhase(phase: PodPhase | undefined): boolean {
  return phase === 'Succeeded' || phase === 'Failed';
}

function runtimeState(status: RuntimeContainerStatus, runtimeName: string, wasRunning: boolean): ContainerState {
  switch (status.state) {
    case 'CONTAINER_RUNNING':
      return { running: { startedAt: toTime(status.startedAt) } };
    case 'CONTAINER_CREATED':
      return { waiting: {} };
    case 'CONTAINER_EXITED': {
      const terminated: NonNullable<ContainerState['terminated']> = {
        exitCode: status.exitCode,
        containerID: `${runtimeName}://${status.id}`,
      };
      if (status.reason) terminated.reason = status.reason;
      if (status.message) terminated.message = status.message;
      const startedAt = toTime(status.startedAt);
      const finishedAt = toTime(status.finishedAt);
      if (startedAt) terminated.startedAt = startedAt;
      if (finishedAt) terminated.finishedAt = finishedAt;
      return { terminated };
    }
    case 'CONTAINER_UNKNOWN':
      // Only a container last seen Running is known to have stopped; otherwise it is waiting.
      if (!wasRunning) return { waiting: {} };
      return {
        terminated: {
          exitCode: 137,
          reason: 'ContainerStatusUnknown',
          message: 'The container could not be located when the pod was terminated',
          containerID: `${runtimeName}://${status.id}`,
        },
      };
  }
}

function containerStatus(
  container: Container,
  input: StatusInput,
  defaultReason: string,
  previousList: ContainerStatus[] | undefined,
  isInit: boolean,
): ContainerStatus {
  const { pod, runtime, runtimeName } = input;
  const previous = previousList?.find((s) => s.name === container.name);
  const instances = runtime.containers.filter((c) => c.name === container.name);
  const newest = instances[0];
  const second = instances[1];

  if (!newest) {
    // The runtime has nothing for this container (yet, or any more).
    if (previous?.state.terminated) return previous;
    const status: ContainerStatus = {
      name: container.name,
      state: { waiting: { reason: defaultReason } },
      lastState: previous?.lastState ?? {},
      ready: false,
      restartCount: previous?.restartCount ?? 0,
      image: container.image ?? '',
      imageID: '',
      started: false,
    };
    const waiting = input.reasons[container.name];
    if (waiting) status.state = { waiting: { reason: waiting.reason, message: waiting.message } };
    // Only when no termination is on record already (kubelet: "nothing to do").
    if (previous?.state.running && !status.lastState.terminated) {
      status.lastState = {
        terminated: { exitCode: 137, reason: 'ContainerStatusUnknown', message: ContainerStatusUnknownMessage },
      };
      if (pod.metadata.deletionTimestamp === undefined) status.restartCount = previous.restartCount + 1;
    }
    return status;
  }

  const running = newest.state === 'CONTAINER_RUNNING';
  const wasRunning = previous?.state.running !== undefined;
  const status: ContainerStatus = {
    name: container.name,
    state: runtimeState(newest, runtimeName, wasRunning),
    lastState: second ? runtimeState(second, runtimeName, wasRunning) : {},
    ready: false,
    // A container lost to an unknown state after running counts as one more restart.
    restartCount:
      newest.state === 'CONTAINER_UNKNOWN' && wasRunning && previous ? previous.restartCount + 1 : newest.restartCount,
    image: newest.image || container.image || '',
    imageID: newest.imageRef,
    containerID: `${runtimeName}://${newest.id}`,
    started: running && (input.started?.[newest.id] ?? !container.startupProbe),
  };
  // The newest instance's user, only when the runtime reports one.
  const user = apiContainerUser(newest.user);
  if (user) status.user = user;
  // What the node allocated to it, and what it runs with (convertToAPIContainerStatuses, InPlacePodVerticalScaling).
  const requests = container.resources?.requests;
  if (requests && Object.keys(requests).length) status.allocatedResources = { ...requests };
  status.resources = containerStatusResources(container, newest, reportedResources(newest.resources, input.actuated?.[container.name]), previous, runtimeName);
  const waiting = input.reasons[container.name];
  const restartable = isInit && !isSidecar(container) ? initShouldRestart(pod, container, newest) : shouldRestart(pod, container, newest);
  if (waiting && !running && restartable && !input.podIsTerminal) {
    status.lastState = status.state.terminated ? { terminated: status.state.terminated } : status.lastState;
    status.state = { waiting: { reason: waiting.reason, message: waiting.message } };
  }
  if (isInit && !isSidecar(container)) {
    status.ready = newest.state === 'CONTAINER_EXITED' && newest.exitCode === 0;
  } else {
    status.ready = status.started === true && (input.readiness?.[newest.id] ?? !container.readinessProbe);
  }
  return status;
}

/**
 * `status.ephemeralContainerStatuses`, sorted by name: built like the regular containers' (the
 * kubelet's convertToAPIContainerStatuses over the ephemeral containers' specs, in
 * kubelet_pods.go generateAPIPodStatus), never ready and without `started`, since the prober
 * reports on regular and init containers only (prober_manager.go UpdatePodStatus). A terminal pod
 * leaves them as the runtime has them (status_manager.go TerminatePod does not touch them).
 */
function ephemeralStatuses(input: StatusInput, defaultReason: string): ContainerStatus[] {
  return (input.pod.spec.ephemeralContainers ?? [])
    .map((c) => {
      const status: ContainerStatus = { ...containerStatus(c, input, defaultReason, input.previous?.ephemeralContainerStatuses, false), ready: false };
      delete status.started;
      return status;
    })
    .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}

/**
 * The runtime's ContainerStatus.user as the API's `containerStatuses[].user`
 * (pkg/kubelet/kuberuntime/kuberuntime_container_linux.go toKubeContainerUser, then
 * kubelet_pods.go convertToAPIContainerStatuses): none when the runtime reports none (containerd
 * 1.6 does not), `{}` when it reports no Linux part, else its uid, gid and supplemental groups
 * (left out when there are none, as the API's JSON omits an empty list).
 */
export function apiContainerUser(user: RuntimeContainerUser | undefined): ContainerUser | undefined {
  if (!user) return undefined;
  if (!user.linux) return {};
  const { uid, gid, supplementalGroups } = user.linux;
  return { linux: { uid, gid, ...(supplementalGroups.length ? { supplementalGroups: [...supplementalGroups] } : {}) } };
}

/** Whether a non-sidecar init container runs again: a failed one as its own rules and policy, else the pod's, say (ShouldContainerBeRestarted). */
function initShouldRestart(pod: Pod, container: Container, status: RuntimeContainerStatus): boolean {
  if (status.state !== 'CONTAINER_EXITED') return true;
  return status.exitCode !== 0 && containerShouldRestart(container, pod, status.exitCode);
}

function regularContainerStartedInCurrentSandbox(pod: Pod, runtime: RuntimePodStatus): boolean {
  const sandboxId = runtime.sandboxes[0]?.id;
  if (!sandboxId) return false;
  const names = new Set(pod.spec.containers.map((c) => c.name));
  return runtime.containers.some((c) => c.sandboxId === sandboxId && names.has(c.name) && c.startedAt > 0);
}

const hasLastTermination = (s: ContainerStatus) => s.lastState.terminated !== undefined;

/** The pod's phase from its containers (pkg/kubelet/kubelet_pods.go getPhase). */
export function computePhase(
  pod: Pod,
  initStatuses: ContainerStatus[],
  statuses: ContainerStatus[],
  podIsTerminal: boolean,
  podHasInitialized: boolean,
): PodPhase {
  let pendingInit = 0;
  let failedInitNotRestartable = 0;
  let pendingSidecar = 0;
  let unknown = 0;
  let running = 0;
  let waiting = 0;
  let stopped = 0;
  let stoppedNotRestartable = 0;
  let succeeded = 0;
  const inits = pod.spec.initContainers ?? [];
  for (const container of inits) {
    const s = initStatuses.find((x) => x.name === container.name);
    if (isSidecar(container)) {
      if (!s) unknown++;
      else if (s.state.running) {
        running++;
        if (!s.started) pendingSidecar++;
      } else if (s.state.terminated || (s.state.waiting && hasLastTermination(s))) {
        // A sidecar that stopped counts neither way: it will be restarted.
      } else if (s.state.waiting) {
        pendingSidecar++;
        waiting++;
      } else {
        pendingSidecar++;
        unknown++;
      }
      continue;
    }
    if (!s || s.state.running) pendingInit++;
    else if (s.state.terminated || s.state.waiting) {
      // With ContainerRestartRules a failed init container fails the pod only when its own rules
      // and policy, else the pod's, say it does not run again.
      const last = s.state.terminated ?? s.lastState.terminated;
      if (!last) pendingInit++;
      else if (last.exitCode !== 0 && !containerShouldRestart(container, pod, last.exitCode)) failedInitNotRestartable++;
    }
  }
  for (const container of pod.spec.containers) {
    const s = statuses.find((x) => x.name === container.name);
    if (!s) unknown++;
    else if (s.state.running) running++;
    else if (s.state.terminated) {
      stopped++;
      if (!containerShouldRestart(container, pod, s.state.terminated.exitCode)) stoppedNotRestartable++;
      if (s.state.terminated.exitCode === 0) succeeded++;
    } else if (s.state.waiting) {
      const last = s.lastState.terminated;
      if (last) {
        stopped++;
        if (!containerShouldRestart(container, pod, last.exitCode)) stoppedNotRestartable++;
      } else waiting++;
    } else unknown++;
  }
  if (failedInitNotRestartable > 0) return 'Failed';
  if (pendingInit > 0 || (pendingSidecar > 0 && !podHasInitialized) || waiting > 0) return 'Pending';
  if (running > 0 && unknown === 0) return 'Running';
  if (running === 0 && stopped > 0 && unknown === 0) {
    // Static pods never get a terminal phase from podIsTerminal (kubelet TODO #116484).
    if (podIsTerminal && !isStaticPod(pod)) return stopped === succeeded ? 'Succeeded' : 'Failed';
    // With ContainerRestartRules (on since v1.35) each container's own answer counts: one that
    // will run again keeps the pod Running.
    if (stopped !== stoppedNotRestartable) return 'Running';
    return stopped === succeeded ? 'Succeeded' : 'Failed';
  }
  return 'Pending';
}

function conditions(
  input: StatusInput,
  phase: PodPhase,
  initStatuses: ContainerStatus[],
  statuses: ContainerStatus[],
): PodCondition[] {
  const { pod, runtime } = input;
  const sandboxReady = runtime.sandboxes.length > 0 && !sandboxChange(pod, runtime).create;
  const containersReady = containersReadyCondition(pod, phase, initStatuses, statuses);
  // The resize conditions come first, as the kubelet adds them before generating the others; without a generation they carry none.
  const resize = (input.resizeConditions ?? []).map((c) => {
    if (pod.metadata.generation) return { ...c };
    const { observedGeneration: _, ...rest } = c;
    return rest;
  });
  const list = ([
    { type: 'PodReadyToStartContainers', status: sandboxReady ? 'True' : 'False' },
    initializedCondition(pod, phase, initStatuses, statuses),
    readyCondition(pod, containersReady),
    containersReady,
    { type: 'PodScheduled', status: 'True' },
  ] satisfies PodCondition[]).map((c) => withGeneration(pod, c));
  const previous = input.previous?.conditions ?? [];
  const now = toTime(input.nowMs);
  for (const condition of list) {
    const before = previous.find((p) => p.type === condition.type);
    condition.lastProbeTime = null;
    condition.lastTransitionTime =
      before && before.status === condition.status ? before.lastTransitionTime ?? now : now;
  }
  // DisruptionTarget says why the pod is going (an eviction); once set it stays (the kubelet keeps it through later syncs).
  const kept = previous.find((p) => p.type === 'DisruptionTarget');
  const disruption: PodCondition | undefined = input.killStatus?.disruptionReason
    ? withGeneration(pod, { type: 'DisruptionTarget', status: 'True', reason: input.killStatus.disruptionReason, message: input.killStatus.message, lastProbeTime: null, lastTransitionTime: kept?.lastTransitionTime ?? now })
    : kept;
  if (disruption) list.push(disruption);
  return [...resize, ...list];
}

/**
 * The status with one container's readiness changed, and ContainersReady / Ready recomputed: the
 * kubelet's SetContainerReadiness. The probe manager applies it as soon as a readiness result
 * changes, so `Ready` follows probes even while the pod actor is busy terminating.
 */
export function withContainerReadiness(pod: Pod, status: PodStatus, containerName: string, ready: boolean, nowMs: number): PodStatus {
  const set = (list: ContainerStatus[] | undefined) =>
    list?.map((c) => (c.name === containerName && c.state.running && c.started !== false ? { ...c, ready } : c));
  const containerStatuses = set(status.containerStatuses) ?? [];
  const initContainerStatuses = set(status.initContainerStatuses);
  const computed = containersReadyCondition(pod, status.phase ?? 'Pending', initContainerStatuses ?? [], containerStatuses);
  const now = toTime(nowMs);
  const podReady = readyCondition(pod, computed);
  const conditions = (status.conditions ?? []).map((c) => {
    if (c.type !== 'ContainersReady' && c.type !== 'Ready') return c;
    const next: PodCondition = withGeneration(pod, { ...(c.type === 'Ready' ? podReady : computed), lastProbeTime: null });
    next.lastTransitionTime = c.status === next.status ? (c.lastTransitionTime ?? now) : now;
    return next;
  });
  const next: PodStatus = { ...status, containerStatuses, conditions };
  if (initContainerStatuses) next.initContainerStatuses = initContainerStatuses;
  return next;
}

/**
 * Ready: ContainersReady, and then every `spec.readinessGates` condition True in the pod's API
 * status (set by controllers) — pkg/kubelet/status/generate.go GeneratePodReadyCondition.
 */
function readyCondition(pod: Pod, containersReady: PodCondition): PodCondition {
  if (containersReady.status !== 'True') return { ...containersReady, type: 'Ready' };
  const gates = Array.isArray(pod.spec.readinessGates) ? (pod.spec.readinessGates as { conditionType?: string }[]) : [];
  const known = pod.status?.conditions ?? [];
  const unready: string[] = [];
  for (const gate of gates) {
    const condition = known.find((c) => c.type === gate.conditionType);
    if (!condition) unready.push(`corresponding condition of pod readiness gate "${gate.conditionType}" does not exist.`);
    else if (condition.status !== 'True') unready.push(`the status of pod readiness gate "${gate.conditionType}" is not "True", but ${condition.status}`);
  }
  if (unready.length === 0) return { type: 'Ready', status: 'True' };
  return { type: 'Ready', status: 'False', reason: 'ReadinessGatesNotReady', message: unready.join(', ') };
}

function containersReadyCondition(
  pod: Pod,
  phase: PodPhase,
  initStatuses: ContainerStatus[],
  statuses: ContainerStatus[],
): PodCondition {
  const type = 'ContainersReady';
  if (phase === 'Succeeded') return { type, status: 'False', reason: 'PodCompleted' };
  if (phase === 'Failed') return { type, status: 'False', reason: 'PodFailed' };
  const unknown: string[] = [];
  const unready: string[] = [];
  const check = (container: Container, list: ContainerStatus[]) => {
    const s = list.find((x) => x.name === container.name);
    if (!s) unknown.push(container.name);
    else if (!s.ready) unready.push(container.name);
  };
  for (const c of pod.spec.initContainers ?? []) if (isSidecar(c)) check(c, initStatuses);
  for (const c of pod.spec.containers) check(c, statuses);
  if (unknown.length === 0 && unready.length === 0) return { type, status: 'True' };
  const parts: string[] = [];
  if (unknown.length) parts.push(`containers with unknown status: [${unknown.join(' ')}]`);
  if (unready.length) parts.push(`containers with unready status: [${unready.join(' ')}]`);
  return { type, status: 'False', reason: 'ContainersNotReady', message: parts.join(', ') };
}

function initializedCondition(
  pod: Pod,
  phase: PodPhase,
  initStatuses: ContainerStatus[],
  statuses: ContainerStatus[],
): PodCondition {
  const type = 'Initialized';
  const inits = pod.spec.initContainers ?? [];
  // A regular container that ever ran (running or terminated) means the pod initialized once.
  const anyRegularStarted = statuses.some((s) => s.state.running !== undefined || s.state.terminated !== undefined);
  // A pod that completed is initialized with reason PodCompleted, init containers or not (generate.go GeneratePodInitializedCondition).
  if (phase === 'Succeeded') return { type, status: 'True', reason: 'PodCompleted' };
  if (inits.length === 0 || anyRegularStarted) return { type, status: 'True' };
  const pending = inits
    .filter((c) => {
      const s = initStatuses.find((x) => x.name === c.name);
      return !s || (isSidecar(c) ? !s.started : !s.ready);
    })
    .map((c) => c.name);
  if (pending.length === 0) return { type, status: 'True' };
  return {
    type,
    status: 'False',
    reason: 'ContainersNotInitialized',
    message: `containers with incomplete status: [${pending.join(' ')}]`,
  };
}
