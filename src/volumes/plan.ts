/**
 * Where a pod's volumes live on the node and how containers mount them, pure
 * (pkg/kubelet/kubelet_pods.go makeMounts, getPodVolumeDir; pkg/volume plugin names):
 * `<pods dir>/<uid>/volumes/kubernetes.io~<plugin>/<name>`, a `volumeMount` naming an unknown
 * volume fails the container's config with the kubelet's message, a relative `mountPath` is made
 * absolute, and `readOnly` is carried to the runtime.
 *
 * Plugins built: emptyDir, configMap and secret (their files: `keyedPayload`), downwardAPI
 * (`downwardPayload`), projected (`projectedPayload`: its sources' files in one directory); the
 * last four always mounted read-only; hostPath (the node's path, checked by its type:
 * `hostPathCheck`). A claim-backed volume (persistentVolumeClaim, generic ephemeral) is where the
 * volume manager set it up. A volume of another plugin is never mounted: the pod waits, with a
 * FailedMount naming the plugin (`unsupportedVolume`).
 */
import path from 'node:path';
import type { Container, EnvVarSource, Pod } from '../api/types.ts';
import { containerResourceValue, formatMap, podFieldValue } from '../api/downward.ts';
import type { ResourceAmounts } from '../api/quantity.ts';
import type { MountPropagation } from '../runtime/types.ts';
import type { ClusterTrustBundleProjection } from './trustAnchors.ts';

interface KeyToPath {
  key: string;
  path: string;
  mode?: number;
}

export interface PodVolume {
  name: string;
  emptyDir?: { medium?: string; sizeLimit?: string | number };
  configMap?: { name?: string; items?: KeyToPath[]; defaultMode?: number; optional?: boolean };
  secret?: { secretName?: string; items?: KeyToPath[]; defaultMode?: number; optional?: boolean };
  downwardAPI?: { items?: DownwardItem[]; defaultMode?: number };
  hostPath?: { path: string; type?: string };
  projected?: { sources?: ProjectionSource[]; defaultMode?: number };
  [plugin: string]: unknown;
}

/** One source of a projected volume (each takes the volume's defaultMode). */
interface ProjectionSource {
  configMap?: { name?: string; items?: KeyToPath[]; optional?: boolean };
  secret?: { name?: string; items?: KeyToPath[]; optional?: boolean };
  downwardAPI?: { items?: DownwardItem[] };
  serviceAccountToken?: { path: string; audience?: string; expirationSeconds?: number };
  clusterTrustBundle?: ClusterTrustBundleProjection;
  [source: string]: unknown;
}

interface DownwardItem {
  path: string;
  fieldRef?: { fieldPath: string };
  resourceFieldRef?: NonNullable<EnvVarSource['resourceFieldRef']>;
  mode?: number;
}

type Plugin = 'emptyDir' | 'configMap' | 'secret' | 'downwardAPI' | 'projected' | 'hostPath';

export interface VolumeMountPlan {
  volumeName: string;
  containerPath: string;
  hostPath: string;
  readonly: boolean;
  propagation?: MountPropagation;
  /** A path inside the volume to mount instead of its root (validated, expanded), resolved by subPath.ts. */
  subPath?: string;
}

/** The CRI propagation of a volumeMount's mode (kubelet_pods.go translateMountPropagation). */
export function mountPropagation(mode: string | undefined): MountPropagation | Error {
  if (mode === undefined || mode === 'None') return 'PROPAGATION_PRIVATE';
  if (mode === 'HostToContainer') return 'PROPAGATION_HOST_TO_CONTAINER';
  if (mode === 'Bidirectional') return 'PROPAGATION_BIDIRECTIONAL';
  return new Error(`invalid MountPropagation mode: "${mode}"`);
}

/** Why a subPath cannot be used (kubelet_pods.go makeMounts), or null. */
function subPathProblem(subPath: string): string | null {
  if (subPath.startsWith('/')) return `error SubPath \`${subPath}\` must not be an absolute path`;
  if (subPath.split('/').includes('..')) return `unable to provision SubPath \`${subPath}\`: must not contain '..'`;
  return null;
}

/** The plugin directory names (`kubernetes.io/empty-dir` with `/` as `~`). */
export const PLUGIN_DIRS: Record<Plugin, string> = {
  emptyDir: 'kubernetes.io~empty-dir',
  configMap: 'kubernetes.io~configmap',
  secret: 'kubernetes.io~secret',
  downwardAPI: 'kubernetes.io~downward-api',
  projected: 'kubernetes.io~projected',
  hostPath: 'kubernetes.io~host-path',
};

