/**
 * The kubelet's client of a CSI driver's Node service (pkg/volume/csi/csi_client.go
 * csiDriverClient), over gRPC on the unix socket the driver registered as its endpoint.
 *
 * As the kubelet does, every RPC dials the socket anew (csi_client.go newGrpcConn: a connection
 * per call, authority `localhost`, closed after it), so a driver that restarts is simply reached
 * at the next call; nothing is cached, the capabilities included: stage, publish and expand ask
 * NodeGetCapabilities first (for SINGLE_NODE_MULTI_WRITER, which picks the access-mode table),
 * and each `supports` is one NodeGetCapabilities, so a driver's answers may change between
 * calls. Each method is one operation with one deadline (2 minutes unless set: csi_plugin.go
 * csiTimeout) over its RPCs, and an optional AbortSignal. Every failure rejects with a `CsiError`
 * (errors.ts) that says whether the operation is certainly over (`final`) or may still be in
 * progress on the driver's side.
 *
 * Used by the CSI registration handler (NodeGetInfo) and the volume manager's CSI mounter (the
 * rest); it knows nothing of pods, PVs or paths: callers pass what csi_attacher.go and
 * csi_mounter.go would.
 */
import { GrpcChannel, GrpcStatusError } from '../../runtime/cri/channel.ts';
import { csiAccessMode } from './accessMode.ts';
import { CsiError } from './errors.ts';
import { nodeMethod, type NodeRpc, type NodeRpcs, type WireMap, type WireVolumeCapability } from './wire.ts';

/** The node capabilities csi.proto v1.12 names (NodeServiceCapability.RPC.Type, UNKNOWN aside). */
export type NodeCapability = 'STAGE_UNSTAGE_VOLUME' | 'GET_VOLUME_STATS' | 'EXPAND_VOLUME' | 'VOLUME_CONDITION' | 'SINGLE_NODE_MULTI_WRITER' | 'VOLUME_MOUNT_GROUP';

const NODE_CAPABILITIES: ReadonlySet<string> = new Set<NodeCapability>(['STAGE_UNSTAGE_VOLUME', 'GET_VOLUME_STATS', 'EXPAND_VOLUME', 'VOLUME_CONDITION', 'SINGLE_NODE_MULTI_WRITER', 'VOLUME_MOUNT_GROUP']);

/** The fsType that asks for a raw block volume instead of a filesystem (csi_plugin.go fsTypeBlockName). */
export const FS_TYPE_BLOCK = 'block';

export interface CsiCallOptions {
  /** This operation's deadline from now; the client's default (2 minutes) otherwise. */
  timeoutMs?: number;
  /** Aborting cancels the RPC under way: it rejects with CANCELLED, an uncertain error. */
  signal?: AbortSignal;
}

export interface CsiNodeClientOptions {
  /** The deadline of an operation that does not set its own. Default 2 minutes (csi_plugin.go csiTimeout). */
  timeoutMs?: number;
}

/** NodeGetInfo's answer. */
export interface CsiNodeInfo {
  nodeId: string;
  /** 0 when the driver sets none. */
  maxVolumesPerNode: number;
  /** The segments of accessible_topology; null when the driver reports none. */
  accessibleTopology: Record<string, string> | null;
}

/**
 * NodeGetVolumeStats' answer as the kubelet reads it (csi_client.go NodeGetVolumeStats): the
 * BYTES usage as available/capacity/used, the INODES usage as inodesFree/inodes/inodesUsed; a
 * unit the driver does not report stays 0.
 */
export interface CsiVolumeMetrics {
  availableBytes: number;
  capacityBytes: number;
  usedBytes: number;
  inodesFree: number;
  inodes: number;
  inodesUsed: number;
}

/** How the volume is to be mounted: a filesystem (`fsType`, possibly empty) or, with FS_TYPE_BLOCK, a raw block device. */
interface VolumeShape {
  /** The Kubernetes access mode (the PV's first, ReadWriteOnce when none; always ReadWriteOnce inline). */
  accessMode: string;
  fsType: string;
  mountOptions?: readonly string[];
}

