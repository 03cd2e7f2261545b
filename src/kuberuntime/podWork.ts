/**
 * What a pod's work (its sync, its termination, its cleanup: pkg/kubelet/kuberuntime
 * kuberuntime_manager.go SyncPod, KillPod) uses of the node, grouped by concern. The node builds
 * each group once (src/pod/podWork.ts); each step takes only the groups it reads; one run of a pod's
 * work shares them all but `cri`, which it wraps to trace its own calls.
 *
 *   cri       the runtime and image services, the shared image puller, the pods' runtime IDs
 *   host      the machine the pod runs on: its clock, directories, mounts, cgroups, memory,
 *             addresses and user namespaces, and the node's settings for pods (seccomp, DNS,
 *             crash-loop back-off)
 *   cluster   the API objects a pod refers to (ConfigMaps, Secrets, Services, tokens, RuntimeClasses); absent on a
 *             standalone node
 *   observe   what the work tells: its events, its log lines, what the metrics count
 *   resize    the node's in-place resize records (the allocation manager); absent: never resized
 */
import type { Service } from '../api/cluster.ts';
import type { ResourceAmounts } from '../api/quantity.ts';
import type { Pod } from '../api/types.ts';
import type { ObjectReader } from '../client/objects.ts';
import type { EventRecorder } from '../eventrecorder/recorder.ts';
import type { Logger } from '../log.ts';
import type { CredentialSource } from '../credentialprovider/keyring.ts';
import type { ImagePulls } from '../runtime/callTrace.ts';
import type { ImageService, RuntimeService, UserNamespace } from '../runtime/types.ts';
import type { Mounter } from '../volumes/mounter.ts';
import type { PodDataDirs } from '../volumes/setUp.ts';
import type { VolumeWorld } from '../volumes/world.ts';
import type { TokenManager } from '../volumes/tokens.ts';
import type { BackoffPolicy } from './backoff.ts';
import type { NodeDns } from './dns.ts';
import type { HookIO } from './hooks.ts';
import type { RuntimePodIds } from './podIds.ts';
import type { ImagePullRecords } from './pullRecords.ts';
import type { PodResizeCgroups, PodResizeState } from './resize.ts';
import type { MemoryFeatures } from './resources.ts';
import type { SecuritySettings } from './securityContext.ts';

export interface PodCri {
  runtime: RuntimeService;
  images: ImageService;
  /** The node's puller: one pull per image at a time, however many pods wait for it. */
  puller: ImagePulls;
  /**
   * The records of the images the node pulled and with which credentials
   * (KubeletEnsureSecretPulledImages, pullRecords.ts); absent: a present image is used as it is.
   */
  pullRecords?: ImagePullRecords;
  /**
   * The node's keyrings, asked in order after the pod's pull secrets: its docker config files
   * (src/credentialprovider/nodeDockerConfig.ts), then its credential provider plugins
   * (src/credentialprovider/plugins.ts). Absent: none.
   */
  nodeCredentials?: readonly CredentialSource[];
  /** The sandbox and container IDs of each pod, kept by the runtime given here (podIds.ts); absent: pods are read by listing. */
  podIds?: RuntimePodIds;
}

/** The pods' cgroups (src/cm), where the node keeps them (--cgroups-per-qos). */
export interface PodCgroups {
  /** The pod's cgroup: its sandbox's cgroup parent. */
  parentOf(pod: Pod): string;
  /** Makes the pod's cgroup with its limits if it is missing; rejects with the kubelet's error, its cause in `causeText`. */
  ensurePod(pod: Pod): Promise<void>;
  /** Removes the terminated pod's cgroup. */
  destroyPod(pod: Pod): Promise<void>;
  /** For an in-place resize (resize.ts): the pod cgroup's settings now, what they should be, and setting them. */
  podResources?: PodResizeCgroups['podResources'];
  resizeConfig?: PodResizeCgroups['resizeConfig'];
  setPodResources?: PodResizeCgroups['setPodResources'];
}

