/**
 * What statelet does with each KubeletConfiguration v1beta1 field that is not one of its settings
 * (those are the `configField`s of options.ts). Every field of the pinned release
 * (kubeletConfigApi.ts KUBELET_CONFIG_FIELDS) has a status here or in options.ts, and
 * test/cli/kubeletConfigFields.test.ts fails on one that has neither: a field statelet does not
 * implement is accepted at its default only (the default SetDefaults_KubeletConfiguration gives,
 * or the zero value that means it) and refused otherwise, naming the field and the value.
 */

import { IDS_PER_POD } from '../userns/rules.ts';

export type FieldStatus =
  /** statelet cannot do what another value asks; `reason` says what it does instead. `also`: values honoured besides the default. */
  | { readonly defaultOnly: string; readonly also?: readonly unknown[] }
  /** Any valid value is honoured, without a setting of its own; `honoured` says how. */
  | { readonly honoured: string };

const noShutdownManager = 'statelet does not delay node shutdown for its pods (the kubelet takes a systemd inhibitor lock); node shutdown handling stays off, the default';
const noProfiling = 'statelet serves no Go profiling or debug-flags endpoints';
/** For a handler the kubelet serves by default and statelet does not have: false is what it does. */
const noProfilingHandler = { defaultOnly: `${noProfiling}, which the kubelet does by default; false is what it does`, also: [false] } as const;
const onlyPolicyNone = 'statelet has the CPU and Topology Managers\' "none" policy only, which takes no options';

