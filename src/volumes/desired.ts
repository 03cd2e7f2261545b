/**
 * What a pod's volumes are to the volume manager, pure (pkg/kubelet/volumemanager/cache
 * desired_state_of_world.go AddPodToVolume, pkg/volume/util GetUniqueVolumeNameFromSpec,
 * GetPodVolumeNames): each volume a container mounts, with the plugin that serves it, its unique
 * name on the node and the name its operations report it by; and how the wait for them is worded
 * when they are not all mounted (volume_manager.go WaitForAttachAndMount).
 */
import type { Pod } from '../api/types.ts';
import type { PodVolumeRef } from '../events.ts';
import type { CSIDriver, CsiVolumeSource } from '../api/storage.ts';
import type { BoundClaim } from './claims.ts';
import { CSI_PLUGIN_NAME } from './csi/paths.ts';
import { type CsiVolume, csiUniqueName, inlineCsiVolume, persistentCsiVolume, requiresRepublish } from './csi/spec.ts';
import { type PodVolume, pluginOf, unsupportedVolume } from './plan.ts';

/** The volume plugins this node serves, by what the volume or its PersistentVolume is. */
export type VolumeKind = PodVolumeRef['kind'];

/** The kinds the CSI plugin serves through a driver (src/volumes/csi/operations.ts); the others are set up in-process (setUp.ts). */
export type CsiKind = 'csiPV' | 'csiInline';
export type InTreeKind = Exclude<VolumeKind, CsiKind>;

export function isCsiKind(kind: VolumeKind): kind is CsiKind {
  return kind === 'csiPV' || kind === 'csiInline';
}

/** Each kind's plugin name (pkg/volume/<plugin> ...PluginName). */
export const PLUGIN_NAMES: Record<VolumeKind, string> = {
  emptyDir: 'kubernetes.io/empty-dir',
  configMap: 'kubernetes.io/configmap',
  secret: 'kubernetes.io/secret',
  downwardAPI: 'kubernetes.io/downward-api',
  projected: 'kubernetes.io/projected',
  hostPath: 'kubernetes.io/host-path',
  hostPathPV: 'kubernetes.io/host-path',
  localPV: 'kubernetes.io/local-volume',
  csiPV: CSI_PLUGIN_NAME,
  csiInline: CSI_PLUGIN_NAME,
};

/** The plugins whose SetUp runs again each time the pod is processed, to refresh their files (RequiresRemount). */
const REMOUNTED: ReadonlySet<VolumeKind> = new Set(['configMap', 'secret', 'downwardAPI', 'projected']);

export interface DesiredVolume {
  /** The pod's name for it (`volumes[].name`): what its containers' volumeMounts name. */
  outerName: string;
  /** The node's name for it: `<plugin>/<pv>` for a device-mountable one, else `<plugin>/<pod uid>-<spec name>`. */
  uniqueName: string;
  /** What its operations and events call it: the PV's name for a claim, else the pod's volume name. */
  specName: string;
  kind: VolumeKind;
  volume: PodVolume;
  /** The claim it resolved to, for a claim-backed volume. */
  claim?: BoundClaim;
  /** Set up again at each processing of its pod. */
  requiresRemount: boolean;
  /** What a CSI volume asks of its driver. */
  csi?: CsiVolume;
  /** The attach-detach controller attaches it to the node first (a CSI PV whose driver requires attach). */
  attachable: boolean;
  /** A raw block volume (its PersistentVolume's volumeMode Block): mapped as a device, not mounted. */
  map?: true;
}

/** The names of the volumes the pod's containers mount or use as devices (GetPodVolumeNames), in the pod's order. */
export function expectedVolumeNames(pod: Pod): { mounts: Set<string>; devices: Set<string> } {
  const all = [...(pod.spec.initContainers ?? []), ...pod.spec.containers, ...((pod.spec['ephemeralContainers'] as Pod['spec']['containers'] | undefined) ?? [])];
  const mounts = new Set(all.flatMap((c) => (c.volumeMounts ?? []).map((m) => m.name)));
  const devices = new Set(all.flatMap((c) => ((c as { volumeDevices?: { name: string }[] }).volumeDevices ?? []).map((d) => d.name)));
  return { mounts, devices };
}

