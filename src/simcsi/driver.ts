/**
 * sim://'s CSI driver: the Identity and Node services of a hostpath-like driver, as the
 * kubernetes-csi hostpath driver behaves on a node (csi-driver-host-path pkg/hostpath
 * nodeserver.go), without a controller: a volume is a directory `<dataDir>/volumes/<volume ID,
 * escaped>` made at its first NodeStageVolume (or, for an inline volume, its NodePublishVolume)
 * and kept for as long as the driver's data directory, so what one pod writes the next pod of the
 * same volume ID reads.
 *
 * - NodeStageVolume records where the volume is staged (nothing is mounted there, as in the
 *   hostpath driver); NodePublishVolume of a persistent volume wants it staged at the path it names.
 * - NodePublishVolume bind-mounts the volume's directory at the target path (read-only when
 *   asked), or, where this process may not mount (not root), makes the target path a symlink to
 *   it: sim://'s containers read and write a CRI mount's host path through it either way.
 *   NodeUnpublishVolume unmounts and removes the target path. An inline volume (the pod info's
 *   `csi.storage.k8s.io/ephemeral: "true"`) is made at publish and deleted at its last unpublish.
 * - A block volume is a file standing for the device (its capacity, 1 GiB when unknown, sparse),
 *   bound or linked at the target path the same way.
 * - NodeGetVolumeStats: the bytes and inodes of the volume's own files, out of its capacity (the
 *   `size` of its volume_context or its last NodeExpandVolume) or the filesystem's.
 * - NodeExpandVolume records the new capacity (a block volume's file grows to it).
 *
 * What it knows of a volume (capacity, staging and target paths) is kept beside its data, in
 * `<dataDir>/volumes/<name>.json` (no volume's name has a `.`), written after each change to it, so
 * an agent restarted over its root directory finds it. The calls of one volume are served one at
 * a time; different volumes' calls do not wait for each other.
 */
