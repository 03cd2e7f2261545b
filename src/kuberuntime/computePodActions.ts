/**
 * What the runtime must do to bring a pod to its spec: the kubelet's computePodActions, as a pure
 * function. Data in (the pod, the runtime's view of it, probe results), a plan out; the sync actor
 * executes the plan. Nothing here reads a clock, a cache or a probe manager.
 *
 * The rules, in order (pkg/kubelet/kuberuntime/kuberuntime_manager.go computePodActions):
 *  A. a missing or broken sandbox means kill everything and start over (with the `Never` and
 *     "nothing left to run" exceptions); no ephemeral container starts in a new sandbox;
 *  B. init containers run one at a time, in order; sidecars (init containers with
 *     `restartPolicy: Always`) are started in order and kept running; a failed init container
 *     runs again as its own restart rules and policy say, else as the pod's, or fails the pod;
 *  C. regular containers start only once initialization is done; exited ones restart per the pod's
 *     restart policy, running ones restart when their hash changes or a liveness/startup probe fails;
 *  D. a pod with nothing left to keep and nothing to start is killed (its sandbox stopped);
 *     ephemeral containers never keep a pod alive.
 *  E. decided before B (the kubelet's order): ephemeral containers (`kubectl debug`) that the
 *     runtime has no instance of start, even while the pod initializes, and are never restarted.
 *     The executor starts them first and starts nothing in a sandbox a `killPod` plan stops.
 */
import { isDeleting, isSidecar, restartPolicyOf, type ProbeResult, type Container, type Pod } from '../api/types.ts';
import { containerShouldRestart, restartsAfterKill, runsUntilSuccess } from '../api/containerRestart.ts';
import { containerHash } from './hash.ts';
import { type RuntimeContainerStatus, type RuntimePodStatus, newestContainer } from '../api/runtimeView.ts';
import { NamespaceMode } from '../runtime/types.ts';

/** Why a container is killed; `Resize`: its resize policy restarts it (podResize.ts). */
export type KillReason = 'Unknown' | 'SpecChanged' | 'LivenessProbe' | 'StartupProbe' | 'SidecarRestart' | 'Resize';

interface ContainerToKill {
  id: string;
  name: string;
  reason: KillReason;
  message: string;
}

export interface PodActions {
  killPod: boolean;
  createSandbox: boolean;
  /** The sandbox to run containers in (empty when one is about to be created). */
  sandboxId: string;
  /** The attempt number of the sandbox to create. */
  attempt: number;
  /** Indices into `spec.initContainers`, in start order. */
  initContainersToStart: number[];
  /** Indices into `spec.containers`. */
  containersToStart: number[];
  /** Indices into `spec.ephemeralContainers`: started first, each once in the pod's life. */
  ephemeralContainersToStart: number[];
  containersToKill: ContainerToKill[];
}

/** Probe results by container ID; a container with no entry has no result yet. */
export interface ProbeResults {
  liveness: Readonly<Record<string, ProbeResult>>;
  startup: Readonly<Record<string, ProbeResult>>;
}

export const noProbeResults: ProbeResults = { liveness: {}, startup: {} };

function isRunning(status: RuntimeContainerStatus | undefined): boolean {
  return status?.state === 'CONTAINER_RUNNING';
}

/** An init container that did not succeed: non-zero exit, OOM, or lost to an unknown state. */
export function isInitContainerFailed(status: RuntimeContainerStatus): boolean {
  if (status.state === 'CONTAINER_EXITED') return status.exitCode !== 0 || status.reason === 'OOMKilled';
  return status.state === 'CONTAINER_UNKNOWN';
}

interface SandboxChange {
  create: boolean;
  attempt: number;
  sandboxId: string;
}

/** Whether the pod needs a new sandbox (pkg/kubelet/kuberuntime/kuberuntime_manager.go podSandboxChanged). */
export function sandboxChange(pod: Pod, status: RuntimePodStatus): SandboxChange {
  const newest = status.sandboxes[0];
  if (!newest) return { create: true, attempt: 0, sandboxId: '' };
  const next = newest.attempt + 1;
  const ready = status.sandboxes.filter((s) => s.state === 'SANDBOX_READY').length;
  if (ready > 1 || newest.state !== 'SANDBOX_READY') {
    return { create: true, attempt: next, sandboxId: newest.id };
  }
  const wantsHostNetwork = pod.spec.hostNetwork === true;
  if (newest.networkMode !== undefined && (newest.networkMode === NamespaceMode.NODE) !== wantsHostNetwork) {
    return { create: true, attempt: next, sandboxId: '' };
  }
  if (!wantsHostNetwork && newest.networkMode !== undefined && newest.ip === '') {
    return { create: true, attempt: next, sandboxId: newest.id };
  }
  return { create: false, attempt: newest.attempt, sandboxId: newest.id };
}

