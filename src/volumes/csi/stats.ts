/**
 * A published CSI volume's usage, as the kubelet's CSI metrics provider reads it
 * (pkg/volume/csi/csi_metrics.go metricsCsi.GetMetrics): the driver must be registered (else a
 * transient error), one NodeGetCapabilities, and only with GET_VOLUME_STATS one
 * NodeGetVolumeStats{volume_id, volume_path: the pod's target path} (csi_client.go
 * NodeGetVolumeStats sends nothing else); without that capability the volume has no stats
 * (volume.NewNotSupportedErrorWithDriverName: no entry, nothing logged). Volume health
 * (VOLUME_CONDITION → volumeHealthStats) is behind the CSIVolumeHealth gate, alpha and off by
 * default in the kubelet, and not read here.
 */
import { type CsiNode, type CsiVolumeMetrics, CsiNodeClient } from './client.ts';
import type { CsiDriverEndpoints } from './operations.ts';
import { CSI_PLUGIN_NAME } from './paths.ts';

/** A CSI volume of a pod as its stats are asked for. */
export interface CsiStatsVolume {
  driver: string;
  volumeHandle: string;
  /** Its target path (`…/volumes/kubernetes.io~csi/<spec>/mount`). */
  path: string;
}

/** The volume's usage; null when its driver does not report any (no GET_VOLUME_STATS). Rejects with the driver's error. */
export type CsiVolumeStatsReader = (volume: CsiStatsVolume) => Promise<CsiVolumeMetrics | null>;

/** Reads over the registered drivers' endpoints; `client` makes the CSI client of an endpoint (a test may give a double). */
export function csiVolumeStatsReader(drivers: CsiDriverEndpoints, client: (endpoint: string) => CsiNode = (endpoint) => new CsiNodeClient(endpoint)): CsiVolumeStatsReader {
  return async ({ driver, volumeHandle, path }) => {
    const endpoint = drivers.endpoint(driver);
    // csi_client.go newCsiDriverClient (a TransientOperationFailure in csi_metrics.go).
    if (endpoint === null) throw new Error(`${CSI_PLUGIN_NAME}: driver name ${driver} not found in the list of registered CSI drivers`);
    const csi = client(endpoint);
    if (!(await csi.supports('GET_VOLUME_STATS'))) return null;
    return csi.nodeGetVolumeStats(volumeHandle, path);
  };
}
