/**
 * Each CRI call on the wire, once, for both ends: how the gRPC client (`client.ts`) writes a call's
 * arguments as its request and reads its result from the response, and how a server (sim://'s,
 * `../sim/server.ts`, or the test kit's CRI proxy) reads a request back into the call's arguments
 * and writes the result as the response. A call is keyed by its method in the table of calls
 * (`../criCalls.ts`), which gives its service and RPC, and is typed by the RPC's request and
 * response shapes (`wire.ts`), so a conversion that does not fit its call does not compile.
 *
 * The lists and the stats are written around what was encoded before (`messageEncoder`,
 * `keptEncodings`): each sandbox's and container's listing is encoded once per state, each one's
 * stats attributes once in its life, and a list is these bytes put together. This holds for an
 * implementation that hands out a listing or attributes object only while it holds (sim://'s
 * engine keeps them frozen, the same objects while nothing in them changes).
 */
import { CRI_CALLS, type CriArgs, type CriMethod, type CriResult } from '../criCalls.ts';
import type { CallOptions, Container, ContainerStats, PodSandbox, PodSandboxStats } from '../types.ts';
import { resourcesFromWire, resourcesToWire } from './securityWire.ts';
import {
  containerStatsFilterFromWire,
  containerStatsFilterToWire,
  containerStatsFromWire,
  containerStatsToWire,
  imageFsInfoFromWire,
  imageFsInfoToWire,
  podSandboxStatsFilterFromWire,
  podSandboxStatsFilterToWire,
  podSandboxStatsFromWire,
  podSandboxStatsToWire,
} from './statsWire.ts';
import {
  authConfigFromWire,
  authConfigToWire,
  containerConfigFromRequest,
  containerConfigToWire,
  containerFilterFromRequest,
  containerFilterToWire,
  containerFromWire,
  containerStatusFromWire,
  containerStatusToWire,
  containerToWire,
  execResultFromWire,
  imageFromRequest,
  imageFromWire,
  imageToWire,
  requireStatus,
  runtimeStatusFromWire,
  runtimeStatusToWire,
  sandboxConfigFromRequest,
  sandboxConfigToWire,
  sandboxFilterFromRequest,
  sandboxFilterToWire,
  sandboxFromWire,
  sandboxStatusFromWire,
  sandboxStatusToWire,
  sandboxToWire,
  versionFromWire,
} from './objectsWire.ts';
import { type CriRpcs, type MessageEncoder, type Rpc, type ServiceName, int64ToNumber, keptEncodings, messageEncoder } from './wire.ts';

/** The RPC behind a method, with its request and response shapes. */
type RpcOf<M extends CriMethod> = (typeof CRI_CALLS)[M] extends { service: infer S extends ServiceName; rpc: infer R }
  ? R extends keyof CriRpcs[S]
    ? CriRpcs[S][R]
    : never
  : never;
export type WireRequest<M extends CriMethod> = RpcOf<M> extends Rpc<infer Q extends object, unknown> ? Q : never;
export type WireResponse<M extends CriMethod> = RpcOf<M> extends Rpc<unknown, infer R extends object> ? R : never;

interface WireConversions<M extends CriMethod> {
  /** The client's request, from the call's arguments. */
  request(...args: CriArgs<M>): WireRequest<M>;
  /** The call's result, from the response as the client reads it (`ClientMethod.deserialize`'s forms). */
  result(response: WireResponse<M>): CriResult<M>;
  /** The call's arguments, the caller's options among them, from a request as a server reads it. */
  args(request: WireRequest<M>, opts: CallOptions | undefined): CriArgs<M>;
}

/** A server writes the result as the response's plain object, or writes the response's bytes itself. */
export type WireCall<M extends CriMethod> = WireConversions<M> & ({ response(result: CriResult<M>): WireResponse<M> } | { encode(result: CriResult<M>): Buffer });

/** The CRI version string kubelet announces in VersionRequest. */
const CLIENT_API_VERSION = '0.1.0';

const noResult = (): void => undefined;
const emptyResponse = () => ({});

/** A call that names a sandbox by its ID and answers nothing (StopPodSandbox, RemovePodSandbox). */
const bySandboxId = {
  request: (podSandboxId: string) => ({ podSandboxId }),
  result: noResult,
  args: (request: { podSandboxId: string }, opts: CallOptions | undefined): [string, CallOptions | undefined] => [request.podSandboxId, opts],
  response: emptyResponse,
};

/** A call that names a container by its ID and answers nothing (StartContainer, RemoveContainer, ReopenContainerLog). */
const byContainerId = {
  request: (containerId: string) => ({ containerId }),
  result: noResult,
  args: (request: { containerId: string }, opts: CallOptions | undefined): [string, CallOptions | undefined] => [request.containerId, opts],
  response: emptyResponse,
};
/** No settings: what UpdateContainerResources without `linux` asks for. */
const NO_RESOURCES = { cpuPeriod: 0, cpuQuota: 0, cpuShares: 0, memoryLimitInBytes: 0, oomScoreAdj: 0 };

