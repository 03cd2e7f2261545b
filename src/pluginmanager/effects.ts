/**
 * The plugin manager's effects: the watcher on the registry directory
 * (pluginwatcher/plugin_watcher.go), the operation executor with its per-socket back-off
 * (operationexecutor/operation_executor.go, operation_generator.go), and the handlers' start-up.
 */
import { type FSWatcher, watch } from 'node:fs';
import { lstat, mkdir, readdir } from 'node:fs/promises';
import path from 'node:path';
import type { Clock } from '../clock.ts';
import { formatDuration } from '../duration.ts';
import type { PluginManagerEvent, PluginRecord } from '../events.ts';
import type { Logger } from '../log.ts';
import type { PluginHandlers } from '../pluginregistration/handler.ts';
import { type RegistrationClient, dialRegistration } from '../pluginregistration/registration.ts';
import { type OperationBackoff, afterFailure, safeToRetry } from './backoff.ts';
import type { ExecutorCommand, PluginManagerEffects } from './pluginManager.ts';

type Send = (event: PluginManagerEvent) => void;
const message = (error: unknown) => (error instanceof Error ? error.message : String(error));

/**
 * The watcher (plugin_watcher.go Start): makes `dir` (0755), watches it and every directory below
 * it, and walks what is there; a unix socket whose name does not start with `.` is a plugin
 * (handleCreateEvent); any removal is told (handleDeleteEvent: the desired state ignores a path it
 * does not hold). Node's fs.watch reports a creation and a removal alike as `rename`: the path is
 * looked at to tell which.
 */
export function watchPluginDir(deps: { dir: string; log: Logger }): PluginManagerEffects['watcher'] {
  return ({ sendBack }) => {
    const send = sendBack as Send;
    const watchers = new Map<string, FSWatcher>();
    let stopped = false;

    const examine = async (full: string): Promise<void> => {
      let info;
      try {
        info = await lstat(full);
      } catch {
        const watcher = watchers.get(full);
        watcher?.close();
        watchers.delete(full);
        send({ type: 'PLUGINS.SOCKET_REMOVED', path: full });
        return;
      }
      if (path.basename(full).startsWith('.')) return;
      if (info.isDirectory()) await traverse(full);
      else if (info.isSocket()) send({ type: 'PLUGINS.SOCKET_CREATED', path: full });
    };

    const follow = (dir: string) => {
      if (stopped || watchers.has(dir)) return;
      const watcher = watch(dir, (_kind, name) => {
        // A subdirectory that cannot be watched (the inotify limit) is logged, as the kubelet logs it; the watcher goes on.
        if (name) examine(path.join(dir, name.toString())).catch((err) => deps.log('error', 'Error when handling create event', { path: path.join(dir, name.toString()), err }));
      });
      watcher.on('error', (err) => deps.log('warn', 'Plugin watcher error', { path: dir, err }));
      watchers.set(dir, watcher);
    };

    /** traversePluginDir: watch the directory, then what is in it (an unreadable child is logged and skipped). */
    const traverse = async (dir: string): Promise<void> => {
      follow(dir);
      for (const entry of await readdir(dir, { withFileTypes: true }).catch(() => [])) {
        const full = path.join(dir, entry.name);
        if (entry.isDirectory()) await traverse(full);
        else if (entry.isSocket() && !entry.name.startsWith('.')) send({ type: 'PLUGINS.SOCKET_CREATED', path: full });
      }
    };

    void (async () => {
      try {
        await mkdir(deps.dir, { recursive: true, mode: 0o755 });
        follow(deps.dir);
        await traverse(deps.dir);
        deps.log('info', 'Plugin Watcher Start', { path: deps.dir });
      } catch (err) {
        deps.log('error', 'The plugin watcher failed to start: no plugin can register', { path: deps.dir, err });
        send({ type: 'PLUGINS.WATCH_FAILED', error: `error (re-)creating root ${deps.dir}: ${message(err)}` });
      }
    })();
    return () => {
      stopped = true;
      for (const watcher of watchers.values()) watcher.close();
      watchers.clear();
    };
  };
}

interface ExecutorDeps {
  handlers: PluginHandlers;
  clock: Clock;
  log: Logger;
  /** Dials a plugin's registration socket; dialRegistration by default (tests may count). */
  dial?: (socketPath: string, signal: AbortSignal) => Promise<RegistrationClient>;
}

/**
 * The kubelet's registration of the plugin at `socketPath` (operation_generator.go
 * GenerateRegisterPluginFunc), with its messages: GetInfo, the handler of its type, ValidatePlugin,
 * the plugin into the actual state, RegisterPlugin, NotifyRegistrationStatus. Throws what failed.
 */
