/**
 * The CSI plugin's operations on this node, as the kubelet's operation generator runs them for a
 * CSI volume (pkg/volume/util/operationexecutor/operation_generator.go
 * GenerateVerifyControllerAttachedVolumeFunc, GenerateMountVolumeFunc, GenerateUnmountVolumeFunc,
 * GenerateUnmountDeviceFunc over pkg/volume/csi csi_attacher.go and csi_mounter.go):
 *
 *   mount (per pod)   1. an attachable volume (a PV whose CSIDriver does not say `attachRequired:
 *                        false`) must be reported in the Node's `status.volumesInUse` and then be
 *                        listed in its `status.volumesAttached` by the attach-detach controller
 *                        (no event: the wait's `unattached volumes=[…]` and the log say it);
 *                     2. WaitForAttach GETs its VolumeAttachment once: attached, its
 *                        `attachmentMetadata` is the publish context;
 *                     3. MountDevice, once per volume per node, shared by its pods: NodeStageVolume
 *                        at `plugins/kubernetes.io/csi/<driver>/<sha256(handle)>/globalmount`, its
 *                        `vol_data.json` beside, only when the driver has STAGE_UNSTAGE_VOLUME;
 *                     4. SetUp: NodePublishVolume at `pods/<uid>/volumes/kubernetes.io~csi/<spec>/mount`,
 *                        the pod's `vol_data.json` written first; then the pod's fsGroup, by the
 *                        driver (VOLUME_MOUNT_GROUP) or by the kubelet's ownership walk.
 *   unpublish (per pod)  TearDown: NodeUnpublishVolume, then the directory and its vol_data.json.
 *   release (per pod)    when no pod of this node wants the volume any more: UnmountDevice
 *                        (NodeUnstageVolume) and the volume is no longer attached in the actual state.
 *
 * Device operations of one volume run one at a time (nestedpendingoperations: an operation without
 * a pod excludes every other of its volume). An error the driver's answer leaves *uncertain*
 * (csi_client.go isFinalError) keeps what was made and the volume counted as mounted-uncertain, so
 * a retry mounts again and a pod that goes still has it unpublished and unstaged; a *final* error
 * removes what the operation made (removeMountDir) and counts it as not mounted.
 *
 * After a restart, each volume found set up (reconstruction.ts) is adopted uncertain
 * (`adoptReconstructed`): its publish, and its device held for its pod, so a pod that still wants
 * it stages and publishes again (drivers are idempotent) and one that does not has it unpublished,
 * then unstaged once no other pod holds the stage.
 *
 * Raw block volumes are mapped by csi/block.ts (csi_block.go) with this attach wait, driver table
 * and secrets; a published volume's stats are read by stats.ts, its expansion made by expand.ts.
 */
import { mkdir, readFile, rm, rmdir } from 'node:fs/promises';
import { type SharedDevice, adoptFoundDevice, foundHolder, serially, sharedDevice } from './sharedDevices.ts';
import path from 'node:path';
import type { NodeObject } from '../../api/cluster.ts';
import type { CSIDriver, VolumeAttachment } from '../../api/storage.ts';
import type { Pod } from '../../api/types.ts';
import { apiErrorText, isNotFound } from '../../client/api.ts';
import { mountPointsUnder } from '../mounter.ts';
import type { TokenSource } from '../tokens.ts';
import { setVolumeOwnership } from '../volumeOwnership.ts';
import { type CsiNode, CsiNodeClient } from './client.ts';
import { CsiError } from './errors.ts';
import { CSI_PLUGIN_NAME, attachmentName, podVolumeDir, publishTargetPath, stagingTargetPath } from './paths.ts';
import { type CsiVolume, type FsGroupPolicy, SERVICE_ACCOUNT_TOKENS_KEY, fsGroupPolicyOf, kubeletAppliesFsGroup, lifecycleModeProblem, podInfoAttributes } from './spec.ts';
import { VOL_DATA_FILE, VOL_DATA_KEY, deviceVolumeData, podVolumeData } from './volData.ts';
import { loadVolumeData, saveVolumeData } from './volDataFile.ts';

/** Where each registered CSI driver serves (the CSI registration handler's table); null: not registered. */
export interface CsiDriverEndpoints {
  endpoint(driverName: string): string | null;
}

