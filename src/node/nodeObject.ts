/**
 * The Node object and its status as the kubelet builds them, pure (pkg/kubelet/kubelet_node_status.go
 * initialNode, pkg/kubelet/nodestatus/setters.go): labels and taints at registration; capacity and
 * allocatable (capacity less the reservations and the hard eviction thresholds); nodeInfo; the
 * addresses and the daemon endpoint; the runtime's images, largest first; and the four conditions
 * in the kubelet's order (MemoryPressure, DiskPressure, PIDPressure, Ready last), each keeping its
 * lastTransitionTime while its status holds.
 *
 * `statusChanged` says whether a new status is worth writing before the report period is up: any
 * change but the heartbeat times (nodeStatusHasChanged).
 */
import type { ContainerImage, NodeAddress, NodeCondition, NodeObject, NodeStatus, NodeSystemInfo, Taint } from '../api/cluster.ts';
import { jsonEqual } from '../api/json.ts';
import { nodeLabels } from './labels.ts';
import { formatBytes, formatCpu, formatKi, quantityValue } from '../api/quantity.ts';
import type { AgentConfig } from '../cli/config.ts';
import type { NodePressureCondition } from '../api/types.ts';
import type { RuntimeHandler } from '../runtime/types.ts';

/** What the machine is, as the agent read it at start. */
export interface MachineInfo {
  cpuCores: number;
  memoryBytes: number;
  /** Size of the filesystem holding --root-dir. */
  ephemeralStorageBytes: number;
  /** The kernel's pid_max, when known. */
  maxPids?: number;
  /** Huge page sizes the kernel offers, as `hugepages-2Mi` → bytes reserved (0 when none). */
  hugepages: Record<string, number>;
  machineID: string;
  systemUUID: string;
  bootID: string;
  kernelVersion: string;
  osImage: string;
  /** Go's names, as the node reports them: `linux`, `amd64`/`arm64`. */
  operatingSystem: string;
  architecture: string;
}

/** What the agent was told about the node (flags). */
export interface NodeSettings {
  name: string;
  /** --node-labels, added to the kubelet's own labels. */
  extraLabels: Record<string, string>;
  taints: Taint[];
  maxPods: number;
  /** The port of the agent's authenticated server (daemonEndpoints.kubeletEndpoint). */
  port: number;
  kubeletVersion: string;
  addresses: NodeAddress[];
  /** --system-reserved and --kube-reserved, summed per resource (quantities). */
  reserved: Record<string, string>;
  /** The hard eviction thresholds allocatable leaves out: memory.available and nodefs.available, as written (`100Mi`, `10%`). */
  hardEviction: HardEviction;
  /** --cloud-provider=external: a cloud controller manager initializes the node and owns its addresses. */
  externalCloudProvider?: boolean;
  /** --provider-id / providerID: spec.providerID at registration ('' or absent: none). */
  providerId?: string;
}

export interface HardEviction {
  memory?: string;
  nodefs?: string;
}

/**
 * The node's settings as its status reads them, from the agent's: --node-labels, the taints to
 * register with, --max-pods, the server's port, the addresses (--node-ip, which the agent sets to
 * the machine's own address in a cluster when it is not given, and the hostname), and
 * --system-reserved plus --kube-reserved per resource.
 */
export function nodeSettings(
  config: Pick<AgentConfig, 'nodeName' | 'nodeLabels' | 'registerWithTaints' | 'maxPods' | 'port' | 'nodeIp' | 'systemReserved' | 'kubeReserved' | 'evictionHard'> & Partial<Pick<AgentConfig, 'cloudProvider' | 'providerId'>>,
  kubeletVersion: string,
): NodeSettings {
  const reserved: Record<string, string> = {};
  for (const list of [config.systemReserved, config.kubeReserved]) {
    for (const [name, value] of Object.entries(list)) reserved[name] = String(quantityValue(reserved[name]) + quantityValue(value));
  }
  const internal = (config.nodeIp ?? '').split(',').filter(Boolean);
  return {
    name: config.nodeName,
    extraLabels: config.nodeLabels,
    taints: config.registerWithTaints,
    maxPods: config.maxPods,
    port: config.port,
    kubeletVersion,
    addresses: [...internal.map((address): NodeAddress => ({ type: 'InternalIP', address })), { type: 'Hostname', address: config.nodeName }],
    reserved,
    hardEviction: {
      ...(config.evictionHard['memory.available'] ? { memory: config.evictionHard['memory.available'] } : {}),
      ...(config.evictionHard['nodefs.available'] ? { nodefs: config.evictionHard['nodefs.available'] } : {}),
    },
    externalCloudProvider: config.cloudProvider === 'external',
    providerId: config.providerId ?? '',
  };
}

