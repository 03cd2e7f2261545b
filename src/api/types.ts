/**
 * The slice of the Kubernetes core/v1 API that statelet reads and writes. Only the fields the
 * agent uses are declared; objects read from sources keep every other field untouched (they are
 * plain JSON), so nothing a user wrote is dropped when the pod is served back on `/pods`.
 */

export interface ObjectMeta {
  name?: string;
  namespace?: string;
  uid?: string;
  resourceVersion?: string;
  generation?: number;
  creationTimestamp?: string;
  deletionTimestamp?: string;
  deletionGracePeriodSeconds?: number;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  ownerReferences?: unknown[];
}

export type RestartPolicy = 'Always' | 'OnFailure' | 'Never';
export type PullPolicy = 'Always' | 'IfNotPresent' | 'Never';

/** A container restart rule (ContainerRestartRule): an action for the exit codes it matches. */
export interface ContainerRestartRule {
  action: 'Restart' | 'RestartAllContainers';
  exitCodes?: { operator: 'In' | 'NotIn'; values?: number[] };
}

export interface EnvVar {
  name: string;
  value?: string;
  valueFrom?: EnvVarSource;
}

export interface VolumeMount {
  name: string;
  mountPath: string;
  readOnly?: boolean;
  subPath?: string;
  /** A subPath with `$(VAR)` references to the container's environment. */
  subPathExpr?: string;
  mountPropagation?: string;
}

interface KeySelector {
  name?: string;
  key: string;
  optional?: boolean;
}

export interface EnvVarSource {
  fieldRef?: { apiVersion?: string; fieldPath: string };
  resourceFieldRef?: { containerName?: string; resource: string; divisor?: string | number };
  configMapKeyRef?: KeySelector;
  secretKeyRef?: KeySelector;
}

interface EnvFromSource {
  prefix?: string;
  configMapRef?: { name?: string; optional?: boolean };
  secretRef?: { name?: string; optional?: boolean };
}

export interface ContainerPort {
  name?: string;
  containerPort: number;
  hostPort?: number;
  hostIP?: string;
  protocol?: 'TCP' | 'UDP' | 'SCTP';
}

interface ExecAction {
  command?: string[];
}

export interface HTTPGetAction {
  path?: string;
  port: number | string;
  host?: string;
  scheme?: 'HTTP' | 'HTTPS';
  httpHeaders?: { name: string; value: string }[];
}

export interface TCPSocketAction {
  port: number | string;
  host?: string;
}

export interface GRPCAction {
  port: number;
  service?: string;
}

export interface Probe {
  exec?: ExecAction;
  httpGet?: HTTPGetAction;
  tcpSocket?: TCPSocketAction;
  grpc?: GRPCAction;
  initialDelaySeconds?: number;
  timeoutSeconds?: number;
  periodSeconds?: number;
  successThreshold?: number;
  failureThreshold?: number;
  terminationGracePeriodSeconds?: number;
}

export interface LifecycleHandler {
  exec?: ExecAction;
  httpGet?: HTTPGetAction;
  tcpSocket?: TCPSocketAction;
  sleep?: { seconds: number };
}

export interface Container {
  name: string;
  image?: string;
  command?: string[];
  args?: string[];
  workingDir?: string;
  env?: EnvVar[];
  envFrom?: EnvFromSource[];
  volumeMounts?: VolumeMount[];
  ports?: ContainerPort[];
  imagePullPolicy?: PullPolicy;
  /**
   * On an init container, `Always` makes it a sidecar; on a regular one, its own policy over the
   * pod's (ContainerRestartRules; containerRestart.ts).
   */
  restartPolicy?: 'Always' | 'OnFailure' | 'Never';
  /** Regular containers with a restartPolicy: rules by exit code, the first matching one acting. */
  restartPolicyRules?: ContainerRestartRule[];
  livenessProbe?: Probe;
  readinessProbe?: Probe;
  startupProbe?: Probe;
  lifecycle?: { postStart?: LifecycleHandler; preStop?: LifecycleHandler };
  resources?: ResourceRequirements;
  /**
   * How a change of each resource through `pods/resize` is applied (ContainerResizePolicy):
   * `NotRequired` (the default) in place, `RestartContainer` by restarting the container.
   */
  resizePolicy?: ContainerResizePolicy[];
  terminationMessagePath?: string;
  terminationMessagePolicy?: 'File' | 'FallbackToLogsOnError';
  stdin?: boolean;
  stdinOnce?: boolean;
  tty?: boolean;
  securityContext?: SecurityContext;
}

