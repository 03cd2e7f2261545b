/**
 * The simulated runtime without gRPC: `RuntimeService` and `ImageService` answered directly by a
 * `SimEngine`, with the errors the gRPC path gives (a `CriError` naming the CRI call, with the
 * engine's status code), for tests that need the runtime's behaviour but not the wire. It is the
 * same engine `sim://` serves, so both paths share one emulation of CRI semantics.
 *
 * A call whose AbortSignal has fired fails with CANCELLED, as a cancelled gRPC call does; a stop or
 * an exec under way goes on in the engine (as in a real runtime) while its caller stops waiting.
 */
import {
  type AttachRequest,
  type CallOptions,
  type Container,
  type ContainerConfig,
  type ContainerEvent,
  type ContainerFilter,
  type ContainerStats,
  type ContainerStatsFilter,
  type ContainerStatus,
  CriError,
  type ExecRequest,
  type ExecResult,
  type ImageFsInfo,
  type ImageInfo,
  type ImageService,
  type LinuxContainerResources,
  type PodSandbox,
  type PodSandboxConfig,
  type PodSandboxFilter,
  type PortForwardRequest,
  type PodSandboxStats,
  type PodSandboxStatsFilter,
  type PodSandboxStatus,
  type RuntimeService,
  type RuntimeStatusInfo,
  type VersionInfo,
} from '../../src/runtime/types.ts';
import type { SimContainerEvent, SimEngine } from '../../src/runtime/sim/engine.ts';
import { SimError } from '../../src/runtime/sim/errors.ts';
import { SimStreaming } from '../../src/runtime/sim/streaming.ts';
import { StreamingRequestError } from '../../src/runtime/streaming/server.ts';

export class InProcessRuntime implements RuntimeService, ImageService {
  constructor(readonly engine: SimEngine) {}

  version(opts?: CallOptions): Promise<VersionInfo> {
    return this.call('Version', opts, () => this.engine.version());
  }
  status(opts?: CallOptions): Promise<RuntimeStatusInfo> {
    return this.call('Status', opts, () => this.engine.status());
  }
  runPodSandbox(config: PodSandboxConfig, opts?: CallOptions): Promise<string> {
    return this.call('RunPodSandbox', opts, () => this.engine.runPodSandbox(config));
  }
  stopPodSandbox(podSandboxId: string, opts?: CallOptions): Promise<void> {
    return this.call('StopPodSandbox', opts, () => this.engine.stopPodSandbox(podSandboxId));
  }
  removePodSandbox(podSandboxId: string, opts?: CallOptions): Promise<void> {
    return this.call('RemovePodSandbox', opts, () => this.engine.removePodSandbox(podSandboxId));
  }
  podSandboxStatus(podSandboxId: string, opts?: CallOptions): Promise<PodSandboxStatus> {
    return this.call('PodSandboxStatus', opts, () => this.engine.podSandboxStatus(podSandboxId));
  }
  listPodSandbox(filter?: PodSandboxFilter, opts?: CallOptions): Promise<PodSandbox[]> {
    return this.call('ListPodSandbox', opts, () => this.engine.listPodSandbox(filter));
  }
  createContainer(podSandboxId: string, config: ContainerConfig, _sandboxConfig: PodSandboxConfig, opts?: CallOptions): Promise<string> {
    return this.call('CreateContainer', opts, () => this.engine.createContainer(podSandboxId, config));
  }
  startContainer(containerId: string, opts?: CallOptions): Promise<void> {
    return this.call('StartContainer', opts, () => this.engine.startContainer(containerId));
  }
  stopContainer(containerId: string, timeoutSeconds: number, opts?: CallOptions): Promise<void> {
    return this.call('StopContainer', opts, () => this.engine.stopContainer(containerId, timeoutSeconds));
  }
  removeContainer(containerId: string, opts?: CallOptions): Promise<void> {
    return this.call('RemoveContainer', opts, () => this.engine.removeContainer(containerId));
  }
  listContainers(filter?: ContainerFilter, opts?: CallOptions): Promise<Container[]> {
    return this.call('ListContainers', opts, () => this.engine.listContainers(filter));
  }
  containerStatus(containerId: string, opts?: CallOptions): Promise<ContainerStatus> {
    return this.call('ContainerStatus', opts, () => this.engine.containerStatus(containerId));
  }
  exec(request: ExecRequest, opts?: CallOptions): Promise<string> {
    return this.call('Exec', opts, () => SimStreaming.of(this.engine).getExec(request));
  }
  attach(request: AttachRequest, opts?: CallOptions): Promise<string> {
    return this.call('Attach', opts, () => SimStreaming.of(this.engine).getAttach(request));
  }
  portForward(request: PortForwardRequest, opts?: CallOptions): Promise<string> {
    return this.call('PortForward', opts, () => SimStreaming.of(this.engine).getPortForward(request));
  }
  updateContainerResources(containerId: string, resources: LinuxContainerResources, opts?: CallOptions): Promise<void> {
    return this.call('UpdateContainerResources', opts, () => this.engine.updateContainerResources(containerId, resources));
  }
  updateRuntimeConfig(podCidr: string, opts?: CallOptions): Promise<void> {
    return this.call('UpdateRuntimeConfig', opts, () => this.engine.updateRuntimeConfig(podCidr));
  }
  reopenContainerLog(containerId: string, opts?: CallOptions): Promise<void> {
    return this.call('ReopenContainerLog', opts, () => this.engine.reopenContainerLog(containerId));
  }
  containerStats(containerId: string, opts?: CallOptions): Promise<ContainerStats> {
    return this.call('ContainerStats', opts, () => this.engine.containerStats(containerId));
  }
  listContainerStats(filter?: ContainerStatsFilter, opts?: CallOptions): Promise<ContainerStats[]> {
    return this.call('ListContainerStats', opts, () => this.engine.listContainerStats(filter));
  }
  podSandboxStats(podSandboxId: string, opts?: CallOptions): Promise<PodSandboxStats> {
    return this.call('PodSandboxStats', opts, () => this.engine.podSandboxStats(podSandboxId));
  }
  listPodSandboxStats(filter?: PodSandboxStatsFilter, opts?: CallOptions): Promise<PodSandboxStats[]> {
    return this.call('ListPodSandboxStats', opts, () => this.engine.listPodSandboxStats(filter));
  }
  execSync(containerId: string, cmd: string[], timeoutSeconds: number, opts?: CallOptions): Promise<ExecResult> {
    return this.call('ExecSync', opts, () => this.engine.execSync(containerId, cmd, timeoutSeconds));
  }

