/**
 * The order in which a pod with sidecars is stopped (pkg/kubelet/kuberuntime/
 * kuberuntime_termination_order.go newTerminationOrdering, waitForTurn). Every running container is killed at once, and each kill
 * runs its own preStop hook at once; then, before its StopContainer:
 *   - a regular container waits for nothing;
 *   - a sidecar (init container with `restartPolicy: Always`) waits until every regular container
 *     has been stopped, and until the sidecar declared AFTER it has been stopped, so sidecars stop
 *     in reverse declaration order;
 *   - every wait is bounded by what is left of that container's grace period.
 * A container that is not running counts as stopped from the start, so nothing waits for it. A
 * container whose stop fails is never marked stopped: whoever waits for it waits out its grace.
 */
import { type Pod, isSidecar } from '../api/types.ts';
import type { Sleep } from '../clock.ts';
import { settlesWithin } from './deadline.ts';

interface Gate {
  opened: Promise<void>;
  open(): void;
}

function gate(): Gate {
  let open = (): void => {};
  const opened = new Promise<void>((resolve) => {
    open = resolve;
  });
  return { opened, open };
}

export class TerminationOrdering {
  /** Opens when the named container has been stopped. */
  private readonly stopped = new Map<string, Gate>();
  /** What the named container must wait for before it is stopped. */
  private readonly prerequisites = new Map<string, Promise<void>[]>();

  /** An ordering for the pod, or undefined when it has no sidecar (then nothing ever waits). */
  static forPod(pod: Pod | undefined, runningNames: readonly string[]): TerminationOrdering | undefined {
    if (!pod || !(pod.spec.initContainers ?? []).some(isSidecar)) return undefined;
    return new TerminationOrdering(pod, new Set(runningNames));
  }

  private constructor(pod: Pod, running: ReadonlySet<string>) {
    const track = (name: string): Gate => {
      const g = gate();
      if (!running.has(name)) g.open();
      this.stopped.set(name, g);
      return g;
    };
    const regular = pod.spec.containers.map((c) => track(c.name).opened);
    let later: Promise<void> | undefined;
    for (const init of [...(pod.spec.initContainers ?? [])].reverse()) {
      const stopped = track(init.name);
      if (!isSidecar(init)) continue;
      this.prerequisites.set(init.name, later ? [...regular, later] : regular);
      later = stopped.opened;
    }
  }

  /**
   * Waits for the container's turn, at most `graceSeconds` (no wait at all when it is 0); returns
   * the seconds waited. Rejects if the signal fires.
   */
  async waitForTurn(name: string, graceSeconds: number, clock: { now(): number; sleep: Sleep }, signal: AbortSignal): Promise<number> {
    const prerequisites = this.prerequisites.get(name);
    if (graceSeconds <= 0 || !prerequisites) return 0;
    const start = clock.now();
    await settlesWithin(Promise.all(prerequisites), graceSeconds * 1000, clock.sleep, signal);
    return (clock.now() - start) / 1000;
  }

  /** The named container has been stopped: whoever waits for it may go. */
  containerTerminated(name: string): void {
    this.stopped.get(name)?.open();
  }
}
