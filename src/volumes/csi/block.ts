/**
 * A CSI PersistentVolume of volumeMode Block, mapped into a pod as the kubelet maps it
 * (pkg/volume/csi/csi_block.go over operation_generator.go GenerateMapVolumeFunc,
 * GenerateUnmapVolumeFunc and GenerateUnmapDeviceFunc):
 *
 *   map (per pod)     1. the attach wait of an attachable volume (operations.ts `attach`, worded
 *                        `MapVolume.WaitForAttach failed`);
 *                     2. NewBlockVolumeMapper: `vol_data.json` written in
 *                        `plugins/kubernetes.io/csi/volumeDevices/<pv>/data`;
 *                     3. SetUpDevice, once per volume per node: NodeStageVolume with a block
 *                        capability at `…/volumeDevices/staging/<pv>` (made 0750), only when the
 *                        driver has STAGE_UNSTAGE_VOLUME;
 *                     4. MapPodDevice: NodePublishVolume with a block capability at
 *                        `…/volumeDevices/publish/<pv>/<pod uid>` (the parent made 0750, the
 *                        driver makes the path), the staging path given whether or not it stages;
 *                     5. MapBlockVolume (blockMap.ts): the published device bind-mounted at
 *                        `…/volumeDevices/<pv>/dev/<pod uid>`, linked from
 *                        `pods/<uid>/volumeDevices/kubernetes.io~csi/<pv>`, held by a loop device.
 *   unmap (per pod)   UnmapBlockVolume, then UnmapPodDevice: NodeUnpublishVolume at the publish path.
 *   release           after the volume's last pod: TearDownDevice (NodeUnstageVolume when staged,
 *                     the staging path removed), the publish, staging and volume directories
 *                     removed (cleanupOrphanDeviceFiles), the global map path removed
 *                     (RemoveMapPath), and the volume no longer attached in the actual state.
 *
 * Each step's failure is `<step> failed for volume "<pv>" : <cause>`, the pod's `FailedMapVolume`
 * event. As for a mounted CSI volume, an uncertain stage or publish (csi_client.go isFinalError)
 * is still unstaged and unpublished when the pod goes, and so is a volume found mapped after a
 * restart (`adoptReconstructed`).
 */
import { mkdir, rm, rmdir, stat } from 'node:fs/promises';
import { type SharedDevice, adoptFoundDevice, foundHolder, serially, sharedDevice } from './sharedDevices.ts';
import path from 'node:path';
import type { Pod } from '../../api/types.ts';
import { type BlockMapDeps, type BlockMapPaths, type BlockMapping, mapBlockVolume, podDeviceMapDir, removeMapPath, unmapBlockVolume, VOLUME_DEVICES_DIR } from '../blockMap.ts';
import { FS_TYPE_BLOCK } from './client.ts';
import { type AttachState, type CsiOperations, type CsiPodVolume, CsiOperationError, isUncertain, volumeError } from './operations.ts';
import { CSI_PLUGIN_NAME, attachmentName, escapeQualifiedName } from './paths.ts';
import { type CsiVolume, podInfoAttributes } from './spec.ts';
import { VOL_DATA_KEY } from './volData.ts';
import { loadVolumeData, saveVolumeData } from './volDataFile.ts';

/** `<root>/plugins/kubernetes.io/csi/volumeDevices` (kubeletVolumeHost GetVolumeDevicePluginDir(CSIPluginName)). */
function devicePluginDir(rootDir: string): string {
  return path.join(rootDir, 'plugins', CSI_PLUGIN_NAME, VOLUME_DEVICES_DIR);
}

/** The paths of a block volume on the node (csi_block.go's path comment), by its PersistentVolume's name. */
export function csiBlockPaths(rootDir: string, specName: string) {
  const dir = devicePluginDir(rootDir);
  const volumeDir = path.join(dir, escapeQualifiedName(specName));
  return {
    /** getVolumePluginDir: what cleanupOrphanDeviceFiles removes last. */
    volumeDir,
    /** GetGlobalMapPath: getVolumeDevicePluginDir. */
    globalMapPath: path.join(volumeDir, 'dev'),
    /** getVolumeDeviceDataDir: where vol_data.json is kept. */
    dataDir: path.join(volumeDir, 'data'),
    /** GetStagingPath. */
    stagingPath: path.join(dir, 'staging', specName),
    /** getPublishDir; a pod's publish path is `<publishDir>/<pod uid>`. */
    publishDir: path.join(dir, 'publish', specName),
  };
}

