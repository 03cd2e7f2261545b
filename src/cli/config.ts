/**
 * The agent's configuration: what the command line and the KubeletConfiguration file resolve to,
 * with the defaults they start from. Field-by-field flag and file names live in `options.ts`.
 */

import os from 'node:os';
import path from 'node:path';
import { type BackoffPolicy, crashLoopPolicy } from '../kuberuntime/backoff.ts';
import type { Taint } from '../api/cluster.ts';
import { type ContainerGcPolicy, defaultContainerGcPolicy } from '../kuberuntime/containerGC.ts';
import type { ImageGcPolicy } from '../kuberuntime/imageGC.ts';
import { DEFAULT_VERIFICATION_POLICY, type VerificationPolicy } from '../kuberuntime/pullPolicy.ts';
import { formatDuration } from '../duration.ts';
import { DEFAULT_TLS_MIN_VERSION, type TlsVersionName } from './tlsSettings.ts';

export interface AgentConfig {
  /** --pod-manifest-path / staticPodPath: directory (or file) of static pod manifests. */
  podManifestPath?: string;
  /** --manifest-url / staticPodURL: URL serving static pod manifests. */
  manifestUrl?: string;
  /** --manifest-url-header / staticPodURLHeader: headers sent with manifestUrl requests. */
  manifestUrlHeaders: Record<string, string[]>;
  /** --kubeconfig: API server credentials; with it the agent joins the cluster (node, Lease, API pods). */
  kubeconfig?: string;
  /** --bootstrap-kubeconfig: credentials to ask the API server for the node's client certificate with (TLS bootstrap). */
  bootstrapKubeconfig?: string;
  /** --rotate-certificates / rotateCertificates: renew the client certificate through CertificateSigningRequests. */
  rotateCertificates: boolean;
  /** --rotate-server-certificates / serverTLSBootstrap: the serving certificate from a kubernetes.io/kubelet-serving CSR. */
  serverTLSBootstrap: boolean;
  /** --tls-cipher-suites / tlsCipherSuites: Go cipher suite names (tlsSettings.ts maps them to OpenSSL's); []: the default. */
  tlsCipherSuites: string[];
  /** --tls-min-version / tlsMinVersion: the lowest TLS version the authenticated API accepts. */
  tlsMinVersion: TlsVersionName;
  /** --config-dir: the directory of KubeletConfiguration drop-ins merged over --config. */
  configDir?: string;
  /** --cloud-provider: 'external' (a cloud controller manager initializes the node) or '' (none). */
  cloudProvider: '' | 'external';
  /** --provider-id / providerID: spec.providerID of the Node at registration ('' : none). */
  providerId: string;
  /** --feature-gates / featureGates: every gate the kubelet knows, at its default unless set. */
  featureGates: Record<string, boolean>;
  /** --register-node / registerNode: register the Node object with the API server. */
  registerNode: boolean;
  /** --node-labels: labels added to the Node at registration. */
  nodeLabels: Record<string, string>;
  /** --register-with-taints / registerWithTaints: taints the Node is registered with. */
  registerWithTaints: Taint[];
  /** --node-status-update-frequency / nodeStatusUpdateFrequency: how often the node status is computed. */
  nodeStatusUpdateFrequencyMs: number;
  /** --node-status-report-frequency / nodeStatusReportFrequency: the longest time between status writes when nothing changed. */
  nodeStatusReportFrequencyMs: number;
  /** --node-lease-duration-seconds / nodeLeaseDurationSeconds: the Lease's duration; it is renewed every quarter of it. */
  nodeLeaseDurationSeconds: number;
  /** --kube-api-qps / kubeAPIQPS and --kube-api-burst / kubeAPIBurst: the client-side limit on API requests (0: none). */
  kubeApiQps: number;
  kubeApiBurst: number;
  /** --registry-qps / registryPullQPS and --registry-burst / registryBurst: the image pull rate limit. */
  registryPullQps: number;
  registryBurst: number;
  /** --event-qps / eventRecordQPS and --event-burst / eventBurst: the same for events. */
  eventQps: number;
  eventBurst: number;
  /** --cluster-dns / clusterDNS: the cluster's DNS servers. */
  clusterDns: string[];
  /** --cluster-domain / clusterDomain: the cluster's DNS domain ('' : none). */
  clusterDomain: string;
  /** --resolv-conf / resolvConf: the host resolver file pods with dnsPolicy Default inherit. */
  resolvConf: string;
  /** --system-reserved / systemReserved: resources held back for the system (quantities by resource name). */
  systemReserved: Record<string, string>;
  /** --kube-reserved / kubeReserved: resources held back for Kubernetes daemons. */
  kubeReserved: Record<string, string>;
  /** --container-runtime-endpoint / containerRuntimeEndpoint, normalised to `unix://…` or `sim://…`. */
  containerRuntimeEndpoint: string;
  /** --image-service-endpoint / imageServiceEndpoint; resolved to containerRuntimeEndpoint when unset. */
  imageServiceEndpoint?: string;
  /** --runtime-request-timeout / runtimeRequestTimeout: the deadline of runtime calls (pulls excepted). */
  runtimeRequestTimeoutMs: number;
  /** --hostname-override, as given. */
  hostnameOverride?: string;
  /** hostnameOverride, else the machine's hostname; trimmed and lowercased as the kubelet does. */
  nodeName: string;
  /** --node-ip: one address, or two of different families for dual-stack, comma-separated. */
  nodeIp?: string;
  /** --pod-cidr / podCIDR: the node's pod CIDR(s), comma-separated, until the Node has spec.podCIDRs. */
  podCidr?: string;
  /** --root-dir. */
  rootDir: string;
  /** Where pod log directories are created (`<namespace>_<name>_<uid>/<container>/<n>.log`). */
  podLogsDir: string;
  /** --file-check-frequency / fileCheckFrequency. */
  fileCheckFrequencyMs: number;
  /** --http-check-frequency / httpCheckFrequency. */
  httpCheckFrequencyMs: number;
  /** --sync-frequency / syncFrequency. */
  syncFrequencyMs: number;
  /** --address / address. */
  address: string;
  /** --port / port: the authenticated API (HTTPS) port; 0 disables. */
  port: number;
  /** --tls-cert-file, --tls-private-key-file: its serving certificate; absent: self-signed in certDir. */
  tlsCertFile?: string;
  tlsPrivateKeyFile?: string;
  /** --cert-dir: where the self-signed certificate is kept (default `<root-dir>/pki`). */
  certDir?: string;
  /** --client-ca-file: the CA of accepted client certificates. */
  clientCaFile?: string;
  /** --anonymous-auth: requests without credentials as system:anonymous. */
  anonymousAuth: boolean;
  /** --authentication-token-webhook: bearer tokens checked with TokenReview (default: with --kubeconfig). */
  authenticationTokenWebhook?: boolean;
  /** --authorization-mode: `Webhook` (SubjectAccessReview) or `AlwaysAllow` (default: Webhook with --kubeconfig). */
  authorizationMode?: 'AlwaysAllow' | 'Webhook';
  /** --container-log-max-size / containerLogMaxSize, in bytes. */
  containerLogMaxSize: number;
  /** --container-log-max-files / containerLogMaxFiles. */
  containerLogMaxFiles: number;
  /** containerLogMonitorInterval (and a statelet flag). */
  containerLogMonitorIntervalMs: number;
  /** --allowed-unsafe-sysctls / allowedUnsafeSysctls: namespaced sysctls pods may set besides the safe ones. */
  allowedUnsafeSysctls: string[];
  /** --seccomp-default / seccompDefault: RuntimeDefault for containers that name no seccomp profile. */
  seccompDefault: boolean;
  /** --cgroups-per-qos / cgroupsPerQOS: the kubepods, QoS and pod cgroups. */
  cgroupsPerQos: boolean;
  /** --cgroup-root / cgroupRoot: where kubepods goes ('' for the root). */
  cgroupRoot: string;
  /** --cgroup-driver / cgroupDriver: cgroupfs only. */
  cgroupDriver: 'cgroupfs';
  /**
   * --cpu-manager-policy / cpuManagerPolicy, --memory-manager-policy / memoryManagerPolicy,
   * --topology-manager-policy / topologyManagerPolicy: the default policies only; the others
   * (exclusive CPUs, NUMA-pinned memory, topology alignment) are refused at start.
   */
  cpuManagerPolicy: 'none';
  memoryManagerPolicy: 'None';
  topologyManagerPolicy: 'none';
  /** --enforce-node-allocatable / enforceNodeAllocatable: ['pods'], or [] for none. */
  enforceNodeAllocatable: string[];
  /** --pod-max-pids / podPidsLimit; -1: none. */
  podMaxPids: number;
  /** --fail-swap-on / failSwapOn: refuse to start while the machine has swap on. */
  failSwapOn: boolean;
  /** --oom-score-adj / oomScoreAdj and --max-open-files / maxOpenFiles: the agent process's own limits, set at start. */
  oomScoreAdj: number;
  maxOpenFiles: number;
  /** --fail-cgroupv1 / failCgroupV1: refuse to start on a cgroup v1 host. */
  failCgroupV1: boolean;
  /** memorySwap.swapBehavior (config file only): NoSwap, or '' meaning the same; LimitedSwap is refused. */
  memorySwapBehavior: '' | 'NoSwap';
  /** --eviction-hard / evictionHard: signal to threshold (`memory.available` → `100Mi`); given, it replaces the defaults. */
  evictionHard: Record<string, string>;
  /** --eviction-soft / evictionSoft. */
  evictionSoft: Record<string, string>;
  /** --eviction-soft-grace-period / evictionSoftGracePeriod: signal to duration. */
  evictionSoftGracePeriod: Record<string, string>;
  /** --eviction-minimum-reclaim / evictionMinimumReclaim: signal to quantity or percentage. */
  evictionMinimumReclaim: Record<string, string>;
  /** --eviction-pressure-transition-period / evictionPressureTransitionPeriod. */
  evictionPressureTransitionPeriodMs: number;
  /** --eviction-max-pod-grace-period / evictionMaxPodGracePeriod, in seconds. */
  evictionMaxPodGracePeriod: number;
  /** --volume-stats-agg-period / volumeStatsAggPeriod: how often the pods' volumes' usage is measured (0: never). */
  volumeStatsAggPeriodMs: number;
  /** --read-only-address (statelet): where the unauthenticated read-only port binds. */
  readOnlyAddress: string;
  /** --read-only-port / readOnlyPort; 0 disables. */
  readOnlyPort: number;
  /** --healthz-port / healthzPort; 0 disables. */
  healthzPort: number;
  /** --healthz-bind-address / healthzBindAddress. */
  healthzBindAddress: string;
  /** --max-pods / maxPods. */
  maxPods: number;
  /** --serialize-image-pulls / serializeImagePulls. */
  serializeImagePulls: boolean;
  /** maxParallelImagePulls (config file only, as in the kubelet). */
  maxParallelImagePulls?: number;
  /**
   * imagePullCredentialsVerificationPolicy (config file only): when a pod must show credentials
   * for an image already on the node (KubeletEnsureSecretPulledImages, kuberuntime/pullPolicy.ts).
   */
  imagePullCredentialsVerificationPolicy: VerificationPolicy;
  /** preloadedImagesVerificationAllowlist (config file only): repositories NeverVerifyAllowlistedImages lets any pod use. */
  preloadedImagesVerificationAllowlist: string[];
  /** --image-credential-provider-config: the CredentialProviderConfig file, or a directory of them. */
  imageCredentialProviderConfig?: string;
  /** --image-credential-provider-bin-dir: the directory of the credential provider plugins' executables. */
  imageCredentialProviderBinDir?: string;
  /** --pleg-relist-period (statelet). */
  plegRelistPeriodMs: number;
  /** --evented-pleg (statelet): use the runtime's container event stream where it has one. */
  eventedPleg: boolean;
  /** --evented-pleg-relist-period (statelet): the relist period while the event stream is healthy. */
  eventedPlegRelistPeriodMs: number;
  /** --crash-loop-backoff-initial (statelet): the first crash-loop restart delay. */
  crashLoopBackOffInitialMs: number;
  /** --crash-loop-backoff-max / crashLoopBackOff.maxContainerRestartPeriod: the delay's cap. */
  crashLoopBackOffMaxMs: number;
  /** --container-gc-period (statelet): how often the container GC runs; the kubelet's is fixed at 1 m. */
  containerGcPeriodMs: number;
  /** --minimum-container-ttl-duration: a finished container's minimum age before GC removes it. */
  minimumContainerTtlMs: number;
  /** --maximum-dead-containers-per-container: finished instances kept per container (-1: all). */
  maxDeadContainersPerContainer: number;
  /** --maximum-dead-containers: finished containers kept in total (-1: no limit). */
  maxDeadContainers: number;
  /** --image-gc-high-threshold / imageGCHighThresholdPercent: the image filesystem's usage at which image GC frees space. */
  imageGcHighThresholdPercent: number;
  /** --image-gc-low-threshold / imageGCLowThresholdPercent: the usage it frees down to. */
  imageGcLowThresholdPercent: number;
  /** --minimum-image-ttl-duration / imageMinimumGCAge: how long after its first detection an unused image is kept. */
  imageMinimumGcAgeMs: number;
  /** imageMaximumGCAge (config file only, as in the kubelet): an image unused for longer is removed; 0: never. */
  imageMaximumGcAgeMs: number;
  /** --visualizer-port (statelet); 0 disables. */
  visualizerPort: number;
  /** --nodes (statelet): how many simulated nodes this process runs (src/agent/nodes.ts). */
  nodes: number;
  /** --inspect (statelet). */
  inspect?: 'stately';
  /** --inspect-url (statelet): the WebSocket relay for --inspect=stately; the library's default if unset. */
  inspectUrl?: string;
  /** -v / --v. */
  verbosity: number;
  /** --logging-format. */
  logFormat: 'text' | 'json';
  /** --config: the KubeletConfiguration file the other settings were layered over. */
  configFile?: string;
}

