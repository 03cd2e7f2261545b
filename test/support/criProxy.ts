/**
 * A CRI proxy for the test kit: a unix socket that serves every call of the RuntimeService and the
 * ImageService by passing it to another runtime (containerd), each CRI call statelet makes through
 * an `Around` hook that may fail, delay or hold it first (the fault injector's `intercept`). It is
 * how faults reach an agent in another process that talks to a real runtime: the agent is pointed
 * at the proxy's endpoint.
 *
 * Messages pass as bytes, so nothing the runtime says is lost to our schema; the hook sees each
 * call as a method call, its arguments read from the request and its result from the response
 * through the table of wire calls (src/runtime/cri/wireCalls.ts), as sim://'s server and the
 * client read them. Deadlines and cancellation go through: the runtime's call ends when the
 * agent's does. The event stream, and the calls statelet does not make, are relayed as they come.
 */
import { mkdir, unlink } from 'node:fs/promises';
import { dirname } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { CriError } from '../../src/runtime/types.ts';
import { type CriMethod, type CriResult, criCall, criMethodOf } from '../../src/runtime/criCalls.ts';
import type { Around } from '../../src/runtime/decorate.ts';
import { grpcTarget } from '../../src/runtime/cri/client.ts';
import { InvalidRequest } from '../../src/runtime/cri/objectsWire.ts';
import { WIRE_CALLS, type WireRequest, type WireResponse } from '../../src/runtime/cri/wireCalls.ts';
import { type ServiceName, clientMethod, serviceDefinition } from '../../src/runtime/cri/wire.ts';

export interface CriProxy {
  /** `unix://<socketPath>`, for the agent's --container-runtime-endpoint. */
  endpoint: string;
  close(): Promise<void>;
}

const bytes = (value: Buffer) => value;

function statusOf(error: unknown): Partial<grpc.StatusObject> {
  if (error instanceof CriError) return { code: grpc.status[error.code], details: error.detail };
  if (error instanceof InvalidRequest) return { code: grpc.status.INVALID_ARGUMENT, details: error.message };
  const status = error as Partial<grpc.ServiceError>;
  if (typeof status?.code === 'number') return { code: status.code, details: status.details ?? '', metadata: status.metadata ?? new grpc.Metadata() };
  return { code: grpc.status.INTERNAL, details: error instanceof Error ? error.message : String(error) };
}

export async function startCriProxy(options: { socketPath: string; target: string; intercept: Around }): Promise<CriProxy> {
  const upstream = new grpc.Client(grpcTarget(options.target), grpc.credentials.createInsecure());
  const server = new grpc.Server();
  for (const service of ['RuntimeService', 'ImageService'] as ServiceName[]) {
    const definition = serviceDefinition(service);
    const passthrough: Record<string, grpc.MethodDefinition<Buffer, Buffer>> = {};
    const handlers: grpc.UntypedServiceImplementation = {};
    for (const [name, method] of Object.entries(definition)) {
      passthrough[name] = { path: method.path, requestStream: method.requestStream, responseStream: method.responseStream, requestSerialize: bytes, requestDeserialize: bytes, responseSerialize: bytes, responseDeserialize: bytes };
      if (method.responseStream) {
        handlers[name] = (call: grpc.ServerWritableStream<Buffer, Buffer>) => {
          const relay = upstream.makeServerStreamRequest(method.path, bytes, bytes, call.request, call.metadata, {});
          relay.on('data', (message: Buffer) => call.write(message));
          relay.on('end', () => call.end());
          relay.on('error', (error: grpc.ServiceError) => {
            if (error.code !== grpc.status.CANCELLED) call.emit('error', statusOf(error));
          });
          call.on('cancelled', () => relay.cancel());
        };
        continue;
      }
      handlers[name] = (call: grpc.ServerUnaryCall<Buffer, Buffer>, callback: grpc.sendUnaryData<Buffer>) => {
        const gone = new AbortController();
        call.on('cancelled', () => gone.abort());
        const forward = () =>
          new Promise<Buffer>((resolve, reject) => {
            const request = upstream.makeUnaryRequest(method.path, bytes, bytes, call.request, call.metadata, { deadline: call.getDeadline() }, (error, response) => {
              gone.signal.removeEventListener('abort', cancel);
              if (error || !response) return reject(error ?? new Error('empty response'));
              resolve(response);
            });
            const cancel = () => request.cancel();
            gone.signal.addEventListener('abort', cancel, { once: true });
          });
        const cri = criMethodOf(name);
        let relayed: Promise<Buffer>;
        try {
          relayed = cri ? intercepted(cri, service, method.requestDeserialize(call.request) as WireRequest<typeof cri>, gone.signal, forward, options.intercept) : forward();
        } catch (error) {
          relayed = Promise.reject(error);
        }
        relayed.then(
          (answer) => callback(null, answer),
          (error: unknown) => callback(statusOf(error)),
        );
      };
    }
    server.addService(passthrough, handlers);
  }
  await mkdir(dirname(options.socketPath), { recursive: true });
  await unlink(options.socketPath).catch(() => {});
  const endpoint = `unix://${options.socketPath}`;
  await new Promise<void>((resolve, reject) => server.bindAsync(endpoint, grpc.ServerCredentials.createInsecure(), (error) => (error ? reject(error) : resolve())));
  return {
    endpoint,
    close: async () => {
      server.forceShutdown();
      upstream.close();
      await unlink(options.socketPath).catch(() => {});
    },
  };
}

/**
 * A CRI call relayed through `intercept`: the hook sees its arguments read from the request and its
 * result read from the runtime's response; the agent gets the runtime's own bytes.
 */
function intercepted<M extends CriMethod>(
  method: M,
  service: ServiceName,
  request: WireRequest<M>,
  signal: AbortSignal,
  forward: () => Promise<Buffer>,
  intercept: Around,
): Promise<Buffer> {
  const call = criCall(method);
  const wire = WIRE_CALLS[method];
  const response = clientMethod(service, call.rpc);
  let answer: Buffer | undefined;
  const proceed = async (): Promise<CriResult<M>> => {
    answer = await forward();
    return wire.result(response.deserialize(answer) as WireResponse<M>);
  };
  // A hook that answers without asking the runtime has nothing to relay: an error, as a call the proxy could not make.
  return intercept(call, wire.args(request, { signal }), proceed).then(() => answer ?? Promise.reject(new Error(`${call.rpc} answered without the runtime`)));
}