/** What the agent knows of its own health and the runtime when the status is computed. */
export interface NodeHealth {
  /** `<runtimeName>://<runtimeVersion>` from CRI Version, or '' while the runtime has not answered. */
  runtimeVersion: string;
  /** Why the node is not ready (runtime down, network not ready, PLEG unhealthy); empty: ready. */
  notReady: string[];
  /** The pressure conditions the eviction manager reports True. */
  pressure: readonly NodePressureCondition[];
  /** The features the runtime's Status reported; absent when it reports none (containerd 1.6). */
  runtimeFeatures?: { supplementalGroupsPolicy: boolean };
  /** The runtime handlers the runtime's Status reported; absent or empty when it reports none (containerd 1.6, 1.7). */
  runtimeHandlers?: readonly RuntimeHandler[];
}

/** The images the node reports at most (--node-status-max-images). */
const MAX_IMAGES = 50;
/** Annotation the kubelet sets at registration: attach/detach is the controller's job. */
const CONTROLLER_MANAGED_ATTACH_DETACH = 'volumes.kubernetes.io/controller-managed-attach-detach';

export function capacity(machine: MachineInfo, maxPods: number): Record<string, string> {
  const out: Record<string, string> = {
    cpu: formatCpu(machine.cpuCores),
    memory: formatKi(machine.memoryBytes),
    pods: String(maxPods),
    'ephemeral-storage': formatKi(machine.ephemeralStorageBytes),
  };
  for (const [name, bytes] of Object.entries(machine.hugepages)) out[name] = formatBytes(bytes);
  return out;
}

/** A hard threshold's amount: a quantity, or a percentage of the capacity (evictionapi GetThresholdQuantity). */
function thresholdAmount(value: string | undefined, capacityBytes: number): number {
  if (!value) return 0;
  return value.endsWith('%') ? Math.floor((Number(value.slice(0, -1)) / 100) * capacityBytes) : quantityValue(value);
}

/** Capacity less the reservations and the hard eviction thresholds, never below zero (GetNodeAllocatableAbsolute). */
export function allocatable(machine: MachineInfo, maxPods: number, reserved: Record<string, string>, hardEviction: HardEviction): Record<string, string> {
  const held = (name: string) => quantityValue(reserved[name]);
  const hugepagesBytes = Object.values(machine.hugepages).reduce((a, b) => a + b, 0);
  const out: Record<string, string> = {
    cpu: formatCpu(machine.cpuCores - held('cpu')),
    memory: formatKi(machine.memoryBytes - held('memory') - thresholdAmount(hardEviction.memory, machine.memoryBytes) - hugepagesBytes),
    pods: String(maxPods),
    'ephemeral-storage': formatBytes(machine.ephemeralStorageBytes - thresholdAmount(hardEviction.nodefs, machine.ephemeralStorageBytes) - held('ephemeral-storage')),
  };
  for (const [name, bytes] of Object.entries(machine.hugepages)) out[name] = formatBytes(bytes);
  return out;
}

export function nodeInfo(machine: MachineInfo, settings: Pick<NodeSettings, 'kubeletVersion'>, health: Pick<NodeHealth, 'runtimeVersion'>): NodeSystemInfo {
  return {
    machineID: machine.machineID,
    systemUUID: machine.systemUUID,
    bootID: machine.bootID,
    kernelVersion: machine.kernelVersion,
    osImage: machine.osImage,
    containerRuntimeVersion: health.runtimeVersion,
    kubeletVersion: settings.kubeletVersion,
    kubeProxyVersion: '',
    operatingSystem: machine.operatingSystem,
    architecture: machine.architecture,
  };
}

/** The runtime's images, largest first, at most MAX_IMAGES (setters.go Images). */
export function nodeImages(images: readonly { repoTags: string[]; repoDigests: string[]; size: number }[]): ContainerImage[] {
  return [...images]
    .sort((a, b) => b.size - a.size)
    .slice(0, MAX_IMAGES)
    .map((image) => ({ names: [...image.repoDigests, ...image.repoTags], sizeBytes: image.size }))
    .filter((image) => image.names.length > 0);
}

interface ConditionRule {
  type: string;
  /** [status, reason, message] for the condition being true (pressure / ready) and false. */
  whenTrue: [NodeCondition['status'], string, string];
  whenFalse: [NodeCondition['status'], string, string];
}

