/**
 * The `sim://` runtime: a real CRI v1 gRPC server on a unix socket, backed by `SimEngine`. The
 * agent talks to it with the same `CriClient` it uses for containerd, so the whole client path
 * (serialisation, status codes, streaming) is exercised. It serves the engine's CRI calls through
 * the table of wire calls the client shares (`../cri/wireCalls.ts`): a request read back into the
 * call's arguments, the result written as the response. Behaviour lives in `engine.ts`.
 */

import { mkdir, unlink } from 'node:fs/promises';
import { dirname } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { CRI_CALLS, CRI_METHODS, type CriMethod, type CriResult, criCall } from '../criCalls.ts';
import { type Around, type CriAnswers, answer, decorate } from '../decorate.ts';
import { CriError } from '../types.ts';
import { InvalidRequest, containerStatusToWire, sandboxStatusToWire } from '../cri/objectsWire.ts';
import { WIRE_CALLS, type WireCall, type WireRequest } from '../cri/wireCalls.ts';
import { type ServiceName, type WireContainerEvent, msToNs, responseEncoder, serviceDefinition } from '../cri/wire.ts';
import { SimEngine, type SimContainerEvent, type SimRuntimeOptions } from './engine.ts';
import { SimError } from './errors.ts';
import { StreamingRequestError } from '../streaming/server.ts';

export interface SimRuntimeServerOptions extends SimRuntimeOptions {
  /** Filesystem path of the unix socket to listen on; a stale socket file there is removed. */
  socketPath: string;
  /** Serve an existing engine instead of creating one from the options. */
  engine?: SimEngine;
  /**
   * Stands around every call it serves (the test kit's fault injector, test/support/faults.ts):
   * each call then carries a signal that fires when its client goes away (its deadline passed,
   * or it cancelled).
   */
  intercept?: Around;
}

export interface SimRuntime {
  /** `unix://<socketPath>`, ready for `CriClient`. */
  endpoint: string;
  engine: SimEngine;
  /** Stops every simulated container's timers, ends event streams and shuts the server down. */
  close(): Promise<void>;
  /**
   * The runtime's daemon dies and comes back `downMs` later: the gRPC server and its socket go
   * (calls fail, event streams break), the simulated containers keep running.
   */
  restart(downMs: number): Promise<void>;
  /** Container event streams open right now (each agent holds one). */
  eventStreams(): number;
}

export async function startSimRuntime(options: SimRuntimeServerOptions): Promise<SimRuntime> {
  const { socketPath, engine: given, intercept, ...engineOptions } = options;
  const engine = given ?? new SimEngine(engineOptions);
  const eventStreams = new Set<grpc.ServerWritableStream<unknown, WireContainerEvent>>();
  const intercepted = intercept ? decorate(engine, intercept) : undefined;
  const endpoint = `unix://${socketPath}`;
  await mkdir(dirname(socketPath), { recursive: true });
  if (engine.stateDir !== undefined) await mkdir(engine.stateDir, { recursive: true });
  const serve = async (): Promise<grpc.Server> => {
    // Channelz stays on, though nothing reads it: grpc-js's forceShutdown (a restart's) destroys
    // only the connections its channelz bookkeeping holds.
    const server = new grpc.Server();
    server.addService(servedDefinition('RuntimeService'), { ...unaryHandlers('RuntimeService', engine, intercepted), GetContainerEvents: containerEvents(engine, eventStreams) });
    server.addService(servedDefinition('ImageService'), unaryHandlers('ImageService', engine, intercepted));
    await removeStaleSocket(socketPath);
    await new Promise<void>((resolve, reject) => {
      server.bindAsync(endpoint, grpc.ServerCredentials.createInsecure(), (error) => (error ? reject(error) : resolve()));
    });
    return server;
  };
  let server = await serve();

  let closing: Promise<void> | null = null;
  const close = (): Promise<void> => {
    closing ??= (async () => {
      await engine.close();
      for (const stream of eventStreams) stream.end();
      eventStreams.clear();
      await new Promise<void>((resolve) => {
        // Unary calls still waiting (a StopContainer in its grace period) must not hold shutdown.
        const force = setTimeout(() => server.forceShutdown(), 1000);
        server.tryShutdown(() => {
          clearTimeout(force);
          resolve();
        });
      });
      await removeStaleSocket(socketPath);
    })();
    return closing;
  };
  const restart = async (downMs: number): Promise<void> => {
    // As a runtime daemon that dies: calls under way and event streams break, the socket goes;
    // the containers (the engine) live on, as containerd's do in their shims.
    server.forceShutdown();
    eventStreams.clear();
    await removeStaleSocket(socketPath);
    await new Promise((resolve) => setTimeout(resolve, downMs));
    if (!closing) server = await serve();
  };
  return { endpoint, engine, close, restart, eventStreams: () => eventStreams.size };
}

