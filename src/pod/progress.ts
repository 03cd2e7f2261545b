/**
 * Where a syncing pod stands, derived from its spec and the runtime's view of it: no sandbox yet,
 * working through init container i, or running its regular containers. The pod machine's
 * `syncing.progress` region follows this value, so the chart always shows what the runtime
 * reported and never a second record of it.
 */
import { type Pod, isSidecar } from '../api/types.ts';
import { type RuntimePodStatus, newestContainer } from '../api/runtimeView.ts';
import { sandboxChange } from '../kuberuntime/computePodActions.ts';

export type InitStep = 'starting' | 'running' | 'failed';

export type PodProgress =
  | { stage: 'sandbox' }
  | { stage: 'initializing'; index: number; name: string; step: InitStep }
  | { stage: 'running' };

export function podProgress(pod: Pod, status: RuntimePodStatus): PodProgress {
  if (sandboxChange(pod, status).create) return { stage: 'sandbox' };
  const started = pod.spec.containers.some((c) => {
    const s = newestContainer(status, c.name);
    return s !== undefined && s.sandboxId === status.sandboxes[0]?.id;
  });
  if (started) return { stage: 'running' };
  for (const [index, init] of (pod.spec.initContainers ?? []).entries()) {
    const s = newestContainer(status, init.name);
    const name = init.name;
    if (!s || s.state === 'CONTAINER_CREATED') return { stage: 'initializing', index, name, step: 'starting' };
    if (isSidecar(init)) {
      if (s.state !== 'CONTAINER_RUNNING') return { stage: 'initializing', index, name, step: 'failed' };
      continue;
    }
    if (s.state === 'CONTAINER_RUNNING') return { stage: 'initializing', index, name, step: 'running' };
    if (s.state !== 'CONTAINER_EXITED' || s.exitCode !== 0) return { stage: 'initializing', index, name, step: 'failed' };
  }
  // Every init container is done; regular containers are about to start.
  return { stage: 'running' };
}