const PRESSURE_RULES: Record<NodePressureCondition, ConditionRule> = {
  MemoryPressure: {
    type: 'MemoryPressure',
    whenTrue: ['True', 'KubeletHasInsufficientMemory', 'kubelet has insufficient memory available'],
    whenFalse: ['False', 'KubeletHasSufficientMemory', 'kubelet has sufficient memory available'],
  },
  DiskPressure: {
    type: 'DiskPressure',
    whenTrue: ['True', 'KubeletHasDiskPressure', 'kubelet has disk pressure'],
    whenFalse: ['False', 'KubeletHasNoDiskPressure', 'kubelet has no disk pressure'],
  },
  PIDPressure: {
    type: 'PIDPressure',
    whenTrue: ['True', 'KubeletHasInsufficientPID', 'kubelet has insufficient PID available'],
    whenFalse: ['False', 'KubeletHasSufficientPID', 'kubelet has sufficient PID available'],
  },
};

function condition(type: string, [status, reason, message]: [NodeCondition['status'], string, string], previous: readonly NodeCondition[], now: string): NodeCondition {
  const before = previous.find((c) => c.type === type);
  return {
    type,
    status,
    reason,
    message,
    lastHeartbeatTime: now,
    lastTransitionTime: before && before.status === status ? before.lastTransitionTime : now,
  };
}

/** The four conditions, Ready last (setters.go ReadyCondition and the pressure conditions). */
export function nodeConditions(health: NodeHealth, previous: readonly NodeCondition[], now: string): NodeCondition[] {
  const pressure = (Object.keys(PRESSURE_RULES) as (keyof typeof PRESSURE_RULES)[]).map((key) => {
    const rule = PRESSURE_RULES[key];
    return condition(rule.type, health.pressure.includes(key) ? rule.whenTrue : rule.whenFalse, previous, now);
  });
  const ready: [NodeCondition['status'], string, string] =
    health.notReady.length === 0 ? ['True', 'KubeletReady', 'kubelet is posting ready status'] : ['False', 'KubeletNotReady', health.notReady.join(',')];
  return [...pressure, condition('Ready', ready, previous, now)];
}

/** The event reason of each condition's status (kubelet_node_status.go recordNodeStatusEvent). */
const CONDITION_EVENTS: Record<string, { True: string; False: string }> = {
  MemoryPressure: { True: 'NodeHasInsufficientMemory', False: 'NodeHasSufficientMemory' },
  DiskPressure: { True: 'NodeHasDiskPressure', False: 'NodeHasNoDiskPressure' },
  PIDPressure: { True: 'NodeHasInsufficientPID', False: 'NodeHasSufficientPID' },
  Ready: { True: 'NodeReady', False: 'NodeNotReady' },
};

/**
 * The node events a written status calls for: one per condition whose status differs from the one
 * the Node had (a condition it did not have counts as changed), in the conditions' order.
 */
export function conditionEvents(previous: readonly NodeCondition[] | undefined, next: readonly NodeCondition[]): string[] {
  const events: string[] = [];
  for (const c of next) {
    const reasons = CONDITION_EVENTS[c.type];
    if (!reasons || (c.status !== 'True' && c.status !== 'False')) continue;
    if (previous?.find((p) => p.type === c.type)?.status === c.status) continue;
    events.push(reasons[c.status]);
  }
  return events;
}

export interface NodeStatusInputs {
  machine: MachineInfo;
  settings: NodeSettings;
  health: NodeHealth;
  images: readonly { repoTags: string[]; repoDigests: string[]; size: number }[];
  /** The attachable volumes the volume manager uses or wants, by unique name (volume_manager.go GetVolumesInUse); none when absent. */
  volumesInUse?: readonly string[];
}

export function nodeStatus(inputs: NodeStatusInputs, previous: Partial<NodeStatus> | undefined, now: string): NodeStatus {
  const { machine, settings, health } = inputs;
  return {
    capacity: capacity(machine, settings.maxPods),
    allocatable: allocatable(machine, settings.maxPods, settings.reserved, settings.hardEviction),
    conditions: nodeConditions(health, previous?.conditions ?? [], now),
    // setters.go NodeAddress: with an external cloud provider, addresses the Node already has (the
    // cloud controller manager's) take precedence over the node's own.
    addresses: settings.externalCloudProvider && previous?.addresses?.length ? previous.addresses : settings.addresses,
    daemonEndpoints: { kubeletEndpoint: { Port: settings.port } },
    nodeInfo: nodeInfo(machine, settings, health),
    images: nodeImages(inputs.images),
    // setters.go NodeFeatures: only what the runtime said; nothing when it said nothing.
    ...(health.runtimeFeatures ? { features: { supplementalGroupsPolicy: health.runtimeFeatures.supplementalGroupsPolicy } } : {}),
    // setters.go RuntimeHandlers: each handler with both of its features; an empty list is left out of the object.
    ...(health.runtimeHandlers?.length
      ? { runtimeHandlers: health.runtimeHandlers.map(({ name, features }) => ({ name, features: { recursiveReadOnlyMounts: features.recursiveReadOnlyMounts, userNamespaces: features.userNamespaces } })) }
      : {}),
    // setters.go VolumesInUse; an empty list is left out of the object (omitempty).
    ...(inputs.volumesInUse?.length ? { volumesInUse: [...inputs.volumesInUse] } : {}),
  };
}

