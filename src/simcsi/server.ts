/**
 * sim://'s CSI driver served as a node plugin is deployed beside a kubelet: the CSI Identity and
 * Node services (grpc-js, `../volumes/csi/csi.proto`) on a unix socket of its own,
 * `<root-dir>/sim/csi/<driver>/csi.sock`, and the registration socket node-driver-registrar
 * would serve, `<root-dir>/plugins_registry/<driver>-reg.sock` (`pluginregistration.Registration`:
 * GetInfo answers `CSIPlugin`, the driver's name, the CSI socket and version 1.0.0). The agent's
 * plugin manager finds it there and registers it as it registers any driver.
 *
 * As the registrar: a refused registration (`plugin_registered: false`) is logged with the
 * agent's error; the socket stays, so the plugin manager's next attempt can succeed. `close()`
 * stops both servers and removes both sockets (the registrar removes its own on SIGTERM); the
 * volumes, their mounts and the driver's state stay, as a driver's do when it stops.
 */
import { createHash } from 'node:crypto';
import { mkdir, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import * as grpc from '@grpc/grpc-js';
import type { Logger } from '../log.ts';
import { PLUGIN_TYPES, type RegistrationStatus, registrationServiceDefinition } from '../pluginregistration/registration.ts';
import { type Mounter, systemMounter } from '../volumes/mounter.ts';
import { csiServiceDefinition } from '../volumes/csi/wire.ts';
import { SimCsiDriver } from './driver.ts';
import { CsiRefusal } from './rules.ts';

export interface SimCsiOptions {
  driverName: string;
  /** The node's name: the driver's node ID. */
  nodeName: string;
  /** The agent's --root-dir. */
  rootDir: string;
  log: Logger;
  /** How volumes are mounted at their target paths; the system's `mount` (under the root dir) unless given. */
  mounter?: Mounter;
}

export interface SimCsi {
  driverName: string;
  /** The CSI socket's path (the endpoint the registration gives). */
  socketPath: string;
  /** The registration socket's path, in `<root-dir>/plugins_registry`. */
  registrationSocketPath: string;
  /** Where the volumes and the state are kept. */
  dataDir: string;
  close(): Promise<void>;
}

/** The version of the CSI spec it speaks, as node-driver-registrar answers GetInfo. */
const SUPPORTED_VERSIONS = ['1.0.0'];

/** A unix socket's path must fit sun_path (108 bytes with its NUL). */
const MAX_SOCKET_PATH = 107;

/** Where sim://'s CSI driver keeps a driver's volumes and state under the agent's root directory. */
export function simCsiDataDir(rootDir: string, driverName: string): string {
  return path.resolve(rootDir, 'sim', 'csi', driverName);
}

export async function startSimCsiDriver(options: SimCsiOptions): Promise<SimCsi> {
  const { driverName, rootDir, log } = options;
  const fields = { driver: driverName };
  const dataDir = simCsiDataDir(rootDir, driverName);
  const registrationDir = path.resolve(rootDir, 'plugins_registry');
  const registrationSocketPath = path.join(registrationDir, `${driverName}-reg.sock`);
  if (Buffer.byteLength(registrationSocketPath) > MAX_SOCKET_PATH) {
    throw new Error(`sim:// CSI driver ${driverName}: its registration socket ${registrationSocketPath} is longer than a unix socket path may be (${MAX_SOCKET_PATH} bytes): use a shorter --root-dir or driver name`);
  }
  const preferred = path.join(dataDir, 'csi.sock');
  const socketPath =
    Buffer.byteLength(preferred) <= MAX_SOCKET_PATH ? preferred : path.join(os.tmpdir(), `statelet-simcsi-${createHash('sha256').update(preferred).digest('hex').slice(0, 16)}.sock`);

  const driver = new SimCsiDriver({
    driverName,
    nodeId: options.nodeName,
    dataDir,
    mounter: options.mounter ?? systemMounter(rootDir, (level, message, more) => log(level, message, { ...fields, ...more })),
  });
  for (const unreadable of await driver.load()) log('warn', 'The simulated CSI driver cannot read what it recorded of a volume; it is unknown until staged again', { ...fields, record: unreadable });

  const csi = new grpc.Server();
  csi.addService(csiServiceDefinition('Identity'), {
    GetPluginInfo: unary(driver.getPluginInfo.bind(driver)),
    GetPluginCapabilities: unary(driver.getPluginCapabilities.bind(driver)),
    Probe: unary(() => ({})),
  });
  csi.addService(csiServiceDefinition('Node'), {
    NodeGetInfo: unary(driver.nodeGetInfo.bind(driver)),
    NodeGetCapabilities: unary(driver.nodeGetCapabilities.bind(driver)),
    NodeStageVolume: unary(driver.nodeStageVolume.bind(driver)),
    NodeUnstageVolume: unary(driver.nodeUnstageVolume.bind(driver)),
    NodePublishVolume: unary(driver.nodePublishVolume.bind(driver)),
    NodeUnpublishVolume: unary(driver.nodeUnpublishVolume.bind(driver)),
    NodeGetVolumeStats: unary(driver.nodeGetVolumeStats.bind(driver)),
    NodeExpandVolume: unary(driver.nodeExpandVolume.bind(driver)),
  });
  await listen(csi, socketPath);

  const registration = new grpc.Server();
  registration.addService(registrationServiceDefinition(), {
    GetInfo: unary(() => ({ type: PLUGIN_TYPES.csi, name: driverName, endpoint: socketPath, supportedVersions: SUPPORTED_VERSIONS })),
    NotifyRegistrationStatus: unary((status: RegistrationStatus) => {
      if (status.pluginRegistered) log('info', 'The simulated CSI driver is registered with the node', { ...fields, endpoint: socketPath });
      else log('error', 'The node refused to register the simulated CSI driver', { ...fields, err: status.error });
      return {};
    }),
  });
  await mkdir(registrationDir, { recursive: true, mode: 0o755 });
  try {
    await listen(registration, registrationSocketPath);
  } catch (err) {
    csi.forceShutdown();
    await rm(socketPath, { force: true });
    throw err;
  }

  return {
    driverName,
    socketPath,
    registrationSocketPath,
    dataDir,
    close: async () => {
      registration.forceShutdown();
      await rm(registrationSocketPath, { force: true });
      csi.forceShutdown();
      await rm(socketPath, { force: true });
    },
  };
}

/** Listens on a unix socket, a stale socket file there removed first. */
async function listen(server: grpc.Server, socketPath: string): Promise<void> {
  await mkdir(path.dirname(socketPath), { recursive: true });
  await rm(socketPath, { force: true });
  await new Promise<void>((resolve, reject) => server.bindAsync(`unix:${socketPath}`, grpc.ServerCredentials.createInsecure(), (error) => (error ? reject(error) : resolve())));
}

/** A unary handler answering with `answer`'s result; a refusal with its code, anything else INTERNAL. */
function unary<Request>(answer: (request: Request) => object | void | Promise<object | void>): grpc.handleUnaryCall<Request, object> {
  return (call, callback) => {
    Promise.resolve()
      .then(() => answer(call.request))
      .then(
        (response) => callback(null, response ?? {}),
        (error: unknown) =>
          callback(
            error instanceof CsiRefusal
              ? { code: grpc.status[error.code], details: error.message }
              : { code: grpc.status.INTERNAL, details: error instanceof Error ? error.message : String(error) },
          ),
      );
  };
}