  /** Subscribes at once, as opening the gRPC stream does: events before the first `next()` are kept. */
  containerEvents(opts?: CallOptions): AsyncIterable<ContainerEvent> {
    const signal = opts?.signal;
    const queue: ContainerEvent[] = [];
    let wake: (() => void) | null = null;
    const unsubscribe = this.engine.subscribe((event) => {
      queue.push(containerEventOf(event));
      wake?.();
    });
    const onAbort = () => wake?.();
    signal?.addEventListener('abort', onAbort);
    async function* events(): AsyncGenerator<ContainerEvent> {
      try {
        for (;;) {
          if (signal?.aborted) throw new CriError('GetContainerEvents', 'CANCELLED', 'call cancelled');
          const next = queue.shift();
          if (next) {
            yield next;
            continue;
          }
          await new Promise<void>((resolve) => (wake = resolve));
          wake = null;
        }
      } finally {
        unsubscribe();
        signal?.removeEventListener('abort', onAbort);
      }
    }
    return events();
  }

  async pullImage(image: string, _sandboxConfig?: PodSandboxConfig, opts?: CallOptions): Promise<string> {
    return (await this.call('PullImage', opts, () => this.engine.pullImage(image))).id;
  }
  imageStatus(image: string, opts?: CallOptions): Promise<ImageInfo | null> {
    return this.call('ImageStatus', opts, () => this.engine.imageStatus(image));
  }
  listImages(opts?: CallOptions): Promise<ImageInfo[]> {
    return this.call('ListImages', opts, () => this.engine.listImages());
  }
  removeImage(image: string, opts?: CallOptions): Promise<void> {
    return this.call('RemoveImage', opts, () => this.engine.removeImage(image));
  }
  imageFsInfo(opts?: CallOptions): Promise<ImageFsInfo> {
    return this.call('ImageFsInfo', opts, () => this.engine.imageFsInfo());
  }

  /** Runs an engine call as a CRI call: asynchronously, its errors named, its signal obeyed. */
  private call<T>(rpc: string, opts: CallOptions | undefined, run: () => T | Promise<T>): Promise<T> {
    const signal = opts?.signal;
    return new Promise<T>((resolve, reject) => {
      const cancelled = () => reject(new CriError(rpc, 'CANCELLED', 'call cancelled'));
      if (signal?.aborted) return cancelled();
      signal?.addEventListener('abort', cancelled, { once: true });
      Promise.resolve()
        .then(run)
        .then(resolve, (error: unknown) => reject(criError(rpc, error)))
        .finally(() => signal?.removeEventListener('abort', cancelled));
    });
  }
}

function criError(rpc: string, error: unknown): CriError {
  if (error instanceof SimError || error instanceof StreamingRequestError) return new CriError(rpc, error.code, error.message);
  return new CriError(rpc, 'INTERNAL', error instanceof Error ? error.message : String(error));
}

function containerEventOf(event: SimContainerEvent): ContainerEvent {
  return {
    containerId: event.containerId,
    type: event.type,
    createdAt: event.createdAt,
    podSandboxMetadata: { ...event.podSandboxStatus.metadata },
  };
}
