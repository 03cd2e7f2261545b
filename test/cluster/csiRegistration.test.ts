/**
 * The CSI registration handler (src/volumes/csi/registration.ts) against a real kube-apiserver +
 * etcd, with a node's identity (the Node authorizer and NodeRestriction on, as for a kubelet):
 *   - until the CSINode is initialized the Node is Ready=False with `CSINode is not yet
 *     initialized`; initializing creates it owned by the Node with the migrated plugins annotated,
 *     and the next status is Ready;
 *   - a driver's registration merges its node ID into `csi.volume.kubernetes.io/nodeid`, labels
 *     the Node with its topology, and lists it in the CSINode (topology keys, allocatable count);
 *   - a topology contradicting a label is refused with the kubelet's words, and nothing of the
 *     driver stays;
 *   - a deregistration drops the driver from the annotation and the CSINode; labels stay.
 * The plugin manager in front of the handler is tested with registration sockets in
 * test/pluginmanager/pluginManager.test.ts.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { KubeApi } from '../../src/client/api.ts';
import { kubeClientFromFile } from '../../src/client/kubeClient.ts';
import { realClock, sleepOn } from '../../src/clock.ts';
import { silentLogger } from '../../src/log.ts';
import { NodeRecord } from '../../src/node/record.ts';
import { nodeSettings } from '../../src/node/nodeObject.ts';
import { createNodeStatusEffects } from '../../src/nodestatus/effects.ts';
import type { ImageService, RuntimeService } from '../../src/runtime/types.ts';
import { CsiDrivers } from '../../src/volumes/csi/drivers.ts';
import type { CsiNodeInfo } from '../../src/volumes/csi/client.ts';
import { csiPlugin } from '../../src/volumes/csi/registration.ts';
import { type ControlPlane, startControlPlane } from '../support/controlPlane.ts';
import { testMachine } from '../support/machine.ts';

const NODE = 'csi-node';
const NODE_ID_ANNOTATION = 'csi.volume.kubernetes.io/nodeid';
const MIGRATED = 'kubernetes.io/aws-ebs,kubernetes.io/azure-disk,kubernetes.io/azure-file,kubernetes.io/cinder,kubernetes.io/gce-pd,kubernetes.io/portworx-volume,kubernetes.io/vsphere-volume';

/** A runtime that is up, for the node's status. */
const runtime = {
  version: async () => ({ version: '0.1.0', runtimeName: 'containerd', runtimeVersion: '1.7.0', runtimeApiVersion: 'v1' }),
  status: async () => ({ conditions: [{ type: 'RuntimeReady', status: true, reason: '', message: '' }, { type: 'NetworkReady', status: true, reason: '', message: '' }] }),
} as unknown as RuntimeService;
const images = { listImages: async () => [] } as unknown as ImageService;

