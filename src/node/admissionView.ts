/**
 * The node as admission sees it (pkg/kubelet/kubelet_getters.go getNodeAnyWay): the Node object as
 * last written or read once there is one (its labels, allocatable and taints), else the Node the
 * agent would register (kubelet_node_status.go initialNode: the same labels, taints and status, its
 * allocatable the machine's capacity less the reservations and the hard eviction thresholds). A
 * standalone node never has a Node object, so it is always the latter, as the kubelet's GetNode is
 * without a client. Without the machine, only the pod count is checked.
 */
import os from 'node:os';
import { type NodeInfo, nodeForAdmission } from '../admission/admit.ts';
import type { AgentConfig } from '../cli/config.ts';
import { kubeletVersion } from '../cli/flags.ts';
import { goArch, nodeLabels } from './labels.ts';
import { hostAppArmorEnabled } from './machineInfo.ts';
import { type MachineInfo, initialNode, nodeSettings } from './nodeObject.ts';
import type { NodeRecord } from './record.ts';

interface AdmissionViewInputs {
  config: Pick<
    AgentConfig,
    'nodeName' | 'nodeLabels' | 'maxPods' | 'registerWithTaints' | 'allowedUnsafeSysctls' | 'port' | 'nodeIp' | 'systemReserved' | 'kubeReserved' | 'evictionHard'
  >;
  /** A node of a cluster registers with its taints; a standalone node has none. */
  inCluster: boolean;
  /** The Node as the node status loop last wrote or read it. */
  record: NodeRecord;
  machine?: MachineInfo;
  /** What the runtime's Status said it supports; absent: it did not answer, and what depends on it is not checked. */
  runtimeFeatures?: { supplementalGroupsPolicy: boolean };
}

export function admissionView({ config, inCluster, record, machine, runtimeFeatures }: AdmissionViewInputs): () => NodeInfo {
  const base: NodeInfo = {
    name: config.nodeName,
    maxPods: config.maxPods,
    labels: nodeLabels(config.nodeName, config.nodeLabels, { os: 'linux', arch: goArch(os.arch()) }),
    os: 'linux',
    taints: inCluster ? config.registerWithTaints : [],
    allowedUnsafeSysctls: config.allowedUnsafeSysctls,
    appArmorEnabled: hostAppArmorEnabled(),
    // A runtime that sends no features (containerd 1.6) does not support Strict: the kubelet refuses those pods.
    ...(runtimeFeatures ? { supplementalGroupsPolicySupported: runtimeFeatures.supplementalGroupsPolicy } : {}),
  };
  // Its conditions, images and times are no concern of admission: it is built once, from what does not change.
  const wouldRegister = machine
    ? initialNode({ machine, settings: nodeSettings(config, kubeletVersion()), health: { runtimeVersion: '', notReady: [], pressure: [] }, images: [] }, new Date(0).toISOString())
    : null;
  return () => nodeForAdmission(base, record.node ?? wouldRegister);
}
