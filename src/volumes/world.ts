/**
 * The volume manager's two states of the world, shared by the pods' syncs and the volume manager's
 * actors (pkg/kubelet/volumemanager: cache/desired_state_of_world.go, actual_state_of_world.go,
 * populator, volume_manager.go WaitForAttachAndMount and WaitForUnmount):
 *
 *   desired   each pod being synced, with the volumes its containers use, each resolved to the
 *             plugin that serves it (a claim read live and checked, claims.ts), or the error that
 *             keeps it from being processed; written when a sync asks for the pod's volumes
 *             (`waitForAttachAndMount`, the kubelet's ReprocessPod) and when its pod goes
 *             (`removePod`).
 *   actual    each volume of each pod that is set up, with the node path its containers mount;
 *             written by the operations (`markMounted`, `markUnmounted`).
 *
 * Between them, the volume manager's loop (src/volumemanager) runs one actor per volume of a pod,
 * which mounts it, retries it with back-off, refreshes it, expands it online once its
 * PersistentVolume outgrew it (expansion.ts, nodeExpander.ts) and tears it down. The world tells that
 * loop what to start, refresh and stop through its listener; it never mounts anything itself.
 *
 * After a restart, the volumes an earlier run left set up (reconstruction.ts) are in the actual
 * state as uncertain (`addReconstructed`; reconstruct.go updateStates): a pod that still wants one
 * has it mounted again by its operation, as any other; once a pod no longer wants one (its
 * teardown: the pod terminated, or gone and its directory orphaned, which the agent finds only once
 * every config source has been seen: reconcile's readyToUnmount), it gets an operation that only
 * tears it down. Until then it counts as possibly mounted (`possiblyMounted`) and in use.
 *
 * A sync waits for its pod's volumes: resolved at once when all are set up; refused at once when
 * some could not be processed (`unmounted volumes=[…], unattached volumes=[…], failed to process
 * volumes=[…]: <errors>`); refused after 2 m 3 s otherwise, the operations still retrying.
 */
import type { CSIDriver } from '../api/storage.ts';
import type { Pod } from '../api/types.ts';
import type { Clock } from '../clock.ts';
import type { EventOf, PodVolumeRef } from '../events.ts';
import { type ClaimReader, type BoundClaim, claimOf, resolveClaim } from './claims.ts';
import type { AttachState } from './csi/operations.ts';
import { type DesiredVolume, desiredVolume, expectedVolumeNames, waitErrorText } from './desired.ts';
import { ExpansionRecord, bytesOf, fsResizeRequired } from './expansion.ts';
import { type PodVolume, podVolumes } from './plan.ts';
import type { ReconstructedVolume } from './reconstruction.ts';

/** volume_manager.go podAttachAndMountTimeout, podAttachAndMountRetryInterval. */
export const ATTACH_AND_MOUNT_TIMEOUT_MS = 123_000;

/** A volume of a pod as its containers mount it. */
export interface MountedVolume {
  outerName: string;
  /** The plugin that set it up: what its usage is read from (a local volume's filesystem; none for a hostPath). */
  kind: DesiredVolume['kind'];
  /** The node's name for it: a teardown of the same pod volume's earlier mount leaves a newer one alone. */
  uniqueName: string;
  /** The node path the runtime mounts into the container; for a mapped (raw block) volume, the pod's link to its device. */
  path: string;
  /** A raw block volume: its containers get `path` as a device (makeBlockVolumes), never as a mount. */
  mapped?: true;
  /** The volume is read-only for every container (a read-only claim). */
  readOnly: boolean;
  /** A group the pod's processes get (the PV's `pv.beta.kubernetes.io/gid`). */
  supplementalGroup?: number;
  /** The claim it came from, for stats (`pvcRef`). */
  claim?: { namespace: string; name: string };
  /** A CSI volume's driver and handle: what its stats and expansion are asked of (csi_metrics.go, expander.go). */
  csi?: { driver: string; volumeHandle: string };
}