/**
 * A container added to a running pod for debugging (`kubectl debug`; k8s.io/api/core/v1
 * EphemeralContainer): a container's fields, set through the `pods/ephemeralcontainers`
 * subresource only, never at creation, never restarted, without ports, probes, lifecycle hooks or
 * resources (the API server refuses them).
 */
export interface EphemeralContainer extends Container {
  /** The container whose pid namespace it joins (CRI NamespaceMode TARGET), when the pod gives each container its own. */
  targetContainerName?: string;
}

export interface SELinuxOptions {
  user?: string;
  role?: string;
  type?: string;
  level?: string;
}

/** A seccomp or AppArmor profile as the pod spec names it. */
export interface ProfileSpec {
  type: 'RuntimeDefault' | 'Unconfined' | 'Localhost';
  localhostProfile?: string;
}

/** A container's security context (k8s.io/api/core/v1 SecurityContext, the Linux members). */
export interface SecurityContext {
  capabilities?: { add?: string[]; drop?: string[] };
  privileged?: boolean;
  seLinuxOptions?: SELinuxOptions;
  runAsUser?: number;
  runAsGroup?: number;
  runAsNonRoot?: boolean;
  readOnlyRootFilesystem?: boolean;
  allowPrivilegeEscalation?: boolean;
  procMount?: 'Default' | 'Unmasked';
  seccompProfile?: ProfileSpec;
  appArmorProfile?: ProfileSpec;
}

/** The pod's security context (PodSecurityContext, the Linux members the agent applies). */
export interface PodSecurityContext {
  seLinuxOptions?: SELinuxOptions;
  runAsUser?: number;
  runAsGroup?: number;
  runAsNonRoot?: boolean;
  supplementalGroups?: number[];
  supplementalGroupsPolicy?: 'Merge' | 'Strict';
  fsGroup?: number;
  /** `OnRootMismatch` or `Always` (the default): how the fsGroup walk of a volume that takes it is done. */
  fsGroupChangePolicy?: string;
  /** Kernel parameters of the pod's namespaces (admitted against the node's allowlist: api/sysctls.ts). */
  sysctls?: { name: string; value: string }[];
  seccompProfile?: ProfileSpec;
  appArmorProfile?: ProfileSpec;
}

export interface ResourceRequirements {
  requests?: Record<string, string | number>;
  limits?: Record<string, string | number>;
}

/** k8s.io/api/core/v1 ContainerResizePolicy. */
export interface ContainerResizePolicy {
  resourceName: string;
  restartPolicy: 'NotRequired' | 'RestartContainer';
}

export interface Toleration {
  key?: string;
  operator?: 'Exists' | 'Equal';
  value?: string;
  effect?: 'NoSchedule' | 'PreferNoSchedule' | 'NoExecute';
  tolerationSeconds?: number;
}

export interface NodeSelectorRequirement {
  key: string;
  operator: 'In' | 'NotIn' | 'Exists' | 'DoesNotExist' | 'Gt' | 'Lt';
  values?: string[];
}

export interface NodeSelectorTerm {
  matchExpressions?: NodeSelectorRequirement[];
  matchFields?: NodeSelectorRequirement[];
}