/** The PersistentVolume source keys of in-tree plugins (core/v1 PersistentVolumeSource), for naming one this node lacks. */
function pvSourceOf(claim: BoundClaim): string {
  const spec = claim.pv.spec ?? {};
  return Object.keys(spec).find((key) => !['claimRef', 'volumeMode', 'accessModes', 'capacity', 'mountOptions', 'nodeAffinity', 'persistentVolumeReclaimPolicy', 'storageClassName', 'volumeAttributesClassName'].includes(key)) ?? 'unknown';
}

/**
 * The volume as the manager keeps it, or why no plugin of this node serves it. `csiDriver`: the
 * CSIDriver of a CSI volume's driver (null: it has none), which says whether it is attached and
 * whether it is published again at each processing of its pod.
 */
export function desiredVolume(pod: Pod, volume: PodVolume, claim?: BoundClaim, csiDriver?: CSIDriver | null): DesiredVolume | { error: string } {
  const uid = pod.metadata.uid;
  if (claim) {
    const pvName = claim.pv.metadata.name;
    const spec = claim.pv.spec ?? {};
    // A claim of volumeMode Block is in some container's volumeDevices (claims.ts checked the use).
    const map = spec.volumeMode === 'Block';
    const base = { outerName: volume.name, specName: pvName, volume, claim, requiresRemount: false, attachable: false, ...(map ? { map: true as const } : {}) };
    // A CSI volume is device-mountable: one name for all its pods, its driver's and handle's.
    if (spec['csi']) {
      const csi = persistentCsiVolume(claim.pv, claim.readOnly, csiDriver ?? null);
      return { ...base, kind: 'csiPV', uniqueName: csiUniqueName(csi.driver, csi.volumeHandle), csi, attachable: csi.attachable, requiresRemount: requiresRepublish(csiDriver) };
    }
    // A local volume is device-mountable, so one name for all its pods; a hostPath one is per pod (GetUniqueVolumeNameFromSpec).
    if (spec.local) return { ...base, kind: 'localPV', uniqueName: `${PLUGIN_NAMES.localPV}/${pvName}` };
    // The hostPath plugin has no block mapper (FindMapperPluginBySpec finds none).
    if (spec.hostPath && map) return { error: `no volume plugin matched: this node does not map hostPath volumes of volumeMode Block (PersistentVolume ${pvName})` };
    if (spec.hostPath) return { ...base, kind: 'hostPathPV', uniqueName: `${PLUGIN_NAMES.hostPathPV}/${uid}-${pvName}` };
    return { error: `no volume plugin matched: this node does not mount ${pvSourceOf(claim)} volumes (PersistentVolume ${pvName})` };
  }
  const base = { outerName: volume.name, specName: volume.name, volume, attachable: false };
  // An inline CSI volume is neither attachable nor device-mountable: a name per pod.
  const inline = volume['csi'] as CsiVolumeSource | undefined;
  if (inline) return { ...base, kind: 'csiInline', uniqueName: `${CSI_PLUGIN_NAME}/${uid}-${volume.name}`, requiresRemount: requiresRepublish(csiDriver), csi: inlineCsiVolume(pod, volume.name, inline) };
  const plugin = pluginOf(volume);
  if (!plugin) return { error: unsupportedVolume(volume)! };
  return { ...base, kind: plugin, uniqueName: `${PLUGIN_NAMES[plugin]}/${uid}-${volume.name}`, requiresRemount: REMOUNTED.has(plugin) };
}

/** Go's `%v` of a string slice: `[a b]`. */
const goList = (names: readonly string[]) => `[${names.join(' ')}]`;

/**
 * WaitForAttachAndMount's error: the expected volumes not mounted, those not attached, those the
 * populator could not process (each list sorted), and the cause — the pod's processing errors
 * joined with `; `, or the end of the wait.
 */
export function waitErrorText(unmounted: readonly string[], unattached: readonly string[], notProcessed: readonly string[], cause: string): string {
  const sorted = (names: readonly string[]) => [...names].sort();
  return `unmounted volumes=${goList(sorted(unmounted))}, unattached volumes=${goList(sorted(unattached))}, failed to process volumes=${goList(sorted(notProcessed))}: ${cause}`;
}
