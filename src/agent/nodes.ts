/**
 * `statelet --nodes=N`: N simulated nodes in one process, as kubemark's hollow kubelets and kwok's
 * fake nodes give a control plane many nodes on few machines, but each one the real agent: its
 * own Node, Lease, identity, syncLoop, pod actors, sim:// runtime and pod CIDR, sharing the
 * process, its event loop and its clock. What one node's settings say is divided among them here
 * (`nodeConfigs`, pure); `startNodes` starts them.
 */
import path from 'node:path';
import type { AgentConfig } from '../cli/config.ts';
import type { Logger } from '../log.ts';
import { type VisualizedNodes, type VisualizerServer, startVisualizerServer } from '../visualizer/server.ts';
import { fromDotted, toDotted } from '../runtime/sim/podAddresses.ts';
import { type Agent, startAgent } from './agent.ts';

/** Where a node's name goes in --kubeconfig, so that each node reads its own credentials. */
export const NODE_PLACEHOLDER = '{node}';

/** The first node's address when --node-ip is not given: loopback, where sim:// never puts a pod. */
export const FIRST_NODE_IP = '127.0.1.1';

/**
 * The settings of each of `config.nodes` nodes, or the reason they cannot be divided. Node i is
 * `<name>-i`, at the i-th address from --node-ip, where its servers (authenticated API, read-only,
 * /healthz) listen on the ports given, so that the API server reaches each node's logs and exec at
 * its InternalIP as it reaches a kubelet's; the process's one visualizer is startNodes'.
 */
export function nodeConfigs(config: AgentConfig): AgentConfig[] | Error {
  const count = config.nodes;
  const cidrs = config.podCidr ? splitPodCidr(config.podCidr, count) : null;
  if (cidrs instanceof Error) return cidrs;
  const first = config.nodeIp ?? FIRST_NODE_IP;
  const firstIp = fromDotted(first);
  if (firstIp === null) return new Error(`--node-ip=${first}: with --nodes it must be one IPv4 address, the first node's (the next nodes take the next addresses)`);
  if (firstIp + count - 1 > 0xffffffff) return new Error(`--node-ip=${first}: ${count} nodes run past 255.255.255.255`);
  if (config.bootstrapKubeconfig && config.kubeconfig && !config.kubeconfig.includes(NODE_PLACEHOLDER)) {
    return new Error(`--kubeconfig=${config.kubeconfig}: with --nodes and --bootstrap-kubeconfig each node writes its own kubeconfig; put ${NODE_PLACEHOLDER} in its path for the node's name`);
  }
  return Array.from({ length: count }, (_, index) => {
    const nodeName = `${config.nodeName}-${index}`;
    const address = toDotted(firstIp + index);
    const node: AgentConfig = {
      ...config,
      nodes: 1,
      nodeName,
      hostnameOverride: nodeName,
      nodeIp: address,
      address,
      readOnlyAddress: address,
      healthzBindAddress: address,
      rootDir: path.join(config.rootDir, nodeName),
      podLogsDir: path.join(config.podLogsDir, nodeName),
      // One visualizer serves every node (startNodes), on the first node's address.
      visualizerPort: 0,
    };
    if (config.kubeconfig) node.kubeconfig = config.kubeconfig.split(NODE_PLACEHOLDER).join(nodeName);
    // Each node bootstraps and rotates its own identity: its certificates in a directory of its own
    // (<root-dir>/<node>/pki by default, else <cert-dir>/<node>).
    if (config.certDir) node.certDir = path.join(config.certDir, nodeName);
    if (cidrs) node.podCidr = cidrs[index]!;
    else delete node.podCidr;
    return node;
  });
}

/**
 * --pod-cidr divided into `count` equal ranges, one per node, as node IPAM gives each Node a part
 * of the cluster CIDR: `10.244.0.0/16` for 4 nodes is `10.244.0.0/18`, `10.244.64.0/18`, … Only
 * one IPv4 range can be divided here; each part must still hold a pod (a /30 or wider).
 */
export function splitPodCidr(podCidr: string, count: number): string[] | Error {
  const [ip = '', prefixText = ''] = podCidr.split('/');
  const address = fromDotted(ip);
  const prefix = Number(prefixText);
  if (address === null || !/^\d{1,2}$/.test(prefixText) || prefix > 32) return new Error(`--pod-cidr=${podCidr}: with --nodes it must be one IPv4 range, which the nodes share out`);
  const bits = Math.ceil(Math.log2(count));
  if (prefix + bits > 30) return new Error(`--pod-cidr=${podCidr}: ${count} nodes need a /${Math.max(0, 30 - bits)} or wider, so that each gets a /30 or wider`);
  const whole = 2 ** (32 - prefix);
  const size = whole / 2 ** bits;
  const base = Math.floor(address / whole) * whole;
  return Array.from({ length: count }, (_, i) => `${toDotted(base + i * size)}/${prefix + bits}`);
}

export interface Nodes {
  agents: Agent[];
  /** The visualizer of every node, with a node picker (--visualizer-port), when enabled. */
  visualizerUrl?: string;
  stop(): Promise<void>;
}

/**
 * Starts every node, one after another (each registers and settles its runtime before the next,
 * so that a hundred nodes do not all contend at once); a node that fails to start stops those
 * already started. Each node's log lines carry its name.
 */
export async function startNodes(config: AgentConfig, log: Logger, signal?: AbortSignal): Promise<Nodes> {
  const configs = nodeConfigs(config);
  if (configs instanceof Error) throw configs;
  const agents: Agent[] = [];
  // The nodes' statecharts, each added as its node starts: the page lists them and picks one.
  const visualizerNodes: VisualizedNodes | undefined = config.visualizerPort > 0 ? new Map() : undefined;
  let visualizer: VisualizerServer | undefined;
  const stop = async () => {
    await visualizer?.close();
    await Promise.all(agents.splice(0).map((agent) => agent.stop()));
  };
  try {
    for (const node of configs) {
      const nodeLog: Logger = (level, message, fields) => log(level, message, { node: node.nodeName, ...fields });
      agents.push(await startAgent(node, nodeLog, { ...(visualizerNodes ? { visualizerNodes } : {}), ...(signal ? { signal } : {}) }));
      // Served from the first node's start on, so that a hundred nodes can be watched as they come.
      if (visualizerNodes && !visualizer) visualizer = await startVisualizerServer(visualizerNodes, node.readOnlyAddress, config.visualizerPort);
    }
  } catch (err) {
    await stop();
    throw err;
  }
  const address = configs[0]!.readOnlyAddress;
  return { agents, stop, ...(visualizer ? { visualizerUrl: `http://${address.includes(':') ? `[${address}]` : address}:${visualizer.port}` } : {}) };
}
