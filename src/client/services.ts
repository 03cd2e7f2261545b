/**
 * The cluster's Services as the node lists and watches them (pkg/kubelet/kubelet.go NewMainKubelet:
 * a Service informer, for the service link variables each container gets). Null until the first
 * list: a pod synced before then waits for it (kubelet_pods.go getServiceEnvVarMap).
 */
import type { Service } from '../api/cluster.ts';
import type { Clock } from '../clock.ts';
import type { Logger } from '../log.ts';
import type { KubeApi } from './api.ts';
import { createReflector } from './reflector.ts';

export interface ServiceLister {
  services(): readonly Service[] | null;
  start(): void;
  stop(): void;
}

export function serviceLister(api: KubeApi, clock: Clock, log: Logger): ServiceLister {
  let services: Service[] | null = null;
  const reflector = createReflector<Service>({
    kind: 'Service',
    list: () => api.listServices(),
    watch: (resourceVersion, handlers) => api.watchServices(resourceVersion, handlers),
    clock,
    log,
    onChange: (store) => void (services = [...store.values()]),
  });
  return { services: () => services, start: () => reflector.start(), stop: () => reflector.stop() };
}
