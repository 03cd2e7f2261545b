/**
 * Builders for the decision and status tests: a base pod, a base runtime view of it (a ready sandbox with
 * every regular container running under an unchanged hash), and small helpers to mutate them.
 */
import type { Container, ContainerStatus, Pod } from '../../src/api/types.ts';
import { containerHash } from '../../src/kuberuntime/hash.ts';
import type { RuntimeContainerStatus, RuntimePodStatus, SandboxSummary } from '../../src/api/runtimeView.ts';
import { NamespaceMode } from '../../src/runtime/types.ts';

export const T0 = Date.parse('2026-01-01T00:00:00Z');
export const IMAGE = 'busybox:1';
export const SANDBOX_ID = 'sandbox-1';
export const POD_IP = '10.88.0.7';

export function ctr(name: string, extra: Partial<Container> = {}): Container {
  return { name, image: IMAGE, ...extra };
}

export function sidecar(name: string, extra: Partial<Container> = {}): Container {
  return ctr(name, { restartPolicy: 'Always', ...extra });
}

/** Three regular containers, policy Always, no init containers. */
export function basePod(spec: Partial<Pod['spec']> = {}): Pod {
  return {
    metadata: { name: 'web', namespace: 'default', uid: 'uid-web' },
    spec: {
      containers: [ctr('foo1'), ctr('foo2'), ctr('foo3')],
      restartPolicy: 'Always',
      ...spec,
    },
  };
}

export function sandbox(extra: Partial<SandboxSummary> = {}): SandboxSummary {
  return {
    id: SANDBOX_ID,
    state: 'SANDBOX_READY',
    attempt: 0,
    createdAt: T0,
    ip: POD_IP,
    networkMode: NamespaceMode.POD,
    ...extra,
  };
}

let seq = 0;

/** A runtime container for `container`, running in the base sandbox with the spec's hash. */
export function rc(container: Container, extra: Partial<RuntimeContainerStatus> = {}): RuntimeContainerStatus {
  seq++;
  return {
    id: `${container.name}-id`,
    name: container.name,
    sandboxId: SANDBOX_ID,
    state: 'CONTAINER_RUNNING',
    createdAt: T0 + 1000 + seq,
    startedAt: T0 + 2000,
    finishedAt: 0,
    exitCode: 0,
    reason: '',
    message: '',
    image: container.image ?? '',
    imageRef: `sha256:${container.name}`,
    hash: containerHash(container),
    restartCount: 0,
    ...extra,
  };
}

export function exited(container: Container, exitCode: number, extra: Partial<RuntimeContainerStatus> = {}): RuntimeContainerStatus {
  return rc(container, {
    state: 'CONTAINER_EXITED',
    exitCode,
    reason: exitCode === 0 ? 'Completed' : 'Error',
    finishedAt: T0 + 5000,
    ...extra,
  });
}

/** A ready sandbox and every regular container of `pod` running. */
export function baseRuntime(pod: Pod): RuntimePodStatus {
  return {
    uid: pod.metadata.uid,
    sandboxes: [sandbox()],
    containers: pod.spec.containers.map((c) => rc(c)),
  };
}

/** Replaces (or adds, newest first) the runtime status of the container named `name`. */
export function setContainer(status: RuntimePodStatus, name: string, next: RuntimeContainerStatus | undefined): void {
  const index = status.containers.findIndex((c) => c.name === name);
  if (index >= 0) {
    if (next) status.containers[index] = next;
    else status.containers.splice(index, 1);
  } else if (next) {
    status.containers.unshift(next);
  }
}

export function specContainer(pod: Pod, name: string): Container {
  const found = [...(pod.spec.initContainers ?? []), ...pod.spec.containers].find((c) => c.name === name);
  if (!found) throw new Error(`no container ${name}`);
  return found;
}

// API container statuses, for getPhase.
export function apiRunning(name: string, started = true): ContainerStatus {
  return { name, state: { running: { startedAt: '2026-01-01T00:00:02Z' } }, lastState: {}, ready: started, restartCount: 0, image: IMAGE, imageID: '', started };
}

export function apiTerminated(name: string, exitCode: number): ContainerStatus {
  return { name, state: { terminated: { exitCode } }, lastState: {}, ready: exitCode === 0, restartCount: 0, image: IMAGE, imageID: '', started: false };
}

export function apiWaiting(name: string, lastExitCode?: number): ContainerStatus {
  return {
    name,
    state: { waiting: { reason: lastExitCode === undefined ? 'ContainerCreating' : 'CrashLoopBackOff' } },
    lastState: lastExitCode === undefined ? {} : { terminated: { exitCode: lastExitCode } },
    ready: false,
    restartCount: lastExitCode === undefined ? 0 : 1,
    image: IMAGE,
    imageID: '',
    started: false,
  };
}
