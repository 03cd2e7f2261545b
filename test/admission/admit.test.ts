/** Pod admission predicates (pkg/kubelet/lifecycle/predicate.go). */
import { describe, expect, it } from 'vitest';
import type { ContainerPort, NodeSelectorTerm, Pod, Toleration } from '../../src/api/types.ts';
import { type NodeInfo, admitPod, nodeForAdmission } from '../../src/admission/admit.ts';
import { initialNode, nodeSettings } from '../../src/node/nodeObject.ts';
import { testMachine } from '../support/machine.ts';
import { agentDefaults } from '../../src/cli/config.ts';
import { podRequests } from '../../src/admission/resources.ts';
import { basePod, ctr, sidecar } from '../support/podFixtures.ts';

const node: NodeInfo = {
  name: 'node-a',
  maxPods: 3,
  labels: { 'kubernetes.io/os': 'linux', 'disktype': 'ssd', 'kubernetes.io/hostname': 'node-a' },
  os: 'linux',
};

function named(name: string, spec: Partial<Pod['spec']> = {}): Pod {
  const p = basePod({ containers: [ctr('main')], ...spec });
  p.metadata = { ...p.metadata, name, uid: `uid-${name}` };
  return p;
}
const withPorts = (name: string, ...ports: ContainerPort[]) => named(name, { containers: [ctr('main', { ports })] });
const reason = (pod: Pod, active: Pod[] = [], n: NodeInfo = node) => {
  const result = admitPod(pod, active, n);
  return result.admit ? 'admit' : result.reason;
};