export interface CsiBlockDeps extends BlockMapDeps {
  rootDir: string;
  nodeName: string;
  /** The mount path's operations: the attach wait, the driver table, the API reads. */
  csi: CsiOperations;
  attach: AttachState;
}

type StageState = 'staged' | 'uncertain';

/** SetUpDevice's outcome, and the pod volumes that map it. */
type BlockDevice = SharedDevice<StageState>;

const reason = (err: unknown) => (err instanceof Error ? err.message : String(err));
const log = (message: string) => `${CSI_PLUGIN_NAME}: ${message}`;
const gone = (err: NodeJS.ErrnoException) => (err.code === 'ENOENT' ? undefined : Promise.reject(err));

export class CsiBlockOperations {
  private readonly devices = new Map<string, BlockDevice>();
  /** Each pod volume published (or left uncertain) by `<uid>/<uniqueName>`. */
  private readonly published = new Set<string>();

  constructor(private readonly deps: CsiBlockDeps) {}

  /** Maps the pod's block volume; resolves with the link its containers get as the device's host path. */
  async map(pod: Pod, ref: CsiPodVolume, volume: CsiVolume): Promise<BlockMapping> {
    const device = this.device(ref.uniqueName);
    device.holders.add(ref.id);
    device.holders.delete(foundHolder(ref.uid));
    const publishContext = await this.deps.csi.attach(ref, volume, 'MapVolume');
    const paths = csiBlockPaths(this.deps.rootDir, ref.specName);
    try {
      await mkdir(paths.dataDir, { recursive: true, mode: 0o750 });
      await saveVolumeData(paths.dataDir, {
        [VOL_DATA_KEY.specVolID]: ref.specName,
        [VOL_DATA_KEY.volumeHandle]: volume.volumeHandle,
        [VOL_DATA_KEY.driverName]: volume.driver,
        [VOL_DATA_KEY.nodeName]: this.deps.nodeName,
        [VOL_DATA_KEY.attachmentID]: attachmentName(volume.volumeHandle, volume.driver, this.deps.nodeName),
      });
    } catch (err) {
      throw volumeError('MapVolume.NewBlockVolumeMapper initialization failed', ref.specName, log(`csi.NewBlockVolumeMapper failed to save volume info data: ${reason(err)}`));
    }
    if (device.state !== 'staged') {
      await serially(device, async () => {
        if (device.state === 'staged') return;
        try {
          await this.setUpDevice(volume, paths.stagingPath, publishContext);
          device.state = 'staged';
        } catch (err) {
          device.state = isUncertain(err) ? 'uncertain' : null;
          throw volumeError('MapVolume.SetUpDevice failed', ref.specName, err);
        }
      });
    }
    const key = `${ref.uid}/${ref.uniqueName}`;
    const publishPath = path.join(paths.publishDir, ref.uid);
    try {
      await this.publish(pod, volume, paths.stagingPath, publishPath, publishContext);
      this.published.add(key);
    } catch (err) {
      if (isUncertain(err)) this.published.add(key);
      throw volumeError('MapVolume.MapPodDevice failed', ref.specName, err);
    }
    try {
      return await mapBlockVolume(this.deps, publishPath, this.mapPaths(ref));
    } catch (err) {
      throw volumeError('MapVolume.MapBlockVolume failed', ref.specName, err);
    }
  }