const sandboxListing = keptEncodings((sandbox: PodSandbox) => encodeSandbox(sandboxToWire(sandbox)));
const encodeSandbox = messageEncoder('PodSandbox');
const containerListing = keptEncodings((container: Container) => encodeContainer(containerToWire(container)));
const encodeContainer = messageEncoder('Container');
const containerStats = messageEncoder('ContainerStats', { attributes: keptEncodings(messageEncoder('ContainerAttributes')) });
const podSandboxStats = messageEncoder('PodSandboxStats', {
  attributes: keptEncodings(messageEncoder('PodSandboxAttributes')),
  linux: messageEncoder('LinuxPodSandboxStats', { containers: containerStats }),
});
const listPodSandboxResponse: MessageEncoder<{ items: readonly PodSandbox[] }> = messageEncoder('ListPodSandboxResponse', { items: sandboxListing });
const listContainersResponse: MessageEncoder<{ containers: readonly Container[] }> = messageEncoder('ListContainersResponse', { containers: containerListing });
const listContainerStatsResponse = messageEncoder('ListContainerStatsResponse', { stats: containerStats });
const listPodSandboxStatsResponse = messageEncoder('ListPodSandboxStatsResponse', { stats: podSandboxStats });

export const WIRE_CALLS: { [M in CriMethod]: WireCall<M> } = {
  version: {
    request: () => ({ version: CLIENT_API_VERSION }),
    result: versionFromWire,
    args: (_request, opts) => [opts],
    response: (version) => version,
  },
  status: {
    request: (opts) => ({ verbose: opts?.verbose ?? false }),
    result: runtimeStatusFromWire,
    args: (request, opts) => [{ ...opts, verbose: request.verbose }],
    response: runtimeStatusToWire,
  },
  updateRuntimeConfig: {
    request: (podCidr) => ({ runtimeConfig: { networkConfig: { podCidr } } }),
    result: noResult,
    args: (request, opts) => [request.runtimeConfig?.networkConfig?.podCidr ?? '', opts],
    response: emptyResponse,
  },
  runPodSandbox: {
    request: (config, runtimeHandler) => ({ config: sandboxConfigToWire(config), runtimeHandler: runtimeHandler ?? '' }),
    result: (response) => response.podSandboxId,
    args: (request, opts) => [sandboxConfigFromRequest(request.config), request.runtimeHandler, opts],
    response: (podSandboxId) => ({ podSandboxId }),
  },
  stopPodSandbox: bySandboxId,
  removePodSandbox: bySandboxId,
  podSandboxStatus: {
    request: (podSandboxId) => ({ podSandboxId, verbose: false }),
    result: (response) => sandboxStatusFromWire(requireStatus('PodSandboxStatus', response.status)),
    args: (request, opts) => [request.podSandboxId, opts],
    // The answer's timestamp is left out (0): statelet reads the sandbox's own times, not the answer's.
    response: (status) => ({ status: sandboxStatusToWire(status), info: {}, containersStatuses: [], timestamp: 0 }),
  },
  listPodSandbox: {
    request: (filter) => ({ filter: filter ? sandboxFilterToWire(filter) : null }),
    result: (response) => response.items.map(sandboxFromWire),
    args: (request, opts) => [sandboxFilterFromRequest(request.filter), opts],
    encode: (items) => listPodSandboxResponse({ items }),
  },
  createContainer: {
    request: (podSandboxId, config, sandboxConfig) => ({ podSandboxId, config: containerConfigToWire(config), sandboxConfig: sandboxConfigToWire(sandboxConfig) }),
    result: (response) => response.containerId,
    args: (request, opts) => [request.podSandboxId, containerConfigFromRequest(request.config), sandboxConfigFromRequest(request.sandboxConfig), opts],
    response: (containerId) => ({ containerId }),
  },
  startContainer: byContainerId,
  stopContainer: {
    request: (containerId, timeoutSeconds) => ({ containerId, timeout: timeoutSeconds }),
    result: noResult,
    args: (request, opts) => [request.containerId, int64ToNumber(request.timeout), opts],
    response: emptyResponse,
  },
  removeContainer: byContainerId,
  listContainers: {
    request: (filter) => ({ filter: filter ? containerFilterToWire(filter) : null }),
    result: (response) => response.containers.map(containerFromWire),
    args: (request, opts) => [containerFilterFromRequest(request.filter), opts],
    encode: (containers) => listContainersResponse({ containers }),
  },
  containerStatus: {
    request: (containerId) => ({ containerId, verbose: false }),
    result: (response) => containerStatusFromWire(requireStatus('ContainerStatus', response.status)),
    args: (request, opts) => [request.containerId, opts],
    response: (status) => ({ status: containerStatusToWire(status), info: {} }),
  },
  updateContainerResources: {
    request: (containerId, resources) => ({ containerId, linux: resourcesToWire(resources), annotations: {} }),
    result: noResult,
    args: (request, opts) => [request.containerId, resourcesFromWire(request.linux) ?? NO_RESOURCES, opts],
    response: emptyResponse,
  },
  execSync: {
    request: (containerId, cmd, timeoutSeconds) => ({ containerId, cmd, timeout: timeoutSeconds }),
    result: execResultFromWire,
    args: (request, opts) => [request.containerId, [...request.cmd], int64ToNumber(request.timeout), opts],
    response: ({ stdout, stderr, exitCode }) => ({ stdout, stderr, exitCode }),
  },
  exec: {
    request: (request) => request,
    result: (response) => response.url,
    args: (request, opts) => [{ ...request, cmd: [...request.cmd] }, opts],
    response: (url) => ({ url }),
  },
  attach: {
    request: (request) => request,
    result: (response) => response.url,
    args: (request, opts) => [request, opts],
    response: (url) => ({ url }),
  },
  portForward: {
    request: (request) => request,
    result: (response) => response.url,
    args: (request, opts) => [{ podSandboxId: request.podSandboxId, port: [...request.port] }, opts],
    response: (url) => ({ url }),
  },
  reopenContainerLog: byContainerId,
  containerStats: {
    request: (containerId) => ({ containerId }),
    result: (response) => containerStatsFromWire(requireStatus('ContainerStats', response.stats, 'stats')),
    args: (request, opts) => [request.containerId, opts],
    response: (stats) => ({ stats: containerStatsToWire(stats) }),
  },
  listContainerStats: {
    request: (filter) => ({ filter: containerStatsFilterToWire(filter) }),
    result: (response) => response.stats.map(containerStatsFromWire),
    args: (request, opts) => [containerStatsFilterFromWire(request.filter), opts],
    encode: (stats: ContainerStats[]) => listContainerStatsResponse({ stats: stats.map(containerStatsToWire) }),
  },
  podSandboxStats: {
    request: (podSandboxId) => ({ podSandboxId }),
    result: (response) => podSandboxStatsFromWire(requireStatus('PodSandboxStats', response.stats, 'stats')),
    args: (request, opts) => [request.podSandboxId, opts],
    response: (stats) => ({ stats: podSandboxStatsToWire(stats) }),
  },
  listPodSandboxStats: {
    request: (filter) => ({ filter: podSandboxStatsFilterToWire(filter) }),
    result: (response) => response.stats.map(podSandboxStatsFromWire),
    args: (request, opts) => [podSandboxStatsFilterFromWire(request.filter), opts],
    encode: (stats: PodSandboxStats[]) => listPodSandboxStatsResponse({ stats: stats.map(podSandboxStatsToWire) }),
  },
  pullImage: {
    request: (image, auth, sandboxConfig) => ({ image: { image }, auth: auth ? authConfigToWire(auth) : null, sandboxConfig: sandboxConfig ? sandboxConfigToWire(sandboxConfig) : null }),
    result: (response) => response.imageRef,
    args: (request, opts) => [
      imageFromRequest(request.image),
      request.auth ? authConfigFromWire(request.auth) : undefined,
      request.sandboxConfig ? sandboxConfigFromRequest(request.sandboxConfig) : undefined,
      opts,
    ],
    response: (imageRef) => ({ imageRef }),
  },
  imageStatus: {
    request: (image) => ({ image: { image }, verbose: false }),
    // Runtimes answer an absent image with an empty response, not NOT_FOUND; containerd leaves the id empty.
    result: (response) => (response.image === null || response.image.id === '' ? null : imageFromWire(response.image)),
    args: (request, opts) => [imageFromRequest(request.image), opts],
    response: (image) => ({ image: image ? imageToWire(image) : null, info: {} }),
  },
  listImages: {
    request: () => ({ filter: null }),
    result: (response) => response.images.map(imageFromWire),
    // ImageService.listImages takes no filter: the client never sends one.
    args: (_request, opts) => [opts],
    response: (images) => ({ images: images.map(imageToWire) }),
  },
  removeImage: {
    request: (image) => ({ image: { image } }),
    result: noResult,
    args: (request, opts) => [imageFromRequest(request.image), opts],
    response: emptyResponse,
  },
  imageFsInfo: {
    request: () => ({}),
    result: imageFsInfoFromWire,
    args: (_request, opts) => [opts],
    response: imageFsInfoToWire,
  },
};
