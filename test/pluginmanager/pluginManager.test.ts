/**
 * The plugin manager as a loop (src/pluginmanager): its watcher on a real registry directory, its
 * executor dialling registration sockets served in the test (test/support/pluginRegistrar.ts),
 * and the CSI handler behind it over the in-memory API (its objects are checked against the real
 * API server in test/cluster/csiRegistration.test.ts).
 */
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { type AnyActorRef, SimulatedClock, createActor } from 'xstate';
import { realClock, sleepOn } from '../../src/clock.ts';
import { silentLogger } from '../../src/log.ts';
import { pluginManagerLoop } from '../../src/pluginmanager/loop.ts';
import { operationExecutor, startHandlers, watchPluginDir } from '../../src/pluginmanager/effects.ts';
import { pluginManagerMachineWith } from '../../src/pluginmanager/pluginManager.ts';
import type { PluginHandler } from '../../src/pluginregistration/handler.ts';
import { dialRegistration } from '../../src/pluginregistration/registration.ts';
import { CsiDrivers } from '../../src/volumes/csi/drivers.ts';
import type { CsiNodeInfo } from '../../src/volumes/csi/client.ts';
import { csiPlugin } from '../../src/volumes/csi/registration.ts';
import { MemoryApi } from '../support/memoryApi.ts';
import { type PluginRegistrar, startPluginRegistrar } from '../support/pluginRegistrar.ts';

const NODE = 'node-a';
const DRIVER = 'test.csi.example.com';
const NODE_ID_ANNOTATION = 'csi.volume.kubernetes.io/nodeid';

let root: string;
let registry: string;
let api: MemoryApi;
let drivers: CsiDrivers;
let registrars: PluginRegistrar[];
let actors: AnyActorRef[];
let nodeInfo: (endpoint: string) => Promise<CsiNodeInfo>;

beforeEach(async () => {
  root = mkdtempSync(path.join(tmpdir(), 'statelet-plugins-'));
  registry = path.join(root, 'plugins_registry');
  api = new MemoryApi();
  await api.createNode({ metadata: { name: NODE, labels: { 'kubernetes.io/hostname': NODE } } });
  drivers = new CsiDrivers();
  registrars = [];
  actors = [];
  nodeInfo = async () => ({ nodeId: 'id-1', maxVolumesPerNode: 7, accessibleTopology: { 'topology.test/zone': 'z1' } });
});

afterEach(async () => {
  for (const actor of actors) actor.stop();
  for (const registrar of registrars) await registrar.stop();
  rmSync(root, { recursive: true, force: true });
});

function handlers(options: { standalone?: boolean } = {}): Map<string, PluginHandler> {
  const csi = csiPlugin({ api: options.standalone ? undefined : api, nodeName: NODE, drivers, nodeInfo: (endpoint) => nodeInfo(endpoint), sleep: sleepOn(realClock), log: silentLogger });
  return new Map([['CSIPlugin', csi.handler]]);
}

/** The plugin manager on the real clock, reconciling every 20 ms (the kubelet's 1 s, shortened: nothing here depends on it). */
function startManager(options: { standalone?: boolean } = {}) {
  const pluginHandlers = handlers(options);
  const actor = createActor(
    pluginManagerMachineWith({
      watcher: watchPluginDir({ dir: registry, log: silentLogger }),
      executor: operationExecutor({ handlers: pluginHandlers, clock: realClock, log: silentLogger }),
      handlers: startHandlers({ handlers: pluginHandlers, log: silentLogger }),
    }),
    { input: { reconcilePeriodMs: 20, startingHandlers: [] } },
  ).start();
  actors.push(actor);
  return { actor, summary: () => pluginManagerLoop.summary(actor.getSnapshot().context) };
}

async function registrar(name: string, info: Parameters<typeof startPluginRegistrar>[1] = {}, dir = registry) {
  mkdirSync(dir, { recursive: true });
  const started = await startPluginRegistrar(path.join(dir, name), info);
  registrars.push(started);
  return started;
}

const nodeIds = async () => JSON.parse((await api.getNode(NODE)).metadata.annotations?.[NODE_ID_ANNOTATION] ?? '{}') as Record<string, string>;

