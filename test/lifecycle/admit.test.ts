/** Pod admission predicates (pkg/kubelet/lifecycle/predicate.go). */
import { describe, expect, it } from 'vitest';
import type { ContainerPort, Pod } from '../../src/api/types.ts';
import { type NodeInfo, admitPod } from '../../src/lifecycle/admit.ts';
import { basePod, ctr } from '../support/podFixtures.ts';

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
});
