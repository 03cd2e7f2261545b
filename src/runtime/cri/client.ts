/**
 * The CRI v1 client: `RuntimeService` and `ImageService` over gRPC on a unix socket, speaking the
 * messages declared in `api.proto` next to this file. Everything the rest of the agent sees is in
 * the TypeScript shapes of `../types.ts`; each call is made from its row of the table of wire
 * calls (`wireCalls.ts`, which sim://'s server shares): its request written from the arguments, its
 * result read from the response.
 */
import { GrpcChannel, GrpcStatusError, type GrpcCallOptions, type GrpcMethod } from './channel.ts';
import { CRI_METHODS, type CriArgs, type CriCall, type CriMethod, type CriResult, allowanceSecondsOf, criCall, optionsOf } from '../criCalls.ts';
import { CriError, type CallOptions, type ContainerEvent, type ImageService, type RuntimeService } from '../types.ts';
import { sandboxMetadataFromWire } from './objectsWire.ts';
import { WIRE_CALLS, type WireCall, type WireResponse } from './wireCalls.ts';
import {
  CONTAINER_EVENT_TYPES,
  enumValue,
  nsToMs,
  clientMethod,
  type ClientMethod,
  type CriRpcs,
  type Rpc,
  type ServiceName,
  type WireContainerEvent,
} from './wire.ts';

interface CriClientOptions {
  /** Deadline for calls that do not pass `timeoutMs`. Kubelet's runtime-request-timeout is 2 minutes. */
  requestTimeoutMs?: number;
  /** Deadline for PullImage, which routinely outlives ordinary calls on large images. */
  pullTimeoutMs?: number;
  /** Largest response accepted; ListContainers on a busy node exceeds grpc's 4 MiB default. */
  maxReceiveMessageBytes?: number;
}

const DEFAULT_REQUEST_TIMEOUT_MS = 2 * 60_000;
const DEFAULT_PULL_TIMEOUT_MS = 4 * 60_000;
const DEFAULT_MAX_RECEIVE_MESSAGE_BYTES = 16 * 1024 * 1024;

type RpcName<S extends ServiceName> = keyof CriRpcs[S] & string;
type RequestOf<S extends ServiceName, M extends RpcName<S>> = CriRpcs[S][M] extends Rpc<infer Q extends object, unknown> ? Q : never;
type ResponseOf<S extends ServiceName, M extends RpcName<S>> = CriRpcs[S][M] extends Rpc<unknown, infer R> ? R : never;

/**
 * The one place wire data gets its static type: responses decode against our own schema, whose
 * messages read every declared field (ClientMethod.deserialize), in the forms the wire interfaces allow.
 */
function typedDeserializer<T>(method: ClientMethod): (bytes: Buffer) => T {
  return method.deserialize as (bytes: Buffer) => T;
}

// ------------------------------------------------------------------------------------------------
// Endpoint and errors

/** Turns `unix:///run/containerd/containerd.sock` or `/run/containerd/containerd.sock` into a gRPC target (`unix:///…`). */
export function grpcTarget(endpoint: string): string {
  const path = endpoint.startsWith('unix://') ? endpoint.slice('unix://'.length) : endpoint;
  if (!path.startsWith('/')) {
    throw new Error(`unsupported CRI endpoint ${JSON.stringify(endpoint)}: want unix:///absolute/path`);
  }
  return `unix://${path}`;
}

function toCriError(call: string, err: unknown): CriError {
  if (err instanceof CriError) return err;
  if (err instanceof GrpcStatusError) return new CriError(call, err.code, err.details);
  return new CriError(call, 'UNKNOWN', err instanceof Error ? err.message : String(err));
}

// ------------------------------------------------------------------------------------------------
// The event stream

function containerEventFromWire(event: WireContainerEvent): ContainerEvent | undefined {
  const type = enumValue(CONTAINER_EVENT_TYPES, event.containerEventType);
  if (type === undefined) return undefined;
  const result: ContainerEvent = { containerId: event.containerId, type, createdAt: nsToMs(event.createdAt) };
  if (event.podSandboxStatus?.metadata) {
    result.podSandboxMetadata = sandboxMetadataFromWire(event.podSandboxStatus.metadata);
  }
  return result;
}

// ------------------------------------------------------------------------------------------------
// The client

/** Its CRI calls are made from the table of wire calls (`makes`), the event stream by hand. */
export interface CriClient extends RuntimeService, ImageService {}

