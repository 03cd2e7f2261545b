/**
 * The CRI v1 calls statelet makes, once: each method of RuntimeService and ImageService (types.ts)
 * with the service and RPC behind it (api.proto). Errors name calls by their RPC (`StopContainer`),
 * the fault injectors and the call trace name them from here, and a test checks the table against
 * the proto's services, the gRPC client and sim://'s server, so none of them can leave a call out.
 */
import type { ImageService, RuntimeService } from './types.ts';

/** A runtime call, by its method on the TypeScript interfaces (the event stream aside). */
export type CriMethod = Exclude<keyof RuntimeService, 'containerEvents'> | keyof ImageService;

export const CRI_CALLS = {
  version: { service: 'RuntimeService', rpc: 'Version' },
  status: { service: 'RuntimeService', rpc: 'Status' },
  updateRuntimeConfig: { service: 'RuntimeService', rpc: 'UpdateRuntimeConfig' },
  runPodSandbox: { service: 'RuntimeService', rpc: 'RunPodSandbox' },
  stopPodSandbox: { service: 'RuntimeService', rpc: 'StopPodSandbox' },
  removePodSandbox: { service: 'RuntimeService', rpc: 'RemovePodSandbox' },
  podSandboxStatus: { service: 'RuntimeService', rpc: 'PodSandboxStatus' },
  listPodSandbox: { service: 'RuntimeService', rpc: 'ListPodSandbox' },
  createContainer: { service: 'RuntimeService', rpc: 'CreateContainer' },
  startContainer: { service: 'RuntimeService', rpc: 'StartContainer' },
  stopContainer: { service: 'RuntimeService', rpc: 'StopContainer' },
  removeContainer: { service: 'RuntimeService', rpc: 'RemoveContainer' },
  listContainers: { service: 'RuntimeService', rpc: 'ListContainers' },
  containerStatus: { service: 'RuntimeService', rpc: 'ContainerStatus' },
  updateContainerResources: { service: 'RuntimeService', rpc: 'UpdateContainerResources' },
  execSync: { service: 'RuntimeService', rpc: 'ExecSync' },
  exec: { service: 'RuntimeService', rpc: 'Exec' },
  attach: { service: 'RuntimeService', rpc: 'Attach' },
  portForward: { service: 'RuntimeService', rpc: 'PortForward' },
  reopenContainerLog: { service: 'RuntimeService', rpc: 'ReopenContainerLog' },
  containerStats: { service: 'RuntimeService', rpc: 'ContainerStats' },
  listContainerStats: { service: 'RuntimeService', rpc: 'ListContainerStats' },
  podSandboxStats: { service: 'RuntimeService', rpc: 'PodSandboxStats' },
  listPodSandboxStats: { service: 'RuntimeService', rpc: 'ListPodSandboxStats' },
  pullImage: { service: 'ImageService', rpc: 'PullImage' },
  imageStatus: { service: 'ImageService', rpc: 'ImageStatus' },
  listImages: { service: 'ImageService', rpc: 'ListImages' },
  removeImage: { service: 'ImageService', rpc: 'RemoveImage' },
  imageFsInfo: { service: 'ImageService', rpc: 'ImageFsInfo' },
} as const satisfies Record<CriMethod, { service: 'RuntimeService' | 'ImageService'; rpc: string }>;

export type CriRpc = (typeof CRI_CALLS)[CriMethod]['rpc'];

const methodByRpc = new Map<string, CriMethod>(Object.entries(CRI_CALLS).map(([method, call]) => [call.rpc, method as CriMethod]));

/** Whether a method name is one of the CRI calls (the event stream is not). */
export function isCriMethod(name: string): name is CriMethod {
  return Object.hasOwn(CRI_CALLS, name);
}

/** The method behind an RPC name (`StopContainer` → `stopContainer`); undefined for a call statelet does not make. */
export function criMethodOf(rpc: string): CriMethod | undefined {
  return methodByRpc.get(rpc);
}