/** The API reads of the CSI plugin, with the node's identity. */
export interface CsiApiReads {
  /** A driver's CSIDriver; null when it has none (a 404). */
  csiDriver(name: string): Promise<CSIDriver | null>;
  volumeAttachment(name: string): Promise<VolumeAttachment>;
  node(name: string): Promise<NodeObject>;
  /** A Secret's values, decoded. */
  secret(namespace: string, name: string): Promise<Record<string, string>>;
}

/** The actual state's attach side (the volume world): what the node reported in use, what it holds attached. */
export interface AttachState {
  /** Whether the last Node status written listed the volume in `volumesInUse` (ReportedInUse). */
  reportedInUse(uniqueName: string): boolean;
  attached(uniqueName: string): boolean;
  markAttached(uniqueName: string): void;
  markDetached(uniqueName: string): void;
}

export interface CsiOperationsDeps {
  /** The agent's --root-dir. */
  rootDir: string;
  nodeName: string;
  drivers: CsiDriverEndpoints;
  attach: AttachState;
  /** Absent: a node without an API server (no CSIDriver objects, attachments or secrets). */
  api?: CsiApiReads;
  tokens?: TokenSource;
}

/** A pod volume as the operations know it. */
export interface CsiPodVolume {
  /** The pod volume's operation id (its actor): the holder of the volume's device. */
  id: string;
  uid: string;
  uniqueName: string;
  specName: string;
  kind: 'csiPV' | 'csiInline';
}

/**
 * A failed CSI operation, worded as the operation generator words it. `recordEvent`: it is a
 * FailedMount event (the attach verification's errors are not: GenerateVerifyControllerAttachedVolumeFunc
 * has no event recorder).
 */
export class CsiOperationError extends Error {
  override readonly name = 'CsiOperationError';
  constructor(
    message: string,
    readonly recordEvent: boolean,
  ) {
    super(message);
  }
}

/** An error that leaves the operation's outcome uncertain (volumetypes.UncertainProgressError). */
class UncertainError extends Error {}

type MountState = 'mounted' | 'uncertain';

/** The device's mount: none until MountDevice succeeds or ends uncertain; UnmountDevice runs once no pod volume holds it. */
type Device = SharedDevice<MountState>;

const reason = (err: unknown) => (err instanceof Error ? err.message : String(err));
const log = (message: string) => `${CSI_PLUGIN_NAME}: ${message}`;
/** volumetypes.IsUncertainProgressError over csi_client.go's wrapping. */
export const isUncertain = (err: unknown) => err instanceof UncertainError || (err instanceof CsiError && !err.final);
/** operation_executor.go GenerateError: `<op> for volume "<spec>" [: <err>]`. */
export const volumeError = (op: string, specName: string, err: unknown, recordEvent = true) =>
  new CsiOperationError(`${op} for volume ${JSON.stringify(specName)} ${err === undefined ? '' : `: ${reason(err)}`}`, recordEvent);

export class CsiOperations {
  private readonly devices = new Map<string, Device>();
  /** Each pod volume's publish (`<uid>/<uniqueName>`): absent until NodePublishVolume succeeded or ended uncertain. */
  private readonly published = new Map<string, MountState>();

  constructor(private readonly deps: CsiOperationsDeps) {}

  /** Mounts the pod's CSI volume; resolves with the node path its containers mount (the target path). */
  async mount(pod: Pod, ref: CsiPodVolume, volume: CsiVolume): Promise<string> {
    let publishContext: Record<string, string> = {};
    if (ref.kind === 'csiPV') {
      const device = this.device(ref.uniqueName);
      device.holders.add(ref.id);
      device.holders.delete(foundHolder(ref.uid));
      publishContext = await this.attach(ref, volume, 'MountVolume');
      if (device.state !== 'mounted') {
        await serially(device, async () => {
          if (device.state === 'mounted') return;
          try {
            await this.mountDevice(pod, volume, publishContext);
            device.state = 'mounted';
          } catch (err) {
            device.state = isUncertain(err) ? 'uncertain' : null;
            throw volumeError('MountVolume.MountDevice failed', ref.specName, err);
          }
        });
      }
    }
    const key = `${ref.uid}/${ref.uniqueName}`;
    // A remount (CSIDriver requiresRepublish) of a mounted volume: whatever it gives, the volume stays mounted and its directory kept.
    const remount = this.published.get(key) === 'mounted';
    try {
      const target = await this.setUp(pod, ref, volume, publishContext, remount);
      this.published.set(key, 'mounted');
      return target;
    } catch (err) {
      if (!remount) {
        if (isUncertain(err)) this.published.set(key, 'uncertain');
        else this.published.delete(key);
      }
      throw volumeError('MountVolume.SetUp failed', ref.specName, err);
    }
  }