  /** GenerateUnmapVolumeFunc: the pod's link and global map undone, then NodeUnpublishVolume (no event on failure). */
  async unmap(ref: CsiPodVolume): Promise<void> {
    const key = `${ref.uid}/${ref.uniqueName}`;
    try {
      await unmapBlockVolume(this.deps, this.mapPaths(ref));
    } catch (err) {
      throw volumeError('UnmapVolume.UnmapBlockVolume failed', ref.specName, err, false);
    }
    if (!this.published.has(key)) return;
    const paths = csiBlockPaths(this.deps.rootDir, ref.specName);
    try {
      const { driver, handle } = await this.volumeData(paths.dataDir);
      const csi = this.deps.csi.driverClient(driver, 'blockMapper.UnmapPodDevice failed to get CSI client');
      await csi.nodeUnpublishVolume(handle, path.join(paths.publishDir, ref.uid)).catch((err: unknown) => {
        throw new Error(log(`blockMapper.unpublishVolumeForBlock failed: ${reason(err)}`));
      });
    } catch (err) {
      throw volumeError('UnmapVolume.UnmapPodDevice failed', ref.specName, err, false);
    }
    this.published.delete(key);
  }

  /** The pod no longer wants the volume: after its last pod, GenerateUnmapDeviceFunc, and the volume detached in the actual state. */
  async release(ref: CsiPodVolume): Promise<void> {
    const device = this.devices.get(ref.uniqueName);
    if (!device) return;
    device.holders.delete(ref.id);
    device.holders.delete(foundHolder(ref.uid));
    await serially(device, async () => {
      if (device.holders.size > 0) return;
      const paths = csiBlockPaths(this.deps.rootDir, ref.specName);
      try {
        if (device.state !== null) await this.tearDownDevice(paths);
        device.state = null;
        await this.cleanupOrphanDeviceFiles(paths);
        await removeMapPath(paths.globalMapPath);
      } catch (err) {
        throw new CsiOperationError(`UnmapDevice.TearDownDevice failed for volume ${JSON.stringify(ref.specName)} : ${reason(err)}`, false);
      }
      this.deps.attach.markDetached(ref.uniqueName);
      if (device.holders.size === 0) this.devices.delete(ref.uniqueName);
    });
  }

  /**
   * A volume found mapped at start (reconstruct.go updateStates): its publish uncertain, its stage
   * uncertain and held for the pod, so a pod that still wants it is staged, published and mapped
   * again (drivers are idempotent) and one that does not is unmapped, unpublished, then unstaged
   * once no other pod holds the stage.
   */
  adoptReconstructed(volume: { uid: string; uniqueName: string }): void {
    this.published.add(`${volume.uid}/${volume.uniqueName}`);
    adoptFoundDevice(this.devices, volume.uniqueName, volume.uid);
  }

  /** stageVolumeForBlock; nothing when the driver does not stage. */
  private async setUpDevice(volume: CsiVolume, stagingPath: string, publishContext: Record<string, string>): Promise<void> {
    const csi = this.deps.csi.driverClient(volume.driver, 'blockMapper.SetUpDevice failed to get CSI client');
    let stage: boolean;
    try {
      stage = await csi.supports('STAGE_UNSTAGE_VOLUME');
    } catch (err) {
      throw new Error(log(`blockMapper.stageVolumeForBlock failed to check STAGE_UNSTAGE_VOLUME capability: ${reason(err)}`));
    }
    if (!stage) return;
    let secrets: Record<string, string> = {};
    const ref = volume.nodeStageSecretRef;
    if (ref) {
      try {
        secrets = await this.deps.csi.secret(ref.namespace, ref.name);
      } catch (err) {
        throw new Error(log(`failed to get NodeStageSecretRef ${ref.namespace}/${ref.name}: ${reason(err)}`));
      }
    }
    try {
      await mkdir(stagingPath, { recursive: true, mode: 0o750 });
    } catch (err) {
      throw new Error(log(`blockMapper.stageVolumeForBlock failed to create dir ${stagingPath}: ${reason(err)}`));
    }
    try {
      await csi.nodeStageVolume({ volumeId: volume.volumeHandle, publishContext, stagingTargetPath: stagingPath, accessMode: volume.accessMode, fsType: FS_TYPE_BLOCK, secrets, volumeContext: volume.volumeAttributes });
    } catch (err) {
      // A final error: what SetUpDevice made goes (cleanupOrphanDeviceFiles).
      if (!isUncertain(err)) await rmdir(stagingPath).catch(() => {});
      throw err;
    }
  }