/** Everything a user can set; nodeName is derived, never set directly. */
export type AgentSettings = Omit<AgentConfig, 'nodeName'>;

type RequiredKeys<T> = { [K in keyof T]-?: undefined extends T[K] ? never : K }[keyof T];

/** The settings that always have a value, i.e. the ones with a default. */
type AgentDefaults = Pick<AgentSettings, RequiredKeys<AgentSettings>>;

const DEFAULT_CONTAINER_RUNTIME_ENDPOINT = 'unix:///run/containerd/containerd.sock';

/**
 * Which defaults apply. The kubelet keeps two sets: the legacy flag defaults, and the
 * KubeletConfiguration v1beta1 defaults used as soon as `--config` names a file. Among the settings
 * statelet supports they differ only in readOnlyPort, which the file defaults switch off.
 */
type DefaultsProfile = 'flags' | 'config-file';

/** A fresh defaults object (fresh so callers may mutate manifestUrlHeaders safely). */
export function agentDefaults(profile: DefaultsProfile = 'flags'): AgentDefaults {
  return {
    manifestUrlHeaders: {},
    registerNode: true,
    rotateCertificates: false,
    serverTLSBootstrap: false,
    tlsCipherSuites: [],
    tlsMinVersion: DEFAULT_TLS_MIN_VERSION,
    featureGates: {},
    cloudProvider: '',
    providerId: '',
    nodeLabels: {},
    registerWithTaints: [],
    nodeStatusUpdateFrequencyMs: 10_000,
    nodeStatusReportFrequencyMs: 5 * 60_000,
    nodeLeaseDurationSeconds: 40,
    kubeApiQps: 50,
    kubeApiBurst: 100,
    registryPullQps: 5,
    registryBurst: 10,
    eventQps: 50,
    eventBurst: 100,
    clusterDns: [],
    clusterDomain: '',
    resolvConf: '/etc/resolv.conf',
    systemReserved: {},
    kubeReserved: {},
    containerRuntimeEndpoint: DEFAULT_CONTAINER_RUNTIME_ENDPOINT,
    rootDir: '/var/lib/kubelet',
    podLogsDir: '/var/log/pods',
    fileCheckFrequencyMs: 20_000,
    // pkg/kubelet/apis/config/v1beta1/defaults.go: RuntimeRequestTimeout 2 minutes.
    runtimeRequestTimeoutMs: 2 * 60_000,
    httpCheckFrequencyMs: 20_000,
    syncFrequencyMs: 60_000,
    // The authenticated API listens everywhere, as the kubelet's (the API server must reach it);
    // the unauthenticated read-only port stays on loopback unless the user asks otherwise.
    address: '0.0.0.0',
    readOnlyAddress: '127.0.0.1',
    port: 10250,
    anonymousAuth: false,
    containerLogMaxSize: 10 * 2 ** 20,
    containerLogMaxFiles: 5,
    containerLogMonitorIntervalMs: 10_000,
    seccompDefault: false,
    cgroupsPerQos: true,
    cgroupRoot: '',
    cgroupDriver: 'cgroupfs',
    cpuManagerPolicy: 'none',
    memoryManagerPolicy: 'None',
    topologyManagerPolicy: 'none',
    enforceNodeAllocatable: ['pods'],
    podMaxPids: -1,
    failSwapOn: true,
    // The kubelet's default is true (since 1.35); statelet still runs on cgroup v1 unless told not to.
    failCgroupV1: false,
    oomScoreAdj: -999,
    maxOpenFiles: 1_000_000,
    memorySwapBehavior: '',
    // The kubelet's Linux defaults (pkg/kubelet/eviction/defaults_linux.go).
    evictionHard: { 'memory.available': '100Mi', 'nodefs.available': '10%', 'nodefs.inodesFree': '5%', 'imagefs.available': '15%' },
    evictionSoft: {},
    evictionSoftGracePeriod: {},
    evictionMinimumReclaim: {},
    evictionPressureTransitionPeriodMs: 5 * 60_000,
    evictionMaxPodGracePeriod: 0,
    volumeStatsAggPeriodMs: 60_000,
    allowedUnsafeSysctls: [],
    readOnlyPort: profile === 'config-file' ? 0 : 10255,
    healthzPort: 10248,
    healthzBindAddress: '127.0.0.1',
    maxPods: 110,
    serializeImagePulls: true,
    imagePullCredentialsVerificationPolicy: DEFAULT_VERIFICATION_POLICY,
    preloadedImagesVerificationAllowlist: [],
    plegRelistPeriodMs: 1_000,
    eventedPleg: true,
    // The kubelet's evented PLEG relists every 300 s; statelet every 10 s (docs/architecture.md).
    eventedPlegRelistPeriodMs: 10_000,
    crashLoopBackOffInitialMs: crashLoopPolicy.initialMs,
    crashLoopBackOffMaxMs: crashLoopPolicy.maxMs,
    containerGcPeriodMs: 60_000,
    minimumContainerTtlMs: defaultContainerGcPolicy.minAgeMs,
    maxDeadContainersPerContainer: defaultContainerGcPolicy.maxPerPodContainer,
    maxDeadContainers: defaultContainerGcPolicy.maxContainers,
    // pkg/kubelet/apis/config/v1beta1/defaults.go SetDefaults_KubeletConfiguration.
    imageGcHighThresholdPercent: 85,
    imageGcLowThresholdPercent: 80,
    imageMinimumGcAgeMs: 2 * 60_000,
    imageMaximumGcAgeMs: 0,
    visualizerPort: 0,
    nodes: 1,
    verbosity: 0,
    logFormat: 'text',
  };
}

