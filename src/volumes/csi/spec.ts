/**
 * A CSI volume as the kubelet's CSI plugin sees it, pure (pkg/volume/csi): what a PersistentVolume's
 * `csi` source or a pod's inline `csi` volume asks of the driver, and the CSIDriver object's rules
 * over it — whether it is attached (csi_plugin.go skipAttach), which lifecycle modes the driver
 * serves (csi_mounter.go supportsVolumeLifecycleMode), its fsGroup policy (getFSGroupPolicy,
 * supportsFSGroup) and the pod information it is given (csi_util.go getPodInfoAttrs).
 */
import type { Pod } from '../../api/types.ts';
import type { CSIDriver, CsiPersistentVolumeSource, CsiVolumeSource, PersistentVolume } from '../../api/storage.ts';
import { CSI_PLUGIN_NAME, inlineVolumeHandle } from './paths.ts';
import type { VolumeLifecycleMode } from './volData.ts';

/** What the CSI operations need of one volume. */
export interface CsiVolume {
  driver: string;
  volumeHandle: string;
  lifecycleMode: VolumeLifecycleMode;
  /** NodePublishVolume's readonly: the claim's or the source's readOnly (csi_plugin.go getReadOnlyFromSpec). */
  readOnly: boolean;
  fsType: string;
  /** The PV's first access mode, ReadWriteOnce when it has none; always ReadWriteOnce inline. */
  accessMode: string;
  /** The PV's access modes (fsGroup's ReadWriteOnceWithFSType); null inline. */
  accessModes: readonly string[] | null;
  /** The PV's mountOptions; none inline. */
  mountOptions: string[];
  volumeAttributes: Record<string, string>;
  nodeStageSecretRef: { name: string; namespace: string } | null;
  nodePublishSecretRef: { name: string; namespace: string } | null;
  /** Waits for the attach-detach controller (a PV whose driver does not say `attachRequired: false`). */
  attachable: boolean;
}

/** csi_plugin.go skipAttach: attach is required unless the CSIDriver says `attachRequired: false` (no CSIDriver: required). */
export function attachRequired(driver: CSIDriver | null): boolean {
  return driver?.spec.attachRequired !== false;
}

/** csi_plugin.go RequiresRemount: a CSIDriver with `requiresRepublish` has NodePublishVolume called again at each processing of the pod. */
export function requiresRepublish(driver: CSIDriver | null | undefined): boolean {
  return driver?.spec.requiresRepublish === true;
}

/** The unique name of a PersistentVolume's CSI volume (csi_plugin.go GetVolumeName: `<driver>^<handle>`, behind the plugin's name). */
export function csiUniqueName(driver: string, volumeHandle: string): string {
  return `${CSI_PLUGIN_NAME}/${driver}^${volumeHandle}`;
}

/** A PersistentVolume's CSI volume as a pod's claim uses it; `driver`: its CSIDriver object, null when there is none. */
export function persistentCsiVolume(pv: PersistentVolume, claimReadOnly: boolean, driver: CSIDriver | null): CsiVolume {
  const source = pv.spec!['csi'] as CsiPersistentVolumeSource;
  const accessModes = pv.spec?.accessModes ?? null;
  return {
    driver: source.driver,
    volumeHandle: source.volumeHandle,
    lifecycleMode: 'Persistent',
    readOnly: claimReadOnly || source.readOnly === true,
    fsType: source.fsType ?? '',
    accessMode: accessModes?.[0] ?? 'ReadWriteOnce',
    accessModes,
    mountOptions: pv.spec?.mountOptions ?? [],
    volumeAttributes: { ...source.volumeAttributes },
    nodeStageSecretRef: source.nodeStageSecretRef ?? null,
    nodePublishSecretRef: source.nodePublishSecretRef ?? null,
    attachable: attachRequired(driver),
  };
}