export interface NodeStageVolumeArgs extends VolumeShape {
  volumeId: string;
  /** The VolumeAttachment's attachmentMetadata; empty without attach. */
  publishContext?: Readonly<Record<string, string>>;
  stagingTargetPath: string;
  secrets?: Readonly<Record<string, string>>;
  volumeContext?: Readonly<Record<string, string>>;
  /** Sent as volume_mount_group: only when the driver has VOLUME_MOUNT_GROUP (the caller checks, as the kubelet does). */
  fsGroup?: number;
}

export interface NodePublishVolumeArgs extends VolumeShape {
  volumeId: string;
  readOnly: boolean;
  /** Only when the driver stages (STAGE_UNSTAGE_VOLUME). */
  stagingTargetPath?: string;
  targetPath: string;
  publishContext?: Readonly<Record<string, string>>;
  volumeContext?: Readonly<Record<string, string>>;
  secrets?: Readonly<Record<string, string>>;
  /** As for NodeStageVolume. */
  fsGroup?: number;
}

export interface NodeExpandVolumeArgs extends VolumeShape {
  volumeId: string;
  /** The target path of a published volume. */
  volumePath: string;
  stagingTargetPath?: string;
  /** capacity_range.required_bytes: the PV's new size. */
  newSizeBytes: number;
  secrets?: Readonly<Record<string, string>>;
}

/**
 * A CSI driver's Node service as the kubelet calls it, one method per csiClient call of
 * csi_client.go. What the registration handler and the volume manager depend on; `CsiNodeClient`
 * is the real one, a test may give a double.
 */
export interface CsiNode {
  /** NodeGetInfo: the driver's node ID, volume limit and topology (the registration handler's first call). */
  nodeGetInfo(options?: CsiCallOptions): Promise<CsiNodeInfo>;

  /** NodeGetCapabilities: the node capabilities the driver names; entries of other kinds or types are skipped. */
  nodeGetCapabilities(options?: CsiCallOptions): Promise<NodeCapability[]>;

  /** Whether the driver has `capability`: one NodeGetCapabilities (csi_client.go nodeSupportsCapability). */
  supports(capability: NodeCapability, options?: CsiCallOptions): Promise<boolean>;

  /** NodeStageVolume, after NodeGetCapabilities for the access-mode table (csi_client.go NodeStageVolume). */
  nodeStageVolume(args: NodeStageVolumeArgs, options?: CsiCallOptions): Promise<void>;

  /** NodeUnstageVolume (csi_client.go NodeUnstageVolume). */
  nodeUnstageVolume(volumeId: string, stagingTargetPath: string, options?: CsiCallOptions): Promise<void>;

  /** NodePublishVolume, after NodeGetCapabilities for the access-mode table (csi_client.go NodePublishVolume). */
  nodePublishVolume(args: NodePublishVolumeArgs, options?: CsiCallOptions): Promise<void>;

  /** NodeUnpublishVolume (csi_client.go NodeUnpublishVolume). */
  nodeUnpublishVolume(volumeId: string, targetPath: string, options?: CsiCallOptions): Promise<void>;

  /**
   * NodeGetVolumeStats of a published volume at `targetPath` (csi_client.go NodeGetVolumeStats;
   * the caller first checks GET_VOLUME_STATS, as csi_metrics.go does). An answer without usage
   * is an error, as upstream.
   */
  nodeGetVolumeStats(volumeId: string, targetPath: string, options?: CsiCallOptions): Promise<CsiVolumeMetrics>;

  /**
   * NodeExpandVolume, after NodeGetCapabilities for the access-mode table (csi_client.go
   * NodeExpandVolume); resolves with the capacity the driver reports (capacity_bytes).
   */
  nodeExpandVolume(args: NodeExpandVolumeArgs, options?: CsiCallOptions): Promise<number>;
}

/** Largest answer read (grpc-go's default receive limit, which the kubelet's client keeps). */
const MAX_RECEIVE_MESSAGE_BYTES = 4 * 1024 * 1024;
const DEFAULT_TIMEOUT_MS = 2 * 60_000;

/** The unix socket path of a registered endpoint: a path, or `unix://` and a path. */
export function csiSocketPath(endpoint: string): string {
  const socket = endpoint.startsWith('unix://') ? endpoint.slice('unix://'.length) : endpoint;
  if (!socket.startsWith('/')) throw new Error(`unsupported CSI endpoint ${JSON.stringify(endpoint)}: want an absolute unix socket path`);
  return socket;
}