/** The container GC policy the settings ask for. */
export function containerGcPolicy(
  config: Pick<AgentConfig, 'minimumContainerTtlMs' | 'maxDeadContainersPerContainer' | 'maxDeadContainers'>,
): ContainerGcPolicy {
  return { minAgeMs: config.minimumContainerTtlMs, maxPerPodContainer: config.maxDeadContainersPerContainer, maxContainers: config.maxDeadContainers };
}

/** The image GC policy the settings ask for. */
export function imageGcPolicy(
  config: Pick<AgentConfig, 'imageGcHighThresholdPercent' | 'imageGcLowThresholdPercent' | 'imageMinimumGcAgeMs' | 'imageMaximumGcAgeMs'>,
): ImageGcPolicy {
  return {
    highThresholdPercent: config.imageGcHighThresholdPercent,
    lowThresholdPercent: config.imageGcLowThresholdPercent,
    minAgeMs: config.imageMinimumGcAgeMs,
    maxAgeMs: config.imageMaximumGcAgeMs,
  };
}

/**
 * What is wrong with the image GC settings, in the kubelet's words and order
 * (pkg/kubelet/apis/config/validation/validation.go ValidateKubeletConfiguration). The
 * ImageMaximumGCAge feature gate it also checks is locked on since 1.35.
 */