/** The volume's plugin, when this node has it. */
export function pluginOf(volume: PodVolume): Plugin | null {
  if (volume.emptyDir) return 'emptyDir';
  if (volume.configMap) return 'configMap';
  if (volume.secret) return 'secret';
  if (volume.downwardAPI) return 'downwardAPI';
  if (volume.projected) return 'projected';
  return volume.hostPath ? 'hostPath' : null;
}

export function podVolumes(pod: Pod): PodVolume[] {
  const volumes = pod.spec['volumes'];
  return Array.isArray(volumes) ? (volumes as PodVolume[]) : [];
}

/** The volume's directory on the node. */
export function volumeDir(podsDir: string, pod: Pod, volume: PodVolume): string {
  // A hostPath volume is the node's own path: it has no directory of the pod's.
  if (volume.hostPath) return volume.hostPath.path;
  return path.join(podsDir, pod.metadata.uid, 'volumes', PLUGIN_DIRS[pluginOf(volume) ?? 'emptyDir'], volume.name);
}

/**
 * Why this node cannot set a volume up, or null when it can. A pod never runs without a volume it
 * mounts: as in the kubelet, whose volume manager finds no plugin for it ("no volume plugin
 * matched", volume/plugins.go FindPluginBySpec), the pod waits in ContainerCreating, FailedMount.
 */
export function unsupportedVolume(volume: PodVolume): string | null {
  if (pluginOf(volume)) return null;
  const plugin = Object.keys(volume).find((k) => k !== 'name') ?? 'unknown';
  return `no volume plugin matched: this node does not mount ${plugin} volumes`;
}

/** Where the volume manager set a claim-backed or CSI volume up (volumes/world.ts MountedVolume). */
interface MountedClaim {
  path: string;
  readOnly: boolean;
}

/**
 * The container's mounts, or the error that keeps it from starting. `expand` replaces `$(VAR)`
 * references of a subPathExpr with the container's environment; `mounted` gives where the volume
 * manager set the pod's claim-backed and CSI volumes up (kubelet_pods.go makeMounts reads the mounter of
 * each volume: the path, and read-only for a read-only claim or CSI volume).
 */
export function containerMounts(
  podsDir: string,
  pod: Pod,
  container: Container,
  expand: (text: string) => string = (t) => t,
  mounted: ReadonlyMap<string, MountedClaim> = new Map(),
): { mounts: VolumeMountPlan[] } | { error: string } {
  const volumes = new Map(podVolumes(pod).map((v) => [v.name, v]));
  const mounts: VolumeMountPlan[] = [];
  for (const mount of container.volumeMounts ?? []) {
    const volume = volumes.get(mount.name);
    if (!volume) return { error: `cannot find volume "${mount.name}" to mount into container "${container.name}"` };
    const claimed = pathFromVolumeManager(volume) ? mounted.get(volume.name) : undefined;
    // A claim-backed or CSI volume the volume manager has not set up is not among the pod's volumes (makeMounts).
    if (pathFromVolumeManager(volume) && !claimed) return { error: `cannot find volume "${mount.name}" to mount into container "${container.name}"` };
    const unsupported = claimed ? null : unsupportedVolume(volume);
    if (unsupported) return { error: `volume "${volume.name}": ${unsupported}` };
    const containerPath = mount.mountPath.startsWith('/') ? mount.mountPath : `/${mount.mountPath}`;
    // ConfigMap, Secret, downwardAPI and projected volumes are always read-only (their plugins say so).
    const plugin = pluginOf(volume);
    const readonly = mount.readOnly === true || (claimed ? claimed.readOnly : plugin !== 'emptyDir' && plugin !== 'hostPath');
    const propagation = mountPropagation(mount.mountPropagation);
    if (propagation instanceof Error) return { error: propagation.message };
    const plan: VolumeMountPlan = { volumeName: volume.name, containerPath, hostPath: claimed ? claimed.path : volumeDir(podsDir, pod, volume), readonly, propagation };
    const subPath = mount.subPathExpr ? expand(mount.subPathExpr) : mount.subPath;
    if (subPath) {
      const problem = subPathProblem(subPath);
      if (problem) return { error: problem };
      plan.subPath = subPath;
    }
    mounts.push(plan);
  }
  return { mounts };
}