/** What changed for the loop: volumes to set up, to set up again (RequiresRemount), to tear down. */
export type VolumeChanges = Omit<EventOf<'VOLUMES.CHANGED'>, 'type'>;

/** The pod's wait ended without its volumes: the error SyncPod reports; `timedOut` for the end of the wait (no event, as wait.Interrupted). */
export class VolumeWaitError extends Error {
  override readonly name = 'VolumeWaitError';
  constructor(
    message: string,
    readonly timedOut: boolean,
  ) {
    super(message);
  }
}

interface DesiredPod {
  pod: Pod;
  /** The expected volumes' names, in the pod's order. */
  expected: string[];
  volumes: Map<string, DesiredVolume>;
  /** The populator's errors for this processing (PopPodErrors). */
  errors: string[];
}

type Waiter = { uid: string; check(): boolean };

export interface VolumeWorldOptions {
  /** The claims and volumes, read live; absent on a node without an API server (a claim cannot be resolved). */
  claims?: ClaimReader;
  /** A CSI driver's CSIDriver object (null: it has none), read when a pod's CSI PersistentVolume is processed; absent without an API server. */
  csiDrivers?: (name: string) => Promise<CSIDriver | null>;
  /** The waits' clock. */
  clock: Clock;
}

/** A mounted volume its PersistentVolume has outgrown: what the online expansion works on (expandVolume's VolumeToMount). */
export interface VolumeToExpand {
  pod: Pod;
  volume: DesiredVolume & { claim: BoundClaim };
  /** The size the node knows the volume at, and its PersistentVolume's capacity. */
  currentBytes: number;
  desiredBytes: number;
}

export class VolumeWorld implements AttachState {
  /** The sizes the node knows its claims' mounted volumes at, and their expansion failures (the actual state's). */
  readonly expansion = new ExpansionRecord();
  private readonly desired = new Map<string, DesiredPod>();
  /** The actual state's attachable volumes the controller attached (MarkVolumeAsAttached), by unique name, until their device is unmounted. */
  private readonly attachedVolumes = new Set<string>();
  /** The `volumesInUse` of the last Node status written (MarkVolumesAsReportedInUse). */
  private reported = new Set<string>();
  private readonly actual = new Map<string, Map<string, MountedVolume>>();
  /** The volumes found set up at start that no operation has taken on yet, by pod and then by unique name. */
  private readonly reconstructed = new Map<string, Map<string, ReconstructedVolume>>();
  /** A volume manager will reconstruct what an earlier run left and has not yet: any pod may have volumes set up. */
  private awaitingReconstruction = false;
  /**
   * The operations (actors) the loop runs, by pod and then by id, with the volume they serve: a
   * pod's processing at each sync looks at its own, not at every pod's.
   */
  private readonly operations = new Map<string, Map<string, PodVolumeRef>>();
  /** Operations told to tear down whose actors have not ended yet, with their pods: their ids are not reused. */
  private readonly ending = new Map<string, string>();
  private readonly waiters = new Set<Waiter>();
  private listener: ((changes: VolumeChanges) => void) | null = null;

  constructor(private readonly options: VolumeWorldOptions) {}

  /** The loop's subscription: what to mount, remount and unmount, as the pods change. One listener. */
  listen(listener: (changes: VolumeChanges) => void): () => void {
    this.listener = listener;
    return () => {
      if (this.listener === listener) this.listener = null;
    };
  }