export function imageGcSettingsErrors(
  settings: Pick<AgentSettings, 'imageGcHighThresholdPercent' | 'imageGcLowThresholdPercent' | 'imageMinimumGcAgeMs' | 'imageMaximumGcAgeMs'>,
): string[] {
  const high = settings.imageGcHighThresholdPercent;
  const low = settings.imageGcLowThresholdPercent;
  const minAge = settings.imageMinimumGcAgeMs;
  const maxAge = settings.imageMaximumGcAgeMs;
  const errors: string[] = [];
  if (high < 0 || high > 100) errors.push(`invalid configuration: imageGCHighThresholdPercent (--image-gc-high-threshold) ${high} must be between 0 and 100, inclusive`);
  if (low < 0 || low > 100) errors.push(`invalid configuration: imageGCLowThresholdPercent (--image-gc-low-threshold) ${low} must be between 0 and 100, inclusive`);
  if (low >= high) {
    errors.push(`invalid configuration: imageGCLowThresholdPercent (--image-gc-low-threshold) ${low} must be less than imageGCHighThresholdPercent (--image-gc-high-threshold) ${high}`);
  }
  if (minAge < 0) errors.push(`invalid configuration: imageMinimumGCAge ${formatDuration(minAge)} must not be negative`);
  if (maxAge < 0) errors.push(`invalid configuration: imageMaximumGCAge ${formatDuration(maxAge)} must not be negative`);
  if (maxAge > 0 && maxAge <= minAge) errors.push(`invalid configuration: imageMaximumGCAge ${formatDuration(maxAge)} must be greater than imageMinimumGCAge ${formatDuration(minAge)}`);
  return errors;
}

