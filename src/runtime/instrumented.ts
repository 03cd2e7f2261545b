/**
 * The runtime as the agent's metrics see it (pkg/kubelet/kuberuntime/instrumented_services.go):
 * every CRI call is counted and timed under the kubelet's operation name (`create_container`,
 * `list_podsandbox`, …), and counted again when it fails. The container event stream is not a
 * call and is not counted, as in the kubelet.
 */
import type { ImageService, RuntimeService } from './types.ts';

export interface RuntimeOperations {
  observe(operation: string, seconds: number, failed: boolean): void;
}

const RUNTIME_OPERATIONS = {
  version: 'version',
  status: 'status',
  updateRuntimeConfig: 'update_runtime_config',
  runPodSandbox: 'run_podsandbox',
  stopPodSandbox: 'stop_podsandbox',
  removePodSandbox: 'remove_podsandbox',
  podSandboxStatus: 'podsandbox_status',
  listPodSandbox: 'list_podsandbox',
  createContainer: 'create_container',
  startContainer: 'start_container',
  stopContainer: 'stop_container',
  removeContainer: 'remove_container',
  listContainers: 'list_containers',
  containerStatus: 'container_status',
  updateContainerResources: 'update_container',
  execSync: 'exec_sync',
  reopenContainerLog: 'reopen_container_log',
  containerStats: 'container_stats',
  listContainerStats: 'list_container_stats',
  podSandboxStats: 'podsandbox_stats',
  listPodSandboxStats: 'list_podsandbox_stats',
  exec: 'exec',
  attach: 'attach',
  portForward: 'port_forward',
} as const satisfies Record<Exclude<keyof RuntimeService, 'containerEvents'>, string>;

const IMAGE_OPERATIONS = {
  pullImage: 'pull_image',
  imageStatus: 'image_status',
  listImages: 'list_images',
  removeImage: 'remove_image',
  imageFsInfo: 'image_fs_info',
} as const satisfies Record<keyof ImageService, string>;

function timed<A extends unknown[], R>(ops: RuntimeOperations, operation: string, call: (...args: A) => Promise<R>, now: () => number): (...args: A) => Promise<R> {
  return async (...args) => {
    const started = now();
    let failed = false;
    try {
      return await call(...args);
    } catch (err) {
      failed = true;
      throw err;
    } finally {
      ops.observe(operation, (now() - started) / 1000, failed);
    }
  };
}

export function instrumentedRuntime(runtime: RuntimeService, ops: RuntimeOperations, now: () => number = () => performance.now()): RuntimeService {
  const wrapped: Partial<RuntimeService> = { containerEvents: (opts) => runtime.containerEvents(opts) };
  for (const [method, operation] of Object.entries(RUNTIME_OPERATIONS)) {
    const key = method as keyof typeof RUNTIME_OPERATIONS;
    (wrapped as Record<string, unknown>)[key] = timed(ops, operation, (...args: unknown[]) => (runtime[key] as (...a: unknown[]) => Promise<unknown>)(...args), now);
  }
  return wrapped as RuntimeService;
}

export function instrumentedImages(images: ImageService, ops: RuntimeOperations, now: () => number = () => performance.now()): ImageService {
  const wrapped: Partial<ImageService> = {};
  for (const [method, operation] of Object.entries(IMAGE_OPERATIONS)) {
    const key = method as keyof ImageService;
    (wrapped as Record<string, unknown>)[key] = timed(ops, operation, (...args: unknown[]) => (images[key] as (...a: unknown[]) => Promise<unknown>)(...args), now);
  }
  return wrapped as ImageService;
}