  /** TearDown of the pod's publish (mounted or uncertain); nothing when it was never published. */
  async unpublish(ref: CsiPodVolume): Promise<void> {
    const key = `${ref.uid}/${ref.uniqueName}`;
    if (!this.published.has(key)) return;
    try {
      await this.tearDown(ref);
    } catch (err) {
      throw new CsiOperationError(`UnmountVolume.TearDown failed for volume ${JSON.stringify(ref.specName)} (UniqueName: ${JSON.stringify(ref.uniqueName)}) pod ${JSON.stringify(ref.uid)} : ${reason(err)}`, false);
    }
    this.published.delete(key);
  }

  /**
   * The pod no longer wants the volume (its publish is gone): the last one to go unmounts the
   * device (reconciler unmountDetachDevices) and the volume leaves the actual state's attached
   * volumes, so the next Node status drops it from `volumesInUse`.
   */
  async release(ref: CsiPodVolume): Promise<void> {
    const device = this.devices.get(ref.uniqueName);
    if (!device) return;
    device.holders.delete(ref.id);
    device.holders.delete(foundHolder(ref.uid));
    await serially(device, async () => {
      if (device.holders.size > 0) return;
      if (device.state !== null) {
        try {
          await this.unmountDevice(ref.uniqueName, device);
        } catch (err) {
          throw new CsiOperationError(`UnmountDevice failed for volume ${JSON.stringify(ref.specName)} : ${reason(err)}`, false);
        }
        device.state = null;
      }
      this.deps.attach.markDetached(ref.uniqueName);
      if (device.holders.size === 0) this.devices.delete(ref.uniqueName);
    });
  }

  /**
   * A volume found set up at start (reconstruct.go updateStates): its publish uncertain and, for a
   * PersistentVolume, its device uncertain (MarkDeviceAsUncertain) and held for the pod.
   */
  adoptReconstructed(volume: { uid: string; uniqueName: string; kind: 'csiPV' | 'csiInline' }): void {
    const key = `${volume.uid}/${volume.uniqueName}`;
    if (!this.published.has(key)) this.published.set(key, 'uncertain');
    if (volume.kind === 'csiPV') adoptFoundDevice(this.devices, volume.uniqueName, volume.uid);
  }

  // ---------------------------------------------------------------- attach

  /**
   * The attach wait of a CSI PersistentVolume, mounted or mapped (`op`): an attachable one
   * verified attached, then its VolumeAttachment's publish context; empty when not attachable.
   */
  async attach(ref: CsiPodVolume, volume: CsiVolume, op: 'MountVolume' | 'MapVolume'): Promise<Record<string, string>> {
    if (!volume.attachable) return {};
    if (!this.deps.attach.attached(ref.uniqueName)) await this.verifyAttached(ref);
    return this.waitForAttach(ref, volume, op);
  }

  /**
   * GenerateVerifyControllerAttachedVolumeFunc for an attachable volume (a non-attachable one is
   * attached at once, and never in volumesInUse, so the actual state need not hold it).
   */
  private async verifyAttached(ref: CsiPodVolume): Promise<void> {
    if (!this.deps.attach.reportedInUse(ref.uniqueName)) throw volumeError("Volume has not been added to the list of VolumesInUse in the node's volume status", ref.specName, undefined, false);
    let node: NodeObject;
    try {
      node = await this.api().node(this.deps.nodeName);
    } catch (err) {
      throw volumeError('VerifyControllerAttachedVolume failed fetching node from API server', ref.specName, apiErrorText(err), false);
    }
    const attached = (node.status?.volumesAttached ?? []).some((v) => v.name === ref.uniqueName);
    if (!attached) throw volumeError('Volume not attached according to node status', ref.specName, undefined, false);
    this.deps.attach.markAttached(ref.uniqueName);
  }