/**
 * Whether an absent or stopped container should run again (container/helpers.go
 * ShouldContainerBeRestarted): an exited one as its restart rules and policies say
 * (containerShouldRestart).
 */
export function shouldRestart(pod: Pod, container: Container, status: RuntimeContainerStatus | undefined): boolean {
  if (isDeleting(pod)) return false;
  if (!status) return true;
  if (status.state === 'CONTAINER_RUNNING') return false;
  if (status.state === 'CONTAINER_UNKNOWN' || status.state === 'CONTAINER_CREATED') return true;
  return containerShouldRestart(container, pod, status.exitCode);
}

function kill(status: RuntimeContainerStatus, reason: KillReason, message: string): ContainerToKill {
  return { id: status.id, name: status.name, reason, message };
}

export function computePodActions(
  pod: Pod,
  status: RuntimePodStatus,
  probes: ProbeResults = noProbeResults,
): PodActions {
  const sandbox = sandboxChange(pod, status);
  const actions: PodActions = {
    killPod: sandbox.create,
    createSandbox: sandbox.create,
    sandboxId: sandbox.sandboxId,
    attempt: sandbox.attempt,
    initContainersToStart: [],
    containersToStart: [],
    ephemeralContainersToStart: [],
    containersToKill: [],
  };
  if (sandbox.create) return planFreshSandbox(pod, status, actions);

  actions.ephemeralContainersToStart = ephemeralContainersToStart(pod, status);
  const initialized = planInitContainers(pod, status, probes, actions);
  if (actions.killPod || !initialized) return actions;

  let keep = 0;
  for (const [index, container] of pod.spec.containers.entries()) {
    const current = newestContainer(status, container.name);
    if (!isRunning(current)) {
      if (shouldRestart(pod, container, current)) {
        if (current?.state === 'CONTAINER_UNKNOWN') {
          actions.containersToKill.push(kill(current, 'Unknown', `Container ${container.name} is in unknown state, will be killed and restarted`));
        }
        actions.containersToStart.push(index);
      }
      continue;
    }
    const running = current as RuntimeContainerStatus;
    const restartAfterKill = restartsAfterKill(container, pod);
    if (running.hash !== containerHash(container)) {
      actions.containersToKill.push(kill(running, 'SpecChanged', `Container ${container.name} definition changed, will be restarted`));
      actions.containersToStart.push(index);
    } else if (probes.liveness[running.id] === 'Failure') {
      actions.containersToKill.push(kill(running, 'LivenessProbe', `Container ${container.name} failed liveness probe, will be restarted`));
      if (restartAfterKill) actions.containersToStart.push(index);
    } else if (probes.startup[running.id] === 'Failure') {
      actions.containersToKill.push(kill(running, 'StartupProbe', `Container ${container.name} failed startup probe, will be restarted`));
      if (restartAfterKill) actions.containersToStart.push(index);
    } else {
      keep++;
    }
  }
  if (keep === 0 && actions.containersToStart.length === 0) {
    // Sidecars never keep a pod alive on their own.
    actions.killPod = true;
    actions.initContainersToStart = [];
  }
  return actions;
}

/**
 * Rule E: every ephemeral container the runtime has no instance of, in spec order. One that ran
 * and exited has an instance and is never started again; one whose start failed before the runtime
 * created it is tried again at the next sync (kuberuntime_manager.go computePodActions,
 * "Ephemeral Containers are never restarted").
 */
function ephemeralContainersToStart(pod: Pod, status: RuntimePodStatus): number[] {
  const indices: number[] = [];
  for (const [index, container] of (pod.spec.ephemeralContainers ?? []).entries()) {
    if (!newestContainer(status, container.name)) indices.push(index);
  }
  return indices;
}

