/**
 * The groups a pod's work uses of the node (kuberuntime/podWork.ts), built once per node from its
 * settings and parts, the way kubelet.go NewMainKubelet hands its runtime manager what it needs.
 */
import os from 'node:os';
import path from 'node:path';
import type { AgentConfig } from '../cli/config.ts';
import { crashLoopBackOffPolicy } from '../cli/config.ts';
import type { Clock } from '../clock.ts';
import { hookIOOn } from '../kuberuntime/hooks.ts';
import { ImagePuller } from '../kuberuntime/images.ts';
import { RuntimePodIds, recordingPodIds } from '../kuberuntime/podIds.ts';
import { parseAllowlist } from '../kuberuntime/pullPolicy.ts';
import { FilePullRecords } from '../kuberuntime/pullRecords.ts';
import type { PodCgroups, PodCluster, PodCri, PodHost, PodObserve, PodVolumes } from '../kuberuntime/podWork.ts';
import type { KubeApi } from '../client/api.ts';
import { OBJECT_CACHE_TTL_MS, apiObjectReader } from '../client/objects.ts';
import type { RuntimeClassLister } from '../client/runtimeClasses.ts';
import type { ServiceLister } from '../client/services.ts';
import { UserNamespaceManager } from '../userns/manager.ts';
import { TokenManager } from '../volumes/tokens.ts';
import type { EventRecorder } from '../eventrecorder/recorder.ts';
import type { Logger } from '../log.ts';
import type { NodeDns } from '../kuberuntime/dns.ts';
import type { MemoryFeatures } from '../kuberuntime/resources.ts';
import type { ResourceAmounts } from '../api/quantity.ts';
import type { CredentialSource } from '../credentialprovider/keyring.ts';
import type { ImageService, RuntimeHandler, RuntimeService } from '../runtime/types.ts';
import type { Mounter } from '../volumes/mounter.ts';
import { PodDataDirs } from '../volumes/setUp.ts';

type PodSettings = Pick<
  AgentConfig,
  | 'rootDir'
  | 'podLogsDir'
  | 'nodeIp'
  | 'seccompDefault'
  | 'serializeImagePulls'
  | 'maxParallelImagePulls'
  | 'registryPullQps'
  | 'registryBurst'
  | 'crashLoopBackOffInitialMs'
  | 'crashLoopBackOffMaxMs'
  | 'imagePullCredentialsVerificationPolicy'
  | 'preloadedImagesVerificationAllowlist'
>;

/** `<root-dir>/pods`, where each pod's directory is. */
export const podsDirOf = (rootDir: string) => path.join(rootDir, 'pods');

/**
 * The runtime as the node's pods use it: every sandbox and container created or removed through it
 * is recorded by pod, so that a pod's status is read by asking about those IDs without listing
 * (podIds.ts); and the node's one image puller (--serialize-image-pulls, --max-parallel-image-pulls).
 */
export function podCri(runtime: RuntimeService, images: ImageService, config: PodSettings, log: Logger, nodeCredentials?: readonly CredentialSource[]): PodCri & { puller: ImagePuller } {
  const podIds = new RuntimePodIds();
  const allowlist = parseAllowlist(config.preloadedImagesVerificationAllowlist);
  // The allowlist was checked when the settings were read (cli/options.ts); this is the same check.
  if (typeof allowlist === 'string') throw new Error(`preloadedImagesVerificationAllowlist: ${allowlist}`);
  return {
    runtime: recordingPodIds(runtime, podIds),
    images,
    puller: new ImagePuller(images, config.serializeImagePulls ? 1 : (config.maxParallelImagePulls ?? Infinity), { qps: config.registryPullQps, burst: config.registryBurst, now: Date.now }),
    pullRecords: new FilePullRecords({
      rootDir: config.rootDir,
      policy: config.imagePullCredentialsVerificationPolicy,
      allowlist,
      log,
      listImages: () => images.listImages({ timeoutMs: 10_000 }),
    }),
    podIds,
    ...(nodeCredentials ? { nodeCredentials } : {}),
  };
}

interface HostParts {
  clock: Clock;
  mounter: Mounter;
  /** The machine's memory when it is not the host's (sim:// simulates its machine's). */
  machineMemory?: () => { totalBytes: number };
  memoryFeatures: MemoryFeatures;
  podCgroups?: PodCgroups;
  dns?: NodeDns;
  /** The node's allocatable amounts once known (the admission view's). */
  allocatable(): ResourceAmounts | undefined;
  /** The runtime handlers its Status reported last; null before it answered (the user namespaces' check). */
  runtimeHandlers(): readonly RuntimeHandler[] | null;
  log: Logger;
  /** The pods' volumes (the volume manager's states of the world). */
  volumes: PodVolumes;
}

/** The machine the node's pods run on, and the node's settings for them. */
export function podHost(config: PodSettings, parts: HostParts): PodHost {
  const podsDir = podsDirOf(config.rootDir);
  return {
    now: () => parts.clock.now(),
    podLogsRoot: config.podLogsDir,
    podsDir,
    dataDirs: new PodDataDirs(podsDir),
    mounter: parts.mounter,
    ...(parts.podCgroups ? { podCgroups: parts.podCgroups } : {}),
    security: { seccompDefault: config.seccompDefault, seccompProfileRoot: path.join(config.rootDir, 'seccomp') },
    memoryCapacityBytes: parts.machineMemory?.().totalBytes ?? os.totalmem(),
    memoryFeatures: parts.memoryFeatures,
    ...(config.nodeIp ? { hostIPs: config.nodeIp.split(',') } : {}),
    ...(parts.dns ? { dns: parts.dns } : {}),
    allocatable: parts.allocatable,
    crashLoop: crashLoopBackOffPolicy(config),
    hookIO: hookIOOn(parts.clock),
    userNamespaces: new UserNamespaceManager(podsDir, () => parts.runtimeHandlers(), parts.log),
    volumes: parts.volumes,
  };
}

/** What the node's pod work tells: the node's events and log, and the metrics that count starts and pulls. */
export function podObserve(
  recorder: EventRecorder,
  log: Logger,
  /** Called as its methods (the agent's metrics are an object). */
  metrics: Pick<PodObserve, 'containerStarted'>,
  pulls?: { pullStarted(uid: string): void; pullFinished(uid: string): void },
): PodObserve {
  return {
    recorder,
    log,
    ...(metrics.containerStarted ? { containerStarted: (type, failure) => metrics.containerStarted?.(type, failure) } : {}),
    ...(pulls ? { imagePull: (uid: string, stage: 'started' | 'finished') => (stage === 'started' ? pulls.pullStarted(uid) : pulls.pullFinished(uid)) } : {}),
  };
}

/** The API objects the node's pods refer to: ConfigMaps and Secrets (cached a minute), the Services, service-account tokens, the RuntimeClasses. */
export function podCluster(
  api: KubeApi,
  listers: { services: Pick<ServiceLister, 'services'>; runtimeClasses: Pick<RuntimeClassLister, 'handlerOf'> },
  clock: Clock,
  log: Logger,
): PodCluster {
  const now = () => clock.now();
  return {
    objects: apiObjectReader(api, { ttlMs: OBJECT_CACHE_TTL_MS, now }),
    services: () => listers.services.services(),
    tokens: new TokenManager(api, now, log),
    runtimeClassHandler: (name) => listers.runtimeClasses.handlerOf(name),
  };
}