/** By dotted path (`authentication.webhook.cacheTTL`); a path's status covers its fields. */
export const CONFIG_FIELD_STATUS: Readonly<Record<string, FieldStatus>> = {
  enableServer: { defaultOnly: 'statelet always serves its authenticated API unless --port is 0' },
  tlsCurvePreferences: { defaultOnly: "statelet's authenticated API offers Node.js's default curves" },
  'authentication.webhook.cacheTTL': { defaultOnly: 'statelet caches TokenReview answers for 2m0s, the default, and takes no other TTL' },
  'authorization.webhook.cacheAuthorizedTTL': { defaultOnly: 'statelet caches allowed SubjectAccessReview answers for 5m0s, the default, and takes no other TTL' },
  'authorization.webhook.cacheUnauthorizedTTL': { defaultOnly: 'statelet caches denied SubjectAccessReview answers for 30s, the default, and takes no other TTL' },
  enableDebuggingHandlers: { defaultOnly: 'statelet always serves /containerLogs, /exec, /attach, /portForward and /runningpods/ on its authenticated API' },
  enableContentionProfiling: { defaultOnly: noProfiling },
  streamingConnectionIdleTimeout: { defaultOnly: 'statelet does not close idle exec, attach and port-forward streams on a timeout of its own' },
  kubeletCgroups: { defaultOnly: 'statelet does not move itself into a cgroup' },
  systemCgroups: { defaultOnly: 'statelet does not move system processes into a cgroup' },
  singleProcessOOMKill: { defaultOnly: "statelet leaves the runtime's OOM grouping (memory.oom.group) at the kubelet's default" },
  cpuManagerPolicyOptions: { defaultOnly: onlyPolicyNone },
  cpuManagerReconcilePeriod: { defaultOnly: onlyPolicyNone },
  topologyManagerScope: { defaultOnly: onlyPolicyNone },
  topologyManagerPolicyOptions: { defaultOnly: onlyPolicyNone },
  qosReserved: { defaultOnly: 'statelet does not reserve memory per QoS class (it needs the QOSReserved gate and memory QoS)' },
  hairpinMode: { defaultOnly: "statelet leaves hairpin traffic to the runtime's network plugin" },
  runOnce: { defaultOnly: 'statelet runs as a node agent only, not in run-once mode' },
  cpuCFSQuota: { defaultOnly: 'statelet always enforces CPU limits with a CFS quota' },
  cpuCFSQuotaPeriod: { defaultOnly: 'statelet always uses the 100ms CFS period' },
  nodeStatusMaxImages: { defaultOnly: 'statelet reports the images in node status as the kubelet does at the default, 50' },
  contentType: { defaultOnly: 'statelet talks JSON to the API server (application/json is honoured)', also: ['application/json'] },
  podsPerCore: { defaultOnly: 'statelet limits pods by maxPods only' },
  enableControllerAttachDetach: { defaultOnly: 'statelet leaves volume attach and detach to the attach/detach controller' },
  protectKernelDefaults: { defaultOnly: 'statelet does not check kernel tunables against its defaults' },
  makeIPTablesUtilChains: { defaultOnly: 'statelet makes no iptables chains, which the kubelet does by default; false is what it does', also: [false] },
  iptablesMasqueradeBit: { defaultOnly: 'statelet makes no iptables chains' },
  iptablesDropBit: { defaultOnly: 'statelet makes no iptables chains' },
  mergeDefaultEvictionSettings: { honoured: "true adds the default hard eviction thresholds the --config file's evictionHard leaves out (server.go loadConfigFile)" },
  containerLogMaxWorkers: { defaultOnly: 'statelet rotates container logs one at a time, the default' },
  configMapAndSecretChangeDetectionStrategy: { defaultOnly: 'statelet watches the ConfigMaps and Secrets its pods use (Watch)' },
  reservedSystemCPUs: { defaultOnly: 'statelet reserves resources by quantity (systemReserved, kubeReserved), not by CPU list' },
  showHiddenMetricsForVersion: { defaultOnly: 'statelet has no hidden metrics to show' },
  systemReservedCgroup: { defaultOnly: "statelet does not manage the system daemons' cgroup" },
  kubeReservedCgroup: { defaultOnly: "statelet does not manage the Kubernetes daemons' cgroup" },
  defaultPodSysctls: { defaultOnly: 'statelet sets no sysctls on pods that do not ask for them' },
  volumePluginDir: { defaultOnly: 'statelet has no FlexVolume plugins' },
  kernelMemcgNotification: { defaultOnly: 'statelet measures memory pressure by polling, not by memcg notification' },
  'logging.flushFrequency': { honoured: 'statelet writes each log line at once, so no line waits longer than the flush frequency' },
  'logging.vmodule': { defaultOnly: 'statelet has one verbosity for all its modules (-v)' },
  'logging.options': { defaultOnly: 'statelet writes all log lines to one stream, unbuffered' },
  enableSystemLogHandler: { defaultOnly: "statelet serves no node log files (/logs/), which the kubelet does by default; false is what it does", also: [false] },
  enableSystemLogQuery: { defaultOnly: 'statelet has no node log query (/logs/?query=), off as by default' },
  shutdownGracePeriod: { defaultOnly: noShutdownManager },
  shutdownGracePeriodCriticalPods: { defaultOnly: noShutdownManager },
  shutdownGracePeriodByPodPriority: { defaultOnly: noShutdownManager },
  reservedMemory: { defaultOnly: 'statelet has the Memory Manager\'s "None" policy only, which reserves no NUMA memory' },
  enableProfilingHandler: noProfilingHandler,
  enableDebugFlagsHandler: noProfilingHandler,
  memoryThrottlingFactor: { defaultOnly: 'statelet does not set memory.high (memory QoS)' },
  memoryReservationPolicy: { defaultOnly: 'statelet does not set memory.min (memory QoS)' },
  tracing: { defaultOnly: 'statelet exports no OpenTelemetry traces' },
  localStorageCapacityIsolation: { defaultOnly: "statelet enforces ephemeral-storage requests and limits, the kubelet's default" },
  'userNamespaces.idsPerPod': { defaultOnly: `statelet gives each pod of its own user namespace ${IDS_PER_POD} IDs, the default`, also: [IDS_PER_POD] },
};

/**
 * The KubeletConfiguration fields that name a file, resolved against the --config file's
 * directory when relative (pkg/kubelet/apis/config/helpers.go KubeletConfigurationPathRefs).
 */
export const CONFIG_PATH_FIELDS: readonly string[] = [
  'staticPodPath',
  'authentication.x509.clientCAFile',
  'tlsCertFile',
  'tlsPrivateKeyFile',
  'resolvConf',
  'volumePluginDir',
  'podLogsDir',
];