/** Rule A: the sandbox is (re)created, so everything starts from the beginning. */
function planFreshSandbox(pod: Pod, status: RuntimePodStatus, actions: PodActions): PodActions {
  const policy = restartPolicyOf(pod);
  if (policy === 'Never' && actions.attempt !== 0 && status.containers.length > 0) {
    // A `Never` pod whose sandbox died does not get a second one: it is done.
    actions.createSandbox = false;
    return actions;
  }
  const candidates: number[] = [];
  for (const [index, container] of pod.spec.containers.entries()) {
    const current = newestContainer(status, container.name);
    if (runsUntilSuccess(container, pod) && current?.state === 'CONTAINER_EXITED' && current.exitCode === 0) continue;
    candidates.push(index);
  }
  const anyRegularStatus = pod.spec.containers.some((c) => newestContainer(status, c.name) !== undefined);
  if (candidates.length === 0 && anyRegularStatus) {
    actions.createSandbox = false;
    return actions;
  }
  if ((pod.spec.initContainers ?? []).length > 0) {
    actions.initContainersToStart = [0];
    return actions;
  }
  actions.containersToStart = candidates;
  return actions;
}

/**
 * Rule B: walks the init containers from last to first, the way the kubelet does, so that the
 * newest init container with a status decides what comes next. Returns whether initialization is
 * complete.
 */
function planInitContainers(
  pod: Pod,
  status: RuntimePodStatus,
  probes: ProbeResults,
  actions: PodActions,
): boolean {
  const inits = pod.spec.initContainers ?? [];
  if (inits.length === 0) return true;
  // A created or running regular container means initialization happened at some point, even if
  // the init containers have since been removed. Exited ones do not count: after a node reboot
  // they belong to a dead sandbox.
  let initialized = pod.spec.containers.some((c) => {
    const s = newestContainer(status, c.name);
    return s?.state === 'CONTAINER_CREATED' || s?.state === 'CONTAINER_RUNNING';
  });
  let previouslyInitialized = initialized;
  const toStart: number[] = [];
  const last = inits.length - 1;

  for (let i = last; i >= 0; i--) {
    const container = inits[i] as Container;
    const sidecar = isSidecar(container);
    const current = newestContainer(status, container.name);
    if (!current) {
      if (previouslyInitialized && sidecar) toStart.push(i);
      continue;
    }
    if (previouslyInitialized && !sidecar) continue;

    switch (current.state) {
      case 'CONTAINER_CREATED':
        // Create and start happen in one step; a container left in Created failed to start.
        toStart.push(i);
        break;
      case 'CONTAINER_RUNNING': {
        if (!sidecar) break; // wait for it to finish
        const startup = probes.startup[current.id];
        if (container.startupProbe && startup !== 'Success') {
          if (startup === 'Failure') {
            actions.containersToKill.push(kill(current, 'StartupProbe', `Init container ${container.name} failed startup probe`));
            toStart.push(i);
          }
          break;
        }
        if (i === last) initialized = true;
        else if (!previouslyInitialized) toStart.push(i + 1);
        if (current.hash !== containerHash(container)) {
          actions.containersToKill.push(kill(current, 'SpecChanged', `Init container ${container.name} definition changed`));
          toStart.push(i);
        } else if (probes.liveness[current.id] === 'Failure') {
          actions.containersToKill.push(kill(current, 'LivenessProbe', `Init container ${container.name} failed liveness probe`));
          toStart.push(i);
        }
        break;
      }
      case 'CONTAINER_EXITED':
        if (sidecar) {
          toStart.push(i);
        } else if (isInitContainerFailed(current)) {
          // Its own policy and rules, else the pod's (kuberuntime_container.go
          // computeInitContainerActions, ShouldContainerBeRestarted with ContainerRestartRules).
          if (!shouldRestart(pod, container, current)) return failInit(actions);
          toStart.push(i);
        } else if (i === last) {
          initialized = true;
        } else {
          toStart.push(i + 1);
        }
        break;
      case 'CONTAINER_UNKNOWN':
        // No exit code to match rules against: its own policy, else the pod's, decides
        // (computeInitContainerActions, the unknown state).
        if (!sidecar && !restartsAfterKill(container, pod)) return failInit(actions);
        actions.containersToKill.push(kill(current, 'Unknown', `Init container ${container.name} is in unknown state`));
        toStart.push(i);
        break;
    }
    previouslyInitialized = true;
  }
  if (!previouslyInitialized) toStart.push(0);
  actions.initContainersToStart = toStart.reverse();
  return initialized;
}

function failInit(actions: PodActions): false {
  actions.killPod = true;
  actions.initContainersToStart = [];
  return false;
}

/** True when the plan asks the runtime to do nothing. */
export function isEmptyPlan(actions: PodActions): boolean {
  return (
    !actions.killPod &&
    !actions.createSandbox &&
    actions.initContainersToStart.length === 0 &&
    actions.containersToStart.length === 0 &&
    actions.ephemeralContainersToStart.length === 0 &&
    actions.containersToKill.length === 0
  );
}
