/**
 * The CSI plugin's node expansion of a mounted PersistentVolume (pkg/volume/csi/expander.go
 * NodeExpand, nodeExpandWithClient; csi_client.go NodeExpandVolume): the driver must be
 * registered (else a transient failure, retried), one NodeGetCapabilities, and without
 * EXPAND_VOLUME the expansion is not supported by the driver; the PV's `nodeExpandSecretRef`
 * Secret read; then NodeExpandVolume{volume_id, volume_path: the pod's target path,
 * staging_target_path: the volume's staging path, capacity_range.required_bytes: the new size,
 * volume_capability: the PV's first access mode (ReadWriteOnce when none) and its fsType and
 * mountOptions, secrets}. Its errors are classed as the operation executor reads them: a driver
 * refusing FailedPrecondition cannot expand the volume in use; InvalidArgument, OutOfRange and
 * NotFound make the expansion infeasible; any other answer is a finished failure (the kubelet's
 * wrapping of an uncertain gRPC error hides it from IsOperationFinishedError, so it counts as
 * finished too).
 */
import type { PersistentVolume } from '../../api/storage.ts';
import { apiErrorText } from '../../client/api.ts';
import { type CsiNode, CsiNodeClient } from './client.ts';
import { CsiError } from './errors.ts';
import type { CsiDriverEndpoints } from './operations.ts';
import { CSI_PLUGIN_NAME, stagingTargetPath } from './paths.ts';
import type { CsiVolume } from './spec.ts';

/** How a node expansion failed, as node_expander.go tells them apart (volumetypes). */
export type NodeExpandFailure = 'transient' | 'notSupported' | 'failedPrecondition' | 'infeasible' | 'finished';

export class NodeExpandError extends Error {
  override readonly name = 'NodeExpandError';
  constructor(
    message: string,
    readonly failure: NodeExpandFailure,
  ) {
    super(message);
  }
}

export interface CsiExpandDeps {
  rootDir: string;
  drivers: CsiDriverEndpoints;
  /** A Secret's values, decoded (the node's API client); rejects with the API's error. */
  secret(namespace: string, name: string): Promise<Record<string, string>>;
  /** The CSI client of an endpoint; a test may give a double. */
  client?(endpoint: string): CsiNode;
}

export interface CsiExpansion {
  pv: PersistentVolume;
  volume: CsiVolume;
  /** The pod's target path (the mounter's GetPath). */
  targetPath: string;
  newBytes: number;
}

const reason = (err: unknown) => (err instanceof Error ? err.message : String(err));

/** expander.go NodeExpand for a filesystem volume; resolves once the driver expanded it. */
export async function csiNodeExpand(deps: CsiExpandDeps, { pv, volume, targetPath, newBytes }: CsiExpansion): Promise<void> {
  const endpoint = deps.drivers.endpoint(volume.driver);
  if (endpoint === null) throw new NodeExpandError(`driver name ${volume.driver} not found in the list of registered CSI drivers`, 'transient');
  const csi = deps.client ? deps.client(endpoint) : new CsiNodeClient(endpoint);
  let supported: boolean;
  try {
    supported = await csi.supports('EXPAND_VOLUME');
  } catch (err) {
    throw new NodeExpandError(`Expander.NodeExpand failed to check if node supports expansion : ${reason(err)}`, 'finished');
  }
  if (!supported) throw new NodeExpandError(`NodeExpand is not supported by the CSI driver ${volume.driver}`, 'notSupported');
  let secrets: Record<string, string> = {};
  const secretRef = (pv.spec?.['csi'] as { nodeExpandSecretRef?: { name: string; namespace: string } } | undefined)?.nodeExpandSecretRef;
  if (secretRef) {
    try {
      secrets = await deps.secret(secretRef.namespace, secretRef.name);
    } catch (err) {
      // csi_util.go getCredentialsFromSecret's words inside expander.go's.
      const found = `${CSI_PLUGIN_NAME}: failed to find the secret ${secretRef.name} in the namespace ${secretRef.namespace} with error: ${apiErrorText(err)}`;
      throw new NodeExpandError(`expander.NodeExpand failed to get NodeExpandSecretRef ${secretRef.namespace}/${secretRef.name}: ${found}`, 'finished');
    }
  }
  try {
    await csi.nodeExpandVolume({
      volumeId: volume.volumeHandle,
      volumePath: targetPath,
      stagingTargetPath: stagingTargetPath(deps.rootDir, volume.driver, volume.volumeHandle),
      newSizeBytes: newBytes,
      accessMode: volume.accessMode,
      fsType: volume.fsType,
      mountOptions: volume.mountOptions,
      secrets,
    });
  } catch (err) {
    const code = err instanceof CsiError ? err.code : null;
    if (code === 'FAILED_PRECONDITION') throw new NodeExpandError(`Expander.NodeExpand failed to expand the volume : ${reason(err)}`, 'failedPrecondition');
    if (code === 'INVALID_ARGUMENT' || code === 'OUT_OF_RANGE' || code === 'NOT_FOUND') throw new NodeExpandError(`Expander.NodeExpand failed to expand the volume ${reason(err)}`, 'infeasible');
    throw new NodeExpandError(`Expander.NodeExpand failed to expand the volume : ${reason(err)}`, 'finished');
  }
}
