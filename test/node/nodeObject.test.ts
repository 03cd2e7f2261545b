/** The Node and its status (pkg/kubelet/nodestatus/setters.go, kubelet_node_status.go), from tables. */
import { describe, expect, it } from 'vitest';
import type { NodeCondition } from '../../src/api/cluster.ts';
import { testMachine } from '../support/machine.ts';
import {
  type MachineInfo,
  type NodeHealth,
  type NodeSettings,
  allocatable,
  capacity,
  conditionEvents,
  initialNode,
  nodeConditions,
  nodeImages,
  nodeSettings,
  nodeStatus,
  reconcilePatch,
  shouldWriteStatus,
  statusChanged,
} from '../../src/node/nodeObject.ts';

const machine: MachineInfo = testMachine({ hugepages: { 'hugepages-2Mi': 0 } });
const settings: NodeSettings = {
  name: 'n1',
  extraLabels: { team: 'a' },
  taints: [{ key: 'dedicated', value: 'infra', effect: 'NoSchedule' }],
  maxPods: 110,
  port: 10250,
  kubeletVersion: 'v1.37.0-statelet.0.1.0',
  addresses: [{ type: 'InternalIP', address: '10.0.0.5' }],
  reserved: { cpu: '500m', memory: '1Gi', 'ephemeral-storage': '1Gi' },
  hardEviction: { memory: '100Mi', nodefs: '10%' },
};
const healthy: NodeHealth = { runtimeVersion: 'containerd://1.6.20', notReady: [], pressure: [] };
const T1 = '2026-11-24T10:00:00Z';
const T2 = '2026-11-24T10:00:10Z';

describe('the node settings, from the agent', () => {
  it('sums --system-reserved and --kube-reserved per resource, lists --node-ip then the hostname', () => {
    const config = {
      nodeName: 'n1',
      nodeLabels: { team: 'a' },
      registerWithTaints: settings.taints,
      maxPods: 110,
      port: 10250,
      nodeIp: '10.0.0.5,fd00::5',
      systemReserved: { cpu: '250m', memory: '512Mi' },
      kubeReserved: { cpu: '250m', memory: '512Mi', 'ephemeral-storage': '1Gi' },
      evictionHard: { 'memory.available': '100Mi', 'nodefs.available': '10%', 'imagefs.available': '15%' },
    };
    const made = nodeSettings(config, 'v1.37.0-statelet.0.1.0');
    expect(nodeSettings({ ...config, cloudProvider: 'external', providerId: 'p-1' }, 'v')).toMatchObject({ externalCloudProvider: true, providerId: 'p-1' });
    expect(made).toMatchObject({ ...settings, reserved: expect.any(Object), addresses: [{ type: 'InternalIP', address: '10.0.0.5' }, { type: 'InternalIP', address: 'fd00::5' }, { type: 'Hostname', address: 'n1' }] });
    expect(Object.fromEntries(Object.entries(made.reserved).map(([k, v]) => [k, Number(v)]))).toEqual({ cpu: 0.5, memory: 2 ** 30, 'ephemeral-storage': 2 ** 30 });
    expect(nodeSettings({ ...config, nodeIp: undefined, systemReserved: {}, kubeReserved: {} }, 'v').addresses).toEqual([{ type: 'Hostname', address: 'n1' }]);
  });
});

describe('capacity and allocatable', () => {
  it('reports the machine, and holds back the reservations and the hard eviction thresholds', () => {
    expect(capacity(machine, 110)).toEqual({ cpu: '4', memory: '8388608Ki', pods: '110', 'ephemeral-storage': '104857600Ki', 'hugepages-2Mi': '0' });
    const alloc = allocatable(machine, 110, settings.reserved, settings.hardEviction);
    expect(alloc.cpu).toBe('3500m');
    // 8Gi − 1Gi reserved − 100Mi eviction threshold
    expect(alloc.memory).toBe(`${8 * 2 ** 20 - 2 ** 20 - 100 * 1024}Ki`);
    // 90% of 100Gi (nodefs.available<10%) − 1Gi reserved, in bytes
    expect(alloc['ephemeral-storage']).toBe(String(Math.floor(100 * 2 ** 30 * 0.9 - 2 ** 30)));
  });

  it('never goes below zero', () => {
    expect(allocatable(machine, 110, { cpu: '8', memory: '64Gi' }, { memory: '100Mi', nodefs: '10%' })).toMatchObject({ cpu: '0', memory: '0Ki' });
  });
});