describe('the plugin manager', () => {
  it('registers a CSI driver found at start: notified true, the Node annotated and labelled, the CSINode listing it', async () => {
    const plugin = await registrar('test-reg.sock');
    const { actor, summary } = startManager();
    await vi.waitFor(() => expect(plugin.statuses).toEqual([{ pluginRegistered: true, error: '' }]));
    // The states agree: the reconciler has no timer running until a socket changes.
    expect(actor.getSnapshot().value).toBe('settled');
    expect(await nodeIds()).toEqual({ [DRIVER]: 'id-1' });
    expect((await api.getNode(NODE)).metadata.labels).toEqual({ 'kubernetes.io/hostname': NODE, 'topology.test/zone': 'z1' });
    const csiNode = await api.getCSINode(NODE);
    expect(csiNode.metadata.ownerReferences).toEqual([{ apiVersion: 'v1', kind: 'Node', name: NODE, uid: `node-uid-${NODE}` }]);
    expect(csiNode.spec.drivers).toEqual([{ name: DRIVER, nodeID: 'id-1', topologyKeys: ['topology.test/zone'], allocatable: { count: 7 } }]);
    // The endpoint GetInfo left empty is the registration socket itself.
    expect(drivers.get(DRIVER)?.endpoint).toBe(plugin.socketPath);
    // The plugin is told before the operation's end reaches the loop.
    await vi.waitFor(() => expect(summary()).toBe(`CSIPlugin ${DRIVER}`));
  });

  it('registers a socket created later, in a subdirectory, and ignores one whose name starts with a dot', async () => {
    const { summary } = startManager();
    await vi.waitFor(() => expect(summary()).toBe('no plugins registered'));
    const hidden = await registrar('.hidden.sock', { name: 'hidden.csi.example.com' });
    const nested = await registrar('nested-reg.sock', { endpoint: '/run/nested/csi.sock' }, path.join(registry, 'sub'));
    await vi.waitFor(() => expect(nested.statuses).toEqual([{ pluginRegistered: true, error: '' }]));
    expect(drivers.get(DRIVER)?.endpoint).toBe('/run/nested/csi.sock');
    expect(hidden.infoCalls).toBe(0);
  });

  it('refuses a plugin of a type without a handler, telling it why', async () => {
    const plugin = await registrar('dev-reg.sock', { type: 'DevicePlugin', name: 'gpu.example.com' });
    const { summary } = startManager();
    const refusal = `RegisterPlugin error -- no handler registered for plugin type: DevicePlugin at socket ${plugin.socketPath}`;
    await vi.waitFor(() => expect(plugin.statuses[0]).toEqual({ pluginRegistered: false, error: refusal }));
    // The kubelet's notifyPlugin returns the refusal as an error, so the operation fails with "failed to send error".
    await vi.waitFor(() => expect(summary()).toBe(`no plugins registered · last failure: RegisterPlugin error -- failed to send error at socket ${plugin.socketPath}, err: ${refusal}`));
  });

  it('refuses a CSI driver without a 1.x version, and one already registered at that version', async () => {
    const old = await registrar('old-reg.sock', { name: 'old.csi.example.com', supportedVersions: ['2.0.0'] });
    const first = await registrar('first-reg.sock');
    startManager();
    await vi.waitFor(() =>
      expect(old.statuses[0]).toEqual({
        pluginRegistered: false,
        error:
          `RegisterPlugin error -- plugin validation failed with err: validation failed for CSI Driver old.csi.example.com at endpoint ${old.socketPath}: ` +
          'kubernetes.io/csi: ValidatePlugin for CSI driver "old.csi.example.com" failed. None of the versions specified ["2.0.0"] are supported. ' +
          'err=could not find a highest supported version from versions ([2.0.0]) reported: <nil>',
      }),
    );
    await vi.waitFor(() => expect(first.statuses).toEqual([{ pluginRegistered: true, error: '' }]));
    const second = await registrar('second-reg.sock');
    await vi.waitFor(() =>
      expect(second.statuses[0]?.error).toBe(
        `RegisterPlugin error -- plugin validation failed with err: validation failed for CSI Driver ${DRIVER} at endpoint ${second.socketPath}: ` +
          `kubernetes.io/csi: ValidatePlugin for CSI driver "${DRIVER}" failed. Another driver with the same name is already registered with a higher supported version: "1.0.0"`,
      ),
    );
    expect(drivers.get(DRIVER)?.endpoint).toBe(first.socketPath);
  });

  it('deregisters a driver whose socket is removed, and registers it again when the socket comes back', async () => {
    const plugin = await registrar('test-reg.sock');
    const { summary } = startManager();
    await vi.waitFor(() => expect(plugin.statuses).toEqual([{ pluginRegistered: true, error: '' }]));
    await plugin.stop();
    await vi.waitFor(async () => expect(await nodeIds()).toEqual({}));
    expect((await api.getCSINode(NODE)).spec.drivers).toEqual([]);
    expect(drivers.get(DRIVER)).toBeUndefined();
    // Labels stay, as the kubelet leaves them.
    expect((await api.getNode(NODE)).metadata.labels?.['topology.test/zone']).toBe('z1');
    expect(summary()).toBe('no plugins registered');

    nodeInfo = async () => ({ nodeId: 'id-2', maxVolumesPerNode: 0, accessibleTopology: {} });
    const again = await registrar('test-reg.sock');
    await vi.waitFor(() => expect(again.statuses).toEqual([{ pluginRegistered: true, error: '' }]));
    expect(await nodeIds()).toEqual({ [DRIVER]: 'id-2' });
    expect((await api.getCSINode(NODE)).spec.drivers).toEqual([{ name: DRIVER, nodeID: 'id-2', topologyKeys: [] }]);
    await vi.waitFor(() => expect(summary()).toBe(`CSIPlugin ${DRIVER}`));
  });

  it('tells a driver whose NodeGetInfo fails that it is not registered, and leaves nothing of it behind', async () => {
    nodeInfo = async () => {
      throw new Error('rpc error: code = Unavailable desc = connection refused');
    };
    const plugin = await registrar('test-reg.sock');
    startManager();
    await vi.waitFor(() =>
      expect(plugin.statuses[0]).toEqual({ pluginRegistered: false, error: 'RegisterPlugin error -- plugin registration failed with err: rpc error: code = Unavailable desc = connection refused' }),
    );
    expect(drivers.get(DRIVER)).toBeUndefined();
    expect(await nodeIds()).toEqual({});
  });

  it('refuses a topology that contradicts a Node label, with the kubelet words, and unregisters the driver', async () => {
    await api.patchNodeStatus(NODE, { metadata: { labels: { 'topology.test/zone': 'other' } } });
    const plugin = await registrar('test-reg.sock');
    startManager();
    await vi.waitFor(() => expect(plugin.statuses[0]?.pluginRegistered).toBe(false), { timeout: 5_000 });
    expect(plugin.statuses[0]?.error).toBe(
      'RegisterPlugin error -- plugin registration failed with err: error updating Node object with CSI driver node info: error updating node: timed out waiting for the condition; ' +
        'caused by: detected topology value collision: driver reported "topology.test/zone":"z1" but existing label is "topology.test/zone":"other"',
    );
    expect(drivers.get(DRIVER)).toBeUndefined();
  });
});