/** One operation's deadline and signal, shared by its RPCs. */
interface Operation {
  deadline: number;
  signal: AbortSignal | undefined;
}

export class CsiNodeClient implements CsiNode {
  private readonly socket: string;
  private readonly timeoutMs: number;

  /** `endpoint`: the socket the driver registered (GetInfo's endpoint, or the registration socket's path). */
  constructor(endpoint: string, options: CsiNodeClientOptions = {}) {
    this.socket = csiSocketPath(endpoint);
    this.timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  }

  async nodeGetInfo(options?: CsiCallOptions): Promise<CsiNodeInfo> {
    const response = await this.call('NodeGetInfo', {}, this.operation(options));
    return {
      nodeId: response.nodeId,
      maxVolumesPerNode: Number(response.maxVolumesPerNode),
      accessibleTopology: response.accessibleTopology ? { ...response.accessibleTopology.segments } : null,
    };
  }

  async nodeGetCapabilities(options?: CsiCallOptions): Promise<NodeCapability[]> {
    return this.capabilities(this.operation(options));
  }

  async supports(capability: NodeCapability, options?: CsiCallOptions): Promise<boolean> {
    return (await this.capabilities(this.operation(options))).includes(capability);
  }

  async nodeStageVolume(args: NodeStageVolumeArgs, options?: CsiCallOptions): Promise<void> {
    if (args.volumeId === '') throw CsiError.notMade('NodeStageVolume', 'missing volume id');
    if (args.stagingTargetPath === '') throw CsiError.notMade('NodeStageVolume', 'missing staging target path');
    const op = this.operation(options);
    const volumeCapability = await this.volumeCapability(args, args.fsGroup, op);
    await this.call(
      'NodeStageVolume',
      {
        volumeId: args.volumeId,
        publishContext: wireMap(args.publishContext),
        stagingTargetPath: args.stagingTargetPath,
        volumeCapability,
        secrets: wireMap(args.secrets),
        volumeContext: wireMap(args.volumeContext),
      },
      op,
    );
  }

  async nodeUnstageVolume(volumeId: string, stagingTargetPath: string, options?: CsiCallOptions): Promise<void> {
    if (volumeId === '') throw CsiError.notMade('NodeUnstageVolume', 'missing volume id');
    if (stagingTargetPath === '') throw CsiError.notMade('NodeUnstageVolume', 'missing staging target path');
    await this.call('NodeUnstageVolume', { volumeId, stagingTargetPath }, this.operation(options));
  }

  async nodePublishVolume(args: NodePublishVolumeArgs, options?: CsiCallOptions): Promise<void> {
    if (args.volumeId === '') throw CsiError.notMade('NodePublishVolume', 'missing volume id');
    if (args.targetPath === '') throw CsiError.notMade('NodePublishVolume', 'missing target path');
    const op = this.operation(options);
    const volumeCapability = await this.volumeCapability(args, args.fsGroup, op);
    await this.call(
      'NodePublishVolume',
      {
        volumeId: args.volumeId,
        publishContext: wireMap(args.publishContext),
        ...(args.stagingTargetPath ? { stagingTargetPath: args.stagingTargetPath } : {}),
        targetPath: args.targetPath,
        volumeCapability,
        readonly: args.readOnly,
        secrets: wireMap(args.secrets),
        volumeContext: wireMap(args.volumeContext),
      },
      op,
    );
  }

  async nodeUnpublishVolume(volumeId: string, targetPath: string, options?: CsiCallOptions): Promise<void> {
    if (volumeId === '') throw CsiError.notMade('NodeUnpublishVolume', 'missing volume id');
    if (targetPath === '') throw CsiError.notMade('NodeUnpublishVolume', 'missing target path');
    await this.call('NodeUnpublishVolume', { volumeId, targetPath }, this.operation(options));
  }