import { createHash } from 'node:crypto';
import { lstat, mkdir, readFile, readdir, readlink, rename, rm, rmdir, symlink, truncate, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { Mounter } from '../volumes/mounter.ts';
import type { IdentityRpcs, NodeRpcs, WireVolumeCapability } from '../volumes/csi/wire.ts';
import { directoryUsage, filesystemStats } from '../stats/provider.ts';
import {
  CsiRefusal,
  DEFAULT_BLOCK_BYTES,
  NODE_CAPABILITIES,
  checkRequest,
  checkStaged,
  isEphemeral,
  requestedCapacity,
  topologyKey,
  volumeFileName,
  volumeUsage,
} from './rules.ts';

/** What the driver knows of one volume (its `<name>.json`). */
interface VolumeRecord {
  volumeId: string;
  capacityBytes?: number;
  /** A block volume: its data is a file, not a directory. */
  block?: boolean;
  /** Made for one pod (an inline volume): deleted at its last unpublish. */
  ephemeral?: boolean;
  stagedAt?: string;
  publishedAt: string[];
}

export interface SimCsiDriverOptions {
  driverName: string;
  /** NodeGetInfo's node_id and the topology segment's value: the node's name. */
  nodeId: string;
  /** Where the volumes and what the driver knows of them live. */
  dataDir: string;
  /** Mounts the volumes at their target paths; one that cannot (not root) makes the driver link them instead. */
  mounter: Mounter;
}

/** The driver's version, GetPluginInfo's vendor_version. */
const VENDOR_VERSION = '0.1.0';

type Request<R extends keyof NodeRpcs> = NodeRpcs[R]['request'];

export class SimCsiDriver {
  private volumes = new Map<string, VolumeRecord>();
  /** Each volume's calls, one after the other. */
  private queues = new Map<string, Promise<unknown>>();

  constructor(private readonly options: SimCsiDriverOptions) {}

  private get volumesDir(): string {
    return path.join(this.options.dataDir, 'volumes');
  }

  /**
   * Reads what an earlier run recorded of its volumes; returns the records it could not read
   * (each with why), which it leaves alone: their volumes are unknown to it until staged again.
   */
  async load(): Promise<string[]> {
    await mkdir(this.volumesDir, { recursive: true });
    const unreadable: string[] = [];
    for (const name of await readdir(this.volumesDir)) {
      if (!name.endsWith('.json')) continue;
      const file = path.join(this.volumesDir, name);
      try {
        const record = JSON.parse(await readFile(file, 'utf8')) as Partial<VolumeRecord>;
        if (typeof record.volumeId !== 'string' || !Array.isArray(record.publishedAt)) throw new Error('not a volume record');
        this.volumes.set(record.volumeId, record as VolumeRecord);
      } catch (err) {
        unreadable.push(`${file}: ${err instanceof Error ? err.message : String(err)}`);
      }
    }
    return unreadable;
  }

  // ------------------------------------------------------------------ Identity

  getPluginInfo(): IdentityRpcs['GetPluginInfo']['response'] {
    return { name: this.options.driverName, vendorVersion: VENDOR_VERSION };
  }

  /** Topology, and online expansion; no controller service. */
  getPluginCapabilities(): IdentityRpcs['GetPluginCapabilities']['response'] {
    return { capabilities: [{ service: { type: 'VOLUME_ACCESSIBILITY_CONSTRAINTS' } }, { volumeExpansion: { type: 'ONLINE' } }] };
  }

  // ------------------------------------------------------------------ Node

  nodeGetInfo(): NodeRpcs['NodeGetInfo']['response'] {
    return { nodeId: this.options.nodeId, maxVolumesPerNode: '0', accessibleTopology: { segments: { [topologyKey(this.options.driverName)]: this.options.nodeId } } };
  }

  nodeGetCapabilities(): NodeRpcs['NodeGetCapabilities']['response'] {
    return { capabilities: NODE_CAPABILITIES.map((type) => ({ rpc: { type } })) };
  }

  nodeStageVolume(request: Request<'NodeStageVolume'>): Promise<void> {
    checkRequest(request, ['volumeId', 'stagingTargetPath'], request.volumeCapability);
    return this.serially(request.volumeId, async () => {
      const volume = this.record(request.volumeId, request.volumeCapability, request.volumeContext);
      await this.makeData(request.volumeId, volume);
      volume.stagedAt = request.stagingTargetPath;
    });
  }

  nodeUnstageVolume(request: Request<'NodeUnstageVolume'>): Promise<void> {
    checkRequest(request, ['volumeId', 'stagingTargetPath']);
    return this.serially(request.volumeId, async () => {
      const volume = this.volumes.get(request.volumeId);
      if (volume?.stagedAt === request.stagingTargetPath) delete volume.stagedAt;
    });
  }

  nodePublishVolume(request: Request<'NodePublishVolume'>): Promise<void> {
    checkRequest(request, ['volumeId', 'targetPath'], request.volumeCapability);
    const ephemeral = isEphemeral(request.volumeContext);
    return this.serially(request.volumeId, async () => {
      checkStaged(request.volumeId, request.stagingTargetPath ?? '', this.volumes.get(request.volumeId)?.stagedAt, ephemeral);
      const volume = this.record(request.volumeId, request.volumeCapability, request.volumeContext);
      if (ephemeral && volume.publishedAt.length === 0) volume.ephemeral = true;
      await this.makeData(request.volumeId, volume);
      await this.publishAt(this.dataPath(request.volumeId), request.targetPath, volume.block === true, request.readonly);
      if (!volume.publishedAt.includes(request.targetPath)) volume.publishedAt.push(request.targetPath);
    });
  }

  nodeUnpublishVolume(request: Request<'NodeUnpublishVolume'>): Promise<void> {
    checkRequest(request, ['volumeId', 'targetPath']);
    return this.serially(request.volumeId, async () => {
      await this.unpublishAt(request.targetPath);
      const volume = this.volumes.get(request.volumeId);
      if (!volume) return;
      volume.publishedAt = volume.publishedAt.filter((target) => target !== request.targetPath);
      if (volume.ephemeral && volume.publishedAt.length === 0) {
        await rm(this.dataPath(request.volumeId), { recursive: true, force: true });
        this.volumes.delete(request.volumeId);
      }
    });
  }

  async nodeGetVolumeStats(request: Request<'NodeGetVolumeStats'>): Promise<NodeRpcs['NodeGetVolumeStats']['response']> {
    checkRequest(request, ['volumeId', 'volumePath']);
    const volume = this.knownAt(request.volumeId, request.volumePath);
    const data = this.dataPath(request.volumeId);
    if (volume.block) {
      // As the hostpath driver for a block volume: its size only.
      const size = (await lstat(data)).size;
      return { usage: [{ unit: 'BYTES', total: String(size), available: '0', used: '0' }] };
    }
    const [own, fs] = await Promise.all([directoryUsage(data, 0, true), filesystemStats(data, 0)]);
    if (!own || !fs) throw new CsiRefusal('INTERNAL', `cannot read the usage of volume "${request.volumeId}" at ${data}`);
    const usage = volumeUsage({
      usedBytes: own.usedBytes ?? 0,
      usedInodes: own.inodesUsed ?? 0,
      capacityBytes: volume.capacityBytes,
      fs: { totalBytes: fs.capacityBytes ?? 0, availableBytes: fs.availableBytes ?? 0, totalInodes: fs.inodes ?? 0, freeInodes: fs.inodesFree ?? 0 },
    });
    return { usage: usage.map((entry) => ({ unit: entry.unit, total: String(entry.total), available: String(entry.available), used: String(entry.used) })) };
  }

  nodeExpandVolume(request: Request<'NodeExpandVolume'>): Promise<NodeRpcs['NodeExpandVolume']['response']> {
    checkRequest(request, ['volumeId', 'volumePath']);
    return this.serially(request.volumeId, async () => {
      const volume = this.knownAt(request.volumeId, request.volumePath);
      const required = Number(request.capacityRange?.requiredBytes ?? 0);
      if (!(required > 0)) throw new CsiRefusal('INVALID_ARGUMENT', 'Capacity Range required_bytes must be positive');
      volume.capacityBytes = Math.max(required, volume.capacityBytes ?? 0);
      if (volume.block) await truncate(this.dataPath(request.volumeId), volume.capacityBytes);
      return { capacityBytes: String(volume.capacityBytes) };
    });
  }

  // ------------------------------------------------------------------ parts

  /** Runs a change of a volume after its earlier ones, then saves its record (also when it failed half way). */
  private serially<T>(volumeId: string, change: () => Promise<T>): Promise<T> {
    const run = (this.queues.get(volumeId) ?? Promise.resolve()).then(async () => {
      try {
        return await change();
      } finally {
        await this.save(volumeId);
      }
    });
    const settled = run.then(
      () => {},
      () => {},
    );
    this.queues.set(volumeId, settled);
    void settled.then(() => {
      if (this.queues.get(volumeId) === settled) this.queues.delete(volumeId);
    });
    return run;
  }

  /** Writes the volume's record (whole, by a rename), or removes it when the driver holds the volume no more. */
  private async save(volumeId: string): Promise<void> {
    const file = `${this.dataPath(volumeId)}.json`;
    const volume = this.volumes.get(volumeId);
    if (!volume) return rm(file, { force: true });
    await writeFile(`${file}.tmp`, JSON.stringify(volume));
    await rename(`${file}.tmp`, file);
  }

  /** The volume's record, made at its first use with the capacity its context asks for. */
  private record(volumeId: string, capability: WireVolumeCapability, volumeContext: Readonly<Record<string, string>>): VolumeRecord {
    const capacity = requestedCapacity(volumeContext);
    let volume = this.volumes.get(volumeId);
    if (!volume) this.volumes.set(volumeId, (volume = { volumeId, publishedAt: [], ...(capability.block ? { block: true } : {}) }));
    else if (Boolean(volume.block) !== Boolean(capability.block)) {
      throw new CsiRefusal('FAILED_PRECONDITION', `volume "${volumeId}" is a ${volume.block ? 'block' : 'filesystem'} volume, asked for as ${capability.block ? 'block' : 'a filesystem'}`);
    }
    if (volume.capacityBytes === undefined && capacity !== undefined) volume.capacityBytes = capacity;
    return volume;
  }

  /** A volume the driver has, staged or published at `volumePath`; else NOT_FOUND. */
  private knownAt(volumeId: string, volumePath: string): VolumeRecord {
    const volume = this.volumes.get(volumeId);
    if (!volume) throw new CsiRefusal('NOT_FOUND', `volume "${volumeId}" not found`);
    if (volume.stagedAt !== volumePath && !volume.publishedAt.includes(volumePath)) throw new CsiRefusal('NOT_FOUND', `volume "${volumeId}" is not staged or published at ${volumePath}`);
    return volume;
  }

  private dataPath(volumeId: string): string {
    return path.join(this.volumesDir, volumeFileName(volumeId, (text) => createHash('sha256').update(text).digest('hex')));
  }

  /** The volume's directory (writable by a pod of any user, as an emptyDir), or its block file, made unless there. */
  private async makeData(volumeId: string, volume: VolumeRecord): Promise<void> {
    const data = this.dataPath(volumeId);
    if (volume.block) {
      const made = await lstat(data).then(
        () => true,
        () => false,
      );
      if (!made) {
        await writeFile(data, '');
        await truncate(data, volume.capacityBytes ?? DEFAULT_BLOCK_BYTES);
      }
      return;
    }
    await mkdir(data, { recursive: true, mode: 0o777 });
  }

  /** Binds `source` at `target` (a directory made, or for a block volume a file); a symlink where the node may not mount. */
  private async publishAt(source: string, target: string, block: boolean, readOnly: boolean): Promise<void> {
    const there = await lstat(target).catch(() => null);
    if (there?.isSymbolicLink()) {
      if ((await readlink(target)) === source) return;
      throw new CsiRefusal('FAILED_PRECONDITION', `target path ${target} is a link to another volume`);
    }
    if (!there) {
      if (block) await writeFile(target, '');
      else await mkdir(target, { mode: 0o750 });
    }
    if (await this.options.mounter.bindMount(source, target, { readOnly })) return;
    // This node may not mount: the target path is made a link to the volume instead.
    if (block) await rm(target, { force: true });
    else await rmdir(target);
    await symlink(source, target);
  }

  /** Unmounts what the driver mounted at `target` and removes it; a target already gone is done. */
  private async unpublishAt(target: string): Promise<void> {
    const there = await lstat(target).catch(() => null);
    if (!there) return;
    if (there.isSymbolicLink()) return rm(target);
    await this.options.mounter.unmount(target);
    if (there.isDirectory()) await rmdir(target);
    else await rm(target);
  }
}