/**
 * The status as the node's patch carries it: a list of volumes in use that has emptied is removed
 * (`null`, as the kubelet's two-way patch from the old status removes it); `volumesAttached`, the
 * attach-detach controller's, is never in it.
 */
export function statusPatch(previous: Partial<NodeStatus> | undefined, status: NodeStatus): object {
  return previous?.volumesInUse?.length && !status.volumesInUse ? { ...status, volumesInUse: null } : status;
}

/** The taint an external cloud provider's node is registered with until its controller initializes it (cloud-provider api well_known_taints.go). */
export const EXTERNAL_CLOUD_PROVIDER_TAINT: Taint = { key: 'node.cloudprovider.kubernetes.io/uninitialized', value: 'true', effect: 'NoSchedule' };
/** The node's own IPs, for an external cloud provider to use (setters.go NodeAddress, annotations.ProvidedNodeIPAnnotation). */
const PROVIDED_NODE_IP = 'alpha.kubernetes.io/provided-node-ip';

/**
 * The Node the agent registers (kubelet_node_status.go initialNode), with its status already filled
 * in: with --cloud-provider=external the uninitialized taint after the ones asked for, and the node's
 * IPs in the provided-node-ip annotation; --provider-id as spec.providerID.
 */
export function initialNode(inputs: NodeStatusInputs, now: string): NodeObject {
  const { settings } = inputs;
  const taints = settings.externalCloudProvider ? [...settings.taints, EXTERNAL_CLOUD_PROVIDER_TAINT] : settings.taints;
  const nodeIps = settings.addresses.filter((address) => address.type === 'InternalIP').map((address) => address.address);
  return {
    apiVersion: 'v1',
    kind: 'Node',
    metadata: {
      name: settings.name,
      labels: nodeLabels(settings.name, settings.extraLabels, { os: inputs.machine.operatingSystem, arch: inputs.machine.architecture }),
      annotations: {
        [CONTROLLER_MANAGED_ATTACH_DETACH]: 'true',
        ...(settings.externalCloudProvider && nodeIps.length > 0 ? { [PROVIDED_NODE_IP]: nodeIps.join(',') } : {}),
      },
    },
    spec: { ...(taints.length ? { taints } : {}), ...(settings.providerId ? { providerID: settings.providerId } : {}) },
    status: nodeStatus(inputs, undefined, now),
  };
}

/**
 * What the agent brings back on a Node that already exists (reconcileExistingNode): its own
 * labels, the attach/detach annotation; null when nothing differs. A merge patch.
 */
export function reconcilePatch(existing: NodeObject, wanted: NodeObject): object | null {
  const labels: Record<string, string> = {};
  for (const [key, value] of Object.entries(wanted.metadata.labels ?? {})) {
    if (existing.metadata.labels?.[key] !== value) labels[key] = value;
  }
  const annotations: Record<string, string> = {};
  if (existing.metadata.annotations?.[CONTROLLER_MANAGED_ATTACH_DETACH] !== 'true') annotations[CONTROLLER_MANAGED_ATTACH_DETACH] = 'true';
  if (!Object.keys(labels).length && !Object.keys(annotations).length) return null;
  return {
    metadata: {
      ...(Object.keys(labels).length ? { labels } : {}),
      ...(Object.keys(annotations).length ? { annotations } : {}),
    },
  };
}

/** What the node compares: its own fields, without the heartbeat times (and without the controller's volumesAttached). */
const withoutHeartbeats = ({ volumesAttached: _controllers, ...status }: Partial<NodeStatus>) => ({
  ...status,
  conditions: (status.conditions ?? []).map(({ lastHeartbeatTime: _ignored, ...rest }) => rest),
});

/** Any difference but the conditions' heartbeat times (kubelet_node_status.go nodeStatusHasChanged). */
export function statusChanged(before: Partial<NodeStatus> | undefined, after: NodeStatus): boolean {
  return !before || !jsonEqual(withoutHeartbeats(before), withoutHeartbeats(after));
}

/** Whether the status is written this round: it changed, or the report period is up. */
export function shouldWriteStatus(changed: boolean, lastWrittenAt: number | null, now: number, reportFrequencyMs: number): boolean {
  return changed || lastWrittenAt === null || now - lastWrittenAt >= reportFrequencyMs;
}
