/**
 * The Node's `status.volumesInUse` (pkg/kubelet/nodestatus/setters.go VolumesInUse,
 * kubelet_node_status.go updateNodeStatus → MarkVolumesAsReportedInUse): the volume manager's
 * attachable volumes, written when they change, reported in use once written, removed when none
 * is left; the attach-detach controller's `volumesAttached` is never in the node's patch, and its
 * changes do not make the node write.
 */
import { describe, expect, it } from 'vitest';
import { NODE, nodeStatusHarness } from '../support/nodeStatusHarness.ts';

describe("the Node's volumesInUse", () => {
  it('writes the volumes in use when they change, marks them reported after the write, and removes the list once it empties', async () => {
    let inUse: string[] = [];
    const reported: string[][] = [];
    const h = nodeStatusHarness({ volumes: { volumesInUse: () => inUse, markVolumesReportedInUse: (names) => void reported.push([...names]) } });
    await h.effects.register(new AbortController().signal);
    await h.round();
    const writes = h.api.count('patchNodeStatus');
    expect(h.api.nodes.get(NODE)!.status?.volumesInUse).toBeUndefined();

    inUse = ['kubernetes.io/csi/mock^1', 'kubernetes.io/csi/mock^2'];
    await h.round();
    expect(h.api.count('patchNodeStatus')).toBe(writes + 1);
    expect(h.api.nodes.get(NODE)!.status?.volumesInUse).toEqual(inUse);
    expect(reported.at(-1)).toEqual(inUse);

    // The controller attaches them: its field changes nothing the node writes.
    const node = h.api.nodes.get(NODE)!;
    h.api.nodes.set(NODE, { ...node, status: { ...node.status, volumesAttached: [{ name: 'kubernetes.io/csi/mock^1', devicePath: '' }] } });
    await h.round();
    expect(h.api.count('patchNodeStatus')).toBe(writes + 1);

    inUse = [];
    await h.round();
    expect(h.api.count('patchNodeStatus')).toBe(writes + 2);
    expect(h.api.nodes.get(NODE)!.status?.volumesInUse).toBeNull();
    expect(h.api.nodes.get(NODE)!.status?.volumesAttached).toEqual([{ name: 'kubernetes.io/csi/mock^1', devicePath: '' }]);
    expect(reported.at(-1)).toEqual([]);
  });
});
