/**
 * The CSI volume plugin's side of plugin registration (pkg/volume/csi/csi_plugin.go
 * RegistrationHandler, Init, initializeCSINode): the handler the plugin manager calls for each
 * `CSIPlugin` socket, and the node's storage state, not ready until the CSINode is initialized.
 *
 *   ValidatePlugin    a 1.x version among the driver's, and no driver of that name registered
 *                     with an equal or higher one.
 *   RegisterPlugin    the driver into the table (drivers.ts), its NodeGetInfo, then
 *                     InstallCSIDriver (nodeInfoManager.ts); any failure takes it out again.
 *   DeRegisterPlugin  out of the table, the CSINode and the Node's annotation.
 *   start             initializeCSINode: the storage error `CSINode is not yet initialized` from
 *                     the moment the plugin exists, until the CSINode is there with its annotation.
 */
import type { Sleep } from '../../clock.ts';
import type { KubeApi } from '../../client/api.ts';
import { isNotFound } from '../../client/api.ts';
import type { Logger } from '../../log.ts';
import type { PluginHandler } from '../../pluginregistration/handler.ts';
import type { CsiNodeInfo } from './client.ts';
import { type CsiDrivers, type CsiVersion, highestSupportedVersion, versionLessThan, versionString } from './drivers.ts';
import { NodeInfoManager } from './nodeInfoManager.ts';

/**
 * NodeGetInfo of the driver serving at `endpoint` (the socket it registered), with `signal`: the
 * CSI client's (client.ts CsiNodeClient.nodeGetInfo, its 2 min deadline: csi_plugin.go csiTimeout).
 */
export type NodeInfoSource = (endpoint: string, signal: AbortSignal) => Promise<CsiNodeInfo>;

interface CsiPluginDeps {
  /** None: a standalone node; a driver's registration then fails as the kubelet's does without a client. */
  api: KubeApi | undefined;
  nodeName: string;
  drivers: CsiDrivers;
  nodeInfo: NodeInfoSource;
  sleep: Sleep;
  log: Logger;
}

/** csi_util.go log(): the plugin's messages start with its name. */
const csiMessage = (text: string) => `kubernetes.io/csi: ${text}`;
const message = (error: unknown) => (error instanceof Error ? error.message : String(error));

/** The storage error the node reports until the CSINode is initialized (csi_plugin.go initializeCSINode). */
export const CSINODE_NOT_INITIALIZED = 'CSINode is not yet initialized';

/** waitForAPIServerForever's poll period. */
const API_SERVER_POLL_MS = 1_000;
/** initializeCSINode's initBackoff: 6 tries, 30 ms × 8 each time (≈140 s; its 10 % jitter left out). */
const INIT_BACKOFF = { steps: 6, firstMs: 30, factor: 8 };

export interface CsiPlugin {
  handler: PluginHandler;
  /** The node's storage error (the kubelet's runtimeState.storageError); null: ready. */
  storageError(): string | null;
}

/** csi_plugin.go validateVersions: the driver's highest 1.x version, or why it may not register. */
function validateVersions(drivers: CsiDrivers, caller: string, name: string, versions: readonly string[]): CsiVersion {
  if (versions.length === 0) throw new Error(csiMessage(`${caller} for CSI driver "${name}" failed. Plugin returned an empty list for supported versions`));
  let highest: CsiVersion;
  try {
    highest = highestSupportedVersion(versions);
  } catch (err) {
    const quoted = `[${versions.map((v) => JSON.stringify(v)).join(' ')}]`;
    throw new Error(csiMessage(`${caller} for CSI driver "${name}" failed. None of the versions specified ${quoted} are supported. err=${message(err)}`));
  }
  const existing = drivers.get(name);
  if (existing && !versionLessThan(existing.highestSupportedVersion, highest)) {
    throw new Error(
      csiMessage(`${caller} for CSI driver "${name}" failed. Another driver with the same name is already registered with a higher supported version: "${versionString(existing.highestSupportedVersion)}"`),
    );
  }
  return highest;
}

