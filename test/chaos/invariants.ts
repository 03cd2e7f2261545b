/**
 * What must hold whatever the faults (issue 13): checked on every observation of the agent's
 * `/pods` and of the runtime (through CRI), and once more when the episode has converged.
 *
 * Always:
 *   - a restart count never decreases (per pod UID and container);
 *   - a pod's phase never leaves Succeeded or Failed (a pod reported without a phase is not known yet);
 *   - the runtime never holds two containers of one pod, name and attempt (one start per
 *     restart), nor two running containers of one pod and name.
 * Once converged (cleanup has run):
 *   - no container runs and no sandbox is ready for a pod the agent does not list;
 *   - every listed pod meant to run has each of its containers running;
 *   - the agent has exactly one pod actor per listed pod.
 */
import type { Pod } from '../../src/api/types.ts';
import type { Container, PodSandbox } from '../../src/runtime/types.ts';

const POD_UID = 'io.kubernetes.pod.uid';
const TERMINAL = new Set(['Succeeded', 'Failed']);

export interface Violation {
  invariant: string;
  detail: string;
}

export interface RuntimeView {
  containers: Container[];
  sandboxes: PodSandbox[];
}

/** Watches the agent's pods over time: restart counts and terminal phases. */
export class PodHistory {
  private readonly restarts = new Map<string, number>();
  private readonly terminal = new Map<string, string>();

  observe(pods: readonly Pod[]): Violation[] {
    const violations: Violation[] = [];
    for (const pod of pods) {
      const uid = pod.metadata.uid;
      const phase = pod.status?.phase ?? '';
      const was = this.terminal.get(uid);
      // A pod reported without a phase is not known yet (the agent has not read the runtime since it started).
      if (was && phase && phase !== was) violations.push({ invariant: 'terminal phase kept', detail: `pod ${pod.metadata.name} (${uid}) went from ${was} to ${phase || 'no phase'}` });
      if (TERMINAL.has(phase) && !was) this.terminal.set(uid, phase);
      for (const status of [...(pod.status?.initContainerStatuses ?? []), ...(pod.status?.containerStatuses ?? [])]) {
        const key = `${uid}/${status.name}`;
        const before = this.restarts.get(key) ?? 0;
        if (status.restartCount < before) {
          violations.push({ invariant: 'restart count never decreases', detail: `pod ${pod.metadata.name} (${uid}) container ${status.name}: ${before} → ${status.restartCount}` });
        }
        this.restarts.set(key, Math.max(before, status.restartCount));
      }
    }
    return violations;
  }
}

/** Always true of the runtime: one container per pod, name and attempt; one running per pod and name. */
export function runtimeViolations(runtime: RuntimeView): Violation[] {
  const violations: Violation[] = [];
  const attempts = new Map<string, string[]>();
  const running = new Map<string, string[]>();
  for (const c of runtime.containers) {
    const uid = c.labels[POD_UID] ?? '';
    const attempt = `${uid}/${c.metadata.name}#${c.metadata.attempt}`;
    attempts.set(attempt, [...(attempts.get(attempt) ?? []), c.id]);
    if (c.state === 'CONTAINER_RUNNING') {
      const key = `${uid}/${c.metadata.name}`;
      running.set(key, [...(running.get(key) ?? []), c.id]);
    }
  }
  for (const [key, ids] of attempts) if (ids.length > 1) violations.push({ invariant: 'one container per restart', detail: `${key}: ${ids.map(short).join(', ')}` });
  for (const [key, ids] of running) if (ids.length > 1) violations.push({ invariant: 'one running container per pod and name', detail: `${key}: ${ids.map(short).join(', ')}` });
  return violations;
}

/**
 * Why the node has not converged yet (empty once it has): the runtime against the pods the agent
 * lists, the listed pods against the ones meant to run, and the agent's pod actors. Pods of
 * `lagging` UIDs (gone from config, their termination waiting on something the episode holds)
 * may keep their runtime objects and their actor.
 */
export function notConverged(listed: readonly Pod[], shouldRun: (pod: Pod) => boolean, runtime: RuntimeView, podActors: number, lagging: ReadonlySet<string> = new Set()): string[] {
  const reasons: string[] = [];
  const uids = new Set([...listed.map((p) => p.metadata.uid), ...lagging]);
  for (const c of runtime.containers) {
    if (c.state === 'CONTAINER_RUNNING' && !uids.has(c.labels[POD_UID] ?? '')) reasons.push(`container ${c.metadata.name} (${short(c.id)}) runs for a pod the agent does not list (${c.labels[POD_UID] ?? 'no pod label'})`);
  }
  for (const s of runtime.sandboxes) {
    if (s.state === 'SANDBOX_READY' && !uids.has(s.metadata.uid)) reasons.push(`sandbox ${s.metadata.name} (${short(s.id)}) is ready for a pod the agent does not list`);
  }
  for (const pod of listed) {
    if (!shouldRun(pod)) continue;
    for (const container of pod.spec.containers) {
      const runs = runtime.containers.some((c) => c.labels[POD_UID] === pod.metadata.uid && c.metadata.name === container.name && c.state === 'CONTAINER_RUNNING');
      if (!runs) reasons.push(`pod ${pod.metadata.name}: container ${container.name} is not running`);
    }
  }
  if (podActors < listed.length || podActors > listed.length + lagging.size) reasons.push(`${podActors} pod actors for ${listed.length} listed pods`);
  return reasons;
}

const short = (id: string) => id.slice(0, 12);