  async nodeGetVolumeStats(volumeId: string, targetPath: string, options?: CsiCallOptions): Promise<CsiVolumeMetrics> {
    if (volumeId === '') throw CsiError.notMade('NodeGetVolumeStats', 'missing volume id');
    if (targetPath === '') throw CsiError.notMade('NodeGetVolumeStats', 'missing target path');
    const response = await this.call('NodeGetVolumeStats', { volumeId, volumePath: targetPath }, this.operation(options));
    if (response.usage.length === 0) throw CsiError.withoutStatus('NodeGetVolumeStats', 'failed to get usage from response. usage is nil');
    const metrics: CsiVolumeMetrics = { availableBytes: 0, capacityBytes: 0, usedBytes: 0, inodesFree: 0, inodes: 0, inodesUsed: 0 };
    for (const usage of response.usage) {
      if (!usage) continue;
      if (usage.unit === 'BYTES') Object.assign(metrics, { availableBytes: Number(usage.available), capacityBytes: Number(usage.total), usedBytes: Number(usage.used) });
      else if (usage.unit === 'INODES') Object.assign(metrics, { inodesFree: Number(usage.available), inodes: Number(usage.total), inodesUsed: Number(usage.used) });
    }
    return metrics;
  }

  async nodeExpandVolume(args: NodeExpandVolumeArgs, options?: CsiCallOptions): Promise<number> {
    if (args.volumeId === '') throw CsiError.notMade('NodeExpandVolume', 'missing volume id');
    if (args.volumePath === '') throw CsiError.notMade('NodeExpandVolume', 'missing volume path');
    if (args.newSizeBytes < 0) throw CsiError.notMade('NodeExpandVolume', 'size can not be less than 0');
    const op = this.operation(options);
    const volumeCapability = await this.volumeCapability(args, undefined, op);
    const response = await this.call(
      'NodeExpandVolume',
      {
        volumeId: args.volumeId,
        volumePath: args.volumePath,
        capacityRange: { requiredBytes: args.newSizeBytes },
        ...(args.stagingTargetPath ? { stagingTargetPath: args.stagingTargetPath } : {}),
        volumeCapability,
        secrets: wireMap(args.secrets),
      },
      op,
    );
    return Number(response.capacityBytes);
  }

  // ---------------------------------------------------------------- the calls

  private operation(options: CsiCallOptions | undefined): Operation {
    return { deadline: Date.now() + (options?.timeoutMs ?? this.timeoutMs), signal: options?.signal };
  }

  private async capabilities(op: Operation): Promise<NodeCapability[]> {
    const response = await this.call('NodeGetCapabilities', {}, op);
    const names: NodeCapability[] = [];
    for (const capability of response.capabilities) {
      const type = capability.rpc?.type;
      if (typeof type === 'string' && NODE_CAPABILITIES.has(type)) names.push(type as NodeCapability);
    }
    return names;
  }

  /** The volume_capability of a stage, publish or expand, its access mode by the driver's SINGLE_NODE_MULTI_WRITER (getNodeV1AccessModeMapper). */
  private async volumeCapability(shape: VolumeShape, fsGroup: number | undefined, op: Operation): Promise<WireVolumeCapability> {
    const singleNodeMultiWriter = (await this.capabilities(op)).includes('SINGLE_NODE_MULTI_WRITER');
    const accessMode = { mode: csiAccessMode(shape.accessMode, singleNodeMultiWriter) };
    if (shape.fsType === FS_TYPE_BLOCK) return { block: {}, accessMode };
    return { mount: { fsType: shape.fsType, mountFlags: [...(shape.mountOptions ?? [])], volumeMountGroup: fsGroup === undefined ? '' : String(fsGroup) }, accessMode };
  }

  /** One RPC on a connection of its own, closed after it. */
  private async call<R extends NodeRpc>(rpc: R, request: NodeRpcs[R]['request'], op: Operation): Promise<NodeRpcs[R]['response']> {
    const channel = new GrpcChannel({ path: this.socket }, { maxReceiveMessageBytes: MAX_RECEIVE_MESSAGE_BYTES });
    try {
      return await channel.unary(nodeMethod(rpc), request, { timeoutMs: Math.max(0, op.deadline - Date.now()), ...(op.signal ? { signal: op.signal } : {}) });
    } catch (err) {
      throw err instanceof GrpcStatusError ? CsiError.status(rpc, err.code, err.details) : CsiError.withoutStatus(rpc, err instanceof Error ? err.message : String(err));
    } finally {
      channel.close();
    }
  }
}

function wireMap(map: Readonly<Record<string, string>> | undefined): WireMap {
  return { ...map };
}