  /**
   * The populator's processing of a pod (processPodVolumes): each expected volume resolved (claims
   * read live), the desired state replaced, and the loop told what to start, refresh and stop.
   */
  async processPod(pod: Pod): Promise<void> {
    const uid = pod.metadata.uid;
    const { mounts, devices } = expectedVolumeNames(pod);
    const byName = new Map(podVolumes(pod).map((v) => [v.name, v]));
    const expected = [...new Set([...mounts, ...devices])];
    const volumes = new Map<string, DesiredVolume>();
    const errors: string[] = [];
    await Promise.all(
      expected.map(async (name) => {
        const volume = byName.get(name);
        // A mount of an undeclared volume fails the container's config, not the volume manager.
        if (!volume) return;
        try {
          const claim = claimOf(pod, volume)
            ? await (this.options.claims ? resolveClaim(this.options.claims, pod, volume, [...(mounts.has(name) ? ['mount' as const] : []), ...(devices.has(name) ? ['device' as const] : [])]) : Promise.reject(new Error(`error processing PVC ${pod.metadata.namespace}/${claimOf(pod, volume)!.name}: this node has no API server`)))
            : undefined;
          const found = desiredVolume(pod, volume, claim, await this.csiDriverOf(volume, claim));
          if ('error' in found) errors.push(found.error);
          else volumes.set(name, found);
        } catch (err) {
          errors.push(err instanceof Error ? err.message : String(err));
        }
      }),
    );
    this.desired.set(uid, { pod, expected: expected.filter((name) => byName.has(name)), volumes, errors });
    // checkVolumeFSResize: a writable claim's volume seen mounted is known at its claim's capacity until the node expands it.
    for (const volume of volumes.values()) {
      if (this.expandable(uid, volume) && !volume.claim!.readOnly) this.expansion.initializeSize(volume.uniqueName, bytesOf(volume.claim!.statusCapacity));
    }
    this.announce(uid, true);
  }

  /**
   * The online expansion the pod's mounted volume wants now (checkVolumeFSResize, then
   * volumeNeedsExpansion: its PersistentVolume's capacity above the size the node knows it at);
   * null when none.
   */
  volumeToExpand(uid: string, outerName: string): VolumeToExpand | null {
    const entry = this.desired.get(uid);
    const volume = entry?.volumes.get(outerName);
    if (!entry || !volume || !this.expandable(uid, volume)) return null;
    const currentBytes = this.expansion.size(volume.uniqueName);
    const desiredBytes = bytesOf(volume.claim!.pv.spec?.capacity?.['storage']);
    if (!fsResizeRequired({ readOnly: volume.claim!.readOnly, desiredBytes, currentBytes, inUseError: this.expansion.inUseError(volume.uniqueName) })) return null;
    return { pod: entry.pod, volume: volume as VolumeToExpand['volume'], currentBytes, desiredBytes };
  }

  /**
   * WaitForAttachAndMount: the pod processed again (its payload volumes refreshed), then its
   * volumes waited for. `signal` ends the wait (the pod's sync was cancelled).
   */
  async waitForAttachAndMount(pod: Pod, signal?: AbortSignal): Promise<void> {
    const uid = pod.metadata.uid;
    await this.processPod(pod);
    const entry = this.desired.get(uid)!;
    if (entry.expected.length === 0) return;
    if (entry.errors.length > 0) throw new VolumeWaitError(this.waitError(uid, entry.errors.join('; ')), false);
    if (this.unmounted(uid).length === 0) return;
    await this.wait(uid, () => this.unmounted(uid).length === 0 || this.desired.get(uid) !== entry, signal);
    if (this.desired.get(uid) === entry && this.unmounted(uid).length > 0) throw new VolumeWaitError(this.waitError(uid, 'context deadline exceeded'), true);
  }

  /**
   * The pod is no longer desired (terminated or gone): its volumes are torn down; resolves once none
   * is set up and its operations have ended (WaitForUnmount), so a publish left uncertain is
   * unpublished before the pod's directory goes.
   */
  async unmountPod(uid: string, signal?: AbortSignal): Promise<void> {
    this.releasePod(uid);
    const done = () => this.mountedCount(uid) === 0 && ![...this.ending.values()].includes(uid);
    if (done()) return;
    await this.wait(uid, done, signal);
    const left = [...(this.actual.get(uid)?.keys() ?? [])].sort();
    if (left.length > 0) throw new VolumeWaitError(`mounted volumes=[${left.join(' ')}]: context deadline exceeded`, true);
  }

