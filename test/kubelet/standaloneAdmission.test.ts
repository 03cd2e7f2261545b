/**
 * A node without an API server admits its pods against the Node it would register (the kubelet's
 * getNodeAnyWay → initialNode), computed from the machine read at start: a pod asking more than the
 * machine has is rejected, as the kubelet rejects it, and never gets an actor.
 */
import { describe, expect, it, vi } from 'vitest';
import { testMachine } from '../support/machine.ts';
import { startFakeNode } from '../support/fakeNode.ts';
import { container, makePod } from '../support/pods.ts';

const machine = testMachine({ cpuCores: 2, memoryBytes: 4 * 2 ** 30, ephemeralStorageBytes: 50 * 2 ** 30 });

describe('a standalone node', () => {
  it('rejects a pod asking for more CPU than the machine has with OutOfcpu, and runs one that fits', async () => {
    const node = startFakeNode({ machine });
    const big = makePod('big', { containers: [container('main', { resources: { requests: { cpu: '100000' } } })] });
    const small = makePod('small', { containers: [container('main', { resources: { requests: { cpu: '500m' } } })] });
    node.syncLoop.send({ type: 'CONFIG.ADD', source: 'file', pods: [big, small] });
    await vi.waitFor(() => expect(node.statuses.get('uid-small')?.phase).toBe('Running'));
    expect(node.statuses.get('uid-big')).toMatchObject({
      phase: 'Failed',
      reason: 'OutOfcpu',
      message: "Pod was rejected: Node didn't have enough resource: cpu, requested: 100000000, used: 0, capacity: 2000",
    });
    expect(node.podActor('uid-big')).toBeUndefined();
    node.stop();
  });

  it('counts what the pods it admitted ask for against the same allocatable', async () => {
    const node = startFakeNode({ machine, config: { systemReserved: { cpu: '500m' } } });
    const first = makePod('first', { containers: [container('main', { resources: { requests: { cpu: '1' } } })] });
    const second = makePod('second', { containers: [container('main', { resources: { requests: { cpu: '600m' } } })] });
    node.syncLoop.send({ type: 'CONFIG.ADD', source: 'file', pods: [first, second] });
    await vi.waitFor(() => expect(node.statuses.get('uid-first')?.phase).toBe('Running'));
    expect(node.statuses.get('uid-second')).toMatchObject({
      phase: 'Failed',
      reason: 'OutOfcpu',
      message: "Pod was rejected: Node didn't have enough resource: cpu, requested: 600, used: 1000, capacity: 1500",
    });
    node.stop();
  });
});
