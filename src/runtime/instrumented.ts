/**
 * The runtime as the agent's metrics see it (pkg/kubelet/kuberuntime/instrumented_services.go):
 * every CRI call is counted and timed under the kubelet's operation name (`create_container`,
 * `list_podsandbox`, …, from the table of calls), and counted again when it fails. The container
 * event stream is not a call and is not counted, as in the kubelet.
 */
import { type Around, decorate } from './decorate.ts';
import type { ImageService, RuntimeService } from './types.ts';

export interface RuntimeOperations {
  observe(operation: string, seconds: number, failed: boolean): void;
}

/** Times each call and reports it under its operation name (instrumented_services.go recordOperation). */
function timed(ops: RuntimeOperations, now: () => number): Around {
  return async (call, _args, proceed) => {
    const started = now();
    let failed = false;
    try {
      return await proceed();
    } catch (err) {
      failed = true;
      throw err;
    } finally {
      ops.observe(call.operation, (now() - started) / 1000, failed);
    }
  };
}

export function instrumentedRuntime(runtime: RuntimeService, ops: RuntimeOperations, now: () => number = () => performance.now()): RuntimeService {
  return decorate(runtime, timed(ops, now));
}

export function instrumentedImages(images: ImageService, ops: RuntimeOperations, now: () => number = () => performance.now()): ImageService {
  return decorate(images, timed(ops, now));
}