/**
 * The crash-loop backoff the settings ask for. As in the kubelet, a maximum below the initial
 * delay lowers the initial delay to it.
 */
export function crashLoopBackOffPolicy(config: Pick<AgentConfig, 'crashLoopBackOffInitialMs' | 'crashLoopBackOffMaxMs'>): BackoffPolicy {
  const maxMs = config.crashLoopBackOffMaxMs;
  return { initialMs: Math.min(config.crashLoopBackOffInitialMs, maxMs), maxMs };
}

/**
 * Accepts `unix://<path>`, `sim://<name>` (the embedded simulated runtime) or an absolute socket
 * path, which the kubelet also still accepts and treats as `unix://<path>`.
 * Throws an Error whose message says why; callers prefix the flag or field name.
 */
export function normalizeRuntimeEndpoint(value: string): string {
  if (value.startsWith('unix://')) {
    if (value.length === 'unix://'.length) throw new Error('unix:// endpoint has no socket path');
    return value;
  }
  if (value.startsWith('sim://')) return value;
  if (path.isAbsolute(value)) return `unix://${value}`;
  const scheme = /^([a-zA-Z][a-zA-Z0-9+.-]*):\/\//.exec(value)?.[1];
  if (scheme !== undefined) {
    throw new Error(`unsupported scheme "${scheme}://" (expected unix://, sim:// or an absolute socket path)`);
  }
  throw new Error('expected unix://<socket path>, sim://, or an absolute socket path');
}

