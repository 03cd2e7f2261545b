/**
 * The CSI plugin's start (csi_plugin.go initializeCSINode) and validation over the in-memory API,
 * on a manual clock: the node's storage error from the start, its cause while the CSINode cannot
 * be initialized, none once it is; and ValidatePlugin's refusals in the kubelet's words.
 */
import { describe, expect, it } from 'vitest';
import { sleepOn } from '../../../src/clock.ts';
import { silentLogger } from '../../../src/log.ts';
import { CsiDrivers } from '../../../src/volumes/csi/drivers.ts';
import { csiPlugin } from '../../../src/volumes/csi/registration.ts';
import { ManualClock } from '../../support/manualClock.ts';
import { MemoryApi } from '../../support/memoryApi.ts';

const NODE = 'n1';

/** Moves the clock on by `ms` in 10 ms steps, letting the promise chains run at each (a sleep is set only once its chain gets there). */
async function pass(clock: ManualClock, ms: number): Promise<void> {
  for (let elapsed = 0; elapsed < ms; elapsed += 10) await clock.settle(10);
}

function plugin(api: MemoryApi | undefined, clock = new ManualClock()) {
  const drivers = new CsiDrivers();
  const nodeInfo = async () => ({ nodeId: 'id-1', maxVolumesPerNode: 0, accessibleTopology: null });
  return { clock, drivers, csi: csiPlugin({ api, nodeName: NODE, drivers, nodeInfo, sleep: sleepOn(clock), log: silentLogger }) };
}

describe('the CSI plugin at start', () => {
  it('holds the node not ready until the CSINode is initialized, saying why meanwhile', async () => {
    const api = new MemoryApi();
    const { clock, csi } = plugin(api);
    expect(csi.storageError()).toBe('CSINode is not yet initialized');
    const started = csi.handler.start!(new AbortController().signal);
    // No Node yet (the node registers it): each try reads it and fails.
    await pass(clock, 1_000);
    expect(csi.storageError()).toBe(
      'failed to initialize CSINode: error updating CSINode annotation: timed out waiting for the condition; caused by: GET nodes n1: 404 NotFound: not found',
    );
    await api.createNode({ metadata: { name: NODE } });
    await pass(clock, 20_000);
    await started;
    expect(csi.storageError()).toBeNull();
    expect((await api.getCSINode(NODE)).metadata.ownerReferences).toEqual([{ apiVersion: 'v1', kind: 'Node', name: NODE, uid: `node-uid-${NODE}` }]);
  });

  it('replaces a CSINode left by an earlier Node of the same name, as owned by another node', async () => {
    const api = new MemoryApi();
    await api.createNode({ metadata: { name: NODE } });
    await api.createCSINode({ metadata: { name: NODE, ownerReferences: [{ apiVersion: 'v1', kind: 'Node', name: NODE, uid: 'earlier' }] }, spec: { drivers: [{ name: 'old', nodeID: 'x' }] } });
    const { clock, csi } = plugin(api);
    const started = csi.handler.start!(new AbortController().signal);
    await pass(clock, 5_000);
    await started;
    const csiNode = await api.getCSINode(NODE);
    expect(csiNode.metadata.ownerReferences?.[0]?.uid).toBe(`node-uid-${NODE}`);
    expect(csiNode.spec.drivers).toEqual([]);
  });

  it('has nothing to initialize on a standalone node', async () => {
    const { csi } = plugin(undefined);
    expect(csi.storageError()).toBeNull();
    await csi.handler.start!(new AbortController().signal);
    expect(csi.storageError()).toBeNull();
  });
});

describe('ValidatePlugin', () => {
  it.each([
    [[], 'validation failed for CSI Driver d at endpoint /e: kubernetes.io/csi: ValidatePlugin for CSI driver "d" failed. Plugin returned an empty list for supported versions'],
    [
      ['0.3.0'],
      'validation failed for CSI Driver d at endpoint /e: kubernetes.io/csi: ValidatePlugin for CSI driver "d" failed. None of the versions specified ["0.3.0"] are supported. err=highest supported version reported is 0.3.0, must be v1.x',
    ],
  ])('refuses %j', (versions, error) => {
    const { csi } = plugin(undefined);
    expect(() => csi.handler.validatePlugin('d', '/e', versions)).toThrow(error);
  });

  it('accepts a driver registered again with a higher version, and refuses an equal one', () => {
    const { csi, drivers } = plugin(undefined);
    drivers.set('d', { endpoint: '/old', highestSupportedVersion: { components: [1, 0, 0] } });
    expect(() => csi.handler.validatePlugin('d', '/e', ['1.1.0'])).not.toThrow();
    expect(() => csi.handler.validatePlugin('d', '/e', ['1.0.0'])).toThrow('Another driver with the same name is already registered with a higher supported version: "1.0.0"');
  });
});