export function csiPlugin(deps: CsiPluginDeps): CsiPlugin {
  const { drivers, log } = deps;
  const nim = new NodeInfoManager({ api: deps.api, nodeName: deps.nodeName, sleep: deps.sleep, log });
  // Set as the plugin is made (csi_plugin.go Init), so the Node is never reported Ready before the
  // CSINode exists; a standalone node has neither (initializeCSINode skips).
  let storageError: string | null = deps.api ? CSINODE_NOT_INITIALIZED : null;
  const api = deps.api;

  /** unregisterDriver: out of the table, then out of the CSINode and the Node. */
  const unregisterDriver = async (name: string) => {
    drivers.delete(name);
    try {
      await nim.uninstallCsiDriver(name);
    } catch (err) {
      throw new Error(csiMessage(`Error uninstalling CSI driver: ${message(err)}`));
    }
  };

  const handler: PluginHandler = {
    validatePlugin(name, endpoint, versions) {
      log('info', csiMessage(`Trying to validate a new CSI Driver with name: ${name} endpoint: ${endpoint} versions: ${versions.join(',')}`));
      try {
        validateVersions(drivers, 'ValidatePlugin', name, versions);
      } catch (err) {
        throw new Error(`validation failed for CSI Driver ${name} at endpoint ${endpoint}: ${message(err)}`);
      }
    },

    async registerPlugin(name, endpoint, versions, signal) {
      log('info', csiMessage(`Register new plugin with name: ${name} at endpoint: ${endpoint}`));
      const highest = validateVersions(drivers, 'RegisterPlugin', name, versions);
      drivers.set(name, { endpoint, highestSupportedVersion: highest });
      try {
        const info = await deps.nodeInfo(endpoint, signal);
        await nim.installCsiDriver(name, info.nodeId, info.maxVolumesPerNode, info.accessibleTopology ?? {});
      } catch (err) {
        await unregisterDriver(name).catch((unregisterError) =>
          log('error', csiMessage(`registrationHandler.RegisterPlugin failed to unregister plugin due to previous error: ${message(unregisterError)}`)),
        );
        throw err;
      }
    },

    async deRegisterPlugin(name, endpoint) {
      log('info', csiMessage(`registrationHandler.DeRegisterPlugin request for plugin ${name}, endpoint ${endpoint}`));
      await unregisterDriver(name).catch((err) => log('error', csiMessage(`registrationHandler.DeRegisterPlugin failed: ${message(err)}`)));
    },

    /**
     * initializeCSINode: waits for the API server (a GET of the CSINode answering, found or not,
     * every second), then initializes the CSINode, 6 tries over ≈140 s, the storage error saying
     * why meanwhile. Where the kubelet then exits to be restarted and begin again, statelet stays
     * up and begins again itself, the error on its Ready condition.
     */
    async start(signal) {
      if (!api) return;
      for (;;) {
        for (;;) {
          try {
            await api.getCSINode(deps.nodeName);
            break;
          } catch (err) {
            if (isNotFound(err)) break;
            log('info', 'Failed to contact API server when waiting for CSINode publishing', { err: message(err) });
          }
          await deps.sleep(API_SERVER_POLL_MS, signal);
        }
        for (let attempt = 0; attempt < INIT_BACKOFF.steps; attempt++) {
          if (attempt > 0) await deps.sleep(INIT_BACKOFF.firstMs * INIT_BACKOFF.factor ** (attempt - 1), signal);
          try {
            await nim.initializeCsiNode();
            storageError = null;
            log('info', 'Initialized the CSINode', { node: deps.nodeName });
            return;
          } catch (err) {
            storageError = `failed to initialize CSINode: ${message(err)}`;
            log('error', `Failed to initialize CSINode: ${message(err)}`);
          }
        }
        log('error', 'Failed to initialize CSINode after retrying: beginning again (the kubelet exits here to be restarted)');
      }
    },
  };
  return { handler, storageError: () => storageError };
}