  /** csi_attacher.go WaitForAttach, one GET of the VolumeAttachment (verifyAttachmentStatus); its attachmentMetadata is the publish context. */
  private async waitForAttach(ref: CsiPodVolume, volume: CsiVolume, op: 'MountVolume' | 'MapVolume'): Promise<Record<string, string>> {
    const name = attachmentName(volume.volumeHandle, volume.driver, this.deps.nodeName);
    const failed = (err: string) => volumeError(`${op}.WaitForAttach failed`, ref.specName, err);
    let attachment: VolumeAttachment;
    try {
      attachment = await this.api().volumeAttachment(name);
    } catch (err) {
      throw failed(`volume ${volume.volumeHandle} has GET error for volume attachment ${name}: ${apiErrorText(err)}`);
    }
    if (attachment.metadata.deletionTimestamp) throw failed('volume attachment is being deleted');
    if (!attachment.status?.attached) {
      const attachError = attachment.status?.attachError;
      throw failed(attachError ? (attachError.message ?? '') : `volume ${volume.volumeHandle} is not attached for volume attachment ${name}`);
    }
    return { ...attachment.status.attachmentMetadata };
  }

  // ---------------------------------------------------------------- device

  /** csi_attacher.go MountDevice (v1.37: without STAGE_UNSTAGE_VOLUME it returns before writing vol_data.json). */
  private async mountDevice(pod: Pod, volume: CsiVolume, publishContext: Record<string, string>): Promise<void> {
    const csi = this.driverClient(volume.driver, 'attacher.MountDevice failed to create newCsiDriverClient');
    const stage = await csi.supports('STAGE_UNSTAGE_VOLUME');
    let secrets: Record<string, string> = {};
    const ref = volume.nodeStageSecretRef;
    // Secrets only when the driver stages.
    if (ref && stage) {
      try {
        secrets = await this.secret(ref.namespace, ref.name);
      } catch (err) {
        throw new Error(`fetching NodeStageSecretRef ${ref.namespace}/${ref.name} failed: ${reason(err)}`);
      }
    }
    const stagingPath = stagingTargetPath(this.deps.rootDir, volume.driver, volume.volumeHandle);
    try {
      await mkdir(stagingPath, { recursive: true, mode: 0o750 });
    } catch (err) {
      throw new Error(log(`attacher.MountDevice failed to create dir ${JSON.stringify(stagingPath)}:  ${reason(err)}`));
    }
    if (!stage) return;
    let mountGroup: boolean;
    try {
      mountGroup = await csi.supports('VOLUME_MOUNT_GROUP');
    } catch (err) {
      throw new Error(log(`attacher.MountDevice failed to determine if the node service has VOLUME_MOUNT_GROUP capability: ${reason(err)}`));
    }
    try {
      await saveVolumeData(path.dirname(stagingPath), deviceVolumeData({ volumeHandle: volume.volumeHandle, driverName: volume.driver }));
    } catch (err) {
      await this.removeMountDir(stagingPath);
      throw new Error(log(`failed to save volume info data: ${reason(err)}`));
    }
    const fsGroup = pod.spec.securityContext?.fsGroup;
    try {
      await csi.nodeStageVolume({
        volumeId: volume.volumeHandle,
        publishContext,
        stagingTargetPath: stagingPath,
        accessMode: volume.accessMode,
        fsType: volume.fsType,
        mountOptions: volume.mountOptions,
        secrets,
        volumeContext: volume.volumeAttributes,
        ...(mountGroup && fsGroup !== undefined ? { fsGroup } : {}),
      });
    } catch (err) {
      if (!isUncertain(err)) await this.removeMountDir(stagingPath);
      throw err;
    }
  }

