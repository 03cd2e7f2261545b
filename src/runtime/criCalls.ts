/**
 * The CRI v1 calls statelet makes, once: each method of RuntimeService and ImageService (types.ts)
 * with the service and RPC behind it (api.proto), the kubelet's name for it in its metrics
 * (pkg/kubelet/kuberuntime/instrumented_services.go), and what the call is about, read from its
 * arguments: the pod whose sandbox config it carries, the sandbox, container or image it names,
 * the time it may take by design. Errors name calls by their RPC (`StopContainer`); the decorators
 * over a runtime (`decorate.ts`: the metrics, the call trace, the pod-ID recorder, the test kit's
 * fault injector) read each call through this table, and a test checks it against the proto's
 * services, the gRPC client and sim://'s server, so none of them can leave a call out.
 *
 * The argument positions are typed: each names an argument of that method holding what it says
 * (a sandbox config, an ID or a request carrying one, a number of seconds), so a misspelt method
 * or a wrong position does not compile.
 */
import type { CallOptions, ContainerConfig, ImageService, PodSandboxConfig, RuntimeService } from './types.ts';

/** A runtime call, by its method on the TypeScript interfaces (the event stream aside). */
export type CriMethod = Exclude<keyof RuntimeService, 'containerEvents'> | keyof ImageService;

type CriServices = Omit<RuntimeService, 'containerEvents'> & ImageService;

/** A call's arguments, as its method on the interfaces takes them. */
export type CriArgs<M extends CriMethod> = Parameters<CriServices[M]>;
/** What a call answers. */
export type CriResult<M extends CriMethod> = Awaited<ReturnType<CriServices[M]>>;

/** The positions of `M`'s arguments that hold a `T` (or, when optional, nothing). */
type ArgumentOf<M extends CriMethod, T> = Exclude<PositionsOf<CriArgs<M>, T>, undefined>;

/** The positions in `A` that hold a `T`: a type parameter, so that the mapping keeps `A`'s positions only. */
type PositionsOf<A extends readonly unknown[], T> = {
  [I in keyof A]: I extends `${infer N extends number}` ? ([Exclude<A[I], undefined>] extends [T] ? N : never) : never;
}[number];

/** What a call is about, as the positions of the arguments that say it. */
interface CallAbout<M extends CriMethod> {
  /** The sandbox config of the pod the call is for (RunPodSandbox's, CreateContainer's, PullImage's): its UID. */
  pod?: ArgumentOf<M, PodSandboxConfig>;
  /** The sandbox it names: its ID, or a request carrying it. */
  sandbox?: ArgumentOf<M, string | { podSandboxId: string }>;
  /** The container it names: its ID, or a request carrying it. */
  container?: ArgumentOf<M, string | { containerId: string }>;
  /** The config of the container it makes: its name. */
  containerConfig?: ArgumentOf<M, ContainerConfig>;
  image?: ArgumentOf<M, string>;
}

export interface CriCallEntry<M extends CriMethod> {
  service: 'RuntimeService' | 'ImageService';
  rpc: string;
  /** Its name in `kubelet_runtime_operations_*` (instrumented_services.go). */
  operation: string;
  /** The argument with the caller's options: its cancellation signal and deadline. */
  options: ArgumentOf<M, CallOptions>;
  about?: CallAbout<M>;
  /** The argument with the seconds the call may take by design (StopContainer's grace period, ExecSync's timeout). */
  allowance?: ArgumentOf<M, number>;
  /** What the ID it answers with is: a sandbox or container it made. */
  creates?: CriResult<M> extends string ? 'sandbox' | 'container' : never;
  /** It removes what it names. */
  removes?: true;
}

