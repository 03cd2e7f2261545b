/**
 * The CSI v1 Node service on the wire: `csi.proto` next to this file (our subset, with the field
 * numbers of the CSI spec v1.12.0) loaded with protobuf.js, each call's gRPC method (path, request
 * writer, response reader) and the TypeScript shapes of its messages as the client writes and
 * reads them; and, for a driver served in this process (sim://'s, src/simcsi), the Identity and
 * Node services as grpc-js service definitions.
 */
import { fileURLToPath } from 'node:url';
import type * as grpc from '@grpc/grpc-js';
import protobuf from 'protobufjs';
import { unaryServiceDefinition } from '../../grpcServiceDefinition.ts';
import type { GrpcMethod } from '../../runtime/cri/channel.ts';

let csiRoot: protobuf.Root | undefined;

/** `csi.proto`, parsed once per process, its field names in camelCase. */
function loadCsi(): protobuf.Root {
  if (!csiRoot) {
    csiRoot = new protobuf.Root().loadSync(fileURLToPath(new URL('./csi.proto', import.meta.url)), { keepCase: false });
    csiRoot.resolveAll();
  }
  return csiRoot;
}

/**
 * How an answer is read: every field present (empty maps and lists, not absent), enums by name
 * (a number the proto does not name stays a number), int64 as decimal strings.
 */
const READ: protobuf.IConversionOptions = { longs: String, enums: String, defaults: true };

export type WireMap = Record<string, string>;

export interface WireVolumeCapability {
  block?: Record<string, never>;
  mount?: { fsType: string; mountFlags: string[]; volumeMountGroup: string };
  accessMode: { mode: string };
}

export interface NodeRpcs {
  NodeGetInfo: { request: Record<string, never>; response: { nodeId: string; maxVolumesPerNode: string; accessibleTopology: { segments: WireMap } | null } };
  NodeGetCapabilities: { request: Record<string, never>; response: { capabilities: { rpc?: { type: string | number } | null }[] } };
  NodeStageVolume: {
    request: { volumeId: string; publishContext: WireMap; stagingTargetPath: string; volumeCapability: WireVolumeCapability; secrets: WireMap; volumeContext: WireMap };
    response: Record<string, never>;
  };
  NodeUnstageVolume: { request: { volumeId: string; stagingTargetPath: string }; response: Record<string, never> };
  NodePublishVolume: {
    request: {
      volumeId: string;
      publishContext: WireMap;
      stagingTargetPath?: string;
      targetPath: string;
      volumeCapability: WireVolumeCapability;
      readonly: boolean;
      secrets: WireMap;
      volumeContext: WireMap;
    };
    response: Record<string, never>;
  };
  NodeUnpublishVolume: { request: { volumeId: string; targetPath: string }; response: Record<string, never> };
  NodeGetVolumeStats: {
    request: { volumeId: string; volumePath: string };
    response: { usage: ({ available: string; total: string; used: string; unit: string | number } | null)[] };
  };
  NodeExpandVolume: {
    request: {
      volumeId: string;
      volumePath: string;
      capacityRange: { requiredBytes: number };
      stagingTargetPath?: string;
      volumeCapability: WireVolumeCapability;
      secrets: WireMap;
    };
    response: { capacityBytes: string };
  };
}

export type NodeRpc = keyof NodeRpcs;

/** The Identity service's messages as a driver reads and writes them. */
export interface IdentityRpcs {
  GetPluginInfo: { request: Record<string, never>; response: { name: string; vendorVersion: string; manifest?: WireMap } };
  GetPluginCapabilities: {
    request: Record<string, never>;
    response: { capabilities: ({ service: { type: string } } | { volumeExpansion: { type: string } })[] };
  };
  Probe: { request: Record<string, never>; response: Record<string, never> };
}

/**
 * `csi.v1.<service>` as a grpc-js service definition, for a driver's side: requests read as the
 * client reads answers (every field present, enums by name, int64 as decimal strings; a oneof
 * member only when sent), answers written from the shapes above.
 */
export function csiServiceDefinition(service: 'Identity' | 'Node'): grpc.ServiceDefinition {
  return unaryServiceDefinition(loadCsi().lookupService(`csi.v1.${service}`), `csi.v1.${service}`, READ);
}

const methods = new Map<NodeRpc, GrpcMethod<unknown, object>>();

/** The gRPC method `/csi.v1.Node/<rpc>`: its request written from, and its answer read into, the shapes above. */
export function nodeMethod<R extends NodeRpc>(rpc: R): GrpcMethod<NodeRpcs[R]['response'], NodeRpcs[R]['request']> {
  let method = methods.get(rpc);
  if (!method) {
    const described = loadCsi().lookupService('csi.v1.Node').methods[rpc]!;
    const request = described.resolvedRequestType!;
    const response = described.resolvedResponseType!;
    method = {
      path: `/csi.v1.Node/${rpc}`,
      serialize: (value) => {
        const bytes = request.encode(request.fromObject(value)).finish();
        return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
      },
      deserialize: (bytes) => response.toObject(response.decode(bytes), READ),
    };
    methods.set(rpc, method);
  }
  // The one place wire data gets its static type: answers decode against our own schema, read with READ.
  return method as GrpcMethod<NodeRpcs[R]['response'], NodeRpcs[R]['request']>;
}
