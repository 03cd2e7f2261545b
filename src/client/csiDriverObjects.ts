/**
 * The cluster's CSIDriver objects as the node lists and watches them (pkg/kubelet/volume_host.go:
 * the CSI plugin reads `csiDriverLister`, a CSIDriver informer of the kubelet's informer factory),
 * for the CSI volume plugin's per-driver settings (attachRequired, podInfoOnMount, fsGroupPolicy,
 * lifecycle modes, tokenRequests, requiresRepublish).
 *
 * The kubelet's plugin waits for the informer's first list before any lookup (WaitForCacheSync);
 * here a lookup made before the first list, or while every list fails (a node the API server
 * refuses the list to), is a live GET instead, so a mount never waits on the watch, and a 404 is
 * "no CSIDriver" either way. Once listed, the store answers, kept current by the watch, and stays
 * as it was while the watch reconnects (as an informer's store does).
 */
import type { CSIDriver } from '../api/storage.ts';
import type { Clock } from '../clock.ts';
import type { Logger } from '../log.ts';
import { type KubeApi, isNotFound } from './api.ts';
import { createReflector } from './reflector.ts';

export interface CsiDriverObjects {
  /** The driver's CSIDriver, or null when the cluster has none of that name; rejects only when a live GET fails. */
  get(name: string): Promise<CSIDriver | null>;
  /** Whether the answers come from the watched store (the first list done). */
  synced(): boolean;
  start(): void;
  stop(): void;
}

export function csiDriverObjects(api: Pick<KubeApi, 'getCSIDriver' | 'listCSIDrivers' | 'watchCSIDrivers'>, clock: Clock, log: Logger): CsiDriverObjects {
  let byName: Map<string, CSIDriver> | null = null;
  const reflector = createReflector<CSIDriver & { metadata: { uid?: string } }>({
    kind: 'CSIDriver',
    list: () => api.listCSIDrivers(),
    watch: (resourceVersion, handlers) => api.watchCSIDrivers(resourceVersion, handlers),
    clock,
    log,
    onChange: (store) => void (byName = new Map([...store.values()].map((driver) => [driver.metadata.name, driver]))),
  });
  return {
    get: async (name) => {
      if (byName) return byName.get(name) ?? null;
      return api.getCSIDriver(name).catch((err: unknown) => (isNotFound(err) ? null : Promise.reject(err)));
    },
    synced: () => byName !== null,
    start: () => reflector.start(),
    stop: () => reflector.stop(),
  };
}
