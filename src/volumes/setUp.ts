/**
 * Setting up a pod's volumes on disk before its containers start (the kubelet's volume manager
 * reconciler and the plugins' SetUpAt), again at every sync so that ConfigMap and Secret changes
 * and token refreshes reach the files, and tearing them down with the pod:
 * - the pod's directories first, 0750, for every pod at every sync (pkg/kubelet/kubelet_pods.go
 *   makePodDataDirs; ones already there are not touched, mkdirAll.ts);
 * - emptyDir (pkg/volume/emptydir/empty_dir.go): the directory, mode exactly 0777 whatever the
 *   umask, on tmpfs for `medium: Memory`, on hugetlbfs for `HugePages[-<size>]` (hugePages.ts,
 *   mounter.ts), then the `ready` marker under
 *   `plugins/kubernetes.io~empty-dir/<name>`; once that marker is there, later syncs write
 *   nothing (SetUpAt returns early), so a full or read-only disk does not fail a running pod;
 * - configMap (on disk), secret, downwardAPI and projected (on tmpfs, as their plugins wrap a
 *   memory-backed emptyDir): their files written with the atomic writer (atomicWriter.ts), from
 *   the objects read with the node's identity (as they are now at a volume's first setup, then
 *   at most the object reader's TTL old), the pod's own fields, service-account tokens asked
 *   of the TokenRequest API (tokens.ts), and ClusterTrustBundles' trust anchors (trustAnchors.ts,
 *   listed through the same reader, so a changed bundle reaches the file at a later sync);
 * - hostPath (pkg/volume/hostpath): the node's path itself, checked (and created, for the
 *   `…OrCreate` types) by its `type`.
 * With the pod's `securityContext.fsGroup`, each volume but hostPath is given to that group
 * (volumeOwnership.ts): an emptyDir once, after its directory is made and before its marker; a
 * payload volume each time a new set of files is written, before it becomes visible.
 * Teardown unmounts what was mounted under the pod, forgets its tokens and removes its directory.
 */