  /**
   * The pod is gone (its directory orphaned, found by housekeeping once every source has been
   * seen): its volumes, those found at start included, are torn down, not waited for. Returns
   * whether any may still be set up (kubelet_volumes.go podVolumesExist): its directory waits.
   */
  releasePod(uid: string): boolean {
    this.desired.delete(uid);
    this.announce(uid, false);
    return this.possiblyMounted(uid);
  }

  /**
   * The Node's `status.volumesInUse` (volume_manager.go GetVolumesInUse): the attachable volumes
   * the pods want and those the node still holds attached, by unique name, sorted.
   */
  volumesInUse(): string[] {
    const names = new Set(this.attachedVolumes);
    for (const entry of this.desired.values()) for (const volume of entry.volumes.values()) if (volume.attachable) names.add(volume.uniqueName);
    return [...names].sort();
  }

  /** The Node status listing `names` in volumesInUse was written (MarkVolumesAsReportedInUse). */
  markVolumesReportedInUse(names: readonly string[]): void {
    this.reported = new Set(names);
    for (const uid of this.desired.keys()) this.wake(uid);
  }

  reportedInUse(uniqueName: string): boolean {
    return this.reported.has(uniqueName);
  }

  attached(uniqueName: string): boolean {
    return this.attachedVolumes.has(uniqueName);
  }

  markAttached(uniqueName: string): void {
    this.attachedVolumes.add(uniqueName);
    for (const uid of this.desired.keys()) this.wake(uid);
  }

  markDetached(uniqueName: string): void {
    this.attachedVolumes.delete(uniqueName);
  }

  /** The pod's volumes that are set up, by name (GetMountedVolumesForPod). */
  mountedVolumes(uid: string): ReadonlyMap<string, MountedVolume> {
    return this.actual.get(uid) ?? new Map();
  }

  /**
   * The groups the pod's mounted volumes give its processes (volume_manager.go
   * GetExtraSupplementalGroupsForPod): each PersistentVolume's `pv.beta.kubernetes.io/gid` once,
   * in the order of their text, as the kubelet sorts them.
   */
  extraSupplementalGroups(uid: string): number[] {
    const groups = new Set<number>();
    for (const volume of this.actual.get(uid)?.values() ?? []) if (volume.supplementalGroup !== undefined) groups.add(volume.supplementalGroup);
    return [...groups].sort((a, b) => (String(a) < String(b) ? -1 : String(a) > String(b) ? 1 : 0));
  }

  /** What an operation works on: the pod and the volume as last processed; null once the pod no longer wants it. */
  desiredVolume(uid: string, outerName: string): { pod: Pod; volume: DesiredVolume } | null {
    const entry = this.desired.get(uid);
    const volume = entry?.volumes.get(outerName);
    return entry && volume ? { pod: entry.pod, volume } : null;
  }

  /** Whether any pod has the volume of this unique name set up, or possibly (found at start): a device's last user gone is UnmountDevice. */
  inUse(uniqueName: string): boolean {
    for (const volumes of this.actual.values()) for (const volume of volumes.values()) if (volume.uniqueName === uniqueName) return true;
    for (const volumes of this.reconstructed.values()) if (volumes.has(uniqueName)) return true;
    return false;
  }

  /**
   * The volumes found set up at start, in the actual state as uncertain (reconstruct.go
   * updateStates); a volume a pod's operation has taken on already (its pod was processed first)
   * is left out. Each one added is handed to `adopt` (its plugin's own state) before any operation
   * can see it; returns them. A pod processed already that does not want one has it torn down at once.
   */
  addReconstructed(volumes: readonly ReconstructedVolume[], adopt: (volume: ReconstructedVolume) => void): ReconstructedVolume[] {
    this.awaitingReconstruction = false;
    const added: ReconstructedVolume[] = [];
    const uids = new Set<string>();
    for (const volume of volumes) {
      const taken = [...(this.operations.get(volume.uid)?.values() ?? [])].some((op) => op.uniqueName === volume.uniqueName);
      const mounted = [...(this.actual.get(volume.uid)?.values() ?? [])].some((v) => v.uniqueName === volume.uniqueName);
      if (taken || mounted || this.reconstructed.get(volume.uid)?.has(volume.uniqueName)) continue;
      let found = this.reconstructed.get(volume.uid);
      if (!found) this.reconstructed.set(volume.uid, (found = new Map()));
      found.set(volume.uniqueName, volume);
      adopt(volume);
      added.push(volume);
      uids.add(volume.uid);
    }
    for (const uid of uids) if (this.desired.has(uid)) this.announce(uid, false);
    return added;
  }