interface PodSpec {
  /** Secrets with registry credentials for the pod's images (LocalObjectReference). */
  imagePullSecrets?: { name?: string }[];
  containers: Container[];
  initContainers?: Container[];
  /** Added to a running API pod through `pods/ephemeralcontainers`; a static pod has none. */
  ephemeralContainers?: EphemeralContainer[];
  restartPolicy?: RestartPolicy;
  terminationGracePeriodSeconds?: number;
  activeDeadlineSeconds?: number;
  nodeName?: string;
  nodeSelector?: Record<string, string>;
  hostNetwork?: boolean;
  hostPID?: boolean;
  hostIPC?: boolean;
  shareProcessNamespace?: boolean;
  securityContext?: PodSecurityContext;
  hostname?: string;
  /** The pod's hostname in place of hostname and subdomain (HostnameOverride). */
  hostnameOverride?: string;
  /** The sandbox's hostname is the fully qualified name (with a subdomain). */
  setHostnameAsFQDN?: boolean;
  /** Dynamic resource allocation claims (PodResourceClaim): this node prepares none (kuberuntime/dynamicResources.ts). */
  resourceClaims?: { name: string; resourceClaimName?: string; resourceClaimTemplateName?: string }[];
  subdomain?: string;
  tolerations?: Toleration[];
  affinity?: { nodeAffinity?: { requiredDuringSchedulingIgnoredDuringExecution?: { nodeSelectorTerms?: NodeSelectorTerm[] } } };
  /** The cluster-scoped RuntimeClass whose handler runs the pod (unset or '': the runtime's default). */
  runtimeClassName?: string;
  /** false: the pod runs in a user namespace of its own (unset or true: the node's). */
  hostUsers?: boolean;
  /** The runtime class's per-pod cost, added to the containers' requests. */
  overhead?: Record<string, string | number>;
  /** Pod-level requests and limits (PodLevelResources): when set, they replace the containers' sum. */
  resources?: ResourceRequirements;
  priority?: number;
  priorityClassName?: string;
  [field: string]: unknown;
}

interface ContainerStateWaiting {
  reason?: string;
  message?: string;
}
interface ContainerStateRunning {
  startedAt?: string;
}
interface ContainerStateTerminated {
  exitCode: number;
  signal?: number;
  reason?: string;
  message?: string;
  startedAt?: string;
  finishedAt?: string;
  containerID?: string;
}
export interface ContainerState {
  waiting?: ContainerStateWaiting;
  running?: ContainerStateRunning;
  terminated?: ContainerStateTerminated;
}

/** The identity a container's first process started with, as its runtime reports it (ContainerUser). */
export interface ContainerUser {
  linux?: { uid: number; gid: number; supplementalGroups?: number[] };
}

export interface ContainerStatus {
  name: string;
  state: ContainerState;
  lastState: ContainerState;
  ready: boolean;
  restartCount: number;
  image: string;
  imageID: string;
  containerID?: string;
  started?: boolean;
  user?: ContainerUser;
  /** The requests the node has allocated to the container (an in-place resize changes them once admitted). */
  allocatedResources?: Record<string, string | number>;
  /** The requests and limits the container runs with, as its runtime applied them. */
  resources?: ResourceRequirements;
}

export type PodPhase = 'Pending' | 'Running' | 'Succeeded' | 'Failed' | 'Unknown';

export interface PodCondition {
  type: string;
  status: 'True' | 'False' | 'Unknown';
  reason?: string;
  message?: string;
  /** The pod's metadata.generation this condition was set from (the kubelet sets it since 1.34). */
  observedGeneration?: number;
  lastProbeTime?: string | null;
  lastTransitionTime?: string;
}