export const CRI_CALLS = {
  version: { service: 'RuntimeService', rpc: 'Version', operation: 'version', options: 0 },
  status: { service: 'RuntimeService', rpc: 'Status', operation: 'status', options: 0 },
  updateRuntimeConfig: { service: 'RuntimeService', rpc: 'UpdateRuntimeConfig', operation: 'update_runtime_config', options: 1 },
  runPodSandbox: { service: 'RuntimeService', rpc: 'RunPodSandbox', operation: 'run_podsandbox', options: 2, about: { pod: 0 }, creates: 'sandbox' },
  stopPodSandbox: { service: 'RuntimeService', rpc: 'StopPodSandbox', operation: 'stop_podsandbox', options: 1, about: { sandbox: 0 } },
  removePodSandbox: { service: 'RuntimeService', rpc: 'RemovePodSandbox', operation: 'remove_podsandbox', options: 1, about: { sandbox: 0 }, removes: true },
  podSandboxStatus: { service: 'RuntimeService', rpc: 'PodSandboxStatus', operation: 'podsandbox_status', options: 1, about: { sandbox: 0 } },
  listPodSandbox: { service: 'RuntimeService', rpc: 'ListPodSandbox', operation: 'list_podsandbox', options: 1 },
  createContainer: {
    service: 'RuntimeService',
    rpc: 'CreateContainer',
    operation: 'create_container',
    options: 3,
    about: { sandbox: 0, containerConfig: 1, pod: 2 },
    creates: 'container',
  },
  startContainer: { service: 'RuntimeService', rpc: 'StartContainer', operation: 'start_container', options: 1, about: { container: 0 } },
  stopContainer: { service: 'RuntimeService', rpc: 'StopContainer', operation: 'stop_container', options: 2, about: { container: 0 }, allowance: 1 },
  removeContainer: { service: 'RuntimeService', rpc: 'RemoveContainer', operation: 'remove_container', options: 1, about: { container: 0 }, removes: true },
  listContainers: { service: 'RuntimeService', rpc: 'ListContainers', operation: 'list_containers', options: 1 },
  containerStatus: { service: 'RuntimeService', rpc: 'ContainerStatus', operation: 'container_status', options: 1, about: { container: 0 } },
  updateContainerResources: { service: 'RuntimeService', rpc: 'UpdateContainerResources', operation: 'update_container', options: 2, about: { container: 0 } },
  execSync: { service: 'RuntimeService', rpc: 'ExecSync', operation: 'exec_sync', options: 3, about: { container: 0 }, allowance: 2 },
  exec: { service: 'RuntimeService', rpc: 'Exec', operation: 'exec', options: 1, about: { container: 0 } },
  attach: { service: 'RuntimeService', rpc: 'Attach', operation: 'attach', options: 1, about: { container: 0 } },
  portForward: { service: 'RuntimeService', rpc: 'PortForward', operation: 'port_forward', options: 1, about: { sandbox: 0 } },
  reopenContainerLog: { service: 'RuntimeService', rpc: 'ReopenContainerLog', operation: 'reopen_container_log', options: 1, about: { container: 0 } },
  containerStats: { service: 'RuntimeService', rpc: 'ContainerStats', operation: 'container_stats', options: 1, about: { container: 0 } },
  listContainerStats: { service: 'RuntimeService', rpc: 'ListContainerStats', operation: 'list_container_stats', options: 1 },
  podSandboxStats: { service: 'RuntimeService', rpc: 'PodSandboxStats', operation: 'podsandbox_stats', options: 1, about: { sandbox: 0 } },
  listPodSandboxStats: { service: 'RuntimeService', rpc: 'ListPodSandboxStats', operation: 'list_podsandbox_stats', options: 1 },
  pullImage: { service: 'ImageService', rpc: 'PullImage', operation: 'pull_image', options: 3, about: { image: 0, pod: 2 } },
  imageStatus: { service: 'ImageService', rpc: 'ImageStatus', operation: 'image_status', options: 1, about: { image: 0 } },
  listImages: { service: 'ImageService', rpc: 'ListImages', operation: 'list_images', options: 0 },
  removeImage: { service: 'ImageService', rpc: 'RemoveImage', operation: 'remove_image', options: 1, about: { image: 0 }, removes: true },
  imageFsInfo: { service: 'ImageService', rpc: 'ImageFsInfo', operation: 'image_fs_info', options: 0 },
} as const satisfies { [M in CriMethod]: CriCallEntry<M> };