/**
 * A volume whose node path and read-only state only the volume manager knows: one the pod gets
 * through a claim (a persistentVolumeClaim, or a generic ephemeral volume), or an inline CSI volume
 * (published by its driver).
 */
function pathFromVolumeManager(volume: PodVolume): boolean {
  return volume['persistentVolumeClaim'] !== undefined || volume['ephemeral'] !== undefined || volume['csi'] !== undefined;
}

/** The files a volume holds, or why it cannot be set up. */
export type Payload = { files: { path: string; content: Buffer; mode: number }[] } | { error: string };

/** Several errors as one message, as Go's utilerrors.NewAggregate prints them (`[a, b]`; one alone as is). */
export function aggregateErrors(errors: readonly string[]): string {
  const unique = [...new Set(errors)];
  return unique.length === 1 ? unique[0]! : `[${unique.join(', ')}]`;
}

/** The API's default file mode of configMap, secret, downwardAPI and projected volumes. */
const DEFAULT_MODE = 0o644;

/**
 * The files of a configMap or secret volume (pkg/volume/configmap MakePayload, secret MakePayload):
 * every key, or only `items` at their paths; `optional` lets a missing object or key be empty;
 * otherwise the kubelet's message. `values` is null when the object does not exist.
 */
export function keyedPayload(
  volume: PodVolume,
  values: Readonly<Record<string, Buffer>> | null,
): Payload {
  const isConfigMap = volume.configMap !== undefined;
  const source = (volume.configMap ?? volume.secret)!;
  const name = (isConfigMap ? volume.configMap!.name : volume.secret!.secretName) ?? '';
  if (!values) {
    if (source.optional) return { files: [] };
    return { error: `${isConfigMap ? 'configmap' : 'secret'} "${name}" not found` };
  }
  const mode = source.defaultMode ?? DEFAULT_MODE;
  if (!source.items?.length) return { files: Object.keys(values).sort().map((key) => ({ path: key, content: values[key]!, mode })) };
  const files: { path: string; content: Buffer; mode: number }[] = [];
  for (const item of source.items) {
    const content = values[item.key];
    if (content === undefined) {
      if (source.optional) continue;
      return { error: isConfigMap ? `configmap references non-existent config key: ${item.key}` : `references non-existent secret key: ${item.key}` };
    }
    files.push({ path: item.path, content, mode: item.mode ?? mode });
  }
  return { files };
}

/** The field paths a downwardAPI volume may use (IPs and spec fields are for the environment only). */
const VOLUME_FIELDS = /^metadata\.(name|namespace|uid|labels|annotations)$|^metadata\.(labels|annotations)\['.*'\]$/;

/**
 * The files of a downwardAPI volume (pkg/volume/downwardapi CollectData): each item's field or
 * resource at its path; whole label and annotation maps as `key="value"` lines; errors of all items
 * joined, one failing the volume.
 */
export function downwardPayload(
  pod: Pod,
  volume: PodVolume,
  allocatable: ResourceAmounts | undefined,
): Payload {
  const source = volume.downwardAPI ?? {};
  const mode = source.defaultMode ?? DEFAULT_MODE;
  const files: { path: string; content: Buffer; mode: number }[] = [];
  const errors: string[] = [];
  for (const item of source.items ?? []) {
    let value: string | Error;
    if (item.fieldRef) {
      const fieldPath = item.fieldRef.fieldPath;
      if (!VOLUME_FIELDS.test(fieldPath)) value = new Error(`unsupported fieldPath: ${fieldPath}`);
      else if (fieldPath === 'metadata.labels') value = formatMap(pod.metadata.labels);
      else if (fieldPath === 'metadata.annotations') value = formatMap(pod.metadata.annotations);
      else value = podFieldValue(pod, fieldPath, { podIPs: [], hostIPs: [] });
    } else if (item.resourceFieldRef) {
      value = containerResourceValue(pod, undefined, item.resourceFieldRef, allocatable);
    } else {
      value = '';
    }
    if (value instanceof Error) errors.push(`${item.path}: ${value.message}`);
    else files.push({ path: item.path, content: Buffer.from(value), mode: item.mode ?? mode });
  }
  return errors.length ? { error: aggregateErrors(errors) } : { files };
}

