/**
 * The plugin manager's registration (kubelet.go initializeRuntimeDependentModules starts the
 * plugin manager on the node, its handlers added by type): on every node, watching
 * `<root-dir>/plugins_registry` (kubelet_getters.go getPluginsRegistrationDir).
 */
import path from 'node:path';
import { defineNodeLoop } from '../nodeloop/nodeLoop.ts';
import { operationExecutor, startHandlers, watchPluginDir } from './effects.ts';
import { pluginManagerMachine, pluginManagerMachineWith } from './pluginManager.ts';

/** reconciler.go: the plugin manager's loopSleepDuration (plugin_manager.go, 1 s). */
const RECONCILE_PERIOD_MS = 1_000;

export const pluginManagerLoop = defineNodeLoop({
  name: 'pluginManager',
  machine: pluginManagerMachine,
  start: ({ config, pluginHandlers, clock, log }) => ({
    logic: pluginManagerMachineWith({
      watcher: watchPluginDir({ dir: path.join(config.rootDir, 'plugins_registry'), log }),
      executor: operationExecutor({ handlers: pluginHandlers, clock, log }),
      handlers: startHandlers({ handlers: pluginHandlers, log }),
    }),
    input: { reconcilePeriodMs: RECONCILE_PERIOD_MS, startingHandlers: [...pluginHandlers].filter(([, handler]) => handler.start).map(([type]) => type) },
  }),
  accepts: [],
  /** `CSIPlugin hostpath.csi.k8s.io · DevicePlugin gpu.example.com`, the handlers still starting, and the last failure. */
  summary: (c) => {
    const byType = new Map<string, string[]>();
    for (const socket of c.registered) {
      const plugin = c.actual[socket];
      if (plugin) byType.set(plugin.type, [...(byType.get(plugin.type) ?? []), plugin.name]);
    }
    const plugins = byType.size ? [...byType].map(([type, names]) => `${type} ${names.sort().join(', ')}`).join(' · ') : 'no plugins registered';
    const starting = c.startingHandlers.length ? ` · starting: ${c.startingHandlers.join(', ')}` : '';
    const trouble = c.watchError ?? c.lastFailure;
    return `${plugins}${starting}${trouble ? ` · last failure: ${trouble}` : ''}`;
  },
});