export type CriRpc = (typeof CRI_CALLS)[CriMethod]['rpc'];

/** A call as a decorator sees it: its method and what the table says of it. */
export interface CriCall<M extends CriMethod = CriMethod> {
  method: M;
  service: 'RuntimeService' | 'ImageService';
  rpc: CriRpc;
  operation: string;
  options: number;
  about?: { pod?: number; sandbox?: number; container?: number; containerConfig?: number; image?: number };
  allowance?: number;
  creates?: 'sandbox' | 'container';
  removes?: true;
}

export const CRI_METHODS = Object.keys(CRI_CALLS) as CriMethod[];

const calls = new Map<string, CriCall>(CRI_METHODS.map((method) => [method, { method, ...CRI_CALLS[method] }]));
const methodByRpc = new Map<string, CriMethod>(CRI_METHODS.map((method) => [CRI_CALLS[method].rpc, method]));

/** The call of a method, the same object every time. */
export function criCall<M extends CriMethod>(method: M): CriCall<M> {
  return calls.get(method) as CriCall<M>;
}

/** Whether a method name is one of the CRI calls (the event stream is not). */
export function isCriMethod(name: string): name is CriMethod {
  return Object.hasOwn(CRI_CALLS, name);
}

/** The method behind an RPC name (`StopContainer` → `stopContainer`); undefined for a call statelet does not make. */
export function criMethodOf(rpc: string): CriMethod | undefined {
  return methodByRpc.get(rpc);
}

// ------------------------------------------------------------------------------------------------
// What a call is about, read from its arguments where the table places it.

/** The argument at `at`, of the type the table's types place there. */
function argument<T>(args: readonly unknown[], at: number | undefined): T | undefined {
  return at === undefined ? undefined : (args[at] as T | undefined);
}

/** The caller's options (signal, deadline). */
export function optionsOf(call: CriCall, args: readonly unknown[]): CallOptions | undefined {
  return argument<CallOptions>(args, call.options);
}

/** The sandbox config the call carries, of the pod it is for. */
export function podConfigOf(call: CriCall, args: readonly unknown[]): PodSandboxConfig | undefined {
  return argument<PodSandboxConfig>(args, call.about?.pod);
}

/** The UID of the pod whose sandbox config the call carries. */
export function podUidOf(call: CriCall, args: readonly unknown[]): string | undefined {
  return podConfigOf(call, args)?.metadata.uid;
}

/** The ID of the sandbox the call names. */
export function sandboxIdOf(call: CriCall, args: readonly unknown[]): string | undefined {
  const named = argument<string | { podSandboxId: string }>(args, call.about?.sandbox);
  return typeof named === 'object' ? named.podSandboxId : named;
}

/** The ID of the container the call names. */
export function containerIdOf(call: CriCall, args: readonly unknown[]): string | undefined {
  const named = argument<string | { containerId: string }>(args, call.about?.container);
  return typeof named === 'object' ? named.containerId : named;
}

/** The name of the container the call makes. */
export function containerNameOf(call: CriCall, args: readonly unknown[]): string | undefined {
  return argument<ContainerConfig>(args, call.about?.containerConfig)?.metadata.name;
}

/** The image the call names. */
export function imageOf(call: CriCall, args: readonly unknown[]): string | undefined {
  return argument<string>(args, call.about?.image);
}

/** The seconds the call may take by design; undefined for a call that has none. */
export function allowanceSecondsOf(call: CriCall, args: readonly unknown[]): number | undefined {
  return argument<number>(args, call.allowance);
}
