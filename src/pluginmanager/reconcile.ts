/**
 * What the plugin manager's reconciler asks for, from its desired state (the sockets seen, each
 * with the generation of its last creation) and its actual state (the plugins registered)
 * (pkg/kubelet/pluginmanager/reconciler/reconciler.go reconcile): unregistrations first, of each
 * registered plugin whose socket is gone or was created again since; then registration of each
 * socket whose current generation is not registered. A socket being unregistered is not
 * registered in the same round: its operation is still pending (nestedpendingoperations refuses
 * a second one), and the next round registers it.
 */
import type { PluginRecord } from '../events.ts';

/** The desired state: socket path → the generation of its last creation (the kubelet's UUID). */
export type DesiredPlugins = Readonly<Record<string, string>>;
/** The actual state: socket path → the plugin registered from it. */
export type ActualPlugins = Readonly<Record<string, PluginRecord>>;

export interface ReconcileOperations {
  unregister: PluginRecord[];
  register: { path: string; uuid: string }[];
}

export function reconcileOperations(desired: DesiredPlugins, actual: ActualPlugins): ReconcileOperations {
  const unregister = Object.values(actual).filter((plugin) => desired[plugin.path] !== plugin.uuid);
  const leaving = new Set(unregister.map((plugin) => plugin.path));
  const register = Object.entries(desired)
    .filter(([path, uuid]) => actual[path]?.uuid !== uuid && !leaving.has(path))
    .map(([path, uuid]) => ({ path, uuid }));
  return { unregister, register };
}
