/**
 * Runtime calls made visible: decorators over the RuntimeService and ImageService that report
 * each call's start and finish (with its duration and error) to a `CallTrace`. The pod's effect
 * actors wrap the runtime this way for the length of one sync, so the visualizer's event log can
 * show which CRI call a pod is waiting on and how long each took.
 *
 * A call is named by its CRI method (`CreateContainer`) and a target that says what it is about:
 * `sandbox`, a container's name, an image. Container IDs are turned back into names from what the
 * decorator saw come back (CreateContainer, ListContainers, ContainerStatus) or was given; an ID
 * it never saw shows as its first 13 characters. Nothing else of a request (commands, env, mounts) is reported.
 */
import type { CriRpc } from './criCalls.ts';
import type { CallOptions, ImageService, RuntimeService } from './types.ts';

/** One runtime call: `id` tells apart calls with the same method and target under way together. */
export interface TracedCall {
  id: number;
  call: string;
  target: string;
  /** How long the call may take by design (StopContainer's grace period, ExecSync's timeout), in ms. */
  allowanceMs?: number;
}

export interface CallTrace {
  started(call: TracedCall): void;
  finished(call: TracedCall, durationMs: number, error?: unknown): void;
}

let lastCallId = 0;

/** Runs `run` as one traced call. */
async function traceCall<T>(trace: CallTrace, call: CriRpc, target: string, run: () => Promise<T>, allowanceMs?: number): Promise<T> {
  const traced: TracedCall = { id: ++lastCallId, call, target, ...(allowanceMs ? { allowanceMs } : {}) };
  trace.started(traced);
  const startedAt = performance.now();
  try {
    const result = await run();
    trace.finished(traced, performance.now() - startedAt);
    return result;
  } catch (err) {
    trace.finished(traced, performance.now() - startedAt, err);
    throw err;
  }
}

const shortId = (id: string) => id.slice(0, 13);

/** The RuntimeService, each call reported to `trace`; `known`: container IDs and names seen before. Streams (containerEvents) pass through. */
export function tracedRuntime(runtime: RuntimeService, trace: CallTrace, known: Iterable<[string, string]> = []): RuntimeService {
  const names = new Map<string, string>(known);
  const containerName = (id: string) => names.get(id) ?? shortId(id);
  const call = <T>(method: CriRpc, target: string, run: () => Promise<T>, allowanceMs?: number) => traceCall(trace, method, target, run, allowanceMs);
  return {
    version: (opts) => call('Version', '', () => runtime.version(opts)),
    status: (opts) => call('Status', '', () => runtime.status(opts)),
    updateRuntimeConfig: (podCidr, opts) => call('UpdateRuntimeConfig', '', () => runtime.updateRuntimeConfig(podCidr, opts)),
    runPodSandbox: (config, opts) => call('RunPodSandbox', 'sandbox', () => runtime.runPodSandbox(config, opts)),
    stopPodSandbox: (id, opts) => call('StopPodSandbox', 'sandbox', () => runtime.stopPodSandbox(id, opts)),
    removePodSandbox: (id, opts) => call('RemovePodSandbox', 'sandbox', () => runtime.removePodSandbox(id, opts)),
    podSandboxStatus: (id, opts) => call('PodSandboxStatus', 'sandbox', () => runtime.podSandboxStatus(id, opts)),
    listPodSandbox: (filter, opts) => call('ListPodSandbox', '', () => runtime.listPodSandbox(filter, opts)),
    createContainer: (sandboxId, config, sandboxConfig, opts) =>
      call('CreateContainer', config.metadata.name, async () => {
        const id = await runtime.createContainer(sandboxId, config, sandboxConfig, opts);
        names.set(id, config.metadata.name);
        return id;
      }),
    startContainer: (id, opts) => call('StartContainer', containerName(id), () => runtime.startContainer(id, opts)),
    stopContainer: (id, timeoutSeconds, opts) =>
      call('StopContainer', containerName(id), () => runtime.stopContainer(id, timeoutSeconds, opts), timeoutSeconds * 1000),
    removeContainer: (id, opts) => call('RemoveContainer', containerName(id), () => runtime.removeContainer(id, opts)),
    listContainers: (filter, opts) =>
      call('ListContainers', '', async () => {
        const containers = await runtime.listContainers(filter, opts);
        for (const c of containers) names.set(c.id, c.metadata.name);
        return containers;
      }),
    containerStatus: (id, opts) =>
      call('ContainerStatus', containerName(id), async () => {
        const status = await runtime.containerStatus(id, opts);
        names.set(id, status.metadata.name);
        return status;
      }),
    updateContainerResources: (id, resources, opts) => call('UpdateContainerResources', containerName(id), () => runtime.updateContainerResources(id, resources, opts)),
    reopenContainerLog: (id, opts) => call('ReopenContainerLog', containerName(id), () => runtime.reopenContainerLog(id, opts)),
    containerStats: (id, opts) => call('ContainerStats', containerName(id), () => runtime.containerStats(id, opts)),
    listContainerStats: (filter, opts) => call('ListContainerStats', '', () => runtime.listContainerStats(filter, opts)),
    podSandboxStats: (id, opts) => call('PodSandboxStats', 'sandbox', () => runtime.podSandboxStats(id, opts)),
    listPodSandboxStats: (filter, opts) => call('ListPodSandboxStats', '', () => runtime.listPodSandboxStats(filter, opts)),
    execSync: (id, cmd, timeoutSeconds, opts) =>
      call('ExecSync', containerName(id), () => runtime.execSync(id, cmd, timeoutSeconds, opts), timeoutSeconds * 1000),
    exec: (request, opts) => call('Exec', containerName(request.containerId), () => runtime.exec(request, opts)),
    attach: (request, opts) => call('Attach', containerName(request.containerId), () => runtime.attach(request, opts)),
    portForward: (request, opts) => call('PortForward', 'sandbox', () => runtime.portForward(request, opts)),
    containerEvents: (opts) => runtime.containerEvents(opts),
  };
}

/** The ImageService, each call reported to `trace`. */
export function tracedImages(images: ImageService, trace: CallTrace): ImageService {
  const call = <T>(method: CriRpc, image: string, run: () => Promise<T>) => traceCall(trace, method, image, run);
  return {
    pullImage: (image, sandboxConfig, opts) => call('PullImage', image, () => images.pullImage(image, sandboxConfig, opts)),
    imageStatus: (image, opts) => call('ImageStatus', image, () => images.imageStatus(image, opts)),
    listImages: (opts) => call('ListImages', '', () => images.listImages(opts)),
    removeImage: (image, opts) => call('RemoveImage', image, () => images.removeImage(image, opts)),
    imageFsInfo: (opts) => call('ImageFsInfo', '', () => images.imageFsInfo(opts)),
  };
}

/** Every call reported to each of `traces`. */
export function allOf(...traces: CallTrace[]): CallTrace {
  return {
    started: (call) => traces.forEach((trace) => trace.started(call)),
    finished: (call, durationMs, error) => traces.forEach((trace) => trace.finished(call, durationMs, error)),
  };
}

/** Anything that pulls images for a pod (the agent's shared, de-duplicating puller). */
export interface ImagePulls {
  pull(image: string, opts?: CallOptions): Promise<string>;
}

/** A pod's view of the shared puller: its wait for an image, reported as one `PullImage`. */
export function tracedPulls(puller: ImagePulls, trace: CallTrace): ImagePulls {
  return { pull: (image, opts) => traceCall(trace, 'PullImage', image, () => puller.pull(image, opts)) };
}