describe('the plugin manager and misbehaving sockets', () => {
  it('keeps registering other plugins while a socket that answers garbage fails its dial, with the kubelet words', { timeout: 30_000 }, async () => {
    mkdirSync(registry, { recursive: true });
    const garbagePath = path.join(registry, 'garbage.sock');
    const garbage = net.createServer((socket) => socket.end('this is not HTTP/2\n'));
    await new Promise<void>((resolve) => garbage.listen(garbagePath, resolve));
    try {
      const { summary } = startManager();
      const good = await registrar('test-reg.sock');
      await vi.waitFor(() => expect(good.statuses).toEqual([{ pluginRegistered: true, error: '' }]));
      // grpc.WithBlock with the kubelet's 10 s dial timeout: the garbage socket fails only then.
      await vi.waitFor(() => expect(summary()).toBe(`CSIPlugin ${DRIVER} · last failure: RegisterPlugin error -- dial failed at socket ${garbagePath}, err: failed to dial socket ${garbagePath}, err: context deadline exceeded`), {
        timeout: 20_000,
      });
    } finally {
      garbage.close();
    }
  });

  it('refuses a CSI driver on a node without an API server, as a kubelet without a kubeconfig does', async () => {
    const plugin = await registrar('test-reg.sock');
    startManager({ standalone: true });
    await vi.waitFor(() =>
      expect(plugin.statuses[0]).toEqual({
        pluginRegistered: false,
        error: 'RegisterPlugin error -- plugin registration failed with err: error updating Node object with CSI driver node info: error updating node: timed out waiting for the condition; caused by: error getting kube client',
      }),
    );
    expect(drivers.get(DRIVER)).toBeUndefined();
  });
});

describe("the plugin manager's back-off", () => {
  it('retries a failing socket after 500 ms, then twice as long each time, on the node clock', async () => {
    const plugin = await registrar('dev-reg.sock', { type: 'DevicePlugin', name: 'gpu.example.com' });
    const clock = new SimulatedClock();
    const dialledAt: number[] = [];
    const ended: number[] = [];
    const pluginHandlers = handlers();
    const actor = createActor(
      pluginManagerMachineWith({
        watcher: watchPluginDir({ dir: registry, log: silentLogger }),
        executor: operationExecutor({
          handlers: pluginHandlers,
          clock,
          log: silentLogger,
          dial: (socketPath, signal) => {
            dialledAt.push(clock.now() / 1000);
            return dialRegistration(socketPath, signal);
          },
        }),
        handlers: startHandlers({ handlers: pluginHandlers, log: silentLogger }),
      }),
      {
        clock,
        input: { reconcilePeriodMs: 1_000, startingHandlers: [] },
        inspect: (record) => {
          if (record.type === '@xstate.event' && record.event.type === 'PLUGINS.OPERATION_ENDED') ended.push((record.event as unknown as { retryAfterMs: number }).retryAfterMs);
        },
      },
    ).start();
    actors.push(actor);
    await vi.waitFor(() => expect(Object.keys(actor.getSnapshot().context.desired)).toEqual([plugin.socketPath]));
    for (let second = 1; second <= 40; second++) {
      const before = dialledAt.length;
      clock.increment(1_000);
      // An operation that started is waited out before the next tick, so its failure is recorded at this second.
      if (dialledAt.length > before) await vi.waitFor(() => expect(ended.length).toBe(dialledAt.length));
    }
    expect(dialledAt).toEqual([1, 2, 3, 5, 9, 17, 33]);
    expect(ended).toEqual([500, 1_000, 2_000, 4_000, 8_000, 16_000, 32_000]);
    expect(plugin.infoCalls).toBe(7);
  });
});
