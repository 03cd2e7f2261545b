/**
 * The node status loop's effects, over the API client and the runtime: register the Node
 * (reconciling one that exists), compute its status and write it when it changed or is due. The
 * decisions (what the Node and its status are, when to write) are in src/node/nodeObject.ts; here
 * are the calls.
 */
import type { NodeStatus } from '../api/cluster.ts';
import type { NodePressureCondition } from '../api/types.ts';
import { ApiError, isAlreadyExists, type KubeApi } from '../client/api.ts';
import type { Logger } from '../log.ts';
import type { NodeRecord } from '../node/record.ts';
import { type EventRecorder, nodeReference } from '../eventrecorder/recorder.ts';
import { type ImageService, type RuntimeService, definedOnly } from '../runtime/types.ts';
import {
  conditionEvents,
  type MachineInfo,
  type NodeHealth,
  type NodeSettings,
  type NodeStatusInputs,
  initialNode,
  nodeStatus,
  reconcilePatch,
  shouldWriteStatus,
  statusChanged,
  statusPatch,
} from '../node/nodeObject.ts';
import type { NodeStatusEffects } from './nodeStatus.ts';

interface NodeStatusEffectsDeps {
  api: KubeApi;
  runtime: RuntimeService;
  images: ImageService;
  settings: NodeSettings;
  machine: () => Promise<MachineInfo>;
  /** Why the node is not ready right now (runtime down, PLEG unhealthy); empty: ready. */
  notReady: () => string[];
  /** Why the node's storage is not ready (`CSINode is not yet initialized`); null: ready. */
  storageError: () => string | null;
  record: NodeRecord;
  reportFrequencyMs: number;
  now: () => number;
  log: Logger;
  /** The node's events: NodeReady, NodeNotReady, NodeHasSufficientMemory, … as conditions change. */
  recorder: EventRecorder;
  /** The pod CIDR(s) the runtime was told at start (--pod-cidr), comma-separated; '' : none. */
  podCidr: string;
  /** The volume manager's attachable volumes in use, and its record of what a written status reported (MarkVolumesAsReportedInUse); absent: none. */
  volumes?: { volumesInUse(): string[]; markVolumesReportedInUse(names: readonly string[]): void };
}

/** Immediate retries of a status write in one round (kubelet_node_status.go nodeStatusUpdateRetry). */
const NODE_STATUS_UPDATE_RETRY = 5;

const iso = (ms: number) => new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z');

async function health(deps: NodeStatusEffectsDeps, pressure: readonly NodePressureCondition[]): Promise<NodeHealth> {
  const notReady = [...deps.notReady()];
  let runtimeVersion = '';
  let runtimeFeatures: NodeHealth['runtimeFeatures'];
  let runtimeHandlers: NodeHealth['runtimeHandlers'];
  try {
    const version = await deps.runtime.version({ timeoutMs: 5_000 });
    runtimeVersion = `${version.runtimeName}://${version.runtimeVersion}`;
    const status = await deps.runtime.status({ timeoutMs: 5_000 });
    runtimeFeatures = status.features;
    runtimeHandlers = status.runtimeHandlers;
    const network = status.conditions.find((c) => c.type === 'NetworkReady');
    if (network && !network.status) {
      notReady.push(`container runtime network not ready: NetworkReady=false reason:${network.reason} message:${network.message}`);
    }
  } catch {
    if (!notReady.some((m) => m.startsWith('container runtime is down'))) notReady.unshift('container runtime is down');
  }
  // After the runtime's and the network's errors, as setters.go ReadyCondition lists them.
  const storage = deps.storageError();
  if (storage) notReady.push(storage);
  return { runtimeVersion, notReady, pressure, ...definedOnly({ runtimeFeatures, runtimeHandlers }) };
}

async function inputs(deps: NodeStatusEffectsDeps, pressure: readonly NodePressureCondition[]): Promise<NodeStatusInputs> {
  const [machine, nodeHealth, images] = await Promise.all([
    deps.machine(),
    health(deps, pressure),
    deps.images.listImages({ timeoutMs: 10_000 }).catch(() => []),
  ]);
  return { machine, settings: deps.settings, health: nodeHealth, images, volumesInUse: deps.volumes?.volumesInUse() ?? [] };
}