async function removeStaleSocket(path: string): Promise<void> {
  try {
    await unlink(path);
  } catch (error) {
    if (!(error instanceof Error && 'code' in error && error.code === 'ENOENT')) throw error;
  }
}

// ------------------------------------------------------------------------------------------------
// Serving the calls

function toServiceError(error: unknown): Partial<grpc.StatusObject> {
  if (error instanceof SimError || error instanceof StreamingRequestError || error instanceof InvalidRequest) return { code: grpc.status[error.code], details: error.message };
  if (error instanceof CriError) return { code: grpc.status[error.code], details: error.detail };
  return { code: grpc.status.INTERNAL, details: error instanceof Error ? error.message : String(error) };
}

/** A unary call's handler answers with its response's bytes, written already (`encoderOf`). */
const written = (response: object): Buffer => response as Buffer;

/** The service's methods as api.proto declares them; a unary call's answer is written by its handler (`encoderOf`). */
function servedDefinition(service: ServiceName): grpc.ServiceDefinition {
  const ownWriters = Object.fromEntries(CRI_METHODS.filter((method) => CRI_CALLS[method].service === service).map((method) => [CRI_CALLS[method].rpc, written]));
  return serviceDefinition(service, ownWriters);
}

/**
 * The unary calls of `service`, each answered by `answers` through its row of the table of wire
 * calls, or by `intercepted` (the same, with the interceptor around each call). Without it,
 * nothing stands between a call and its answer, so nothing needs to know the call went: no signal
 * per call (with its listener, much of what a call cost at rest).
 */
function unaryHandlers(service: ServiceName, answers: CriAnswers, intercepted: CriAnswers | undefined): grpc.UntypedServiceImplementation {
  const handlers: grpc.UntypedServiceImplementation = {};
  for (const method of CRI_METHODS) {
    if (CRI_CALLS[method].service === service) handlers[CRI_CALLS[method].rpc] = unaryHandler(method, answers, intercepted);
  }
  return handlers;
}

function unaryHandler<M extends CriMethod>(method: M, answers: CriAnswers, intercepted: CriAnswers | undefined): grpc.handleUnaryCall<WireRequest<M>, Buffer> {
  const wire: WireCall<M> = WIRE_CALLS[method];
  const encode = encoderOf(method, wire);
  const served = (by: CriAnswers, request: WireRequest<M>, signal: AbortSignal | undefined): Promise<CriResult<M>> => {
    try {
      return answer(by, method, wire.args(request, signal && { signal }));
    } catch (error) {
      // A request that lacks what the call needs.
      return Promise.reject(error);
    }
  };
  if (intercepted === undefined) return (call, callback) => respond(served(answers, call.request, undefined), encode, callback);
  return (call, callback) => {
    const gone = new AbortController();
    // Only a call still being answered is cancelled: the stream's close after an answer is
    // reported as a cancellation too, and an abort makes an AbortError with its stack trace.
    const cancel = () => gone.abort();
    call.once('cancelled', cancel);
    respond(served(intercepted, call.request, gone.signal).finally(() => call.removeListener('cancelled', cancel)), encode, callback);
  };
}

/** How a call's result is written: by the table's own writer, or its plain object by protobuf.js. */
function encoderOf<M extends CriMethod>(method: M, wire: WireCall<M>): (result: CriResult<M>) => Buffer {
  if ('encode' in wire) return wire.encode;
  const { service, rpc } = criCall(method);
  const encodeResponse = responseEncoder(service, rpc);
  return (result) => encodeResponse(wire.response(result));
}

function respond<R>(answer: Promise<R>, encode: (result: R) => Buffer, callback: grpc.sendUnaryData<Buffer>): void {
  answer.then(
    (result) => {
      let response: Buffer;
      try {
        response = encode(result);
      } catch (error) {
        return callback(toServiceError(error));
      }
      callback(null, response);
    },
    (error: unknown) => callback(toServiceError(error)),
  );
}

/** GetContainerEvents: the engine's events, with the sandbox's and containers' statuses the wire message has room for. */
function containerEvents(engine: SimEngine, eventStreams: Set<grpc.ServerWritableStream<unknown, WireContainerEvent>>): grpc.handleServerStreamingCall<unknown, WireContainerEvent> {
  return (call) => {
    eventStreams.add(call);
    const unsubscribe = engine.subscribe((event) => call.write(wireEvent(event)));
    const end = (): void => {
      unsubscribe();
      eventStreams.delete(call);
    };
    call.on('cancelled', end);
    call.on('close', end);
    call.on('error', end);
  };
}

function wireEvent(event: SimContainerEvent): WireContainerEvent {
  return {
    containerId: event.containerId,
    containerEventType: event.type,
    createdAt: msToNs(event.createdAt),
    podSandboxStatus: sandboxStatusToWire(event.podSandboxStatus),
    containersStatuses: event.containersStatuses.map(containerStatusToWire),
  };
}