  /** csi_attacher.go UnmountDevice: reads the node's vol_data.json (none: nothing to do), NodeUnstageVolume with STAGE_UNSTAGE_VOLUME, then removes the directories. */
  private async unmountDevice(uniqueName: string, device: Device): Promise<void> {
    const { driver, handle } = parseUniqueName(uniqueName);
    const stagingPath = stagingTargetPath(this.deps.rootDir, driver, handle);
    let data;
    try {
      data = await loadVolumeData(path.dirname(stagingPath));
    } catch (err) {
      if ((err as { cause?: NodeJS.ErrnoException }).cause?.code === 'ENOENT') return;
      throw err;
    }
    const csi = this.driverClient(data[VOL_DATA_KEY.driverName] ?? driver, 'attacher.UnmountDevice failed to create newCsiDriverClient');
    let stage: boolean;
    try {
      stage = await csi.supports('STAGE_UNSTAGE_VOLUME');
    } catch (err) {
      throw new Error(log(`attacher.UnmountDevice failed to check whether STAGE_UNSTAGE_VOLUME set: ${reason(err)}`));
    }
    if (stage) {
      try {
        await csi.nodeUnstageVolume(data[VOL_DATA_KEY.volumeHandle] ?? handle, stagingPath);
      } catch (err) {
        if (isUncertain(err)) device.state = 'uncertain';
        throw new Error(log(`attacher.UnmountDevice failed: ${reason(err)}`));
      }
    }
    try {
      await this.removeMountDir(stagingPath);
    } catch (err) {
      throw new Error(log(`failed to clean up global mount ${path.dirname(stagingPath)}: ${reason(err)}`));
    }
  }

  // ---------------------------------------------------------------- pod

  /** csi_mounter.go SetUpAt; returns the target path. */
  private async setUp(pod: Pod, ref: CsiPodVolume, volume: CsiVolume, publishContext: Record<string, string>, remount: boolean): Promise<string> {
    const csi = this.driverClient(volume.driver, 'mounter.SetUpAt failed to get CSI client');
    let driver: CSIDriver | null;
    try {
      driver = await this.csiDriver(volume.driver);
    } catch (err) {
      throw new Error(log(`mounter.SetupAt failed to check volume lifecycle mode: ${reason(err)}`));
    }
    const modeProblem = lifecycleModeProblem(volume.driver, volume.lifecycleMode, driver);
    if (modeProblem) throw new Error(log(`mounter.SetupAt failed to check volume lifecycle mode: ${modeProblem}`));
    const policy = fsGroupPolicyOf(driver);
    if ('error' in policy) throw new Error(log(`mounter.SetupAt failed to check fsGroup policy: ${policy.error}`));
    let stagingPath: string | undefined;
    if (volume.lifecycleMode === 'Persistent') {
      let stage: boolean;
      try {
        stage = await csi.supports('STAGE_UNSTAGE_VOLUME');
      } catch (err) {
        throw new Error(log(`mounter.SetUpAt failed to check for STAGE_UNSTAGE_VOLUME capability: ${reason(err)}`));
      }
      if (stage) stagingPath = stagingTargetPath(this.deps.rootDir, volume.driver, volume.volumeHandle);
    }
    const target = publishTargetPath(this.deps.rootDir, ref.uid, ref.specName);
    const dir = path.dirname(target);
    try {
      await mkdir(dir, { recursive: true, mode: 0o750 });
    } catch (err) {
      throw new Error(log(`mounter.SetUpAt failed to create dir ${JSON.stringify(dir)}:  ${reason(err)}`));
    }
    let secrets: Record<string, string> = {};
    const secretRef = volume.nodePublishSecretRef;
    if (secretRef) {
      try {
        secrets = await this.secret(secretRef.namespace, secretRef.name);
      } catch (err) {
        throw new Error(`fetching NodePublishSecretRef ${secretRef.namespace}/${secretRef.name} failed: ${reason(err)}`);
      }
    }
    let volumeContext = { ...volume.volumeAttributes };
    if (driver?.spec.podInfoOnMount) volumeContext = { ...volumeContext, ...podInfoAttributes(pod, volume.lifecycleMode) };
    let tokens: Record<string, string>;
    try {
      tokens = await this.serviceAccountTokens(pod, driver);
    } catch (err) {
      throw new Error(log(`mounter.SetUpAt failed to get service accoount token attributes: ${reason(err)}`));
    }
    if (driver?.spec.serviceAccountTokenInSecrets) secrets = { ...secrets, ...tokens };
    else volumeContext = { ...volumeContext, ...tokens };
    let mountGroup: boolean;
    try {
      mountGroup = await csi.supports('VOLUME_MOUNT_GROUP');
    } catch (err) {
      throw new Error(log(`mounter.SetUpAt failed to determine if the node service has VOLUME_MOUNT_GROUP capability: ${reason(err)}`));
    }
    try {
      await saveVolumeData(dir, podVolumeData({ specName: ref.specName, volumeHandle: volume.volumeHandle, driverName: volume.driver, nodeName: this.deps.nodeName, lifecycleMode: volume.lifecycleMode }));
    } catch (err) {
      await this.removeMountDir(target);
      throw err;
    }
    const fsGroup = pod.spec.securityContext?.fsGroup;
    try {
      await csi.nodePublishVolume({
        volumeId: volume.volumeHandle,
        readOnly: volume.readOnly,
        ...(stagingPath ? { stagingTargetPath: stagingPath } : {}),
        targetPath: target,
        accessMode: volume.accessMode,
        fsType: volume.fsType,
        mountOptions: volume.mountOptions,
        publishContext,
        volumeContext,
        secrets,
        ...(mountGroup && fsGroup !== undefined ? { fsGroup } : {}),
      });
    } catch (err) {
      if (!isUncertain(err) && !remount) await this.removeMountDir(target);
      throw err;
    }
    if (!mountGroup) await this.applyFsGroup(pod, volume, target, policy.policy);
    return target;
  }