describe('admitPod', () => {
  it('admits a plain pod', () => {
    expect(admitPod(named('a'), [], node)).toEqual({ admit: true });
  });

  describe('supplementalGroupsPolicy (rejectPodAdmissionBasedOnSupplementalGroupsPolicy)', () => {
    const withPolicy = (policy?: 'Merge' | 'Strict') => named('g', { securityContext: { supplementalGroups: [4000], ...(policy ? { supplementalGroupsPolicy: policy } : {}) } });
    it.each<[string, 'Merge' | 'Strict' | undefined, boolean | undefined, string]>([
      ['Strict where the runtime lacks the feature: refused', 'Strict', false, 'SupplementalGroupsPolicyNotSupported'],
      ['Strict where the runtime has it: admitted', 'Strict', true, 'admit'],
      ['Merge where the runtime lacks it: admitted (what the runtime does anyway)', 'Merge', false, 'admit'],
      ['no policy where the runtime lacks it: admitted', undefined, false, 'admit'],
      ["Strict before the runtime's features are known: not checked", 'Strict', undefined, 'admit'],
    ])('%s', (_case, policy, supported, want) => {
      const n: NodeInfo = supported === undefined ? node : { ...node, supplementalGroupsPolicySupported: supported };
      expect(reason(withPolicy(policy), [], n)).toBe(want);
    });

    it("says so in the kubelet's words, after the OS checks and before the node's capacity", () => {
      const lacking = { ...node, supplementalGroupsPolicySupported: false };
      expect(admitPod(withPolicy('Strict'), [named('x'), named('y'), named('z')], lacking)).toEqual({
        admit: false,
        reason: 'SupplementalGroupsPolicyNotSupported',
        message: 'SupplementalGroupsPolicy=Strict is not supported in this node',
      });
      const windows = named('w', { os: { name: 'windows' }, securityContext: { supplementalGroupsPolicy: 'Strict' } } as Partial<Pod['spec']>);
      expect(reason(windows, [], lacking)).toBe('PodOSNotSupported');
    });
  });

  describe('sysctls', () => {
    const withSysctls = (...names: string[]) => named('s', { securityContext: { sysctls: names.map((name) => ({ name, value: '1' })) } });
    it('admits safe sysctls and those --allowed-unsafe-sysctls names; refuses the rest with SysctlForbidden, before anything else', () => {
      expect(reason(withSysctls('net.ipv4.tcp_syncookies'))).toBe('admit');
      expect(admitPod(withSysctls('kernel.msgmax'), [named('x'), named('y'), named('z')], node)).toEqual({
        admit: false,
        reason: 'SysctlForbidden',
        message: 'forbidden sysctl: "kernel.msgmax" not allowlisted',
      });
      expect(reason(withSysctls('kernel.msgmax'), [], { ...node, allowedUnsafeSysctls: ['kernel.msg*'] })).toBe('admit');
    });
  });

  describe('AppArmor', () => {
    const withProfile = (type: 'RuntimeDefault' | 'Unconfined' | 'Localhost') =>
      named('a', { containers: [ctr('main', { securityContext: { appArmorProfile: type === 'Localhost' ? { type, localhostProfile: 'p' } : { type } } })] });
    const noAppArmor = { ...node, appArmorEnabled: false };
    it('refuses a pod that needs a profile on a host without AppArmor, last, with the kubelet\'s words', () => {
      expect(admitPod(withProfile('RuntimeDefault'), [], noAppArmor)).toEqual({ admit: false, reason: 'AppArmor', message: 'Cannot enforce AppArmor: AppArmor is not enabled on the host' });
      expect(reason(withProfile('Localhost'), [], noAppArmor)).toBe('AppArmor');
      const annotated = named('b');
      annotated.metadata.annotations = { 'container.apparmor.security.beta.kubernetes.io/main': 'runtime/default' };
      expect(reason(annotated, [], noAppArmor)).toBe('AppArmor');
      expect(reason(withProfile('RuntimeDefault'), [named('x'), named('y'), named('z')], noAppArmor)).toBe('OutOfpods');
    });
    it('admits Unconfined anywhere, and any profile where AppArmor is enabled', () => {
      expect(reason(withProfile('Unconfined'), [], noAppArmor)).toBe('admit');
      expect(reason(withProfile('RuntimeDefault'), [], { ...node, appArmorEnabled: true })).toBe('admit');
    });
  });

  describe('pod count', () => {
    it('rejects with OutOfpods when the node is full, naming used and capacity', () => {
      const active = [named('x'), named('y'), named('z')];
      const result = admitPod(named('a'), active, node);
      expect(result).toEqual({
        admit: false,
        reason: 'OutOfpods',
        message: "Node didn't have enough resource: pods, requested: 1, used: 3, capacity: 3",
      });
    });

    it('admits the last pod that fits', () => {
      expect(reason(named('a'), [named('x'), named('y')])).toBe('admit');
    });
  });

  describe('node name and selector', () => {
    it('rejects a pod bound to another node with NodeName', () => {
      expect(reason(named('a', { nodeName: 'node-b' }))).toBe('NodeName');
    });

    it('admits a pod bound to this node', () => {
      expect(reason(named('a', { nodeName: 'node-a' }))).toBe('admit');
    });

    it('rejects a nodeSelector the node labels do not satisfy with NodeAffinity', () => {
      expect(reason(named('a', { nodeSelector: { disktype: 'hdd' } }))).toBe('NodeAffinity');
      expect(reason(named('b', { nodeSelector: { zone: 'eu-1' } }))).toBe('NodeAffinity');
    });

    it('admits a nodeSelector the labels satisfy', () => {
      expect(reason(named('a', { nodeSelector: { disktype: 'ssd', 'kubernetes.io/os': 'linux' } }))).toBe('admit');
    });

    it('reports the first failure in kubelet order: resources, node affinity, node name', () => {
      const both = named('a', { nodeName: 'node-b', nodeSelector: { disktype: 'hdd' } });
      expect(reason(both)).toBe('NodeAffinity');
      expect(reason(both, [named('x'), named('y'), named('z')])).toBe('OutOfpods');
    });
  });

  describe('host ports', () => {
    const active = [withPorts('web', { containerPort: 80, hostPort: 8080 })];

    it('rejects the same host port and protocol with NodePorts', () => {
      expect(reason(withPorts('a', { containerPort: 81, hostPort: 8080 }), active)).toBe('NodePorts');
      expect(reason(withPorts('b', { containerPort: 81, hostPort: 8080, protocol: 'TCP' }), active)).toBe('NodePorts');
    });

    it('admits the same port under another protocol', () => {
      expect(reason(withPorts('a', { containerPort: 81, hostPort: 8080, protocol: 'UDP' }), active)).toBe('admit');
    });

    it('admits another port', () => {
      expect(reason(withPorts('a', { containerPort: 80, hostPort: 8081 }), active)).toBe('admit');
    });

    it('0.0.0.0 conflicts with a specific IP, both ways', () => {
      const specific = [withPorts('web', { containerPort: 80, hostPort: 9090, hostIP: '10.0.0.1' })];
      expect(reason(withPorts('a', { containerPort: 80, hostPort: 9090 }), specific)).toBe('NodePorts');
      expect(reason(withPorts('b', { containerPort: 80, hostPort: 8080, hostIP: '10.0.0.1' }), active)).toBe('NodePorts');
      expect(reason(withPorts('c', { containerPort: 80, hostPort: 9090, hostIP: '0.0.0.0' }), specific)).toBe('NodePorts');
    });

    it('two different specific IPs do not conflict; the same one does', () => {
      const specific = [withPorts('web', { containerPort: 80, hostPort: 9090, hostIP: '10.0.0.1' })];
      expect(reason(withPorts('a', { containerPort: 80, hostPort: 9090, hostIP: '10.0.0.2' }), specific)).toBe('admit');
      expect(reason(withPorts('b', { containerPort: 80, hostPort: 9090, hostIP: '10.0.0.1' }), specific)).toBe('NodePorts');
    });

    it('container ports without a host port never conflict', () => {
      const plain = [withPorts('web', { containerPort: 8080 })];
      expect(reason(withPorts('a', { containerPort: 8080 }), plain)).toBe('admit');
    });
  });

  describe('operating system', () => {
    it('rejects a kubernetes.io/os label that does not match the node', () => {
      const p = named('a');
      p.metadata.labels = { 'kubernetes.io/os': 'windows' };
      const result = admitPod(p, [], node);
      expect(result.admit).toBe(false);
      expect(result.admit ? '' : result.reason).toBe('PodOSSelectorNodeLabelDoesNotMatch');
    });

    it('admits a matching os label', () => {
      const p = named('a');
      p.metadata.labels = { 'kubernetes.io/os': 'linux' };
      expect(reason(p)).toBe('admit');
    });

    it('rejects spec.os.name for another OS with PodOSNotSupported', () => {
      expect(reason(named('a', { os: { name: 'windows' } }))).toBe('PodOSNotSupported');
      expect(reason(named('b', { os: { name: 'linux' } }))).toBe('admit');
    });

    it('the OS checks come before resources', () => {
      const p = named('a');
      p.metadata.labels = { 'kubernetes.io/os': 'windows' };
      expect(reason(p, [named('x'), named('y'), named('z')])).toBe('PodOSSelectorNodeLabelDoesNotMatch');
    });
  });

  describe('resources against allocatable', () => {
    const sized: NodeInfo = { ...node, maxPods: 110, allocatable: { cpu: 1200, memory: 2 * 2 ** 30, pods: 110 } };
    const asking = (name: string, requests: Record<string, string | number>) => named(name, { containers: [ctr('main', { resources: { requests } })] });

    it('rejects a pod asking more CPU than is left with OutOfcpu, in millicores', () => {
      const result = admitPod(asking('a', { cpu: '1' }), [asking('x', { cpu: '500m' })], sized);
      expect(result).toEqual({ admit: false, reason: 'OutOfcpu', message: "Node didn't have enough resource: cpu, requested: 1000, used: 500, capacity: 1200" });
    });

    it('rejects memory in bytes with OutOfmemory', () => {
      const result = admitPod(asking('a', { memory: '3Gi' }), [], sized);
      expect(result).toEqual({ admit: false, reason: 'OutOfmemory', message: `Node didn't have enough resource: memory, requested: ${3 * 2 ** 30}, used: 0, capacity: ${2 * 2 ** 30}` });
    });

    it('admits exactly what is left, and pods asking nothing', () => {
      expect(reason(asking('a', { cpu: '700m' }), [asking('x', { cpu: '500m' })], sized)).toBe('admit');
      expect(reason(named('b'), [asking('x', { cpu: '1200m' })], sized)).toBe('admit');
    });

    it('checks cpu before memory', () => {
      expect(reason(asking('a', { cpu: '2', memory: '3Gi' }), [], sized)).toBe('OutOfcpu');
    });

    it('takes the given used amounts over recounting the active pods', () => {
      expect(reason(asking('a', { cpu: '1' }), [], sized)).toBe('admit');
      expect(admitPod(asking('a', { cpu: '1' }), [], sized, { cpu: 300 })).toMatchObject({ admit: false, reason: 'OutOfcpu' });
    });

    it('ignores an extended resource the node does not have, but not hugepages', () => {
      expect(reason(asking('a', { 'example.com/gpu': 1 }), [], sized)).toBe('admit');
      expect(reason(asking('b', { 'example.com/gpu': 2 }), [], { ...sized, allocatable: { ...sized.allocatable, 'example.com/gpu': 1 } })).toBe('OutOfexample.com/gpu');
      expect(reason(asking('c', { 'hugepages-2Mi': '4Mi' }), [], sized)).toBe('OutOfhugepages-2Mi');
    });

    it('without allocatable (no Node known, nor the machine) only the pod count is checked', () => {
      expect(reason(asking('a', { cpu: '64' }))).toBe('admit');
    });
  });

  /**
   * A node without an API server has no Node object: the kubelet admits against the Node it would
   * register (kubelet_getters.go GetNode without a client → kubelet_node_status.go initialNode), its
   * allocatable the machine's capacity less --system-reserved, --kube-reserved and the hard eviction
   * thresholds (nodestatus/setters.go MachineInfo, cm GetNodeAllocatableReservation).
   */
  describe('against the Node the agent would register (a standalone node)', () => {
    const machine = testMachine();
    const local: NodeInfo = { name: 'node-a', maxPods: 110, labels: { 'kubernetes.io/hostname': 'node-a' }, os: 'linux' };
    /** The Node initialNode builds from the machine and the agent's settings (defaults: 100Mi and 10% held back for eviction). */
    const wouldRegister = (reserved: { systemReserved?: Record<string, string>; kubeReserved?: Record<string, string> } = {}) =>
      initialNode(
        {
          machine,
          settings: nodeSettings({ ...agentDefaults(), nodeName: 'node-a', ...reserved }, 'v1.37.0-statelet'),
          health: { runtimeVersion: '', notReady: [], pressure: [] },
          images: [],
        },
        '2026-01-01T00:00:00Z',
      );
    const asking = (requests: Record<string, string | number>) => named('big', { containers: [ctr('main', { resources: { requests } })] });
    const memoryLeft = 8 * 2 ** 30 - 100 * 2 ** 20;

    it.each<[string, Record<string, string | number>, Parameters<typeof wouldRegister>[0], ReturnType<typeof admitPod>]>([
      [
        '100,000 CPUs: OutOfcpu, in millicores against the 4 cores',
        { cpu: '100000' },
        {},
        { admit: false, reason: 'OutOfcpu', message: "Node didn't have enough resource: cpu, requested: 100000000, used: 0, capacity: 4000" },
      ],
      [
        'CPU held back by --system-reserved and --kube-reserved',
        { cpu: '3600m' },
        { systemReserved: { cpu: '250m' }, kubeReserved: { cpu: '250m' } },
        { admit: false, reason: 'OutOfcpu', message: "Node didn't have enough resource: cpu, requested: 3600, used: 0, capacity: 3500" },
      ],
      ['all of the cores', { cpu: '4' }, {}, { admit: true }],
      [
        'all of the memory: the hard eviction threshold is held back',
        { memory: '8Gi' },
        {},
        { admit: false, reason: 'OutOfmemory', message: `Node didn't have enough resource: memory, requested: ${8 * 2 ** 30}, used: 0, capacity: ${memoryLeft}` },
      ],
      ['the memory left above the threshold', { memory: `${memoryLeft / 2 ** 10}Ki` }, {}, { admit: true }],
      [
        'the whole disk: nodefs.available<10% is held back',
        { 'ephemeral-storage': '100Gi' },
        {},
        { admit: false, reason: 'OutOfephemeral-storage', message: `Node didn't have enough resource: ephemeral-storage, requested: ${100 * 2 ** 30}, used: 0, capacity: ${Math.floor(100 * 2 ** 30 * 0.9)}` },
      ],
    ])('%s', (_case, requests, reserved, expected) => {
      expect(admitPod(asking(requests), [], nodeForAdmission(local, wouldRegister(reserved)))).toEqual(expected);
    });

    it('takes the labels and taints of the Node too; without one, the agent\'s own and no resources checked', () => {
      const node = wouldRegister();
      const seen = nodeForAdmission(local, { ...node, spec: { taints: [{ key: 'dedicated', effect: 'NoExecute' }] } });
      expect(seen.labels).toEqual(node.metadata.labels);
      expect(seen.labels['kubernetes.io/os']).toBe('linux');
      expect(seen.taints).toEqual([{ key: 'dedicated', effect: 'NoExecute' }]);
      expect(nodeForAdmission(local, null)).toBe(local);
      expect(admitPod(asking({ cpu: '100000' }), [], nodeForAdmission(local, null))).toEqual({ admit: true });
    });
  });

  describe('node affinity', () => {
    const requiring = (name: string, ...terms: NodeSelectorTerm[]) =>
      named(name, { affinity: { nodeAffinity: { requiredDuringSchedulingIgnoredDuringExecution: { nodeSelectorTerms: terms } } } });
    const cases: [string, NodeSelectorTerm[], string][] = [
      ['In on a label value', [{ matchExpressions: [{ key: 'disktype', operator: 'In', values: ['ssd', 'nvme'] }] }], 'admit'],
      ['In on another value', [{ matchExpressions: [{ key: 'disktype', operator: 'In', values: ['hdd'] }] }], 'NodeAffinity'],
      ['NotIn on a missing label', [{ matchExpressions: [{ key: 'zone', operator: 'NotIn', values: ['a'] }] }], 'admit'],
      ['Exists', [{ matchExpressions: [{ key: 'disktype', operator: 'Exists' }] }], 'admit'],
      ['DoesNotExist on a present label', [{ matchExpressions: [{ key: 'disktype', operator: 'DoesNotExist' }] }], 'NodeAffinity'],
      ['Gt on an integer label', [{ matchExpressions: [{ key: 'cores', operator: 'Gt', values: ['3'] }] }], 'admit'],
      ['Lt on an integer label', [{ matchExpressions: [{ key: 'cores', operator: 'Lt', values: ['3'] }] }], 'NodeAffinity'],
      ['Gt on a non-integer label', [{ matchExpressions: [{ key: 'disktype', operator: 'Gt', values: ['3'] }] }], 'NodeAffinity'],
      ['all expressions of a term must hold', [{ matchExpressions: [{ key: 'disktype', operator: 'Exists' }, { key: 'zone', operator: 'Exists' }] }], 'NodeAffinity'],
      ['any term may match', [{ matchExpressions: [{ key: 'zone', operator: 'Exists' }] }, { matchExpressions: [{ key: 'disktype', operator: 'Exists' }] }], 'admit'],
      ['an empty term matches nothing', [{}], 'NodeAffinity'],
      ['no terms match nothing', [], 'NodeAffinity'],
      ['matchFields on the node name', [{ matchFields: [{ key: 'metadata.name', operator: 'In', values: ['node-a'] }] }], 'admit'],
      ['matchFields on another name', [{ matchFields: [{ key: 'metadata.name', operator: 'In', values: ['node-b'] }] }], 'NodeAffinity'],
    ];
    const labelled: NodeInfo = { ...node, labels: { ...node.labels, cores: '4' } };
    it.each(cases)('%s', (_, terms, expected) => {
      expect(reason(requiring('a', ...terms), [], labelled)).toBe(expected);
    });

    it('nodeSelector and affinity must both match', () => {
      const p = requiring('a', { matchExpressions: [{ key: 'disktype', operator: 'Exists' }] });
      p.spec.nodeSelector = { zone: 'eu-1' };
      expect(reason(p, [], labelled)).toBe('NodeAffinity');
    });
  });

  describe('NoExecute taints', () => {
    const tainted: NodeInfo = {
      ...node,
      taints: [
        { key: 'dedicated', value: 'db', effect: 'NoExecute' },
        { key: 'maintenance', effect: 'NoSchedule' },
      ],
    };
    const tolerating = (name: string, ...tolerations: Toleration[]) => named(name, { tolerations });

    it('rejects a pod that does not tolerate a NoExecute taint with TaintToleration', () => {
      expect(admitPod(named('a'), [], tainted)).toEqual({
        admit: false,
        reason: 'TaintToleration',
        message: "Predicate TaintToleration failed: node(s) had taints that the pod didn't tolerate",
      });
    });

    it.each<[string, Toleration, string]>([
      ['Equal with the value', { key: 'dedicated', operator: 'Equal', value: 'db', effect: 'NoExecute' }, 'admit'],
      ['Equal by default', { key: 'dedicated', value: 'db' }, 'admit'],
      ['Equal with another value', { key: 'dedicated', value: 'web', effect: 'NoExecute' }, 'TaintToleration'],
      ['Exists on the key', { key: 'dedicated', operator: 'Exists' }, 'admit'],
      ['Exists on every key', { operator: 'Exists' }, 'admit'],
      ['another effect', { key: 'dedicated', operator: 'Exists', effect: 'NoSchedule' }, 'TaintToleration'],
    ])('a toleration %s', (_, toleration, expected) => {
      expect(reason(tolerating('a', toleration), [], tainted)).toBe(expected);
    });

    it('NoSchedule taints are the scheduler’s business, not admission’s', () => {
      expect(reason(named('a'), [], { ...node, taints: [{ key: 'maintenance', effect: 'NoSchedule' }] })).toBe('admit');
    });

    it('static pods are not held back by taints', () => {
      const p = named('a');
      p.metadata.annotations = { 'kubernetes.io/config.source': 'file' };
      expect(reason(p, [], tainted)).toBe('admit');
    });
  });
});

