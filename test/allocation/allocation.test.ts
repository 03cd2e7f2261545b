/**
 * The node's allocation of resources, as tables (pkg/kubelet/allocation/allocation_manager_test.go
 * TestHandlePodResourcesResize, TestSortPendingResizes are the models): the decision on a resize
 * (admitted, Deferred with the admit handler's message, unchanged), the pod as its worker runs it,
 * which changes count as a resize, the retry order; and the manager's records, kept across a
 * restart by its checkpoints.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import type { NodeInfo } from '../../src/admission/admit.ts';
import { decideResize, isResizeIncreasingRequests, resizeRequested, resourceInfoForPod, sortPendingResizes, updatePodFromAllocation } from '../../src/allocation/allocation.ts';
import { LAZY_WRITE_MS, fileCheckpoint, memoryCheckpoint } from '../../src/allocation/checkpoint.ts';
import { AllocationManager, INITIAL_RETRY_DELAY_MS } from '../../src/allocation/manager.ts';
import type { Container, Pod } from '../../src/api/types.ts';
import { silentLogger } from '../../src/log.ts';
import { ManualClock } from '../support/manualClock.ts';
import { container, makePod } from '../support/pods.ts';

const node: NodeInfo = { name: 'node-a', maxPods: 110, labels: {}, os: 'linux', allocatable: { cpu: 2000, memory: 4 * 2 ** 30, pods: 110 } };

function pod(name: string, resources: Container['resources'], extra: Partial<Pod['spec']> = {}): Pod {
  return makePod(name, { containers: [container('app', { resources })], ...extra });
}

describe('decideResize (handlePodResourcesResize, canAdmitPod with ResizeOperation)', () => {
  const admitted = pod('p', { requests: { cpu: '500m', memory: '1Gi' } });
  const allocation = resourceInfoForPod(admitted);
  const other = pod('other', { requests: { cpu: '1', memory: '1Gi' } });
  it.each([
    ['the desired resources are the allocated ones', admitted, [other], { kind: 'unchanged' }],
    ['written differently but equal (0.5 and 500m)', pod('p', { requests: { cpu: '0.5', memory: '1024Mi' } }), [other], { kind: 'unchanged' }],
    ['a resize that fits beside the others is allocated', pod('p', { requests: { cpu: '1', memory: '1Gi' } }), [other], { kind: 'allocate' }],
    ['a shrink always fits', pod('p', { requests: { cpu: '100m', memory: '1Gi' } }), [other, pod('x', { requests: { cpu: '900m' } })], { kind: 'allocate' }],
    [
      'one that does not fit beside the others now: the predicate handler refuses (OutOfcpu, shown as Deferred)',
      pod('p', { requests: { cpu: '1500m', memory: '1Gi' } }),
      [other],
      { kind: 'pending', reason: 'OutOfcpu', message: "Node didn't have enough resource: cpu, requested: 1500, used: 1000, capacity: 2000" },
    ],
    [
      'memory the same way',
      pod('p', { requests: { cpu: '500m', memory: '4Gi' } }),
      [other],
      { kind: 'pending', reason: 'OutOfmemory', message: `Node didn't have enough resource: memory, requested: ${4 * 2 ** 30}, used: ${2 ** 30}, capacity: ${4 * 2 ** 30}` },
    ],
    ['the pod itself is not counted among the others', pod('p', { requests: { cpu: '2', memory: '1Gi' } }), [admitted], { kind: 'allocate' }],
  ] as const)('%s', (_name, desired, others, want) => {
    expect(decideResize(desired, allocation, others, node)).toEqual(want);
  });

  it('refuses under pressure as admission does: the eviction manager\'s handler comes first', () => {
    const desired = pod('p', { requests: { cpu: '1', memory: '1Gi' } });
    expect(decideResize(desired, allocation, [], { ...node, pressure: ['DiskPressure'] })).toEqual({ kind: 'pending', reason: 'Evicted', message: 'The node had condition: [DiskPressure]. ' });
  });
});

describe('updatePodFromAllocation', () => {
  const desired = makePod('p', {
    initContainers: [container('side', { restartPolicy: 'Always', resources: { requests: { cpu: '300m' } } })],
    containers: [container('a', { resources: { requests: { cpu: '200m' }, limits: { memory: '1Gi' } } }), container('b')],
  });
  it('puts each recorded container\'s allocated resources in place of the spec\'s', () => {
    const { pod: allocated, updated } = updatePodFromAllocation(desired, { side: { requests: { cpu: '100m' } }, a: { requests: { cpu: '100m' }, limits: { memory: '1Gi' } }, b: {} });
    expect(updated).toBe(true);
    expect(allocated.spec.initContainers?.[0]?.resources).toEqual({ requests: { cpu: '100m' } });
    expect(allocated.spec.containers[0]?.resources).toEqual({ requests: { cpu: '100m' }, limits: { memory: '1Gi' } });
    expect(allocated.spec.containers[1]).toBe(desired.spec.containers[1]);
    expect(desired.spec.containers[0]?.resources?.requests?.['cpu']).toBe('200m');
  });
  it('gives the same pod back when nothing differs, or there is no record', () => {
    expect(updatePodFromAllocation(desired, resourceInfoForPod(desired))).toEqual({ pod: desired, updated: false });
    expect(updatePodFromAllocation(desired, undefined)).toEqual({ pod: desired, updated: false });
  });
});

describe('resizeRequested (recordContainerResizeOperations)', () => {
  const base = pod('p', { requests: { cpu: '100m', memory: '64Mi' }, limits: { cpu: '200m' } });
  it.each([
    ['no change', base, false],
    ['a CPU request', pod('p', { requests: { cpu: '150m', memory: '64Mi' }, limits: { cpu: '200m' } }), true],
    ['a memory limit added', pod('p', { requests: { cpu: '100m', memory: '64Mi' }, limits: { cpu: '200m', memory: '1Gi' } }), true],
    ['an equal value written differently', pod('p', { requests: { cpu: '0.1', memory: '64Mi' }, limits: { cpu: '200m' } }), false],
    ['another resource only (ephemeral storage)', pod('p', { requests: { cpu: '100m', memory: '64Mi', 'ephemeral-storage': '1Gi' }, limits: { cpu: '200m' } }), false],
  ] as const)('%s', (_name, next, want) => {
    expect(resizeRequested(base, next)).toBe(want);
  });
});

describe('sortPendingResizes', () => {
  it('retries those that do not grow first, then by priority, Guaranteed first, then the longest pending', () => {
    const order = sortPendingResizes([
      { uid: 'grow-low', increasing: true, priority: 0, guaranteed: false, pendingSince: '2026-01-01T00:00:01Z' },
      { uid: 'grow-high', increasing: true, priority: 10, guaranteed: false },
      { uid: 'grow-guaranteed', increasing: true, priority: 0, guaranteed: true },
      { uid: 'shrink', increasing: false, priority: 0, guaranteed: false },
      { uid: 'grow-older', increasing: true, priority: 0, guaranteed: false, pendingSince: '2026-01-01T00:00:00Z' },
      { uid: 'grow-new', increasing: true, priority: 0, guaranteed: false },
    ]);
    expect(order).toEqual(['shrink', 'grow-high', 'grow-guaranteed', 'grow-older', 'grow-low', 'grow-new']);
  });
  it('tells a growing resize from a shrinking one by the pod\'s summed requests', () => {
    const allocated = resourceInfoForPod(pod('p', { requests: { cpu: '500m', memory: '1Gi' } }));
    expect(isResizeIncreasingRequests(pod('p', { requests: { cpu: '600m', memory: '512Mi' } }), allocated)).toBe(true);
    expect(isResizeIncreasingRequests(pod('p', { requests: { cpu: '400m', memory: '1Gi' } }), allocated)).toBe(false);
  });
});

describe('AllocationManager', () => {
  const now = () => Date.parse('2026-01-01T00:00:00Z');
  const manager = (allocated = memoryCheckpoint(), actuated = memoryCheckpoint()) => new AllocationManager({ allocated, actuated, now });

  it('keeps allocations and actuated resources in its checkpoints, and reads them back after a restart', () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'statelet-alloc-'));
    try {
      const first = new AllocationManager({ allocated: fileCheckpoint(dir, 'allocated_pods_state', silentLogger), actuated: fileCheckpoint(dir, 'actuated_pods_state', silentLogger), now });
      const p = pod('p', { requests: { cpu: '100m' } });
      first.setAllocated(p);
      first.initializeActuated(p);
      first.setActuated('uid-p', 'app', { requests: { cpu: '50m' } });
      first.flush();
      expect(JSON.parse(readFileSync(path.join(dir, 'allocated_pods_state'), 'utf8'))).toEqual({ version: 1, pods: { 'uid-p': { app: { requests: { cpu: '100m' } } } } });
      const second = new AllocationManager({ allocated: fileCheckpoint(dir, 'allocated_pods_state', silentLogger), actuated: fileCheckpoint(dir, 'actuated_pods_state', silentLogger), now });
      expect(second.has('uid-p')).toBe(true);
      expect(second.allocatedPod(pod('p', { requests: { cpu: '900m' } })).spec.containers[0]?.resources).toEqual({ requests: { cpu: '100m' } });
      expect(second.actuatedOf('uid-p')).toEqual({ app: { requests: { cpu: '50m' } } });
      // A corrupt checkpoint starts empty, as the kubelet's.
      writeFileSync(path.join(dir, 'allocated_pods_state'), '{not json');
      const third = new AllocationManager({ allocated: fileCheckpoint(dir, 'allocated_pods_state', silentLogger), actuated: memoryCheckpoint(), now });
      expect(third.has('uid-p')).toBe(false);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('writes an admission at the end of the turn, and lets removals wait to share one write; stopping writes what waits', async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'statelet-alloc-'));
    const file = path.join(dir, 'allocated_pods_state');
    const written = () => Object.keys((JSON.parse(readFileSync(file, 'utf8')) as { pods: object }).pods);
    const turn = () => new Promise((resolve) => setImmediate(resolve));
    try {
      const clock = new ManualClock();
      const m = new AllocationManager({ allocated: fileCheckpoint(dir, 'allocated_pods_state', silentLogger, clock), actuated: memoryCheckpoint(), now });
      for (const name of ['a', 'b', 'c']) m.setAllocated(pod(name, { requests: { cpu: '100m' } }));
      await turn();
      expect(written()).toEqual(['uid-a', 'uid-b', 'uid-c']);

      m.removePod('uid-a');
      await turn();
      clock.advance(LAZY_WRITE_MS - 1);
      m.removePod('uid-b');
      expect(written()).toEqual(['uid-a', 'uid-b', 'uid-c']);
      clock.advance(1);
      expect(written()).toEqual(['uid-c']);

      // An admission does not wait behind a removal: both go at the end of the turn.
      m.removePod('uid-c');
      m.setAllocated(pod('d', {}));
      await turn();
      expect(written()).toEqual(['uid-d']);
      expect(clock.pendingTimers).toBe(0);

      m.removePod('uid-d');
      m.flush();
      expect(written()).toEqual([]);
      expect(clock.pendingTimers).toBe(0);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('initializes the actuated record once, from the allocation, and forgets a removed pod and orphans', () => {
    const m = manager();
    const p = pod('p', { requests: { cpu: '100m' } });
    m.initializeActuated(p);
    m.initializeActuated(pod('p', { requests: { cpu: '900m' } }));
    expect(m.actuatedOf('uid-p')).toEqual({ app: { requests: { cpu: '100m' } } });
    m.setAllocated(p);
    m.setAllocated(pod('q', {}));
    m.setPending('uid-p', 'OutOfcpu', 'm', 2);
    m.removePod('uid-p');
    expect([m.has('uid-p'), m.actuatedOf('uid-p'), m.conditions('uid-p')]).toEqual([false, {}, []]);
    m.removeOrphans((uid) => uid !== 'uid-q');
    expect(m.has('uid-q')).toBe(false);
  });

  it('keeps the conditions as the status manager does, and times the first retry 30 s after start', () => {
    const m = manager();
    expect(m.setPending('uid-p', 'OutOfcpu', 'no room', 2)).toBe(true);
    expect(m.setPending('uid-p', 'OutOfmemory', 'no room', 2)).toBe(false);
    expect(m.conditions('uid-p')).toEqual([
      { type: 'PodResizePending', status: 'True', reason: 'Deferred', message: 'no room', observedGeneration: 2, lastProbeTime: '2026-01-01T00:00:00Z', lastTransitionTime: '2026-01-01T00:00:00Z' },
    ]);
    m.clearPending('uid-p');
    expect(m.conditions('uid-p')).toEqual([]);
    expect(m.retryDue(now() + INITIAL_RETRY_DELAY_MS - 1)).toBe(false);
    expect(m.retryDue(now() + INITIAL_RETRY_DELAY_MS)).toBe(true);
  });

  it('takes the resize conditions of an API pod\'s status up again (BackfillPodResizeConditions)', () => {
    const m = manager();
    const p = pod('p', {});
    p.status = { conditions: [{ type: 'PodResizePending', status: 'True', reason: 'Deferred', message: 'no room', observedGeneration: 3 }, { type: 'Ready', status: 'True' }] };
    m.backfill(p);
    expect(m.conditionsOf('uid-p').pending).toMatchObject({ reason: 'Deferred', message: 'no room', observedGeneration: 3 });
    expect(m.conditionsOf('uid-p').inProgress).toBeUndefined();
  });
});