/** What a projected volume's sources resolved to, by source index. */
interface ProjectionInputs {
  /** A configMap's or secret's values; null: the object does not exist. */
  objects: ReadonlyMap<number, Readonly<Record<string, Buffer>> | null>;
  /** A service-account token, or why there is none. */
  tokens: ReadonlyMap<number, string | Error>;
  /** A clusterTrustBundle source's PEM trust anchors (trustAnchors.ts), or the manager's error. */
  trustAnchors?: ReadonlyMap<number, Buffer | Error>;
}

/**
 * The files of a projected volume (pkg/volume/projected/projected.go collectData): each source in
 * order, with the volume's defaultMode, a later source overwriting a path an earlier one wrote;
 * the errors of every source together. A missing optional object gives no files.
 */
export function projectedPayload(pod: Pod, volume: PodVolume, inputs: ProjectionInputs, allocatable: ResourceAmounts | undefined): Payload {
  const defaultMode = volume.projected?.defaultMode ?? DEFAULT_MODE;
  const byPath = new Map<string, { path: string; content: Buffer; mode: number }>();
  const errors: string[] = [];
  (volume.projected?.sources ?? []).forEach((source, index) => {
    let part: Payload;
    if (source.configMap) {
      part = keyedPayload({ name: volume.name, configMap: { ...source.configMap, defaultMode } }, inputs.objects.get(index) ?? null);
    } else if (source.secret) {
      const { name, ...rest } = source.secret;
      part = keyedPayload({ name: volume.name, secret: { ...rest, ...(name !== undefined ? { secretName: name } : {}), defaultMode } }, inputs.objects.get(index) ?? null);
    } else if (source.downwardAPI) {
      part = downwardPayload(pod, { name: volume.name, downwardAPI: { ...source.downwardAPI, defaultMode } }, allocatable);
    } else if (source.serviceAccountToken) {
      const token = inputs.tokens.get(index);
      part = token === undefined || token instanceof Error ? { error: token?.message ?? 'no token' } : { files: [{ path: source.serviceAccountToken.path, content: Buffer.from(token), mode: defaultMode }] };
    } else if (source.clusterTrustBundle) {
      // An optional source that found nothing still writes its (empty) file; with an fsGroup the
      // file is 0600 before the group is given its share (collectData).
      const anchors = inputs.trustAnchors?.get(index);
      const mode = pod.spec.securityContext?.fsGroup === undefined ? defaultMode : 0o600;
      part = anchors === undefined || anchors instanceof Error ? { error: anchors?.message ?? 'no trust anchors' } : { files: [{ path: source.clusterTrustBundle.path, content: anchors, mode }] };
    } else {
      return;
    }
    if ('error' in part) errors.push(part.error);
    else for (const file of part.files) byPath.set(file.path, file);
  });
  return errors.length ? { error: aggregateErrors(errors) } : { files: [...byPath.values()] };
}

/** What a hostPath volume's `type` wants of the path, and the word its error uses. */
const HOST_PATH_KINDS: Record<string, { kind: 'directory' | 'file' | 'socket' | 'char' | 'block'; word: string; create?: boolean }> = {
  DirectoryOrCreate: { kind: 'directory', word: 'directory', create: true },
  Directory: { kind: 'directory', word: 'directory' },
  FileOrCreate: { kind: 'file', word: 'file', create: true },
  File: { kind: 'file', word: 'file' },
  Socket: { kind: 'socket', word: 'socket file' },
  CharDevice: { kind: 'char', word: 'character device' },
  BlockDevice: { kind: 'block', word: 'block device' },
};

type HostPathCheck = { ok: true } | { create: 'directory' | 'file' } | { error: string };

/**
 * The hostPath type check (pkg/volume/hostpath/host_path.go checkType): `found` is what is at the
 * path now (null: nothing). Unset type: no check.
 */
export function hostPathCheck(volume: { path: string; type?: string }, found: 'directory' | 'file' | 'socket' | 'char' | 'block' | 'other' | null): HostPathCheck {
  if (volume.path.split('/').includes('..')) return { error: `invalid HostPath \`${volume.path}\`: must not contain '..'` };
  const type = volume.type ?? '';
  if (type === '') return { ok: true };
  const wanted = HOST_PATH_KINDS[type];
  if (!wanted) return { error: `${type} is an invalid volume type` };
  if (found === null) {
    if (wanted.create) return { create: wanted.kind as 'directory' | 'file' };
    return { error: `hostPath ${volume.path} doesn't exist` };
  }
  if (found !== wanted.kind) return { error: `hostPath type check failed: ${volume.path} is not a ${wanted.word}` };
  return { ok: true };
}