  /**
   * A volume manager runs over this world and will reconstruct (`addReconstructed`): until it has,
   * every pod counts as possibly having volumes set up, so no orphaned pod's directory is removed
   * under a volume not yet found (reconstruct.go StatesHasBeenSynced).
   */
  expectReconstruction(): void {
    this.awaitingReconstruction = true;
  }

  /**
   * Whether the pod may still have volumes set up (kubelet_volumes.go podVolumesExist over
   * GetPossiblyMountedVolumesForPod): mounted, found at start or not looked for yet, or being torn down.
   */
  possiblyMounted(uid: string): boolean {
    return this.awaitingReconstruction || this.actual.has(uid) || this.reconstructed.has(uid) || [...this.ending.values()].includes(uid);
  }

  markMounted(uid: string, mounted: MountedVolume): void {
    let volumes = this.actual.get(uid);
    if (!volumes) this.actual.set(uid, (volumes = new Map()));
    volumes.set(mounted.outerName, mounted);
    this.wake(uid);
  }

  markUnmounted(uid: string, outerName: string, uniqueName: string): void {
    const volumes = this.actual.get(uid);
    if (volumes?.get(outerName)?.uniqueName === uniqueName) volumes.delete(outerName);
    if (volumes?.size === 0) this.actual.delete(uid);
    if (!this.inUse(uniqueName)) this.expansion.forget(uniqueName);
    this.wake(uid);
  }

  /** The loop's actor ended (its volume torn down): a later processing of the pod may start it again. */
  operationEnded(id: string): void {
    const uid = this.ending.get(id);
    this.ending.delete(id);
    if (uid !== undefined) this.wake(uid);
  }

  /** Tells the loop which of the pod's operations to start, refresh and stop. */
  private announce(uid: string, refresh: boolean): void {
    const entry = this.desired.get(uid);
    const changes: VolumeChanges = { mount: [], remount: [], expand: [], unmount: [] };
    const operations = this.operations.get(uid) ?? new Map<string, PodVolumeRef>();
    for (const [id, op] of operations) {
      const wanted = entry?.volumes.get(op.outerName);
      if (!wanted || wanted.uniqueName !== op.uniqueName) {
        changes.unmount.push(id);
        operations.delete(id);
        this.ending.set(id, uid);
      } else if (refresh) {
        if (wanted.requiresRemount) changes.remount.push(id);
        if (this.volumeToExpand(uid, op.outerName)) changes.expand.push(id);
      }
    }
    const running = new Set([...operations.values()].map((op) => op.outerName));
    // A volume whose earlier actor is still tearing down (its claim now names another volume) gets a second id.
    const freeId = (name: string) => {
      let id = `${uid}/${name}`;
      for (let n = 2; this.ending.has(id) || operations.has(id); n++) id = `${uid}/${name}#${n}`;
      return id;
    };
    const podName = entry ? `${entry.pod.metadata.namespace}/${entry.pod.metadata.name}` : uid;
    const found = this.reconstructed.get(uid);
    for (const volume of entry?.volumes.values() ?? []) {
      // Found set up at start: its operation mounts it again, as the reconciler does an uncertain volume.
      found?.delete(volume.uniqueName);
      if (running.has(volume.outerName)) continue;
      const id = freeId(volume.outerName);
      const op: PodVolumeRef = { id, uid, pod: podName, outerName: volume.outerName, uniqueName: volume.uniqueName, specName: volume.specName, kind: volume.kind, ...(volume.map ? { map: true as const } : {}) };
      operations.set(id, op);
      changes.mount.push(op);
    }
    // What is left of the volumes found at start, the pod no longer wants: torn down, unless its
    // processing failed for some volume (which may be this one: a claim not read yet).
    for (const volume of found?.values() ?? []) {
      if (entry && entry.errors.length > 0) break;
      found!.delete(volume.uniqueName);
      const id = freeId(volume.specName);
      this.ending.set(id, uid);
      changes.mount.push({ id, uid, pod: podName, outerName: volume.specName, uniqueName: volume.uniqueName, specName: volume.specName, kind: volume.kind, ...(volume.map ? { map: true as const } : {}), foundOnDisk: true });
    }
    if (found?.size === 0) this.reconstructed.delete(uid);
    if (operations.size > 0) this.operations.set(uid, operations);
    else this.operations.delete(uid);
    if (changes.mount.length + changes.remount.length + changes.expand.length + changes.unmount.length > 0) this.listener?.(changes);
  }