describe('CSI registration through a real API server, as the node', () => {
  let cp: ControlPlane | null = null;
  let api: KubeApi;
  const drivers = new CsiDrivers();
  const answers = new Map<string, CsiNodeInfo>();
  let csi: ReturnType<typeof csiPlugin>;

  beforeAll(async () => {
    cp = await startControlPlane({ nodeNames: [NODE] });
    if (!cp) return;
    api = kubeClientFromFile(cp.nodeKubeconfig(NODE), { requestTimeoutMs: 10_000, userAgent: 'statelet-test' }).api;
    csi = csiPlugin({
      api,
      nodeName: NODE,
      drivers,
      nodeInfo: async (endpoint) => answers.get(endpoint) ?? Promise.reject(new Error(`no driver at ${endpoint}`)),
      sleep: sleepOn(realClock),
      log: silentLogger,
    });
  }, 5 * 60_000);
  afterAll(async () => cp?.close(), 60_000);

  const ready = async () => (await api.getNode(NODE)).status?.conditions?.find((c) => c.type === 'Ready');
  const nodeIds = async () => JSON.parse((await api.getNode(NODE)).metadata.annotations?.[NODE_ID_ANNOTATION] ?? '{}') as Record<string, string>;

  it('reports the Node not Ready until the CSINode is initialized, owned by the Node', { timeout: 60_000 }, async ({ skip }) => {
    if (!cp) return skip();
    const settings = nodeSettings({ nodeName: NODE, nodeLabels: {}, registerWithTaints: [], maxPods: 110, port: 10250, systemReserved: {}, kubeReserved: {}, evictionHard: {} }, 'v1.37.0-statelet.0.1.0');
    const status = createNodeStatusEffects({
      ...{ api, runtime, images, settings, machine: async () => testMachine(), notReady: () => [], storageError: () => csi.storageError() },
      ...{ record: new NodeRecord(), reportFrequencyMs: 300_000, now: () => Date.now(), log: silentLogger, recorder: { event: () => {} }, podCidr: '' },
    });
    await status.register(new AbortController().signal);
    expect(await ready()).toMatchObject({ status: 'False', reason: 'KubeletNotReady', message: 'CSINode is not yet initialized' });
    await expect(api.getCSINode(NODE)).rejects.toMatchObject({ status: 404 });

    await csi.handler.start!(new AbortController().signal);
    expect(csi.storageError()).toBeNull();
    const node = await api.getNode(NODE);
    const csiNode = await api.getCSINode(NODE);
    expect(csiNode.metadata.ownerReferences).toEqual([{ apiVersion: 'v1', kind: 'Node', name: NODE, uid: node.metadata.uid }]);
    expect(csiNode.metadata.annotations?.['storage.alpha.kubernetes.io/migrated-plugins']).toBe(MIGRATED);
    expect(csiNode.spec.drivers ?? []).toEqual([]);

    await status.update({ lastWrittenAt: null, pressure: [] }, new AbortController().signal);
    expect(await ready()).toMatchObject({ status: 'True', reason: 'KubeletReady' });
  });

  it('registers drivers into the Node and the CSINode, refuses a topology collision, and deregisters', { timeout: 60_000 }, async ({ skip }) => {
    if (!cp) return skip();
    const signal = new AbortController().signal;
    await cp.kubectl(['label', 'node', NODE, 'topology.test/rack=r9']);
    answers.set('/plugins/one/csi.sock', { nodeId: 'n-1', maxVolumesPerNode: 16, accessibleTopology: { 'topology.test/zone': 'z1' } });
    answers.set('/plugins/two/csi.sock', { nodeId: 'n-2', maxVolumesPerNode: 0, accessibleTopology: {} });
    answers.set('/plugins/three/csi.sock', { nodeId: 'n-3', maxVolumesPerNode: 0, accessibleTopology: { 'topology.test/rack': 'r1' } });

    csi.handler.validatePlugin('one.csi.test', '/plugins/one/csi.sock', ['1.0.0']);
    await csi.handler.registerPlugin('one.csi.test', '/plugins/one/csi.sock', ['1.0.0'], signal);
    await csi.handler.registerPlugin('two.csi.test', '/plugins/two/csi.sock', ['1.0.0'], signal);
    expect(await nodeIds()).toEqual({ 'one.csi.test': 'n-1', 'two.csi.test': 'n-2' });
    expect((await api.getNode(NODE)).metadata.labels).toMatchObject({ 'topology.test/zone': 'z1', 'topology.test/rack': 'r9' });
    expect((await api.getCSINode(NODE)).spec.drivers).toEqual([
      { name: 'one.csi.test', nodeID: 'n-1', topologyKeys: ['topology.test/zone'], allocatable: { count: 16 } },
      { name: 'two.csi.test', nodeID: 'n-2', topologyKeys: null },
    ]);
    expect(drivers.names()).toEqual(['one.csi.test', 'two.csi.test']);

    await expect(csi.handler.registerPlugin('three.csi.test', '/plugins/three/csi.sock', ['1.0.0'], signal)).rejects.toThrow(
      'error updating Node object with CSI driver node info: error updating node: timed out waiting for the condition; ' +
        'caused by: detected topology value collision: driver reported "topology.test/rack":"r1" but existing label is "topology.test/rack":"r9"',
    );
    expect(drivers.names()).toEqual(['one.csi.test', 'two.csi.test']);
    expect(await nodeIds()).toEqual({ 'one.csi.test': 'n-1', 'two.csi.test': 'n-2' });

    await csi.handler.deRegisterPlugin('one.csi.test', '/plugins/one/csi.sock');
    expect(drivers.names()).toEqual(['two.csi.test']);
    expect(await nodeIds()).toEqual({ 'two.csi.test': 'n-2' });
    expect((await api.getCSINode(NODE)).spec.drivers?.map((d) => d.name)).toEqual(['two.csi.test']);
    expect((await api.getNode(NODE)).metadata.labels?.['topology.test/zone']).toBe('z1');
    await csi.handler.deRegisterPlugin('two.csi.test', '/plugins/two/csi.sock');
    expect((await api.getNode(NODE)).metadata.annotations?.[NODE_ID_ANNOTATION]).toBeUndefined();
  });
});