export interface PodHost {
  now(): number;
  /** Where pod log directories go (the kubelet uses /var/log/pods). */
  podLogsRoot: string;
  /** `<root-dir>/pods`: each pod's directory (its managed /etc/hosts, its volumes, its termination message files); absent: no files for pods. */
  podsDir?: string;
  /** The pods whose data directories are made (under `podsDir`); absent: looked for at every sync. */
  dataDirs?: PodDataDirs;
  /** Puts memory-backed volumes on tmpfs; absent: they are on disk. */
  mounter?: Mounter;
  /** The pods' cgroups; absent: the runtime's defaults (no pod or QoS cgroups). */
  podCgroups?: PodCgroups;
  /** --seccomp-default and where Localhost seccomp profiles are. */
  security: SecuritySettings;
  /** The machine's memory: a Burstable container's OOM score is its request's share of it. */
  memoryCapacityBytes: number;
  /** The node's cgroup version, swap controller and huge page sizes: each container's HugeTLB and swap settings. */
  memoryFeatures: MemoryFeatures;
  /** The node's addresses (--node-ip), first the primary: `status.hostIP(s)` in environments. */
  hostIPs?: string[];
  /** The node's DNS settings (--cluster-dns, --cluster-domain, --resolv-conf): each sandbox's DNSConfig. */
  dns?: NodeDns;
  /** The node's allocatable amounts once known: the limit a container leaves unset (resourceFieldRef). */
  allocatable?: () => ResourceAmounts | undefined;
  /** The crash-loop back-off (--crash-loop-backoff-initial/-max). */
  crashLoop: BackoffPolicy;
  /** The hooks' network and sleep (tests drive them); Node's own when absent. */
  hookIO?: HookIO;
  /** The pods' user namespaces (src/userns). */
  userNamespaces: PodUserNamespaces;
  /** The pods' volumes, which the volume manager sets up and tears down (src/volumes/world.ts). */
  volumes: PodVolumes;
}

/** The volume manager as a pod's work asks it (volume_manager.go WaitForAttachAndMount, WaitForUnmount, GetMountedVolumesForPod). */
export type PodVolumes = Pick<VolumeWorld, 'waitForAttachAndMount' | 'unmountPod' | 'releasePod' | 'mountedVolumes' | 'extraSupplementalGroups'>;

/** The pods' user namespaces as a pod's work uses them (src/userns/manager.ts). */
export interface PodUserNamespaces {
  /** The pod's namespace options on `handler`: the node's, or a block of IDs of its own (`hostUsers: false`); rejects with the kubelet's reason. */
  mappingsFor(pod: Pod, handler: string): Promise<UserNamespace>;
  /** The pod's directory is gone: its block is free. */
  release(uid: string): Promise<void>;
}

export interface PodCluster {
  /** Reads the ConfigMaps and Secrets environments and volumes refer to. */
  objects: ObjectReader;
  /** The cluster's Services as last listed (null: not yet). */
  services(): readonly Service[] | null;
  /** Service-account tokens for projected volumes. */
  tokens: TokenManager;
  /** The handler of the RuntimeClass named, as last listed; null: the node knows no such class. */
  runtimeClassHandler(name: string): string | null;
}

export interface PodObserve {
  /** The pods' and containers' events (Killing, Created, Started, BackOff, …). */
  recorder: EventRecorder;
  log: Logger;
  /**
   * Told of every container start attempted (not one held back by its crash-loop backoff), with
   * the waiting reason it failed with: the kubelet's started-containers metrics.
   */
  containerStarted?(type: StartedContainerType, failure: string | null): void;
  /** Told when an image pull for a pod starts and when it succeeds: the pod startup SLI leaves pulls out. */
  imagePull?(podUid: string, stage: 'started' | 'finished'): void;
}

/** The kubelet's `container_type` label of the started-containers metrics. */
export type StartedContainerType = 'container' | 'init_container' | 'ephemeral_container';

export interface PodWork {
  cri: PodCri;
  host: PodHost;
  cluster?: PodCluster;
  observe: PodObserve;
  resize?: PodResizeState;
}