import { chmod, lstat, mkdir, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { Pod } from '../api/types.ts';
import { amount, type ResourceAmounts } from '../api/quantity.ts';
import { NO_TRUST_BUNDLE_API, type ObjectReader } from '../client/objects.ts';
import type { Logger } from '../log.ts';
import { writeAtomically } from './atomicWriter.ts';
import { mkdirAll } from './mkdirAll.ts';
import { type Mounter, tmpfsSizeBytes } from './mounter.ts';
import { hugePageSize, isHugePageMedium } from './hugePages.ts';
import { PLUGIN_DIRS, type Payload, type PodVolume, downwardPayload, hostPathCheck, keyedPayload, projectedPayload, volumeDir } from './plan.ts';
import type { DesiredVolume, InTreeKind } from './desired.ts';
import { fileTypeAt, setUpLocalVolume, tearDownLocalVolume } from './persistent.ts';
import { removeOrphanedPodDir } from './orphanedPodDir.ts';
import type { TokenSource } from './tokens.ts';
import { type ClusterTrustBundleProjection, trustAnchorsFor } from './trustAnchors.ts';
import { fileModeWithFsGroup } from './ownership.ts';
import { type OwnershipFs, setVolumeOwnership } from './volumeOwnership.ts';

/** A volume that could not be set up, with the kubelet's `MountVolume.SetUp failed …` message. */
class VolumeSetUpError extends Error {
  override readonly name = 'VolumeSetUpError';
}

export interface VolumeDeps {
  podsDir: string;
  /** Absent: a node without an API server (a configMap or secret volume cannot be set up). */
  objects?: ObjectReader;
  /** Absent: a node without an API server (a service-account token cannot be had). */
  tokens?: TokenSource;
  mounter: Mounter;
  /** The node's allocatable amounts: the limit a container leaves unset (downwardAPI resourceFieldRef), the tmpfs size. */
  allocatable?: ResourceAmounts;
  now(): number;
  /** Where a refused fsGroup change is reported (once per cause); absent: not reported. */
  log?: Logger;
  /** The calls the fsGroup change makes (tests); the system's by default. */
  ownershipFs?: OwnershipFs;
}

/** The service-account token lifetime when a projection does not say (the API's default). */
const DEFAULT_TOKEN_SECONDS = 3600;

/** `<podsDir>/<uid>` and its `volumes` and `plugins` directories, made where missing (makePodDataDirs). */
export async function makePodDataDirs(podsDir: string, uid: string): Promise<void> {
  const podDir = path.join(podsDir, uid);
  for (const dir of [podDir, path.join(podDir, 'volumes'), path.join(podDir, 'plugins')]) await mkdirAll(dir, 0o750);
}

/**
 * The pods whose data directories the node has made (or found there), so that the syncs after the
 * first do not look for them again: three stat calls per sync were a twentieth of the agent's CPU
 * in a burst of pod starts. A pod is looked at again after its directory is removed, and after one
 * of its volumes failed to set up (its directories may be what is missing).
 */
export class PodDataDirs {
  private readonly made = new Set<string>();

  constructor(private readonly podsDir: string) {}

  async make(uid: string): Promise<void> {
    if (this.made.has(uid)) return;
    await makePodDataDirs(this.podsDir, uid);
    this.made.add(uid);
  }

  forget(uid: string): void {
    this.made.delete(uid);
  }
}

/**
 * Sets one of the pod's volumes up (the plugin's SetUp; the pod's data directories are made
 * already, makePodDataDirs) and returns the node path its containers mount; rejects with the
 * kubelet's `MountVolume.SetUp failed for volume "<name>" : <cause>`.
 */
export async function setUpVolume(deps: VolumeDeps, pod: Pod, desired: DesiredVolume & { kind: InTreeKind }): Promise<string> {
  const { volume } = desired;
  try {
    switch (desired.kind) {
      case 'hostPath':
        await checkHostPath(volume.hostPath!);
        return volume.hostPath!.path;
      case 'hostPathPV': {
        const hostPath = desired.claim!.pv.spec!.hostPath!;
        await checkHostPath(hostPath);
        return hostPath.path;
      }
      case 'localPV': {
        const { pv, readOnly } = desired.claim!;
        const dir = await setUpLocalVolume(deps.mounter, deps.podsDir, pod.metadata.uid, pv, readOnly);
        // local.go SetUpAt: a writable volume is given to the pod's fsGroup.
        if (!readOnly) await giveToFsGroup(deps, pod, volume, dir, false);
        return dir;
      }
      case 'emptyDir':
        await setUpEmptyDir(deps, pod, volume);
        return volumeDir(deps.podsDir, pod, volume);
      default:
        await writePayload(deps, pod, volume);
        return volumeDir(deps.podsDir, pod, volume);
    }
  } catch (err) {
    const text = err instanceof Error ? err.message : String(err);
    // A device step's failure names its own operation (MountVolume.MountDevice).
    throw new VolumeSetUpError(text.startsWith('MountVolume.') ? text : `MountVolume.SetUp failed for volume "${desired.specName}" : ${text}`);
  }
}

/**
 * Tears one volume of a pod down (the plugin's TearDown): a directory of the pod's is unmounted
 * and removed with what it holds (an emptyDir's data goes, so an evicted pod frees the disk it
 * filled); the node's own paths (hostPath) are left as they are.
 */
export async function tearDownVolume(deps: Pick<VolumeDeps, 'podsDir' | 'mounter'>, uid: string, desired: Pick<DesiredVolume, 'outerName' | 'specName'> & { kind: InTreeKind }): Promise<void> {
  if (desired.kind === 'hostPath' || desired.kind === 'hostPathPV') return;
  if (desired.kind === 'localPV') return tearDownLocalVolume(deps.mounter, deps.podsDir, uid, desired.specName);
  const dir = path.join(deps.podsDir, uid, 'volumes', PLUGIN_DIRS[desired.kind], desired.outerName);
  await deps.mounter.unmountUnder(dir);
  await rm(dir, { recursive: true, force: true });
  if (desired.kind === 'emptyDir') await rm(path.join(deps.podsDir, uid, 'plugins', PLUGIN_DIRS.emptyDir, desired.outerName), { recursive: true, force: true });
}

/**
 * Unmounts the pod's volumes, removes what they held and forgets its tokens, once it has
 * terminated (the volume manager's teardown: each plugin's TearDown removes its directory, an
 * emptyDir's data with it, so an evicted pod frees the disk it filled); with `removeDir`, once the
 * pod is gone, its whole directory goes too, as the kubelet removes an orphaned pod's directory
 * (orphanedPodDir.ts: nothing through a mount, volume directories only rmdir'ed); a terminated pod
 * that stays, a finished Job's, keeps the rest of it: its managed /etc/hosts.
 */
export async function tearDownPodVolumes(
  deps: Pick<VolumeDeps, 'podsDir' | 'mounter'> & { tokens?: { forgetPod(uid: string): void } },
  uid: string,
  options: { removeDir: boolean },
): Promise<void> {
  const podDir = path.join(deps.podsDir, uid);
  await deps.mounter.unmountUnder(podDir);
  deps.tokens?.forgetPod(uid);
  if (options.removeDir) return removeOrphanedPodDir(deps, uid);
  // A CSI driver mounts under the pod's directory without the agent's mounter knowing: where its
  // volumes' directories are left, the mount table is read and nothing is removed while anything
  // is mounted there, so a driver's volume is never emptied through its mount.
  if (await lstat(path.join(podDir, 'volumes', CSI_PLUGIN_DIR)).catch(() => null)) {
    const mounted = await deps.mounter.mountedUnder(podDir);
    if (mounted.length > 0) throw new Error(`orphaned pod "${uid}" found, but volume paths are still present on disk: ${mounted.join(', ')}`);
  }
  await rm(path.join(podDir, 'volumes'), { recursive: true, force: true });
}

/** The directory of a pod's CSI volumes (the plugin `kubernetes.io/csi`, escaped). */
const CSI_PLUGIN_DIR = 'kubernetes.io~csi';

/** The pod's memory limit as its cgroup would have it, when every container declares one (ResourceConfigForPod). */
function podMemoryLimit(pod: Pod): number | undefined {
  const all = [...(pod.spec.initContainers ?? []), ...pod.spec.containers];
  if (all.length === 0 || all.some((c) => c.resources?.limits?.['memory'] === undefined)) return undefined;
  const limitOf = (c: (typeof all)[number]) => amount('memory', c.resources!.limits!['memory']);
  const running = [...pod.spec.containers, ...(pod.spec.initContainers ?? []).filter((c) => c.restartPolicy === 'Always')].reduce((sum, c) => sum + limitOf(c), 0);
  const initPeak = Math.max(0, ...(pod.spec.initContainers ?? []).map(limitOf));
  return Math.max(running, initPeak);
}

/** Makes `dir` and puts it on tmpfs when the volume is memory-backed and the node can mount. */
async function prepareDir(deps: VolumeDeps, pod: Pod, volume: PodVolume, dir: string, memory: boolean): Promise<void> {
  await mkdirAll(dir, 0o750);
  if (!memory) return;
  const sizeLimit = volume.emptyDir?.sizeLimit !== undefined ? amount('memory', volume.emptyDir.sizeLimit) : undefined;
  await deps.mounter.mountTmpfs(dir, tmpfsSizeBytes(deps.allocatable?.['memory'], podMemoryLimit(pod), sizeLimit));
}

/** The causes of refused fsGroup changes each logger was told of already. */
const refusalsLogged = new WeakMap<Logger, Set<string>>();

/**
 * Gives the volume at `dir` to the pod's fsGroup, if it has one (the plugins' SetVolumeOwnership
 * call, no fsGroupChangePolicy: theirs is nil). What the system refuses is passed over; its cause
 * (`EPERM`: the agent is not root) is logged once, and the pod goes on.
 */
async function giveToFsGroup(deps: VolumeDeps, pod: Pod, volume: PodVolume, dir: string, readOnly: boolean): Promise<void> {
  const fsGroup = pod.spec.securityContext?.fsGroup;
  if (fsGroup === undefined) return;
  const { refusals } = await setVolumeOwnership(dir, fsGroup, { readOnly }, deps.ownershipFs);
  const log = deps.log;
  if (!log || refusals.length === 0) return;
  const logged = refusalsLogged.get(log) ?? new Set<string>();
  refusalsLogged.set(log, logged);
  const cause = refusals[0]!.code ?? refusals[0]!.message;
  if (logged.has(cause)) return;
  logged.add(cause);
  log('warn', "Cannot give a volume's files to the pod's fsGroup; the pod goes on without it (not logged again for this cause)", {
    pod: `${pod.metadata.namespace}/${pod.metadata.name}`,
    volume: volume.name,
    fsGroup,
    refused: refusals.length,
    err: refusals[0]!,
  });
}

async function setUpEmptyDir(deps: VolumeDeps, pod: Pod, volume: PodVolume): Promise<void> {
  const dir = volumeDir(deps.podsDir, pod, volume);
  const medium = volume.emptyDir?.medium;
  if (isHugePageMedium(medium)) {
    // Its page size first: a pod asking for no huge pages gets the kubelet's error, and no mount.
    const size = hugePageSize(medium!, pod);
    if ('error' in size) throw new Error(size.error);
    await mkdirAll(dir, 0o750);
    await deps.mounter.mountHugetlbfs(dir, size.pageSize);
  } else if (medium === undefined || medium === '' || medium === 'Memory') await prepareDir(deps, pod, volume, dir, medium === 'Memory');
  else throw new Error(`unknown storage medium ${JSON.stringify(medium)}`); // empty_dir.go SetUpAt
  const marker = path.join(deps.podsDir, pod.metadata.uid, 'plugins', PLUGIN_DIRS.emptyDir, volume.name);
  if (await lstat(path.join(marker, 'ready')).catch(() => null)) return;
  await chmod(dir, 0o777);
  // empty_dir.go SetUpAt: the ownership change's own failure does not fail the setup.
  await giveToFsGroup(deps, pod, volume, dir, false).catch((err: unknown) =>
    deps.log?.('warn', "Cannot give a volume's files to the pod's fsGroup", { pod: `${pod.metadata.namespace}/${pod.metadata.name}`, volume: volume.name, err }),
  );
  await mkdirAll(marker, 0o750);
  await writeFile(path.join(marker, 'ready'), '');
}

async function writePayload(deps: VolumeDeps, pod: Pod, volume: PodVolume): Promise<void> {
  const dir = volumeDir(deps.podsDir, pod, volume);
  // A volume's first setup reads its objects as they are now; its refreshes may use the reader's
  // cached copies (at most its TTL old).
  const first = !(await lstat(path.join(dir, '..data')).catch(() => null));
  const payload = await payloadOf(deps, pod, volume, first ? 0 : undefined);
  if ('error' in payload) throw new Error(payload.error);
  // ConfigMaps are on disk; secrets, the downward API and projections in memory.
  await prepareDir(deps, pod, volume, dir, !volume.configMap);
  // These plugins set their volume up as an emptyDir first, whose directory is open to every user
  // (empty_dir.go setupDir): a container running as any uid reaches the files their modes allow.
  await chmod(dir, 0o777);
  // Their plugins mount these volumes read-only: the group may read, not write. The whole volume
  // is walked, as a first write makes files outside the new data directory too.
  const fsGroup = pod.spec.securityContext?.fsGroup;
  await writeAtomically(
    dir,
    payload.files,
    new Date(deps.now()),
    fsGroup === undefined ? {} : { setPerms: () => giveToFsGroup(deps, pod, volume, dir, true), diskMode: (mode) => fileModeWithFsGroup(mode, true) },
  );
}

async function payloadOf(deps: VolumeDeps, pod: Pod, volume: PodVolume, maxAgeMs: number | undefined): Promise<Payload> {
  if (volume.downwardAPI) return downwardPayload(pod, volume, deps.allocatable);
  if (volume.configMap) return keyedPayload(volume, await configMapValues(deps, pod.metadata.namespace, volume.configMap.name ?? '', maxAgeMs));
  if (volume.secret) return keyedPayload(volume, await secretValues(deps, pod.metadata.namespace, volume.secret.secretName ?? '', maxAgeMs));
  return projectedPayload(pod, volume, await projectionInputs(deps, pod, volume, maxAgeMs), deps.allocatable);
}

/** Reads what a projected volume's sources need; a failed read is that source's error, not the volume's end. */
async function projectionInputs(deps: VolumeDeps, pod: Pod, volume: PodVolume, maxAgeMs: number | undefined) {
  const objects = new Map<number, Readonly<Record<string, Buffer>> | null>();
  const tokens = new Map<number, string | Error>();
  const trustAnchors = new Map<number, Buffer | Error>();
  const errors: string[] = [];
  const ns = pod.metadata.namespace;
  await Promise.all(
    (volume.projected?.sources ?? []).map(async (source, index) => {
      try {
        if (source.configMap) objects.set(index, await configMapValues(deps, ns, source.configMap.name ?? '', maxAgeMs));
        else if (source.secret) objects.set(index, await secretValues(deps, ns, source.secret.name ?? '', maxAgeMs));
        else if (source.serviceAccountToken) tokens.set(index, await serviceAccountToken(deps, pod, source.serviceAccountToken));
        else if (source.clusterTrustBundle) trustAnchors.set(index, await clusterTrustBundleAnchors(deps, source.clusterTrustBundle, maxAgeMs));
      } catch (err) {
        errors.push(err instanceof Error ? err.message : String(err));
      }
    }),
  );
  if (errors.length) throw new Error(errors.join('; '));
  return { objects, tokens, trustAnchors };
}

/** A clusterTrustBundle source's anchors; without an API server, the kubelet's static-mode error (kubelet.go NewMainKubelet: NoopManager). */
async function clusterTrustBundleAnchors(deps: VolumeDeps, source: ClusterTrustBundleProjection, maxAgeMs: number | undefined): Promise<Buffer | Error> {
  if (!deps.objects) return new Error(NO_TRUST_BUNDLE_API);
  try {
    return trustAnchorsFor(source, await deps.objects.clusterTrustBundles(maxAgeMs));
  } catch (err) {
    return err instanceof Error ? err : new Error(String(err));
  }
}

async function serviceAccountToken(deps: VolumeDeps, pod: Pod, source: { audience?: string; expirationSeconds?: number }): Promise<string | Error> {
  if (!deps.tokens) return new Error('cannot get a service account token: this node has no API server');
  const serviceAccount = String(pod.spec['serviceAccountName'] ?? 'default') || 'default';
  try {
    return await deps.tokens.token({
      namespace: pod.metadata.namespace,
      serviceAccount,
      ...(source.audience ? { audience: source.audience } : {}),
      expirationSeconds: source.expirationSeconds ?? DEFAULT_TOKEN_SECONDS,
      pod: { name: pod.metadata.name, uid: pod.metadata.uid },
    });
  } catch (err) {
    return err instanceof Error ? err : new Error(String(err));
  }
}

async function configMapValues(deps: VolumeDeps, ns: string, name: string, maxAgeMs: number | undefined): Promise<Record<string, Buffer> | null> {
  if (!deps.objects) throw new Error(`cannot get configmap ${ns}/${name}: this node has no API server`);
  const found = await deps.objects.configMap(ns, name, maxAgeMs);
  return found ? { ...Object.fromEntries(Object.entries(found.data).map(([k, v]) => [k, Buffer.from(v)])), ...found.binaryData } : null;
}

async function secretValues(deps: VolumeDeps, ns: string, name: string, maxAgeMs: number | undefined): Promise<Record<string, Buffer> | null> {
  if (!deps.objects) throw new Error(`cannot get secret ${ns}/${name}: this node has no API server`);
  return deps.objects.secret(ns, name, maxAgeMs);
}

async function checkHostPath(volume: { path: string; type?: string }): Promise<void> {
  const check = hostPathCheck(volume, await fileTypeAt(volume.path));
  if ('error' in check) throw new Error(check.error);
  if ('create' in check) {
    if (check.create === 'directory') await mkdir(volume.path, { recursive: true, mode: 0o755 });
    // FileOrCreate: the parent must exist already (it is not created).
    else await writeFile(volume.path, '', { flag: 'a', mode: 0o644 });
  }
}
