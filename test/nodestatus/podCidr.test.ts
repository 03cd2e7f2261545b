/**
 * The Node's pod CIDRs reach the runtime (CRI UpdateRuntimeConfig) as the kubelet forwards them
 * from its node status update: once per change, the Node read each round until it has them.
 */
import { describe, expect, it } from 'vitest';
import { nodeStatusHarness } from '../support/nodeStatusHarness.ts';

describe("the Node's pod CIDRs, to the runtime", () => {
  it('reads the Node each round until it has pod CIDRs, tells the runtime once, then reads it no more', async () => {
    const h = nodeStatusHarness();
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
    const replaced = nodeStatusHarness({ podCidr: '10.1.0.0/24' });
    await replaced.effects.register(new AbortController().signal);
    replaced.allocate(['10.244.3.0/24']);
    await replaced.round();
    expect(replaced.told).toEqual(['10.244.3.0/24']);

    const same = nodeStatusHarness({ podCidr: '10.244.3.0/24' });
    await same.effects.register(new AbortController().signal);
    same.allocate(['10.244.3.0/24']);
    await same.round();
    expect(same.told).toEqual([]);
  });

  it('a runtime that fails the call is logged and told again next round', async () => {
    const h = nodeStatusHarness({ failUpdates: 1 });
    await h.effects.register(new AbortController().signal);
    h.allocate(['10.244.3.0/24']);
    await h.round();
    expect(h.told).toEqual([]);
    expect(h.logged).toContainEqual({ message: 'Error updating pod CIDR', fields: { podCIDR: '10.244.3.0/24', err: expect.any(Error) } });
    await h.round();
    expect(h.told).toEqual(['10.244.3.0/24']);
  });
});