describe('podRequests', () => {
  const req = (cpu: string, memory?: string) => ({ resources: { requests: { cpu, ...(memory ? { memory } : {}) } } });

  it.each<[string, Partial<Pod['spec']>, Record<string, number>]>([
    ['sums the regular containers', { containers: [ctr('a', req('100m')), ctr('b', req('250m'))] }, { cpu: 350 }],
    ['an init container larger than the rest sets the request', { initContainers: [ctr('init', req('2'))], containers: [ctr('a', req('500m'))] }, { cpu: 2000 }],
    ['a smaller init container does not add', { initContainers: [ctr('init', req('100m'))], containers: [ctr('a', req('500m'))] }, { cpu: 500 }],
    ['sidecars run next to the containers', { initContainers: [sidecar('log', req('200m'))], containers: [ctr('a', req('500m'))] }, { cpu: 700 }],
    [
      'an init container counts the sidecars started before it only',
      { initContainers: [ctr('first', req('1')), sidecar('log', req('300m')), ctr('second', req('1'))], containers: [ctr('a', req('100m'))] },
      { cpu: 1300 },
    ],
    ['overhead is added', { containers: [ctr('a', req('100m'))], overhead: { cpu: '50m', memory: '10Mi' } }, { cpu: 150, memory: 10 * 2 ** 20 }],
    ['pod-level requests replace the containers’ sum', { containers: [ctr('a', req('100m', '1Gi'))], resources: { requests: { cpu: '2' } } }, { cpu: 2000, memory: 2 ** 30 }],
    ['fractions round up', { containers: [ctr('a', req('0.0001'))] }, { cpu: 1 }],
  ])('%s', (_, spec, expected) => {
    expect(podRequests(named('p', spec))).toEqual(expected);
  });
});