  /** publishVolumeForBlock: pod info in the volume context when the CSIDriver asks, the publish secrets, the parent directory made. */
  private async publish(pod: Pod, volume: CsiVolume, stagingPath: string, publishPath: string, publishContext: Record<string, string>): Promise<void> {
    const csi = this.deps.csi.driverClient(volume.driver, 'blockMapper.MapPodDevice failed to get CSI client');
    let volumeContext = { ...volume.volumeAttributes };
    try {
      const driver = await this.deps.csi.csiDriver(volume.driver);
      if (driver?.spec.podInfoOnMount) volumeContext = { ...volumeContext, ...podInfoAttributes(pod, volume.lifecycleMode) };
    } catch (err) {
      throw new Error(log(`blockMapper.publishVolumeForBlock failed to assemble volume attributes: ${reason(err)}`));
    }
    let secrets: Record<string, string> = {};
    const ref = volume.nodePublishSecretRef;
    if (ref) {
      try {
        secrets = await this.deps.csi.secret(ref.namespace, ref.name);
      } catch (err) {
        throw new Error(log(`blockMapper.publishVolumeForBlock failed to get NodePublishSecretRef ${ref.namespace}/${ref.name}: ${reason(err)}`));
      }
    }
    const publishDir = path.dirname(publishPath);
    try {
      await mkdir(publishDir, { recursive: true, mode: 0o750 });
    } catch (err) {
      throw new Error(log(`blockMapper.publishVolumeForBlock failed to create dir ${publishDir}:  ${reason(err)}`));
    }
    await csi.nodePublishVolume({
      volumeId: volume.volumeHandle,
      readOnly: volume.readOnly,
      stagingTargetPath: stagingPath,
      targetPath: publishPath,
      accessMode: volume.accessMode,
      fsType: FS_TYPE_BLOCK,
      mountOptions: [],
      publishContext,
      volumeContext,
      secrets,
    });
  }

  /** TearDownDevice: NodeUnstageVolume when the staging path is there and the driver stages, then the staging path removed. */
  private async tearDownDevice(paths: ReturnType<typeof csiBlockPaths>): Promise<void> {
    if (!(await stat(paths.stagingPath).catch(gone))) return;
    const { driver, handle } = await this.volumeData(paths.dataDir);
    const csi = this.deps.csi.driverClient(driver, 'blockMapper.TearDownDevice failed to get CSI client');
    let stage: boolean;
    try {
      stage = await csi.supports('STAGE_UNSTAGE_VOLUME');
    } catch (err) {
      throw new Error(log(`blockMapper.unstageVolumeForBlock failed to check STAGE_UNSTAGE_VOLUME capability: ${reason(err)}`));
    }
    if (!stage) return;
    try {
      await csi.nodeUnstageVolume(handle, paths.stagingPath);
    } catch (err) {
      throw new Error(log(`blockMapper.unstageVolumeForBlock failed: ${reason(err)}`));
    }
    await rm(paths.stagingPath, { recursive: true, force: true });
  }

  /** cleanupOrphanDeviceFiles: the (empty) publish directory, the staging path, and the volume's directory with its data. */
  private async cleanupOrphanDeviceFiles(paths: ReturnType<typeof csiBlockPaths>): Promise<void> {
    await rmdir(paths.publishDir).catch(gone);
    await rmdir(paths.stagingPath).catch(gone);
    await rm(paths.volumeDir, { recursive: true, force: true });
  }

  /** The driver and handle the volume was mapped with (NewBlockVolumeUnmapper reads vol_data.json). */
  private async volumeData(dataDir: string): Promise<{ driver: string; handle: string }> {
    const data = await loadVolumeData(dataDir);
    return { driver: data[VOL_DATA_KEY.driverName] ?? '', handle: data[VOL_DATA_KEY.volumeHandle] ?? '' };
  }

  private mapPaths(ref: CsiPodVolume): BlockMapPaths {
    return { globalMapPath: csiBlockPaths(this.deps.rootDir, ref.specName).globalMapPath, podDeviceMapDir: podDeviceMapDir(path.join(this.deps.rootDir, 'pods'), ref.uid, CSI_PLUGIN_NAME), volumeMapName: ref.specName, uid: ref.uid };
  }

  private device(uniqueName: string): BlockDevice {
    return sharedDevice(this.devices, uniqueName);
  }
}
