/**
 * What a node is made of, as composeNode (src/kubelet/composeNode.ts) hands it to the node-level
 * loops: each loop's `start` takes the parts it needs and nothing else, the way kubelet.go hands
 * its Dependencies to each manager it builds.
 */
import type { AgentConfig } from '../cli/config.ts';
import type { CertificateManagerInput, CertificateManagerMachine } from '../certificate/certificateManager.ts';
import type { KubeApi } from '../client/api.ts';
import type { Clock } from '../clock.ts';
import type { Logger } from '../log.ts';
import type { RelistHealth } from '../node/health.ts';
import type { KernelLog } from '../node/kernelLog.ts';
import type { MachineInfo } from '../node/nodeObject.ts';
import type { NodeRecord } from '../node/record.ts';
import type { EventRecorder } from '../eventrecorder/recorder.ts';
import type { ContainerGc } from '../kuberuntime/gc.ts';
import type { ImageGcManager } from '../kuberuntime/imageGC.ts';
import type { NodePods } from '../podworkers/activePods.ts';
import type { ImageService, RuntimeService } from '../runtime/types.ts';
import type { StatsProvider } from '../stats/provider.ts';
import type { PluginHandlers } from '../pluginregistration/handler.ts';
import type { PodStatusReader } from '../status/manager.ts';
import type { Mounter } from '../volumes/mounter.ts';
import type { TokenManager } from '../volumes/tokens.ts';
import type { VolumeDeps } from '../volumes/setUp.ts';
import type { CsiOperations } from '../volumes/csi/operations.ts';
import type { VolumeExpansionParts } from '../volumes/nodeExpander.ts';
import type { CsiBlockOperations } from '../volumes/csi/block.ts';
import type { LoopDevices } from '../volumes/blockMap.ts';
import type { VolumeWorld } from '../volumes/world.ts';

/** The settings the node's actors read (the rest of AgentConfig is the process's: ports, files). */
export type NodeConfig = Pick<
  AgentConfig,
  | 'nodeName'
  | 'nodeLabels'
  | 'nodeIp'
  | 'podCidr'
  | 'maxPods'
  | 'syncFrequencyMs'
  | 'podLogsDir'
  | 'rootDir'
  | 'serializeImagePulls'
  | 'maxParallelImagePulls'
  | 'registryPullQps'
  | 'registryBurst'
  | 'imagePullCredentialsVerificationPolicy'
  | 'preloadedImagesVerificationAllowlist'
  | 'plegRelistPeriodMs'
  | 'eventedPleg'
  | 'eventedPlegRelistPeriodMs'
  | 'crashLoopBackOffInitialMs'
  | 'crashLoopBackOffMaxMs'
  | 'containerGcPeriodMs'
  | 'minimumContainerTtlMs'
  | 'maxDeadContainersPerContainer'
  | 'maxDeadContainers'
  | 'imageGcHighThresholdPercent'
  | 'imageGcLowThresholdPercent'
  | 'imageMinimumGcAgeMs'
  | 'imageMaximumGcAgeMs'
  | 'containerLogMaxSize'
  | 'containerLogMaxFiles'
  | 'containerLogMonitorIntervalMs'
  | 'runtimeRequestTimeoutMs'
  | 'seccompDefault'
  | 'allowedUnsafeSysctls'
  | 'evictionHard'
  | 'evictionSoft'
  | 'evictionSoftGracePeriod'
  | 'evictionMinimumReclaim'
  | 'evictionPressureTransitionPeriodMs'
  | 'evictionMaxPodGracePeriod'
  | 'volumeStatsAggPeriodMs'
  // In a cluster: the Node's registration, status and Lease.
  | 'registerNode'
  | 'registerWithTaints'
  | 'cloudProvider'
  | 'providerId'
  | 'port'
  | 'systemReserved'
  | 'kubeReserved'
  | 'nodeStatusUpdateFrequencyMs'
  | 'nodeStatusReportFrequencyMs'
  | 'nodeLeaseDurationSeconds'
>;

/** What the node needs to be a node of a cluster (--kubeconfig), besides its settings (NodeConfig). */
export interface ClusterDeps {
  api: KubeApi;
  /** With rotateCertificates: the client certificate manager, composed with the node's store and API clients, and its input. */
  clientCertificateManager?: { logic: CertificateManagerMachine; input: CertificateManagerInput };
  /** With serverTLSBootstrap: the serving certificate manager (src/server/servingCertificateManager.ts), and its input. */
  servingCertificateManager?: { logic: CertificateManagerMachine; input: CertificateManagerInput };
  /** The machine as the Node reports it (read once, at the first registration or status). */
  machine(): Promise<MachineInfo>;
}

/** A memory-backed volume mounter, which may learn at start what an earlier run mounted. */
export type NodeMounter = Mounter & { adopt?(): Promise<number> };

export interface NodeParts {
  config: NodeConfig;
  /** In a cluster: the API client and the node's settings; absent: a standalone node. */
  cluster?: ClusterDeps;
  runtime: RuntimeService;
  images: ImageService;
  clock: Clock;
  log: Logger;
  /** The node's events: to the API in a cluster, to the log otherwise. */
  recorder: EventRecorder;
  /** The Node as last written or read: its UID owns the Lease and the mirror pods. */
  nodeRecord: NodeRecord;
  /** The runtime's health as the PLEG's relists last saw it (the Ready condition follows it). */
  health(): RelistHealth;
  /** The node's and its pods' usage, from the runtime's CRI stats and the host. */
  stats: StatsProvider;
  mounter: NodeMounter;
  /** The pods' volumes: the desired and actual states the syncs and the volume manager share, and what the plugins need. */
  volumes: { world: VolumeWorld; deps(): VolumeDeps; csi: CsiOperations; block: { csi: CsiBlockOperations; loops: LoopDevices }; expansion?: VolumeExpansionParts };
  /** In a cluster: the service-account tokens the pods' projected volumes hold. */
  tokens?: TokenManager;
  /** The machine's kernel log (the host's, or sim://'s simulated machine's); absent: none to follow. */
  kernelLog?: KernelLog;
  /**
   * The node's image garbage collection (pkg/kubelet/images ImageGCManager): one record of the
   * images, which the periodic round and the eviction manager's reclaim both read and update.
   */
  imageGc: ImageGcManager;
  /** The node's container garbage collection (the kubelet's containerGC): the periodic pass, and the eviction manager's reclaim. */
  containerGc: Pick<ContainerGc, 'collect' | 'deleteAllUnusedContainers'>;
  /** The pods: as their sources want them, and as their workers stand (the kubelet's pod manager and pod workers, asked by its managers). */
  pods: NodePods;
  /** The handlers of the plugins that register through the plugin manager, by plugin type (none: every plugin is refused). */
  pluginHandlers: PluginHandlers;
  /** Why the node's storage is not ready (the kubelet's runtimeState storage error: `CSINode is not yet initialized`); null: ready. */
  storageError(): string | null;
  /** The pods' statuses as the agent would report them. */
  statuses: PodStatusReader;
  /** Told what the node's metrics count of a loop's work. */
  observe: { statusWrites?(progress: { queued: number; writes: number; deletes: number }): void };
}
