/**
 * The call trace (src/runtime/callTrace.ts): each CRI call reported under its RPC with the target
 * the visualizer shows (a container's name, `sandbox`, an image, nothing for node-wide calls) and
 * the time it may take by design; container IDs turned back into the names the runtime handed back.
 */
import { describe, expect, it } from 'vitest';
import { CRI_CALLS, type CriArgs, type CriMethod } from '../../src/runtime/criCalls.ts';
import { type CallTrace, type TracedCall, tracedImages, tracedPulls, tracedRuntime } from '../../src/runtime/callTrace.ts';
import type { Container, ContainerStatus, ImageService, RuntimeService } from '../../src/runtime/types.ts';
import { CALL_ARGS as ARGS, CONTAINER, SANDBOX, containerConfig, podSandboxConfig } from './support.ts';

/** What each is reported as, a container the trace has not seen by its ID's first 13 characters. */
const REPORTED: { [M in CriMethod]: Omit<TracedCall, 'id'> } = {
  version: { call: 'Version', target: '' },
  status: { call: 'Status', target: '' },
  updateRuntimeConfig: { call: 'UpdateRuntimeConfig', target: '' },
  runPodSandbox: { call: 'RunPodSandbox', target: 'sandbox' },
  stopPodSandbox: { call: 'StopPodSandbox', target: 'sandbox' },
  removePodSandbox: { call: 'RemovePodSandbox', target: 'sandbox' },
  podSandboxStatus: { call: 'PodSandboxStatus', target: 'sandbox' },
  listPodSandbox: { call: 'ListPodSandbox', target: '' },
  createContainer: { call: 'CreateContainer', target: 'app' },
  startContainer: { call: 'StartContainer', target: 'abcdef0123456' },
  stopContainer: { call: 'StopContainer', target: 'abcdef0123456', allowanceMs: 30_000 },
  removeContainer: { call: 'RemoveContainer', target: 'abcdef0123456' },
  listContainers: { call: 'ListContainers', target: '' },
  containerStatus: { call: 'ContainerStatus', target: 'abcdef0123456' },
  updateContainerResources: { call: 'UpdateContainerResources', target: 'abcdef0123456' },
  execSync: { call: 'ExecSync', target: 'abcdef0123456', allowanceMs: 5_000 },
  exec: { call: 'Exec', target: 'abcdef0123456' },
  attach: { call: 'Attach', target: 'abcdef0123456' },
  portForward: { call: 'PortForward', target: 'sandbox' },
  reopenContainerLog: { call: 'ReopenContainerLog', target: 'abcdef0123456' },
  containerStats: { call: 'ContainerStats', target: 'abcdef0123456' },
  listContainerStats: { call: 'ListContainerStats', target: '' },
  podSandboxStats: { call: 'PodSandboxStats', target: 'sandbox' },
  listPodSandboxStats: { call: 'ListPodSandboxStats', target: '' },
  pullImage: { call: 'PullImage', target: 'busybox:1' },
  imageStatus: { call: 'ImageStatus', target: 'busybox:1' },
  listImages: { call: 'ListImages', target: '' },
  removeImage: { call: 'RemoveImage', target: 'busybox:1' },
  imageFsInfo: { call: 'ImageFsInfo', target: '' },
};

const pod = podSandboxConfig('web');
const app = containerConfig('app');

/** What the runtime answers: the few answers the trace reads names from, nothing otherwise. */
const answers: Partial<Record<CriMethod, unknown>> = { createContainer: 'new-container-id', listContainers: [], containerStatus: { metadata: { name: 'app', attempt: 0 } } };
const runtime = new Proxy({}, { get: (_, method) => async () => answers[method as CriMethod] }) as RuntimeService & ImageService;

function recording(): { trace: CallTrace; started: TracedCall[]; finished: [TracedCall, unknown][] } {
  const started: TracedCall[] = [];
  const finished: [TracedCall, unknown][] = [];
  return { trace: { started: (call) => started.push(call), finished: (call, _ms, error) => finished.push([call, error]) }, started, finished };
}

async function make<M extends CriMethod>(service: RuntimeService | ImageService, method: M, args: CriArgs<M>): Promise<unknown> {
  return (service as unknown as Record<M, (...a: CriArgs<M>) => Promise<unknown>>)[method](...args);
}

describe('the call trace', () => {
  it.each(Object.keys(CRI_CALLS) as CriMethod[])('reports %s under its RPC, with its target and allowance', async (method) => {
    const { trace, started, finished } = recording();
    const traced = CRI_CALLS[method].service === 'RuntimeService' ? tracedRuntime(runtime, trace) : tracedImages(runtime, trace);
    await make(traced, method, ARGS[method]);
    expect(started).toEqual([{ id: expect.any(Number), ...REPORTED[method] }]);
    expect(finished).toEqual([[started[0], undefined]]);
  });

  it('names containers by what the runtime handed back: made, listed, given, or its status', async () => {
    const { trace, started } = recording();
    const traced = tracedRuntime(runtime, trace, [['known-container-id', 'main']]);
    const targets = async (id: string) => {
      await traced.startContainer(id);
      return started.at(-1)!.target;
    };
    expect(await targets('known-container-id')).toBe('main');
    answers.createContainer = 'made-container-id';
    await traced.createContainer(SANDBOX, app, pod);
    expect(await targets('made-container-id')).toBe('app');
    answers.listContainers = [{ id: 'listed-container-id', metadata: { name: 'side', attempt: 0 } }] satisfies Partial<Container>[];
    await traced.listContainers();
    expect(await targets('listed-container-id')).toBe('side');
    expect(await targets('status-container-id')).toBe('status-contai');
    answers.containerStatus = { metadata: { name: 'init', attempt: 0 } } satisfies Partial<ContainerStatus>;
    await traced.containerStatus('status-container-id');
    expect(await targets('status-container-id')).toBe('init');
  });

  it('reports a failed call with its error, a stop without grace with no allowance, and the event stream not at all', async () => {
    const { trace, started, finished } = recording();
    const failure = new Error('runtime gone');
    const failing = { ...runtime, stopContainer: async () => Promise.reject(failure), containerEvents: () => [] } as unknown as RuntimeService;
    const traced = tracedRuntime(failing, trace);
    await expect(traced.stopContainer(CONTAINER, 0)).rejects.toBe(failure);
    expect(started).toEqual([{ id: expect.any(Number), call: 'StopContainer', target: 'abcdef0123456' }]);
    expect(finished).toEqual([[started[0], failure]]);
    expect(traced.containerEvents()).toEqual([]);
    expect(started).toHaveLength(1);
  });

  it("reports a pod's wait for the shared puller as one PullImage", async () => {
    const { trace, started } = recording();
    await tracedPulls({ pull: async () => ({ imageRef: 'sha256:1', authIndex: -1 }) }, trace).pull('busybox:1', []);
    expect(started).toEqual([{ id: expect.any(Number), call: 'PullImage', target: 'busybox:1' }]);
  });
});