describe('conditions', () => {
  it('lists the pressure conditions, then Ready, with the kubelet reasons', () => {
    const conditions = nodeConditions(healthy, [], T1);
    expect(conditions.map((c) => [c.type, c.status, c.reason])).toEqual([
      ['MemoryPressure', 'False', 'KubeletHasSufficientMemory'],
      ['DiskPressure', 'False', 'KubeletHasNoDiskPressure'],
      ['PIDPressure', 'False', 'KubeletHasSufficientPID'],
      ['Ready', 'True', 'KubeletReady'],
    ]);
    expect(conditions[3]!.message).toBe('kubelet is posting ready status');
  });

  it.each([
    [['container runtime is down'], 'container runtime is down'],
    [['container runtime is down', 'PLEG is not healthy: pleg has yet to be successful'], 'container runtime is down,PLEG is not healthy: pleg has yet to be successful'],
  ])('is NotReady with the reasons joined: %j', (notReady, message) => {
    const ready = nodeConditions({ ...healthy, notReady }, [], T1).at(-1)!;
    expect(ready).toMatchObject({ type: 'Ready', status: 'False', reason: 'KubeletNotReady', message });
  });

  it('keeps lastTransitionTime while the status holds, moves it when the status flips, and refreshes every heartbeat', () => {
    const first = nodeConditions(healthy, [], T1);
    const same = nodeConditions(healthy, first, T2);
    expect(same.every((c) => c.lastTransitionTime === T1 && c.lastHeartbeatTime === T2)).toBe(true);
    const flipped = nodeConditions({ ...healthy, notReady: ['container runtime is down'] }, first, T2);
    const ready = flipped.find((c) => c.type === 'Ready') as NodeCondition;
    expect(ready.lastTransitionTime).toBe(T2);
    expect(flipped.find((c) => c.type === 'MemoryPressure')!.lastTransitionTime).toBe(T1);
  });
});

describe('condition events', () => {
  it('announces every condition of a node that had none', () => {
    expect(conditionEvents(undefined, nodeConditions(healthy, [], T1))).toEqual(['NodeHasSufficientMemory', 'NodeHasNoDiskPressure', 'NodeHasSufficientPID', 'NodeReady']);
  });

  it('announces only what changed', () => {
    const first = nodeConditions(healthy, [], T1);
    expect(conditionEvents(first, nodeConditions(healthy, first, T2))).toEqual([]);
    const down = nodeConditions({ ...healthy, notReady: ['container runtime is down'] }, first, T2);
    expect(conditionEvents(first, down)).toEqual(['NodeNotReady']);
    expect(conditionEvents(down, nodeConditions({ ...healthy, pressure: ['MemoryPressure'] }, down, T2))).toEqual(['NodeHasInsufficientMemory', 'NodeReady']);
  });
});

describe('images', () => {
  it('lists the runtime images largest first, at most 50, with digests then tags', () => {
    const images = Array.from({ length: 60 }, (_, i) => ({ repoTags: [`img:${i}`], repoDigests: [`img@sha256:${i}`], size: i }));
    const listed = nodeImages(images);
    expect(listed).toHaveLength(50);
    expect(listed[0]).toEqual({ names: ['img@sha256:59', 'img:59'], sizeBytes: 59 });
    expect(listed.at(-1)!.sizeBytes).toBe(10);
  });
});

