/**
 * A plugin's registration socket, served in the test process (what node-driver-registrar serves
 * for a CSI driver): `pluginregistration.Registration` with grpc-js on a unix socket, answering
 * GetInfo with the info it is given and recording each NotifyRegistrationStatus.
 */
import { rmSync } from 'node:fs';
import * as grpc from '@grpc/grpc-js';
import { type PluginInfo, type RegistrationStatus, registrationServiceDefinition } from '../../src/pluginregistration/registration.ts';

export interface PluginRegistrar {
  socketPath: string;
  /** How many times GetInfo was asked. */
  infoCalls: number;
  /** Each NotifyRegistrationStatus, in order. */
  statuses: RegistrationStatus[];
  /** Stops serving and removes the socket (as the registrar does on SIGTERM). */
  stop(): Promise<void>;
}

export async function startPluginRegistrar(socketPath: string, info: Partial<PluginInfo>): Promise<PluginRegistrar> {
  const server = new grpc.Server();
  const registrar: PluginRegistrar = {
    socketPath,
    infoCalls: 0,
    statuses: [],
    stop: () =>
      new Promise<void>((resolve) => {
        server.forceShutdown();
        rmSync(socketPath, { force: true });
        resolve();
      }),
  };
  server.addService(registrationServiceDefinition(), {
    GetInfo: (_call: grpc.ServerUnaryCall<object, object>, callback: grpc.sendUnaryData<object>) => {
      registrar.infoCalls++;
      callback(null, { type: 'CSIPlugin', name: 'test.csi.example.com', endpoint: '', supportedVersions: ['1.0.0'], ...info });
    },
    NotifyRegistrationStatus: (call: grpc.ServerUnaryCall<RegistrationStatus, object>, callback: grpc.sendUnaryData<object>) => {
      registrar.statuses.push({ pluginRegistered: call.request.pluginRegistered, error: call.request.error });
      callback(null, {});
    },
  });
  await new Promise<void>((resolve, reject) => server.bindAsync(`unix:${socketPath}`, grpc.ServerCredentials.createInsecure(), (error) => (error ? reject(error) : resolve())));
  return registrar;
}