export interface PodStatus {
  /** The pod's metadata.generation this status reflects (the kubelet sets it since 1.34). */
  observedGeneration?: number;
  phase?: PodPhase;
  reason?: string;
  message?: string;
  conditions?: PodCondition[];
  hostIP?: string;
  hostIPs?: { ip: string }[];
  podIP?: string;
  podIPs?: { ip: string }[];
  startTime?: string;
  qosClass?: string;
  initContainerStatuses?: ContainerStatus[];
  containerStatuses?: ContainerStatus[];
  ephemeralContainerStatuses?: ContainerStatus[];
  /** The claims the resource claim controller made from the pod's templates. */
  resourceClaimStatuses?: { name: string; resourceClaimName?: string }[];
}

export interface Pod {
  apiVersion?: string;
  kind?: string;
  metadata: ObjectMeta & { name: string; namespace: string; uid: string };
  spec: PodSpec;
  status?: PodStatus;
}

/** Annotations the kubelet sets on pods from its sources. */
export const ConfigAnnotation = {
  source: 'kubernetes.io/config.source',
  hash: 'kubernetes.io/config.hash',
  seen: 'kubernetes.io/config.seen',
  mirror: 'kubernetes.io/config.mirror',
} as const;

export type SourceName = 'file' | 'http' | 'api';

/** The node conditions the eviction manager raises, in the order the kubelet reports them. */
export type NodePressureCondition = 'MemoryPressure' | 'DiskPressure' | 'PIDPressure';

/** `<name>_<namespace>`, the kubelet's key for a pod across UIDs. */
export function podFullName(pod: Pick<Pod, 'metadata'>): string {
  return `${pod.metadata.name}_${pod.metadata.namespace}`;
}

/** `<namespace>/<name>`, how logs and errors name a pod. */
export function podRef(pod: Pick<Pod, 'metadata'>): string {
  return `${pod.metadata.namespace}/${pod.metadata.name}`;
}

export function isStaticPod(pod: Pick<Pod, 'metadata'>): boolean {
  const source = pod.metadata.annotations?.[ConfigAnnotation.source];
  return source !== undefined && source !== 'api';
}

/** scheduling.SystemCriticalPriority: 2 × 10⁹. */
const SYSTEM_CRITICAL_PRIORITY = 2_000_000_000;

/**
 * A pod the node must keep whatever its pressure (kubelettypes.IsCriticalPod): a static or mirror
 * pod, or one of system-critical priority. The eviction manager neither evicts nor refuses it.
 */
export function isCriticalPod(pod: Pick<Pod, 'metadata' | 'spec'>): boolean {
  return isStaticPod(pod) || pod.metadata.annotations?.[ConfigAnnotation.mirror] !== undefined || (pod.spec.priority ?? 0) >= SYSTEM_CRITICAL_PRIORITY;
}

// ---- questions about a pod's spec, asked by decisions on every layer (no defaults written back)

/** The pod's restart policy, defaulted as the API server defaults it. */
export function restartPolicyOf(pod: Pod): 'Always' | 'OnFailure' | 'Never' {
  return pod.spec.restartPolicy ?? 'Always';
}

/** A sidecar: an init container with `restartPolicy: Always`, started in order and kept running. */
export function isSidecar(container: Container): boolean {
  return container.restartPolicy === 'Always';
}

/**
 * The pod's container of any kind with this name: init, regular or ephemeral (names are unique
 * across the three; pkg/kubelet/container/helpers.go GetContainerSpec).
 */
export function containerSpecOf(pod: Pod, name: string): Container | EphemeralContainer | undefined {
  return [...(pod.spec.initContainers ?? []), ...pod.spec.containers, ...(pod.spec.ephemeralContainers ?? [])].find((c) => c.name === name);
}

/** The API server has set a deletion timestamp: the pod is on its way out. */
export function isDeleting(pod: Pod): boolean {
  return pod.metadata.deletionTimestamp !== undefined;
}

/**
 * The kind of a probe and the result of a container's probe of that kind, as the prober tells the
 * pod actor, computePodActions and the status generator (pkg/kubelet/prober/results/results_manager.go Result).
 */
export type ProbeKind = 'liveness' | 'readiness' | 'startup';

export type ProbeResult = 'Success' | 'Failure';
