/**
 * Admission under node pressure (src/admission/admit.ts; pkg/kubelet/eviction/eviction_manager.go
 * Admit): with no pressure every pod passes this handler; memory pressure alone refuses only
 * BestEffort pods that do not tolerate the memory-pressure taint; any other pressure refuses every
 * pod that is not critical. Refusals read `Evicted` with Go's %v of the condition list.
 */
import { describe, expect, it } from 'vitest';
import type { NodePressureCondition, Pod, Toleration } from '../../src/api/types.ts';
import { type NodeInfo, admitPod } from '../../src/admission/admit.ts';
import { basePod, ctr } from '../support/podFixtures.ts';

const node: NodeInfo = {
  name: 'node-a',
  maxPods: 110,
  labels: { 'kubernetes.io/os': 'linux', 'kubernetes.io/hostname': 'node-a' },
  os: 'linux',
};

const under = (...pressure: NodePressureCondition[]): NodeInfo => ({ ...node, pressure });

function named(name: string, spec: Partial<Pod['spec']> = {}, annotations?: Record<string, string>): Pod {
  const p = basePod({ containers: [ctr('main')], ...spec });
  p.metadata = { ...p.metadata, name, uid: `uid-${name}`, ...(annotations ? { annotations } : {}) };
  return p;
}

const memoryPressureToleration: Toleration = { key: 'node.kubernetes.io/memory-pressure', operator: 'Exists', effect: 'NoSchedule' };

const bestEffort = named('besteffort');
const burstable = named('burstable', { containers: [ctr('main', { resources: { requests: { memory: '64Mi' } } })] });
const guaranteed = named('guaranteed', { containers: [ctr('main', { resources: { requests: { cpu: '100m', memory: '64Mi' }, limits: { cpu: '100m', memory: '64Mi' } } })] });
const tolerating = named('tolerating', { tolerations: [memoryPressureToleration] });
const staticPod = named('static', {}, { 'kubernetes.io/config.source': 'file' });
const mirrorPod = named('mirror', {}, { 'kubernetes.io/config.source': 'api', 'kubernetes.io/config.mirror': 'hash' });
const systemCritical = named('critical', { priority: 2_000_000_000 });

const rejected = (message: string) => ({ admit: false, reason: 'Evicted', message });

describe('admitPod under node pressure', () => {
  it.each<[string, Pod, NodeInfo]>([
    ['no pressure field: a BestEffort pod', bestEffort, node],
    ['no pressure: a BestEffort pod', bestEffort, under()],
    ['memory pressure: a Burstable pod', burstable, under('MemoryPressure')],
    ['memory pressure: a Guaranteed pod', guaranteed, under('MemoryPressure')],
    ['memory pressure: a BestEffort pod tolerating node.kubernetes.io/memory-pressure:NoSchedule', tolerating, under('MemoryPressure')],
    ['memory pressure: a BestEffort pod tolerating every taint (empty key, Exists)', named('all', { tolerations: [{ operator: 'Exists' }] }), under('MemoryPressure')],
    ['memory pressure: a BestEffort pod tolerating the key with any effect', named('anyeffect', { tolerations: [{ key: 'node.kubernetes.io/memory-pressure', operator: 'Exists' }] }), under('MemoryPressure')],
    ['memory and disk pressure: a static pod', staticPod, under('MemoryPressure', 'DiskPressure')],
    ['disk pressure: a static pod', staticPod, under('DiskPressure')],
    ['PID pressure: a static pod', staticPod, under('PIDPressure')],
    ['disk pressure: a mirror pod', mirrorPod, under('DiskPressure')],
    ['disk pressure: a system-critical pod', systemCritical, under('DiskPressure')],
  ])('admits %s', (_case, pod, n) => {
    expect(admitPod(pod, [], n)).toEqual({ admit: true });
  });

  it.each<[string, Pod, NodeInfo, string]>([
    ['memory pressure: a BestEffort pod', bestEffort, under('MemoryPressure'), 'The node had condition: [MemoryPressure]. '],
    [
      'memory pressure: a BestEffort pod tolerating only the disk-pressure taint',
      named('disk-tolerating', { tolerations: [{ key: 'node.kubernetes.io/disk-pressure', operator: 'Exists', effect: 'NoSchedule' }] }),
      under('MemoryPressure'),
      'The node had condition: [MemoryPressure]. ',
    ],
    [
      'memory pressure: a BestEffort pod tolerating the memory-pressure taint for NoExecute only',
      named('noexecute', { tolerations: [{ key: 'node.kubernetes.io/memory-pressure', operator: 'Exists', effect: 'NoExecute' }] }),
      under('MemoryPressure'),
      'The node had condition: [MemoryPressure]. ',
    ],
    ['disk pressure: a Guaranteed pod', guaranteed, under('DiskPressure'), 'The node had condition: [DiskPressure]. '],
    ['disk pressure: a Burstable pod', burstable, under('DiskPressure'), 'The node had condition: [DiskPressure]. '],
    ['disk pressure: a BestEffort pod tolerating memory pressure', tolerating, under('DiskPressure'), 'The node had condition: [DiskPressure]. '],
    ['PID pressure: a Guaranteed pod', guaranteed, under('PIDPressure'), 'The node had condition: [PIDPressure]. '],
    ['memory and disk pressure: a Guaranteed pod', guaranteed, under('MemoryPressure', 'DiskPressure'), 'The node had condition: [MemoryPressure DiskPressure]. '],
    ['memory and disk pressure: a BestEffort pod', bestEffort, under('MemoryPressure', 'DiskPressure'), 'The node had condition: [MemoryPressure DiskPressure]. '],
    [
      'memory and PID pressure: a tolerating BestEffort pod',
      tolerating,
      under('MemoryPressure', 'PIDPressure'),
      'The node had condition: [MemoryPressure PIDPressure]. ',
    ],
    ['all three: a Burstable pod', burstable, under('MemoryPressure', 'DiskPressure', 'PIDPressure'), 'The node had condition: [MemoryPressure DiskPressure PIDPressure]. '],
    ['disk pressure: a pod of priority just below system-critical', named('high', { priority: 1_999_999_999 }), under('DiskPressure'), 'The node had condition: [DiskPressure]. '],
  ])('rejects %s', (_case, pod, n, message) => {
    expect(admitPod(pod, [], n)).toEqual(rejected(message));
  });

  it('is the first handler: its refusal comes before the pod count and the other predicates', () => {
    const full: NodeInfo = { ...under('DiskPressure'), maxPods: 1 };
    expect(admitPod(named('late', { nodeName: 'node-b' }), [named('running')], full)).toEqual(rejected('The node had condition: [DiskPressure]. '));
  });

  it('lets a pod it admits go on to the other predicates', () => {
    const full: NodeInfo = { ...under('MemoryPressure'), maxPods: 1 };
    expect(admitPod(guaranteed, [named('running')], full)).toMatchObject({ admit: false, reason: 'OutOfpods' });
    const staticElsewhere = named('static-elsewhere', { nodeName: 'node-b' }, { 'kubernetes.io/config.source': 'file' });
    expect(admitPod(staticElsewhere, [], under('DiskPressure'))).toMatchObject({ admit: false, reason: 'NodeName' });
  });
});