  /** The kubelet's ownership walk when the driver does not apply the fsGroup itself; a failure leaves the mount uncertain. */
  private async applyFsGroup(pod: Pod, volume: CsiVolume, target: string, policy: FsGroupPolicy): Promise<void> {
    const fsGroup = pod.spec.securityContext?.fsGroup;
    if (!kubeletAppliesFsGroup(volume, fsGroup, policy)) return;
    const changePolicy = pod.spec.securityContext?.fsGroupChangePolicy;
    let failure: string | null = null;
    try {
      const { refusals } = await setVolumeOwnership(target, fsGroup!, { readOnly: false, ...(changePolicy ? { policy: changePolicy } : {}) });
      if (refusals.length > 0) failure = refusals[0]!.message;
    } catch (err) {
      failure = reason(err);
    }
    if (failure !== null) throw new UncertainError(`applyFSGroup failed for vol ${volume.volumeHandle}: ${failure}`);
  }

  /** csi_mounter.go TearDownAt, with the volume named by the pod's vol_data.json (NewUnmounter). */
  private async tearDown(ref: CsiPodVolume): Promise<void> {
    const dir = podVolumeDir(this.deps.rootDir, ref.uid, ref.specName);
    let data;
    try {
      data = await loadVolumeData(dir);
    } catch (err) {
      throw new Error(log(`unmounter failed to load volume data file [${dir}]: ${reason(err)}`));
    }
    const driver = data[VOL_DATA_KEY.driverName] ?? '';
    const csi = this.driverClient(driver, 'Unmounter.TearDownAt failed to get CSI client');
    const target = path.join(dir, 'mount');
    try {
      await csi.nodeUnpublishVolume(data[VOL_DATA_KEY.volumeHandle] ?? '', target);
    } catch (err) {
      throw new Error(log(`Unmounter.TearDownAt failed: ${reason(err)}`));
    }
    try {
      await this.removeMountDir(target);
    } catch (err) {
      throw new Error(log(`Unmounter.TearDownAt failed to clean mount dir [${target}]: ${reason(err)}`));
    }
  }

  // ---------------------------------------------------------------- parts

  private device(uniqueName: string): Device {
    return sharedDevice(this.devices, uniqueName);
  }

  /** csi_client.go newCsiDriverClient: an unregistered driver is a transient failure, retried. (The block mapper's too, csi/block.ts.) */
  driverClient(driver: string, what: string): CsiNode {
    const endpoint = this.deps.drivers.endpoint(driver);
    if (endpoint === null) throw new Error(log(`${what}: driver name ${driver} not found in the list of registered CSI drivers`));
    return new CsiNodeClient(endpoint);
  }

  private api(): CsiApiReads {
    if (!this.deps.api) throw new Error('this node has no API server');
    return this.deps.api;
  }