  /**
   * Whether the node expands the pod's volume online: a CSI PersistentVolume of a claim (the plugins
   * whose RequiresFSResize this node implements), mounted (not mapped: a raw block volume's expansion
   * is not built) for the pod under the same unique name.
   */
  private expandable(uid: string, volume: DesiredVolume): boolean {
    const mounted = this.actual.get(uid)?.get(volume.outerName);
    return volume.kind === 'csiPV' && volume.claim !== undefined && mounted?.uniqueName === volume.uniqueName && !mounted.mapped;
  }

  private unmounted(uid: string): string[] {
    const entry = this.desired.get(uid);
    const mounted = this.actual.get(uid);
    return (entry?.expected ?? []).filter((name) => !mounted?.has(name));
  }

  private mountedCount(uid: string): number {
    return this.actual.get(uid)?.size ?? 0;
  }

  private waitError(uid: string, cause: string): string {
    const entry = this.desired.get(uid);
    const notProcessed = (entry?.expected ?? []).filter((name) => !entry?.volumes.has(name));
    // getUnattachedVolumes: attachable volumes not yet in the actual state.
    const unattached = [...(entry?.volumes.values() ?? [])].filter((v) => v.attachable && !this.attachedVolumes.has(v.uniqueName)).map((v) => v.outerName);
    return waitErrorText(this.unmounted(uid), unattached, notProcessed, cause);
  }

  /**
   * The CSIDriver of a CSI volume's driver, inline or a claim's PersistentVolume's (whether it is
   * attached, csi_plugin.go CanAttach; republished, RequiresRemount); undefined for other volumes.
   */
  private async csiDriverOf(volume: PodVolume, claim: BoundClaim | undefined): Promise<CSIDriver | null | undefined> {
    const source = (claim ? claim.pv.spec?.['csi'] : volume['csi']) as { driver?: string } | undefined;
    if (!source) return undefined;
    if (!this.options.csiDrivers) return null;
    return this.options.csiDrivers(source.driver ?? '');
  }

  /** Resolves when `done()` holds, at the timeout, or when `signal` aborts (rejecting with its reason). */
  private wait(uid: string, done: () => boolean, signal: AbortSignal | undefined): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      if (signal?.aborted) return reject(signal.reason);
      const finish = (outcome: () => void) => {
        this.waiters.delete(waiter);
        this.options.clock.clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
        outcome();
      };
      const waiter: Waiter = { uid, check: () => (done() ? (finish(resolve), true) : false) };
      const timer = this.options.clock.setTimeout(() => finish(resolve), ATTACH_AND_MOUNT_TIMEOUT_MS);
      const onAbort = () => finish(() => reject(signal!.reason));
      signal?.addEventListener('abort', onAbort, { once: true });
      this.waiters.add(waiter);
    });
  }

  private wake(uid: string): void {
    for (const waiter of [...this.waiters]) if (waiter.uid === uid) waiter.check();
  }
}
