/** A TestRuntime for PLEG tests: pods made straight through CRI calls, and a stream that can lose events. */
import { Label } from '../../src/kuberuntime/labels.ts';
import { TestRuntime } from './testRuntime.ts';
import type { CallOptions, ContainerEvent, ContainerEventType } from '../../src/runtime/types.ts';
import { containerConfig, podSandboxConfig } from '../runtime/support.ts';

/** A TestRuntime whose event stream drops the events a test names, as a lossy stream would. */
export class LossyRuntime extends TestRuntime {
  private readonly dropped = new Set<string>();

  /** The stream will not deliver `type` for `containerId`. */
  drop(type: ContainerEventType, containerId: string): void {
    this.dropped.add(`${type} ${containerId}`);
  }

  override containerEvents(opts?: CallOptions): AsyncIterable<ContainerEvent> {
    const inner = super.containerEvents(opts);
    const dropped = this.dropped;
    return (async function* () {
      for await (const event of inner) if (!dropped.has(`${event.type} ${event.containerId}`)) yield event;
    })();
  }
}

/** Runs a sandbox for pod `uid-<name>` with one started container `main`; returns their ids. */
export async function startPod(runtime: TestRuntime, name: string): Promise<{ uid: string; sandboxId: string; containerId: string }> {
  const uid = `uid-${name}`;
  const labels = { [Label.podUid]: uid };
  const sandboxConfig = podSandboxConfig(name, { labels });
  const sandboxId = await runtime.runPodSandbox(sandboxConfig);
  const containerId = await runtime.createContainer(sandboxId, containerConfig('main', { labels }), sandboxConfig);
  await runtime.startContainer(containerId);
  return { uid, sandboxId, containerId };
}

/** `TYPE podUid/containerId` for each PLEG container event among `reports`. */
export function plegLines(reports: readonly { type: string }[]): string[] {
  return reports.flatMap((report) =>
    'podUid' in report && 'containerId' in report && report.type.startsWith('PLEG.CONTAINER_')
      ? [`${report.type} ${String(report.podUid)}/${String(report.containerId)}`]
      : [],
  );
}