export class CriClient {
  /** One connection to the runtime's socket for both services. */
  private readonly channel: GrpcChannel;
  private readonly requestTimeoutMs: number;
  private readonly pullTimeoutMs: number;

  constructor(endpoint: string, options: CriClientOptions = {}) {
    this.requestTimeoutMs = options.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS;
    this.pullTimeoutMs = options.pullTimeoutMs ?? DEFAULT_PULL_TIMEOUT_MS;
    this.channel = new GrpcChannel({ path: grpcTarget(endpoint).slice('unix://'.length) }, {
      maxReceiveMessageBytes: options.maxReceiveMessageBytes ?? DEFAULT_MAX_RECEIVE_MESSAGE_BYTES,
    });
  }

  close(): void {
    this.channel.close();
  }

  /** Each CRI call, made from its row of the table of wire calls (wireCalls.ts). */
  static {
    for (const method of CRI_METHODS) CriClient.makes(method);
  }

  private static makes<M extends CriMethod>(method: M): void {
    const call = criCall(method);
    const wire: WireCall<M> = WIRE_CALLS[method];
    const described = clientMethod(call.service, call.rpc);
    const grpcMethod: GrpcMethod<WireResponse<M>> = { ...described, deserialize: typedDeserializer<WireResponse<M>>(described) };
    const made = async function (this: CriClient, ...args: CriArgs<M>): Promise<CriResult<M>> {
      const response = await this.call(call.rpc, grpcMethod, wire.request(...args), optionsOf(call, args), this.defaultTimeoutMs(call, args));
      return wire.result(response);
    };
    Object.defineProperty(CriClient.prototype, method, { value: made, writable: true, configurable: true });
  }

  containerEvents(opts?: CallOptions): AsyncIterable<ContainerEvent> {
    const stream = this.serverStream('RuntimeService', 'GetContainerEvents', {}, opts);
    return mapDefined(stream, containerEventFromWire);
  }

  // ---------------------------------------------------------------- transport

  /**
   * A call's deadline when its caller gives none: PullImage's own, and a call that may take time
   * by design on the runtime's side (StopContainer's grace period, ExecSync's timeout) gets it on
   * top of the request timeout, as the kubelet's remote runtime client does
   * (pkg/kubelet/cri/remote/remote_runtime.go, StopContainer and ExecSync).
   */
  private defaultTimeoutMs(call: CriCall, args: readonly unknown[]): number {
    if (call.method === 'pullImage') return this.pullTimeoutMs;
    return this.requestTimeoutMs + Math.max(0, allowanceSecondsOf(call, args) ?? 0) * 1000;
  }

  private async call<Res>(rpc: string, method: GrpcMethod<Res>, request: object, opts: CallOptions | undefined, defaultTimeoutMs: number): Promise<Res> {
    try {
      return await this.channel.unary(method, request, { timeoutMs: opts?.timeoutMs ?? defaultTimeoutMs, ...(opts?.signal ? { signal: opts.signal } : {}) });
    } catch (err) {
      throw toCriError(rpc, err);
    }
  }

  /**
   * Opens the stream at once, so that messages sent before the first `next()` are buffered rather
   * than missed (subscribe, then list, without a gap). A server stream has no deadline unless the
   * caller sets one: event streams live as long as the agent.
   */
  private serverStream<S extends ServiceName, M extends RpcName<S>>(
    service: S,
    rpc: M,
    request: RequestOf<S, M>,
    opts: CallOptions | undefined,
  ): AsyncGenerator<ResponseOf<S, M>> {
    const method = clientMethod(service, rpc);
    const options: GrpcCallOptions = {};
    if (opts?.timeoutMs !== undefined) options.timeoutMs = opts.timeoutMs;
    if (opts?.signal) options.signal = opts.signal;
    return readStream(rpc, this.channel.serverStream({ ...method, deserialize: typedDeserializer<ResponseOf<S, M>>(method) }, request, options));
  }
}

async function* readStream<Res>(rpc: string, messages: AsyncGenerator<Res>): AsyncGenerator<Res> {
  try {
    yield* messages;
  } catch (err) {
    throw toCriError(rpc, err);
  }
}

async function* mapDefined<T, U>(source: AsyncIterable<T>, map: (item: T) => U | undefined): AsyncGenerator<U> {
  for await (const item of source) {
    const mapped = map(item);
    if (mapped !== undefined) yield mapped;
  }
}
