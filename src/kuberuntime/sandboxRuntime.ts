/**
 * What a pod's sandbox runs on and in, settled before it is created (kuberuntime_sandbox.go
 * createPodSandbox; kuberuntime/util NamespacesForPod, generatePodSandboxConfig): the handler of
 * its RuntimeClass (runtimeclass_manager.go LookupRuntimeHandler) and its user namespace on that
 * handler. A failure is the pod's FailedCreatePodSandBox event; its sync is retried.
 */
import type { Pod } from '../api/types.ts';
import type { UserNamespace } from '../runtime/types.ts';
import type { PodWork } from './podWork.ts';

/** The kubelet's NotFound for a RuntimeClass (apierrors.NewNotFound on node.k8s.io runtimeclasses). */
export class RuntimeClassNotFoundError extends Error {
  override readonly name = 'RuntimeClassNotFoundError';
  constructor(className: string) {
    super(`runtimeclass.node.k8s.io ${JSON.stringify(className)} not found`);
  }
}

/**
 * The handler the pod's `runtimeClassName` names: '' for none (the runtime's default), else its
 * class's handler; a class the node does not know (deleted, not yet listed, or on a node without
 * an API server, which has no classes) is not found. The kubelet without an API server runs such a
 * pod on the default handler (kubelet.go NewMainKubelet makes no RuntimeClass manager then);
 * statelet refuses it rather than drop what the pod asked for.
 */
export function lookupRuntimeHandler(runtimeClassName: string | undefined, handlerOf: (name: string) => string | null): string {
  if (!runtimeClassName) return '';
  const handler = handlerOf(runtimeClassName);
  if (handler === null) throw new RuntimeClassNotFoundError(runtimeClassName);
  return handler;
}

export interface SandboxRuntime {
  runtimeHandler: string;
  userns: UserNamespace;
}

/** The pod's handler and user namespace; rejects with the kubelet's error. */
export async function sandboxRuntime(deps: Pick<PodWork, 'host' | 'cluster'>, pod: Pod): Promise<SandboxRuntime> {
  const runtimeHandler = lookupRuntimeHandler(pod.spec.runtimeClassName, (name) => deps.cluster?.runtimeClassHandler(name) ?? null);
  return { runtimeHandler, userns: await deps.host.userNamespaces.mappingsFor(pod, runtimeHandler) };
}
