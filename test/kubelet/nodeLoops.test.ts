/**
 * The node-level loops (src/kubelet/nodeLoops.ts, the shape in src/nodeloop/nodeLoop.ts): the
 * syncLoop spawns the loops that start on the node and only those, passes each the events it
 * accepts, and each loop's registration writes its visualizer line from its own context.
 */
import { describe, expect, it } from 'vitest';
import { type AnyActorRef, SimulatedClock, assign, createActor, setup } from 'xstate';
import { nodeLoops } from '../../src/kubelet/nodeLoops.ts';
import { syncLoopMachine } from '../../src/kubelet/syncLoop.ts';
import { evictionManagerLoop } from '../../src/eviction/loop.ts';
import { NO_MEMORY } from '../../src/eviction/synchronize.ts';
import { oomWatcherLoop } from '../../src/oomwatcher/loop.ts';
import { certificateManagerLoop, servingCertificateManagerLoop } from '../../src/certificatemanager/loop.ts';
import { servingCertificateManagerMachine } from '../../src/certificate/certificateManager.ts';
import type { NodeParts } from '../../src/nodeloop/parts.ts';
import { clientTemplate } from '../../src/certificate/csr.ts';
import { pluginManagerLoop } from '../../src/pluginmanager/loop.ts';
import { containerLogManagerLoop } from '../../src/logs/loop.ts';
import { defineNodeLoop } from '../../src/nodeloop/nodeLoop.ts';
import { nodeLeaseLoop } from '../../src/nodelease/loop.ts';
import { nodeStatusLoop } from '../../src/nodestatus/loop.ts';
import { volumeManagerLoop } from '../../src/volumemanager/loop.ts';
import { startFakeNode } from '../support/fakeNode.ts';

/** A node status loop that only counts what it is told. */
const countingStatus = setup({ types: { context: {} as { told: number } } }).createMachine({
  id: 'nodeStatus',
  context: { told: 0 },
  on: { 'NODE.HEALTH_CHANGED': { actions: assign({ told: ({ context }) => context.told + 1 }) } },
});

const syncLoopInput = { expectedSources: [], syncTickMs: 1_000, housekeepingMs: 2_000, pleg: { periodMs: 1_000 } };