export function createNodeStatusEffects(deps: NodeStatusEffectsDeps): NodeStatusEffects {
  const { api, settings, record, log } = deps;
  const isReady = (status: NodeStatus) => status.conditions.find((c) => c.type === 'Ready')?.status === 'True';
  const recordTransitions = (before: Partial<NodeStatus> | undefined, after: Partial<NodeStatus>) => {
    for (const reason of conditionEvents(before?.conditions, after.conditions ?? [])) {
      deps.recorder.event(nodeReference(settings.name), 'Normal', reason, `Node ${settings.name} status is now: ${reason}`);
    }
  };

  // What the runtime was last told (kubelet runtimeState.podCIDR): the Node's podCIDRs replace it.
  let podCidr = deps.podCidr;
  /**
   * The Node's pod CIDRs to the runtime when they differ from what it was told (kubelet_node_status.go
   * tryUpdateNodeStatus → kubelet_network.go updatePodCIDR); a failure is logged and tried again
   * next round, as the kubelet's is. True when the range differed (told or not): the kubelet then
   * writes the status even if nothing else changed.
   */
  const forwardPodCidr = async (): Promise<boolean> => {
    const spec = record.node?.spec;
    const cidrs = (spec?.podCIDRs?.length ? spec.podCIDRs : spec?.podCIDR ? [spec.podCIDR] : []).join(',');
    if (cidrs === '' || cidrs === podCidr) return false;
    try {
      await deps.runtime.updateRuntimeConfig(cidrs, { timeoutMs: 10_000 });
      log('info', 'Updating Pod CIDR', { originalPodCIDR: podCidr, newPodCIDR: cidrs });
      podCidr = cidrs;
    } catch (err) {
      log('error', 'Error updating pod CIDR', { podCIDR: cidrs, err });
    }
    return true;
  };
  /** The Node has no pod CIDR yet: until it does, each round reads it (the controller-manager may set it any time). */
  const awaitingPodCidr = () => !record.node?.spec?.podCIDRs?.length && !record.node?.spec?.podCIDR;

  return {
    now: deps.now,
    async register() {
      const wanted = initialNode(await inputs(deps, []), iso(deps.now()));
      // The kubelet's initial status announces every condition, on each start (setters.go via initialNode).
      if (wanted.status) recordTransitions(undefined, wanted.status);
      try {
        record.node = await api.createNode(wanted);
        log('info', 'Registered the node', { node: settings.name });
        return;
      } catch (err) {
        if (!isAlreadyExists(err)) throw err;
      }
      const existing = await api.getNode(settings.name);
      const patch = reconcilePatch(existing, wanted);
      record.node = patch ? await api.patchNode(settings.name, patch) : existing;
      log('info', 'The node was already registered; reconciled its labels and annotations', { node: settings.name, patched: patch !== null });
    },

    async update({ lastWrittenAt, pressure }) {
      const now = deps.now();
      const current = await inputs(deps, pressure);
      let previous = record.node?.status;
      let podCidrChanged = false;
      for (let attempt = 0; ; attempt++) {
        // The first retry, a node never read, and one without a pod CIDR yet, read the Node from the API server.
        if (!record.node || attempt > 0 || awaitingPodCidr()) {
          record.node = await api.getNode(settings.name);
          previous = record.node.status;
        }
        if (attempt === 0) podCidrChanged = await forwardPodCidr();
        const status = nodeStatus(current, previous, iso(now));
        const ready = isReady(status);
        if (!shouldWriteStatus(podCidrChanged || statusChanged(previous, status), lastWrittenAt, now, deps.reportFrequencyMs)) return { written: false, ready };
        try {
          record.node = await api.patchNodeStatus(settings.name, { status: statusPatch(previous, status) });
          // kubelet_node_status.go updateNodeStatus: the volumes it lists are reported in use once written.
          deps.volumes?.markVolumesReportedInUse(status.volumesInUse ?? []);
          recordTransitions(previous, status);
          return { written: true, ready };
        } catch (err) {
          if (attempt + 1 >= NODE_STATUS_UPDATE_RETRY || !(err instanceof ApiError)) throw err;
          log('warn', 'Error updating node status, will retry', { node: settings.name, err: err.message });
        }
      }
    },
  };
}
