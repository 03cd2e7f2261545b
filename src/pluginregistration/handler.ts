/**
 * What the plugin manager asks of the part that consumes one type of plugin
 * (pkg/kubelet/pluginmanager/cache/types.go PluginHandler): the CSI volume plugin for `CSIPlugin`
 * (src/volumes/csi/registration.ts), later the device manager and DRA. The node builds the
 * handlers by type (kubelet.go: pluginManager.AddHandler for each) and gives them to the plugin
 * manager; a socket whose plugin type has none is refused.
 */
export interface PluginHandler {
  /** Whether a plugin of this name, endpoint and versions may register; throws why not. */
  validatePlugin(name: string, endpoint: string, versions: readonly string[]): void;
  /** Registers the plugin (after validation); throws why it could not, having undone what it did. */
  registerPlugin(name: string, endpoint: string, versions: readonly string[], signal: AbortSignal): Promise<void>;
  /** The plugin's socket is gone or replaced; never throws (the kubelet logs its failures). */
  deRegisterPlugin(name: string, endpoint: string): Promise<void>;
  /**
   * What the handler's plugin does once, when the node starts, before its plugins are of use (the CSI
   * volume plugin's Init: csi_plugin.go initializeCSINode); resolves when done. Absent: nothing.
   */
  start?(signal: AbortSignal): Promise<void>;
}

/** The handlers by plugin type (`CSIPlugin`, `DevicePlugin`, `DRAPlugin`). */
export type PluginHandlers = ReadonlyMap<string, PluginHandler>;