describe('registration', () => {
  it('builds the Node with the kubelet labels, the attach/detach annotation, the taints and a full status', () => {
    const node = initialNode({ machine, settings, health: healthy, images: [] }, T1);
    expect(node.metadata.labels).toEqual({
      team: 'a',
      'kubernetes.io/hostname': 'n1',
      'kubernetes.io/os': 'linux',
      'kubernetes.io/arch': 'amd64',
      'beta.kubernetes.io/os': 'linux',
      'beta.kubernetes.io/arch': 'amd64',
    });
    expect(node.metadata.annotations).toEqual({ 'volumes.kubernetes.io/controller-managed-attach-detach': 'true' });
    expect(node.spec?.taints).toEqual(settings.taints);
    expect(node.status?.nodeInfo).toMatchObject({ containerRuntimeVersion: 'containerd://1.6.20', kubeletVersion: 'v1.37.0-statelet.0.1.0', kubeProxyVersion: '' });
    expect(node.status?.daemonEndpoints).toEqual({ kubeletEndpoint: { Port: 10250 } });
  });

  it('registers with no provider ID and no cloud taint by default', () => {
    const node = initialNode({ machine, settings, health: healthy, images: [] }, T1);
    expect(node.spec).toEqual({ taints: settings.taints });
  });

  it('with --cloud-provider=external, adds the uninitialized taint after the asked ones and the provided-node-ip annotation (kubelet_node_status.go initialNode)', () => {
    const external = { ...settings, externalCloudProvider: true, providerId: 'aws:///us-east-1a/i-0abc' };
    const node = initialNode({ machine, settings: external, health: healthy, images: [] }, T1);
    expect(node.spec).toEqual({
      taints: [...settings.taints, { key: 'node.cloudprovider.kubernetes.io/uninitialized', value: 'true', effect: 'NoSchedule' }],
      providerID: 'aws:///us-east-1a/i-0abc',
    });
    expect(node.metadata.annotations).toEqual({ 'volumes.kubernetes.io/controller-managed-attach-detach': 'true', 'alpha.kubernetes.io/provided-node-ip': '10.0.0.5' });
    expect(initialNode({ machine, settings: { ...settings, providerId: 'p-1' }, health: healthy, images: [] }, T1).spec).toEqual({ taints: settings.taints, providerID: 'p-1' });
  });

  it("keeps the cloud controller manager's addresses with an external provider, and writes its own otherwise (setters.go NodeAddress)", () => {
    const ccm = [{ type: 'InternalIP' as const, address: '172.16.0.9' }, { type: 'ExternalIP' as const, address: '203.0.113.9' }];
    const inputs = { machine, settings: { ...settings, externalCloudProvider: true }, health: healthy, images: [] };
    expect(nodeStatus(inputs, { addresses: ccm }, T2).addresses).toEqual(ccm);
    expect(nodeStatus(inputs, { addresses: [] }, T2).addresses).toEqual(settings.addresses);
    expect(nodeStatus({ ...inputs, settings }, { addresses: ccm }, T2).addresses).toEqual(settings.addresses);
  });

  it('reconciles an existing Node: its own labels and the annotation back, nothing when they agree', () => {
    const wanted = initialNode({ machine, settings, health: healthy, images: [] }, T1);
    expect(reconcilePatch(wanted, wanted)).toBeNull();
    const drifted = { ...wanted, metadata: { ...wanted.metadata, labels: { ...wanted.metadata.labels, 'kubernetes.io/os': 'windows', other: 'x' }, annotations: {} } };
    expect(reconcilePatch(drifted, wanted)).toEqual({
      metadata: { labels: { 'kubernetes.io/os': 'linux' }, annotations: { 'volumes.kubernetes.io/controller-managed-attach-detach': 'true' } },
    });
  });
});

describe('features', () => {
  it.each([
    ['a runtime that reports none (containerd 1.6)', undefined, undefined],
    ['a runtime without Strict supplemental groups', { supplementalGroupsPolicy: false }, { supplementalGroupsPolicy: false }],
    ['a runtime with it (sim://, containerd 2)', { supplementalGroupsPolicy: true }, { supplementalGroupsPolicy: true }],
  ])('reports in status.features what %s says', (_name, runtimeFeatures, features) => {
    const status = nodeStatus({ machine, settings, health: { ...healthy, ...(runtimeFeatures ? { runtimeFeatures } : {}) }, images: [] }, undefined, T1);
    expect(status.features).toEqual(features);
    expect('features' in status).toBe(features !== undefined);
  });
});

describe('runtime handlers (setters.go RuntimeHandlers)', () => {
  const handler = (name: string, userNamespaces: boolean) => ({ name, features: { recursiveReadOnlyMounts: false, userNamespaces } });
  it.each([
    ['a runtime that reports none (containerd 1.6)', undefined, undefined],
    ['an empty list', [], undefined],
    ['handlers (sim://, containerd 2)', [handler('', true), handler('kata', false)], [handler('', true), handler('kata', false)]],
  ])('reports in status.runtimeHandlers what %s says', (_name, runtimeHandlers, reported) => {
    const status = nodeStatus({ machine, settings, health: { ...healthy, ...(runtimeHandlers ? { runtimeHandlers } : {}) }, images: [] }, undefined, T1);
    expect(status.runtimeHandlers).toEqual(reported);
    expect('runtimeHandlers' in status).toBe(reported !== undefined);
  });
});

describe('when to write', () => {
  const inputs = { machine, settings, health: healthy, images: [] };
  it('ignores heartbeat times but not anything else', () => {
    const before = nodeStatus(inputs, undefined, T1);
    expect(statusChanged(before, nodeStatus(inputs, before, T2))).toBe(false);
    expect(statusChanged(before, nodeStatus({ ...inputs, health: { ...healthy, notReady: ['x'] } }, before, T2))).toBe(true);
    expect(statusChanged(before, nodeStatus({ ...inputs, images: [{ repoTags: ['a:1'], repoDigests: [], size: 1 }] }, before, T2))).toBe(true);
    expect(statusChanged(undefined, before)).toBe(true);
  });

  it.each([
    [true, 0, 1_000, true],
    [false, null, 1_000, true],
    [false, 0, 299_999, false],
    [false, 0, 300_000, true],
  ])('changed=%s, last write at %s, now %s → write: %s', (changed, lastWrittenAt, now, write) => {
    expect(shouldWriteStatus(changed, lastWrittenAt, now, 300_000)).toBe(write);
  });
});