  async csiDriver(name: string): Promise<CSIDriver | null> {
    return this.deps.api ? this.deps.api.csiDriver(name) : null;
  }

  /** csi_util.go getCredentialsFromSecret. */
  async secret(namespace: string, name: string): Promise<Record<string, string>> {
    try {
      return await this.api().secret(namespace, name);
    } catch (err) {
      throw new Error(log(`failed to find the secret ${name} in the namespace ${namespace} with error: ${apiErrorText(err)}`));
    }
  }

  /** csi_mounter.go podServiceAccountTokenAttrs: one token per CSIDriver tokenRequest, bound to the pod, as JSON by audience. */
  private async serviceAccountTokens(pod: Pod, driver: CSIDriver | null): Promise<Record<string, string>> {
    const requests = driver?.spec.tokenRequests ?? [];
    if (requests.length === 0) return {};
    const tokens = this.deps.tokens;
    if (!tokens) throw new Error('ServiceAccountTokenGetter is nil');
    const outputs: Record<string, { token: string; expirationTimestamp: string }> = {};
    for (const request of requests) {
      outputs[request.audience] = await tokens.tokenStatus({
        namespace: pod.metadata.namespace,
        serviceAccount: String(pod.spec['serviceAccountName'] ?? ''),
        ...(request.audience ? { audience: request.audience } : {}),
        expirationSeconds: request.expirationSeconds ?? 3600,
        pod: { name: pod.metadata.name, uid: pod.metadata.uid },
      });
    }
    // Go's json.Marshal of a map: keys sorted.
    const sorted = Object.fromEntries(Object.keys(outputs).sort().map((audience) => [audience, outputs[audience]]));
    return { [SERVICE_ACCOUNT_TOKENS_KEY]: JSON.stringify(sorted) };
  }

  /** csi_util.go removeMountDir: unless it is a mount point, the directory, the vol_data.json beside it and their parent go. */
  private async removeMountDir(mountPath: string): Promise<void> {
    const mountinfo = await readFile('/proc/self/mountinfo', 'utf8');
    if (mountPointsUnder(mountinfo, mountPath).includes(path.resolve(mountPath))) return;
    const gone = (err: NodeJS.ErrnoException) => (err.code === 'ENOENT' ? undefined : Promise.reject(err));
    await rmdir(mountPath).catch(gone);
    const parent = path.dirname(mountPath);
    await rm(path.join(parent, VOL_DATA_FILE)).catch(gone);
    await rmdir(parent).catch(gone);
  }
}

/** The driver and handle of a CSI PV's unique name (`kubernetes.io/csi/<driver>^<handle>`). */
function parseUniqueName(uniqueName: string): { driver: string; handle: string } {
  const rest = uniqueName.slice(`${CSI_PLUGIN_NAME}/`.length);
  const at = rest.indexOf('^');
  return { driver: rest.slice(0, at), handle: rest.slice(at + 1) };
}

/**
 * The API reads over the node's client: a Secret's values decoded from base64; the CSIDrivers
 * from `csiDrivers` (the node's watched copy, src/client/csiDriverObjects.ts) or, without it, a GET
 * whose 404 is null.
 */
export function csiApiReads(
  api: {
    getCSIDriver(name: string): Promise<CSIDriver>;
    getVolumeAttachment(name: string): Promise<VolumeAttachment>;
    getNode(name: string): Promise<NodeObject>;
    getSecret(namespace: string, name: string): Promise<{ data?: Record<string, string> }>;
  },
  csiDrivers?: { get(name: string): Promise<CSIDriver | null> },
): CsiApiReads {
  return {
    csiDriver: csiDrivers ? (name) => csiDrivers.get(name) : (name) => api.getCSIDriver(name).catch((err: unknown) => (isNotFound(err) ? null : Promise.reject(err))),
    volumeAttachment: (name) => api.getVolumeAttachment(name),
    node: (name) => api.getNode(name),
    secret: async (namespace, name) => {
      const secret = await api.getSecret(namespace, name);
      return Object.fromEntries(Object.entries(secret.data ?? {}).map(([key, value]) => [key, Buffer.from(value, 'base64').toString()]));
    },
  };
}
