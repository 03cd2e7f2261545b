/**
 * The Node's pod CIDRs reach the runtime (CRI UpdateRuntimeConfig) as the kubelet forwards them
 * from its node status update: once per change, the Node read each round until it has them.
 */
import { describe, expect, it } from 'vitest';
import type { NodeObject } from '../../src/api/cluster.ts';
import { NodeRecord } from '../../src/node/record.ts';
import { nodeSettings } from '../../src/node/nodeObject.ts';
import { createNodeStatusEffects } from '../../src/nodestatus/effects.ts';
import type { ImageService, RuntimeService } from '../../src/runtime/types.ts';
import { testMachine } from '../support/machine.ts';
import { MemoryApi } from '../support/memoryApi.ts';

const NODE = 'n1';

function harness(options: { podCidr?: string; failUpdates?: number } = {}) {
  const api = new MemoryApi();
  const told: string[] = [];
  const logged: { message: string; fields: Record<string, unknown> | undefined }[] = [];
  let failures = options.failUpdates ?? 0;
  const runtime = {
    version: async () => ({ version: '0.1.0', runtimeName: 'containerd', runtimeVersion: '1.6.20', runtimeApiVersion: 'v1' }),
    status: async () => ({ conditions: [{ type: 'RuntimeReady', status: true, reason: '', message: '' }, { type: 'NetworkReady', status: true, reason: '', message: '' }] }),
    updateRuntimeConfig: async (podCidr: string) => {
      if (failures-- > 0) throw new Error('UpdateRuntimeConfig: UNAVAILABLE: connection refused');
      told.push(podCidr);
    },
  } as unknown as RuntimeService;
  const images = { listImages: async () => [] } as unknown as ImageService;
  const config = { nodeName: NODE, nodeLabels: {}, registerWithTaints: [], maxPods: 110, port: 10250, systemReserved: {}, kubeReserved: {}, evictionHard: {} };
  const effects = createNodeStatusEffects({
    api,
    runtime,
    images,
    settings: nodeSettings(config, 'v1.37.0-statelet.0.1.0'),
    machine: async () => testMachine(),
    notReady: () => [],
    storageError: () => null,
    record: new NodeRecord(),
    reportFrequencyMs: 300_000,
    now: () => Date.parse('2026-11-27T10:00:00Z'),
    log: (_level, message, fields) => logged.push({ message, fields }),
    recorder: { event: () => {} },
    podCidr: options.podCidr ?? '',
  });
  /** What the controller-manager's node IPAM does: the Node's spec gets its ranges. */
  const allocate = (cidrs: string[]) => {
    const node = api.nodes.get(NODE)!;
    api.nodes.set(NODE, { ...node, spec: { ...node.spec, podCIDR: cidrs[0], podCIDRs: cidrs } } as NodeObject);
  };
  /** The Node read by the status round (the double's own patches read it too: not counted). */
  const reads = () => api.count('getNode') - api.count('patchNodeStatus');
  const round = () => effects.update({ lastWrittenAt: Date.parse('2026-11-27T10:00:00Z'), pressure: [] }, new AbortController().signal);
  return { api, told, logged, effects, allocate, round, reads };
}

describe("the Node's pod CIDRs, to the runtime", () => {
  it('reads the Node each round until it has pod CIDRs, tells the runtime once, then reads it no more', async () => {
    const h = harness();
    await h.effects.register(new AbortController().signal);
    await h.round();
    await h.round();
    expect(h.reads()).toBe(2);
    expect(h.told).toEqual([]);

    const writes = h.api.count('patchNodeStatus');
    h.allocate(['10.244.3.0/24', 'fd00:3::/64']);
    await h.round();
    expect(h.told).toEqual(['10.244.3.0/24,fd00:3::/64']);
    // A new pod CIDR writes the status though nothing else changed, as the kubelet's round does.
    expect(h.api.count('patchNodeStatus')).toBe(writes + 1);
    expect(h.logged).toContainEqual({ message: 'Updating Pod CIDR', fields: { originalPodCIDR: '', newPodCIDR: '10.244.3.0/24,fd00:3::/64' } });
    await h.round();
    await h.round();
    expect(h.reads()).toBe(3);
    expect(h.api.count('patchNodeStatus')).toBe(writes + 1);
    expect(h.told).toHaveLength(1);
  });

  it('replaces the --pod-cidr the runtime was told at start; the same range is not told again', async () => {
    const replaced = harness({ podCidr: '10.1.0.0/24' });
    await replaced.effects.register(new AbortController().signal);
    replaced.allocate(['10.244.3.0/24']);
    await replaced.round();
    expect(replaced.told).toEqual(['10.244.3.0/24']);

    const same = harness({ podCidr: '10.244.3.0/24' });
    await same.effects.register(new AbortController().signal);
    same.allocate(['10.244.3.0/24']);
    await same.round();
    expect(same.told).toEqual([]);
  });

  it('a runtime that fails the call is logged and told again next round', async () => {
    const h = harness({ failUpdates: 1 });
    await h.effects.register(new AbortController().signal);
    h.allocate(['10.244.3.0/24']);
    await h.round();
    expect(h.told).toEqual([]);
    expect(h.logged).toContainEqual({ message: 'Error updating pod CIDR', fields: { podCIDR: '10.244.3.0/24', err: expect.any(Error) } });
    await h.round();
    expect(h.told).toEqual(['10.244.3.0/24']);
  });
});