async function registerPlugin(socketPath: string, uuid: string, deps: ExecutorDeps, send: Send, signal: AbortSignal): Promise<void> {
  let client: RegistrationClient;
  try {
    client = await (deps.dial ?? dialRegistration)(socketPath, signal);
  } catch (err) {
    throw new Error(`RegisterPlugin error -- dial failed at socket ${socketPath}, err: ${message(err)}`);
  }
  /**
   * notifyPlugin: tells the plugin, and returns as an error the text it told (null: none), with the
   * call's own error when telling failed. So a refusal always comes back as an error, even told.
   */
  const notify = async (registered: boolean, error: string): Promise<string | null> => {
    try {
      await client.notifyRegistrationStatus({ pluginRegistered: registered, error });
    } catch (err) {
      return `${error}: ${message(err)}`;
    }
    return error || null;
  };
  /** A refusal told to the plugin: the kubelet's caller then fails with `failed to send error …` whatever notifyPlugin returned. */
  const refuse = async (error: string): Promise<never> => {
    throw new Error(`RegisterPlugin error -- failed to send error at socket ${socketPath}, err: ${await notify(false, error)}`);
  };
  try {
    let info;
    try {
      info = await client.getInfo();
    } catch (err) {
      throw new Error(`RegisterPlugin error -- failed to get plugin info using RPC GetInfo at socket ${socketPath}, err: ${message(err)}`);
    }
    const handler = deps.handlers.get(info.type);
    if (!handler) {
      const error = `RegisterPlugin error -- no handler registered for plugin type: ${info.type} at socket ${socketPath}`;
      return await refuse(error);
    }
    const endpoint = info.endpoint || socketPath;
    try {
      handler.validatePlugin(info.name, endpoint, info.supportedVersions);
    } catch (err) {
      return await refuse(`RegisterPlugin error -- plugin validation failed with err: ${message(err)}`);
    }
    // In the actual state before the handler registers it, so that a removal meanwhile deregisters it.
    const plugin: PluginRecord = { path: socketPath, uuid, type: info.type, name: info.name, endpoint };
    send({ type: 'PLUGINS.ADDED', plugin });
    try {
      await handler.registerPlugin(info.name, endpoint, info.supportedVersions, signal);
    } catch (err) {
      throw new Error((await notify(false, `RegisterPlugin error -- plugin registration failed with err: ${message(err)}`)) ?? '');
    }
    // Told after RegisterPlugin, so that a plugin validated is always registered even if telling it fails.
    const notified = await notify(true, '');
    if (notified !== null) throw new Error(`RegisterPlugin error -- failed to send registration status at socket ${socketPath}, err: ${notified}`);
    deps.log('info', 'Registered plugin', { type: info.type, name: info.name, endpoint, socket: socketPath });
  } finally {
    client.close();
  }
}

/**
 * The operation executor: one operation per socket at a time, none on a socket backing off after a
 * failure (goroutinemap.go Run: the reconciler's next round asks again and is refused quietly
 * until the wait is over).
 */
export function operationExecutor(deps: ExecutorDeps): PluginManagerEffects['executor'] {
  return ({ sendBack, receive }) => {
    const send = sendBack as Send;
    const running = new Set<string>();
    const backoff = new Map<string, OperationBackoff>();
    const stop = new AbortController();

    const run = (socketPath: string, operation: 'register' | 'unregister', work: () => Promise<void>) => {
      if (running.has(socketPath) || !safeToRetry(backoff.get(socketPath), deps.clock.now())) return;
      running.add(socketPath);
      void work().then(
        () => {
          running.delete(socketPath);
          backoff.delete(socketPath);
          if (!stop.signal.aborted) send({ type: 'PLUGINS.OPERATION_ENDED', path: socketPath, operation, error: null });
        },
        (err) => {
          running.delete(socketPath);
          const next = afterFailure(backoff.get(socketPath), deps.clock.now());
          backoff.set(socketPath, next);
          if (stop.signal.aborted) return;
          deps.log('warn', `Operation for "${socketPath}" failed. No retries permitted until ${new Date(next.lastErrorAt + next.durationBeforeRetryMs).toISOString()} (durationBeforeRetry ${formatDuration(next.durationBeforeRetryMs)})`, {
            operation,
            err: message(err),
          });
          send({ type: 'PLUGINS.OPERATION_ENDED', path: socketPath, operation, error: message(err), retryAfterMs: next.durationBeforeRetryMs });
        },
      );
    };

    /** GenerateUnregisterPluginFunc: out of the actual state, then the handler's DeRegisterPlugin. */
    const unregister = async (plugin: PluginRecord) => {
      const handler = deps.handlers.get(plugin.type);
      if (!handler) throw new Error(`UnregisterPlugin error -- failed to get plugin handler for ${plugin.path}`);
      send({ type: 'PLUGINS.REMOVED', path: plugin.path });
      await handler.deRegisterPlugin(plugin.name, plugin.endpoint);
      deps.log('info', 'DeRegisterPlugin called', { pluginName: plugin.name, type: plugin.type, socket: plugin.path });
    };

    receive((command: ExecutorCommand) => {
      for (const plugin of command.unregister) run(plugin.path, 'unregister', () => unregister(plugin));
      for (const { path: socketPath, uuid } of command.register) run(socketPath, 'register', () => registerPlugin(socketPath, uuid, deps, send, stop.signal));
    });
    return () => stop.abort();
  };
}

/** Each handler's start-up work, told as it is done (PLUGINS.HANDLER_STARTED). */
export function startHandlers(deps: { handlers: PluginHandlers; log: Logger }): PluginManagerEffects['handlers'] {
  return ({ sendBack }) => {
    const stop = new AbortController();
    for (const [pluginType, handler] of deps.handlers) {
      if (!handler.start) continue;
      handler.start(stop.signal).then(
        () => !stop.signal.aborted && sendBack({ type: 'PLUGINS.HANDLER_STARTED', pluginType }),
        (err) => !stop.signal.aborted && deps.log('error', 'A plugin handler could not start', { pluginType, err }),
      );
    }
    return () => stop.abort();
  };
}
