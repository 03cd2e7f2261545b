/**
 * The plugin registration API on the wire (k8s.io/kubelet/pkg/apis/pluginregistration/v1): the
 * proto beside this file loaded once with protobufjs, the `pluginregistration.Registration`
 * service as a grpc-js definition (a plugin's side serves it: tests, sim://), and the kubelet's
 * side of a registration: a grpc-js client dialled on the plugin's unix socket with the kubelet's
 * deadlines (pkg/kubelet/pluginmanager/operationexecutor/operation_generator.go: dial 10 s,
 * GetInfo 1 s, NotifyRegistrationStatus 5 s). grpc-js is loaded at the first dial, so a node
 * without plugins never loads it (the CRI client does without it). Errors read as Go's gRPC errors
 * read, since the kubelet's messages embed them (`rpc error: code = DeadlineExceeded desc = …`).
 */
import { fileURLToPath } from 'node:url';
import type * as grpc from '@grpc/grpc-js';
import protobuf from 'protobufjs';
import { unaryServiceDefinition } from '../grpcServiceDefinition.ts';

/** The plugin types of pluginregistration/v1 constants.go. */
export const PLUGIN_TYPES = { csi: 'CSIPlugin', device: 'DevicePlugin', dra: 'DRAPlugin' } as const;

/** What a plugin tells of itself (PluginInfo). */
export interface PluginInfo {
  type: string;
  name: string;
  endpoint: string;
  supportedVersions: string[];
}

export interface RegistrationStatus {
  pluginRegistered: boolean;
  error: string;
}

/** operation_generator.go dialTimeoutDuration, the GetInfo deadline, notifyTimeoutDuration. */
const DIAL_TIMEOUT_MS = 10_000;
const GET_INFO_TIMEOUT_MS = 1_000;
const NOTIFY_TIMEOUT_MS = 5_000;

let root: protobuf.Root | undefined;

function registrationService(): protobuf.Service {
  if (!root) {
    root = new protobuf.Root().loadSync(fileURLToPath(new URL('./pluginregistration.proto', import.meta.url)), { keepCase: false });
    root.resolveAll();
  }
  return root.lookupService('pluginregistration.Registration');
}

/** Messages read with every field present (proto3 defaults), as Go's generated structs read them. */
const READ: protobuf.IConversionOptions = { defaults: true, arrays: true };

/** `pluginregistration.Registration` as a grpc-js service definition (GetInfo, NotifyRegistrationStatus). */
export function registrationServiceDefinition(): grpc.ServiceDefinition {
  return unaryServiceDefinition(registrationService(), 'pluginregistration.Registration', READ);
}

/** Go's names of the gRPC codes (google.golang.org/grpc/codes Code.String), by number. */
const GO_CODE_NAMES = [
  'OK',
  'Canceled',
  'Unknown',
  'InvalidArgument',
  'DeadlineExceeded',
  'NotFound',
  'AlreadyExists',
  'PermissionDenied',
  'ResourceExhausted',
  'FailedPrecondition',
  'Aborted',
  'OutOfRange',
  'Unimplemented',
  'Internal',
  'Unavailable',
  'DataLoss',
  'Unauthenticated',
];

/** A failed call as Go's status error prints it (`rpc error: code = Unavailable desc = …`). */
function goRpcError(error: unknown): Error {
  const { code, details } = (error ?? {}) as Partial<grpc.ServiceError>;
  if (typeof code !== 'number') return error instanceof Error ? error : new Error(String(error));
  return new Error(`rpc error: code = ${GO_CODE_NAMES[code] ?? `Code(${code})`} desc = ${details ?? ''}`);
}

/** The kubelet's client of one plugin's registration socket. */
export interface RegistrationClient {
  getInfo(): Promise<PluginInfo>;
  notifyRegistrationStatus(status: RegistrationStatus): Promise<void>;
  close(): void;
}

/**
 * Dials the socket and waits for the connection (grpc.WithBlock, 10 s); fails as the kubelet's
 * dial does, `failed to dial socket <path>, err: …`.
 */
export async function dialRegistration(socketPath: string, signal?: AbortSignal): Promise<RegistrationClient> {
  // From the sources grpc-js's exports are named; in the bundle (scripts/build.mjs splits it out) a
  // dynamically imported CommonJS module has its default export only.
  const imported = await import('@grpc/grpc-js');
  const grpc = typeof imported.makeGenericClientConstructor === 'function' ? imported : imported.default;
  const Client = grpc.makeGenericClientConstructor(registrationServiceDefinition(), 'Registration');
  // The socket's path as it is: `unix:` takes an absolute path (`unix:///…` would too).
  const client = new Client(`unix:${socketPath}`, grpc.credentials.createInsecure());
  const abort = () => client.close();
  signal?.addEventListener('abort', abort, { once: true });
  try {
    await new Promise<void>((resolve, reject) =>
      client.waitForReady(Date.now() + DIAL_TIMEOUT_MS, (error) => (error ? reject(new Error('context deadline exceeded')) : resolve())),
    );
  } catch (error) {
    client.close();
    throw new Error(`failed to dial socket ${socketPath}, err: ${(error as Error).message}`);
  } finally {
    signal?.removeEventListener('abort', abort);
  }
  const unary = <Response>(method: string, request: object, timeoutMs: number) =>
    new Promise<Response>((resolve, reject) => {
      const call = (client as unknown as Record<string, grpc.requestCallback<Response> & ((...args: unknown[]) => grpc.ClientUnaryCall)>)[method]!;
      call.call(client, request, new grpc.Metadata(), { deadline: Date.now() + timeoutMs }, (error: grpc.ServiceError | null, response?: Response) =>
        error ? reject(goRpcError(error)) : resolve(response as Response),
      );
    });
  return {
    getInfo: () => unary<PluginInfo>('GetInfo', {}, GET_INFO_TIMEOUT_MS),
    notifyRegistrationStatus: async (status) => {
      await unary<object>('NotifyRegistrationStatus', status, NOTIFY_TIMEOUT_MS);
    },
    close: () => client.close(),
  };
}