/** A pod's inline CSI volume: its handle made from the pod and volume (makeVolumeHandle), never attached nor staged. */
export function inlineCsiVolume(pod: Pod, name: string, source: CsiVolumeSource): CsiVolume {
  const secret = source.nodePublishSecretRef?.name;
  return {
    driver: source.driver,
    volumeHandle: inlineVolumeHandle(pod.metadata.uid, name),
    lifecycleMode: 'Ephemeral',
    readOnly: source.readOnly === true,
    fsType: source.fsType ?? '',
    accessMode: 'ReadWriteOnce',
    accessModes: null,
    mountOptions: [],
    volumeAttributes: { ...source.volumeAttributes },
    nodeStageSecretRef: null,
    // csi_mounter.go SetUpAt: the pod's namespace.
    nodePublishSecretRef: secret ? { name: secret, namespace: pod.metadata.namespace } : null,
    attachable: false,
  };
}

/** Go's `%q` of a string slice: `["Persistent"]`. */
const goQuotedList = (items: readonly string[]) => `[${items.map((item) => JSON.stringify(item)).join(' ')}]`;

/** csi_mounter.go supportsVolumeLifecycleMode: null when the driver serves the mode; the API defaults the modes to Persistent. */
export function lifecycleModeProblem(driverName: string, mode: VolumeLifecycleMode, driver: CSIDriver | null): string | null {
  if (!driver) return mode === 'Persistent' ? null : `volume mode "${mode}" not supported by driver ${driverName} (no CSIDriver object)`;
  const modes = driver.spec.volumeLifecycleModes ?? ['Persistent'];
  return modes.includes(mode) ? null : `volume mode "${mode}" not supported by driver ${driverName} (only supports ${goQuotedList(modes)})`;
}

export type FsGroupPolicy = 'None' | 'File' | 'ReadWriteOnceWithFSType';

/** csi_mounter.go getFSGroupPolicy: the CSIDriver's, ReadWriteOnceWithFSType without one; an empty one is an error. */
export function fsGroupPolicyOf(driver: CSIDriver | null): { policy: FsGroupPolicy } | { error: string } {
  if (!driver) return { policy: 'ReadWriteOnceWithFSType' };
  const policy = driver.spec.fsGroupPolicy;
  if (!policy) return { error: `${CSI_PLUGIN_NAME}: expected valid fsGroupPolicy, received nil value or empty string` };
  return { policy: policy as FsGroupPolicy };
}

/** csi_mounter.go supportsFSGroup: whether the kubelet gives the published volume to the pod's fsGroup. */
export function kubeletAppliesFsGroup(volume: Pick<CsiVolume, 'readOnly' | 'fsType' | 'accessModes' | 'lifecycleMode'>, fsGroup: number | undefined, policy: FsGroupPolicy): boolean {
  if (fsGroup === undefined || policy === 'None' || volume.readOnly) return false;
  if (policy === 'File') return true;
  if (volume.fsType === '') return false;
  // Inline volumes are always mounted ReadWriteOnce.
  if (volume.lifecycleMode === 'Ephemeral') return true;
  return volume.accessModes?.includes('ReadWriteOnce') ?? false;
}

/** csi_util.go getPodInfoAttrs: what a driver with `podInfoOnMount` gets in volume_context. */
export function podInfoAttributes(pod: Pod, mode: VolumeLifecycleMode): Record<string, string> {
  return {
    'csi.storage.k8s.io/pod.name': pod.metadata.name,
    'csi.storage.k8s.io/pod.namespace': pod.metadata.namespace,
    'csi.storage.k8s.io/pod.uid': pod.metadata.uid,
    'csi.storage.k8s.io/serviceAccount.name': String(pod.spec['serviceAccountName'] ?? ''),
    'csi.storage.k8s.io/ephemeral': String(mode === 'Ephemeral'),
  };
}

/** The volume_context key of the pod's service-account tokens (csi_mounter.go podServiceAccountTokenAttrs). */
export const SERVICE_ACCOUNT_TOKENS_KEY = 'csi.storage.k8s.io/serviceAccount.tokens';
