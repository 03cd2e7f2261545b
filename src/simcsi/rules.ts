/**
 * What sim://'s CSI driver decides, pure: which requests it refuses and with what (the CSI spec's
 * REQUIRED fields, with the words of Kubernetes' CSI mock service,
 * test/e2e/storage/drivers/csi-test/mock/service/node.go, and the hostpath driver's staging rule),
 * where a volume's data lives, which size it has and what NodeGetVolumeStats answers.
 */
import { parseQuantity } from '../api/quantity.ts';

/** gRPC status codes the driver answers with (grpc-js `status` names). */
export type CsiCode = 'INVALID_ARGUMENT' | 'NOT_FOUND' | 'FAILED_PRECONDITION' | 'INTERNAL';

/** A refusal: the gRPC code and message the driver answers with. */
export class CsiRefusal extends Error {
  constructor(
    readonly code: CsiCode,
    message: string,
  ) {
    super(message);
  }
}

/** The node capabilities it advertises: the hostpath driver's (csi-driver-host-path nodeserver.go), VOLUME_CONDITION aside. */
export const NODE_CAPABILITIES = ['STAGE_UNSTAGE_VOLUME', 'GET_VOLUME_STATS', 'EXPAND_VOLUME', 'SINGLE_NODE_MULTI_WRITER'] as const;

/** The key the pod info on mount carries for an inline volume (csi_mounter.go volDataKey ephemeral). */
export const EPHEMERAL_KEY = 'csi.storage.k8s.io/ephemeral';

/** The volume_context key giving a volume's capacity (as the hostpath driver's ephemeral `size`). */
export const SIZE_KEY = 'size';

/** The topology segment it reports: the node, under a key of the driver's name (the hostpath driver's `topology.hostpath.csi/node`). */
export function topologyKey(driverName: string): string {
  return `topology.${driverName}/node`;
}

interface VolumeCapabilityShape {
  block?: object | null;
  mount?: object | null;
}

/** The fields every request of a kind must carry, named as the mock service names them. */
const REQUIRED = {
  volumeId: 'Volume ID cannot be empty',
  stagingTargetPath: 'Staging Target Path cannot be empty',
  targetPath: 'Target Path cannot be empty',
  volumePath: 'Volume Path cannot be empty',
} as const;

/** Refuses a request missing one of `fields`, or (with `capability`) a volume capability or its access type. */
export function checkRequest(request: Partial<Record<keyof typeof REQUIRED, string>>, fields: readonly (keyof typeof REQUIRED)[], capability?: VolumeCapabilityShape | null): void {
  for (const field of fields) if (!request[field]) throw new CsiRefusal('INVALID_ARGUMENT', REQUIRED[field]);
  if (capability === undefined) return;
  if (capability === null) throw new CsiRefusal('INVALID_ARGUMENT', 'Volume Capability cannot be empty');
  if (!capability.block && !capability.mount) throw new CsiRefusal('INVALID_ARGUMENT', 'Volume Capability must have an access type: block or mount');
}

/** Whether the pod info on mount says the volume is an inline (ephemeral) one. */
export function isEphemeral(volumeContext: Readonly<Record<string, string>>): boolean {
  return volumeContext[EPHEMERAL_KEY] === 'true';
}

/**
 * NodePublishVolume of a volume that is not ephemeral wants it staged at the path given (the
 * hostpath driver: `volume "<id>" must be staged before publishing`), since the driver says
 * STAGE_UNSTAGE_VOLUME. An inline volume is known only from the pod info on mount.
 */
export function checkStaged(volumeId: string, stagingTargetPath: string, stagedAt: string | undefined, ephemeral: boolean): void {
  if (ephemeral) return;
  if (!stagingTargetPath) {
    throw new CsiRefusal('FAILED_PRECONDITION', `volume "${volumeId}" must be staged before publishing (an inline volume is told apart by the pod info on mount: its CSIDriver needs podInfoOnMount: true)`);
  }
  if (stagedAt !== stagingTargetPath) throw new CsiRefusal('FAILED_PRECONDITION', `volume "${volumeId}" must be staged before publishing`);
}

/** The capacity a volume_context asks for (`size: 1Gi`), undefined when it names none. */
export function requestedCapacity(volumeContext: Readonly<Record<string, string>>): number | undefined {
  const text = volumeContext[SIZE_KEY];
  if (text === undefined) return undefined;
  const bytes = parseQuantity(text);
  if (bytes instanceof Error || bytes <= 0) throw new CsiRefusal('INVALID_ARGUMENT', `volume_context ${SIZE_KEY} "${text}" is not a positive quantity such as 1Gi`);
  return Math.floor(bytes);
}

/**
 * The name of a volume's data under the driver's volumes directory: the volume ID with every
 * character that is not a letter, digit, `-` or `_` percent-escaped (`.` too, so no ID is `..`),
 * or its SHA-256 where that is longer than a file name may be.
 */
export function volumeFileName(volumeId: string, sha256: (text: string) => string): string {
  const escaped = volumeId.replace(/[^A-Za-z0-9_-]/gu, (c) => [...Buffer.from(c)].map((b) => `%${b.toString(16).toUpperCase().padStart(2, '0')}`).join(''));
  return escaped.length <= 200 ? escaped : `sha256-${sha256(volumeId)}`;
}

/** What a volume's directory uses, and the filesystem it is on. */
export interface VolumeUse {
  usedBytes: number;
  usedInodes: number;
  /** The volume's capacity when the driver knows one (its `size`, or a NodeExpandVolume). */
  capacityBytes: number | undefined;
  fs: { totalBytes: number; availableBytes: number; totalInodes: number; freeInodes: number };
}

export interface VolumeUsageEntry {
  unit: 'BYTES' | 'INODES';
  total: number;
  available: number;
  used: number;
}

/**
 * NodeGetVolumeStats of a filesystem volume: bytes used by the volume's own files, out of its
 * capacity (the filesystem's where it has none; never more available than the filesystem has);
 * inodes used by its own entries, out of the filesystem's.
 */
export function volumeUsage(use: VolumeUse): VolumeUsageEntry[] {
  const total = use.capacityBytes ?? use.fs.totalBytes;
  const available = use.capacityBytes === undefined ? use.fs.availableBytes : Math.max(0, Math.min(use.capacityBytes - use.usedBytes, use.fs.availableBytes));
  return [
    { unit: 'BYTES', total, available, used: use.usedBytes },
    { unit: 'INODES', total: use.fs.totalInodes, available: use.fs.freeInodes, used: use.usedInodes },
  ];
}

/** The size of the file standing for a block volume whose capacity the driver does not know. */
export const DEFAULT_BLOCK_BYTES = 1024 ** 3;
