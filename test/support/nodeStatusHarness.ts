/**
 * The node status loop's effects over the in-memory API and a runtime that answers: a round of the
 * status update as the loop runs it, with what the runtime was told and what was logged.
 */
import type { NodeObject } from '../../src/api/cluster.ts';
import { NodeRecord } from '../../src/node/record.ts';
import { nodeSettings } from '../../src/node/nodeObject.ts';
import { createNodeStatusEffects } from '../../src/nodestatus/effects.ts';
import type { ImageService, RuntimeService } from '../../src/runtime/types.ts';
import { testMachine } from './machine.ts';
import { MemoryApi } from './memoryApi.ts';

export const NODE = 'n1';

export function nodeStatusHarness(options: { podCidr?: string; failUpdates?: number; volumes?: Parameters<typeof createNodeStatusEffects>[0]['volumes'] } = {}) {
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
    ...(options.volumes ? { volumes: options.volumes } : {}),
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