/**
 * The kubelet's hostname rule: the override if given, else the machine's name, trimmed and
 * lowercased (node names are DNS subdomains, which are lowercase).
 */
function resolveNodeName(hostnameOverride: string | undefined, hostname: () => string): string {
  const name = (hostnameOverride !== undefined && hostnameOverride.trim() !== '' ? hostnameOverride : hostname())
    .trim()
    .toLowerCase();
  if (name === '') throw new Error('empty hostname is invalid; set --hostname-override');
  return name;
}

/** Turns merged settings into the final config: derived fields filled in, empty strings unset. */
export function finalizeAgentConfig(
  settings: AgentSettings,
  hostname: () => string = () => os.hostname(),
): AgentConfig {
  const config: AgentConfig = { ...settings, nodeName: resolveNodeName(settings.hostnameOverride, hostname) };
  // An explicit empty value (`--pod-manifest-path=`) means "none", and must override a value from
  // the config file rather than leave an empty string for consumers to special-case.
  for (const key of OPTIONAL_STRING_KEYS) {
    if (config[key] === '') delete config[key];
  }
  config.imageServiceEndpoint ??= config.containerRuntimeEndpoint;
  return config;
}

const OPTIONAL_STRING_KEYS = [
  'podManifestPath',
  'manifestUrl',
  'kubeconfig',
  'bootstrapKubeconfig',
  'imageServiceEndpoint',
  'hostnameOverride',
  'nodeIp',
  'podCidr',
  'configFile',
  'configDir',
  'imageCredentialProviderConfig',
  'imageCredentialProviderBinDir',
] as const satisfies readonly (keyof AgentConfig)[];
