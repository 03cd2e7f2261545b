/**
 * The cluster's RuntimeClasses as the node lists and watches them (pkg/kubelet/runtimeclass
 * runtimeclass_manager.go: a RuntimeClass informer), for a pod's `runtimeClassName` to be resolved
 * to the handler its sandbox runs on. Until the first list the store is empty, as the informer's
 * is: a class looked up then is not found, and the pod's sync is retried.
 */
import type { RuntimeClass } from '../api/cluster.ts';
import type { Clock } from '../clock.ts';
import type { Logger } from '../log.ts';
import type { KubeApi } from './api.ts';
import { createReflector } from './reflector.ts';

export interface RuntimeClassLister {
  /** The handler of the class named, or null when the node knows no class by that name. */
  handlerOf(name: string): string | null;
  start(): void;
  stop(): void;
}

export function runtimeClassLister(api: KubeApi, clock: Clock, log: Logger): RuntimeClassLister {
  let handlers = new Map<string, string>();
  const reflector = createReflector<RuntimeClass>({
    kind: 'RuntimeClass',
    list: () => api.listRuntimeClasses(),
    watch: (resourceVersion, watchHandlers) => api.watchRuntimeClasses(resourceVersion, watchHandlers),
    clock,
    log,
    onChange: (store) => void (handlers = new Map([...store.values()].map((rc) => [rc.metadata.name, rc.handler]))),
  });
  return { handlerOf: (name) => handlers.get(name) ?? null, start: () => reflector.start(), stop: () => reflector.stop() };
}
