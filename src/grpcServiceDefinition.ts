/**
 * A protobufjs service as a grpc-js service definition of unary methods, for the servers the agent
 * runs or tests run (a plugin's registration socket, sim://'s CSI driver): each message encoded from
 * and decoded to plain objects with the caller's conversion options.
 */
import type * as grpc from '@grpc/grpc-js';
import type protobuf from 'protobufjs';

export function unaryServiceDefinition(service: protobuf.Service, fullName: string, read: protobuf.IConversionOptions): grpc.ServiceDefinition {
  const write = (type: protobuf.Type) => (value: object) => Buffer.from(type.encode(type.fromObject(value)).finish());
  const decode = (type: protobuf.Type) => (bytes: Buffer) => type.toObject(type.decode(bytes), read);
  const definition: Record<string, grpc.MethodDefinition<object, object>> = {};
  for (const method of service.methodsArray) {
    const request = method.resolvedRequestType!;
    const response = method.resolvedResponseType!;
    definition[method.name] = {
      path: `/${fullName}/${method.name}`,
      requestStream: false,
      responseStream: false,
      requestSerialize: write(request),
      requestDeserialize: decode(request),
      responseSerialize: write(response),
      responseDeserialize: decode(response),
    };
  }
  return definition;
}