describe('node loops', () => {
  it('are registered once each, by the id of their machine', () => {
    const names = nodeLoops.map((loop) => loop.name);
    expect(new Set(names).size).toBe(names.length);
    for (const loop of nodeLoops) expect(loop.machine.id).toBe(loop.name);
    expect(() => defineNodeLoop({ ...containerLogManagerLoop, name: 'logs' })).toThrow(/node loop "logs": its machine's id is "containerLogManager"/);
  });

  it('are spawned by the syncLoop when they start on the node, and told the events they accept', () => {
    const clock = new SimulatedClock();
    const machine = syncLoopMachine.provide({ actors: { nodeStatus: countingStatus } });
    const actor = createActor(machine, { clock, input: { ...syncLoopInput, loops: { nodeStatus: undefined } } }).start();
    const children = actor.getSnapshot().children as Record<string, AnyActorRef | undefined>;
    expect(children['nodeStatus']).toBeDefined();
    // Not started on this node: no child at all.
    expect(children['nodeLease']).toBeUndefined();
    expect(children['volumeManager']).toBeUndefined();
    const told = () => (children['nodeStatus']!.getSnapshot() as { context: { told: number } }).context.told;
    // The runtime's health flips: unhealthy, then healthy again; each flip is told once.
    actor.send({ type: 'PLEG.RELIST_FAILED', error: 'CRI ListContainers failed (UNAVAILABLE)' });
    expect(told()).toBe(1);
    actor.send({ type: 'PLEG.RELIST_FAILED', error: 'CRI ListContainers failed (UNAVAILABLE)' });
    expect(told()).toBe(1);
    actor.send({ type: 'PLEG.RELISTED', at: 0, durationMs: 1 });
    expect(told()).toBe(2);
    actor.send({ type: 'PLEG.RELISTED', at: 1_000, durationMs: 1 });
    expect(told()).toBe(2);
    // What a sibling sends to the syncLoop reaches the loops that accept it.
    actor.send({ type: 'NODE.HEALTH_CHANGED' });
    expect(told()).toBe(3);
    actor.stop();
  });

  it('are composed from the node: a standalone node runs the volume manager and stats calculator, the log, garbage, eviction and plugin managers, no node status, Lease or status writer', () => {
    const node = startFakeNode();
    const children = node.syncLoop.getSnapshot().children as Record<string, AnyActorRef | undefined>;
    expect(Object.keys(node.syncLoop.getSnapshot().context.loops).sort()).toEqual(['containerLogManager', 'evictionManager', 'garbageCollector', 'pluginManager', 'volumeManager', 'volumeStatsCalculator']);
    expect(children['containerLogManager']?.getSnapshot().value).toBe('waiting');
    expect(children['volumeManager']).toBeDefined();
    expect(children['nodeStatus']).toBeUndefined();
    expect(children['nodeLease']).toBeUndefined();
    expect(children['statusWriter']).toBeUndefined();
    node.stop();
  });
  it("start the serving certificate manager as a loop of its own, beside the client's, only when the node has one (serverTLSBootstrap)", () => {
    const serving = { logic: servingCertificateManagerMachine, input: { kind: 'serving' as const, template: null } };
    expect(servingCertificateManagerLoop.start({ cluster: { servingCertificateManager: serving } } as unknown as NodeParts)).toEqual(serving);
    expect(servingCertificateManagerLoop.start({ cluster: {} } as unknown as NodeParts)).toBeNull();
    expect(certificateManagerLoop.start({ cluster: { servingCertificateManager: serving } } as unknown as NodeParts)).toBeNull();
  });
});

describe("each loop's line on the visualizer", () => {
  const at = Date.parse('2026-11-25T14:02:11Z');
  it.each([
    ['node status, written', nodeStatusLoop.summary({ registerNode: true, updateFrequencyMs: 10_000, ready: true, writes: 3, lastWrittenAt: at, registerFailures: 0, lastError: null, pressure: [] }), 'Ready · 3 status writes, last 14:02:11'],
    [
      'node status, not registered',
      nodeStatusLoop.summary({ registerNode: true, updateFrequencyMs: 10_000, ready: null, writes: 0, lastWrittenAt: null, registerFailures: 2, lastError: 'POST nodes node-a: 0 connect ECONNREFUSED', pressure: [] }),
      'not yet reported · 0 status writes · 2 failed registrations: POST nodes node-a: 0 connect ECONNREFUSED',
    ],
    ['Lease, renewed', nodeLeaseLoop.summary({ renewIntervalMs: 10_000, latest: null, renewals: 12, failures: 0, lastRenewTime: '2026-11-25T14:02:15.123456Z', lastError: null }), 'renewed 14:02:15 · 12 renewals'],
    ['Lease, failing', nodeLeaseLoop.summary({ renewIntervalMs: 10_000, latest: null, renewals: 0, failures: 3, lastRenewTime: null, lastError: 'PUT leases: 0 timeout' }), 'not renewed yet · 0 renewals · 3 failures: PUT leases: 0 timeout'],
    ['volumes', volumeManagerLoop.summary({ mounts: 3, tokens: 12, dropped: 2, reconstructed: 0, podVolumes: 4, lastError: null }), '4 pod volumes · 3 mounts · 12 tokens (2 expired dropped)'],
    ['volumes, after a restart', volumeManagerLoop.summary({ mounts: 3, tokens: 0, dropped: 0, reconstructed: 2, podVolumes: 2, lastError: null }), '2 pod volumes · 3 mounts · 0 tokens · 2 reconstructed at start'],
    ['volumes, failing', volumeManagerLoop.summary({ mounts: 0, tokens: 0, dropped: 0, reconstructed: 0, podVolumes: 0, lastError: 'reading the mount table: EACCES' }), '0 pod volumes · 0 mounts · 0 tokens · reading the mount table: EACCES'],
    ['logs', containerLogManagerLoop.summary({ monitorIntervalMs: 10_000, passes: 12, rotated: 3, lastFailures: [] }), '12 passes · 3 logs rotated'],
    ['logs, failing', containerLogManagerLoop.summary({ monitorIntervalMs: 10_000, passes: 1, rotated: 0, lastFailures: ['container app (c1): EACCES'] }), '1 passes · 0 logs rotated · 1 failed: container app (c1): EACCES'],
    [
      'eviction, under pressure',
      evictionManagerLoop.summary({
        thresholds: [
          { signal: 'memory.available', value: { quantity: 500 * 2 ** 20 }, gracePeriodMs: 0 },
          { signal: 'nodefs.inodesFree', value: { percentage: 0.05 }, gracePeriodMs: 60_000 },
        ],
        monitoringIntervalMs: 10_000,
        transitionPeriodMs: 300_000,
        maxPodGracePeriodSeconds: 0,
        memory: NO_MEMORY,
        observations: { 'memory.available': { available: 412 * 2 ** 20, capacity: 2 ** 30, time: 0 }, 'nodefs.inodesFree': { available: 90_000, capacity: 100_000, time: 0 } },
        conditions: ['MemoryPressure'],
        reclaiming: null,
        evicting: [],
        evictions: 1,
        lastEviction: { uid: 'u1', pod: 'default/hog', gracePeriodSeconds: 1, message: '' },
        lastError: null,
      }),
      'MemoryPressure · memory.available 412Mi (evicts below 500Mi), nodefs.inodesFree 90000 (soft below 5%) · 1 evicted, last default/hog',
    ],
    [
      'plugins, registered by type and name',
      pluginManagerLoop.summary({
        reconcilePeriodMs: 1_000,
        desired: { '/r/a.sock': '1', '/r/b.sock': '2', '/r/g.sock': '3' },
        generation: 3,
        actual: {
          '/r/a.sock': { path: '/r/a.sock', uuid: '1', type: 'CSIPlugin', name: 'b.csi.example.com', endpoint: '/p/b' },
          '/r/b.sock': { path: '/r/b.sock', uuid: '2', type: 'CSIPlugin', name: 'a.csi.example.com', endpoint: '/p/a' },
          '/r/g.sock': { path: '/r/g.sock', uuid: '3', type: 'CSIPlugin', name: 'c.csi.example.com', endpoint: '/p/c' },
        },
        registered: ['/r/a.sock', '/r/b.sock'],
        startingHandlers: [],
        lastFailure: null,
        watchError: null,
      }),
      'CSIPlugin a.csi.example.com, b.csi.example.com',
    ],
    [
      'plugins, none yet, the CSINode being initialized, a failure',
      pluginManagerLoop.summary({
        ...{ reconcilePeriodMs: 1_000, desired: {}, generation: 1, actual: {}, registered: [], startingHandlers: ['CSIPlugin'], watchError: null },
        lastFailure: 'RegisterPlugin error -- dial failed at socket /r/x.sock, err: failed to dial socket /r/x.sock, err: context deadline exceeded',
      }),
      'no plugins registered · starting: CSIPlugin · last failure: RegisterPlugin error -- dial failed at socket /r/x.sock, err: failed to dial socket /r/x.sock, err: context deadline exceeded',
    ],
    [
      'client certificate, renewing',
      certificateManagerLoop.summary({
        kind: 'client',
        template: clientTemplate('n1'),
        current: { notBefore: new Date(at - 3_600_000), notAfter: new Date(at + 3_600_000), commonName: 'system:node:n1', organizations: ['system:nodes'], dnsNames: [], ipAddresses: [] },
        deadline: at,
        pending: { name: 'csr-8x2kq', uid: 'u' },
        requested: clientTemplate('n1'),
        failures: 0,
        rotations: 3,
        lastError: null,
      }),
      'expires 2026-11-25 15:02 · CSR csr-8x2kq pending · 3 issued',
    ],
    [
      'client certificate, none yet and failing',
      certificateManagerLoop.summary({ kind: 'client', template: clientTemplate('n1'), current: null, deadline: at, pending: null, requested: null, failures: 2, rotations: 0, lastError: 'cannot create certificate signing request: Unauthorized' }),
      'no certificate yet · 2 failures: cannot create certificate signing request: Unauthorized',
    ],
    ['OOM watcher, not watching', oomWatcherLoop.summary({ systemOoms: 0, lastVictim: null, lastError: 'dmesg --follow-new ended (exit code 1)' }), '0 system OOMs · not watching: dmesg --follow-new ended (exit code 1)'],
  ])('%s', (_case, line, expected) => expect(line).toBe(expected));
});
