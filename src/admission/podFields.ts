/**
 * What this node does with every field of the pod API (PodSpec, Container, EphemeralContainer,
 * Volume and all their children) at the release podApi.ts was extracted from: the one table that
 * docs/pod-fields.md is made from and that admission enforces. Each field is
 *
 * - `implemented`: the node honours it; `where` names the modules that do.
 * - `controlPlane`: not the node's business (the scheduler, the API server or a controller acts
 *   on it); nothing under it is read.
 * - `refused` `at: 'admission'`: a pod that sets it (to a value `allowed` does not accept) is
 *   rejected by `unsupportedField` below, naming the field: the node would otherwise run it
 *   without what it asked for.
 * - `refused` `at: 'mount'`: a volume plugin this node lacks; as with the kubelet, which finds no
 *   plugin for it (pkg/volume/plugins.go FindPluginBySpec), the pod waits in ContainerCreating
 *   with a FailedMount event (src/volumes/plan.ts unsupportedVolume).
 * - `refused` `at: 'sandbox'`: dynamic resource claims, which need a DRA driver this node does
 *   not have; as on a kubelet without the driver, the pod gets no sandbox and stays Pending with
 *   FailedPrepareDynamicResources events (src/kuberuntime/dynamicResources.ts).
 *
 * Nothing under a field that is not `implemented` needs an entry. test/admission/podFields.test.ts
 * fails on a field of the pinned release with no entry, and on an entry for no field.
 */
import { POD_API_TYPES } from './podApi.ts';

export type FieldHandling =
  | { implemented: string }
  | { controlPlane: string }
  | { refused: string; at: 'admission'; allowed?: readonly unknown[] }
  | { refused: string; at: 'mount' }
  | { refused: string; at: 'sandbox' };

type TypeFields = Readonly<Record<string, FieldHandling>>;

const implemented = (where: string): FieldHandling => ({ implemented: where });
const controlPlane = (who: string): FieldHandling => ({ controlPlane: who });
const refused = (why: string, allowed?: readonly unknown[]): FieldHandling => ({ refused: why, at: 'admission', ...(allowed ? { allowed } : {}) });
/** Claim-backed volumes: the claim resolved to its PersistentVolume by the volume manager, which mounts hostPath, local and CSI volumes (filesystem mode). */
const CLAIMS = 'src/volumes/claims.ts, src/volumes/world.ts; hostPath and local PersistentVolumes (src/volumes/persistent.ts), CSI ones through their registered driver (src/volumes/csi/operations.ts); in volumeMode Block, local and CSI ones are mapped as devices (src/volumes/localBlock.ts, src/volumes/csi/block.ts); a PersistentVolume of another plugin, or a hostPath one in Block mode, is FailedMount';

const noPlugin = (plugin: string): FieldHandling => ({ refused: `no volume plugin: ${plugin}`, at: 'mount' });

const SCHEDULER = controlPlane('the scheduler');
const CSI_INLINE = 'src/volumes/csi/operations.ts (NodePublishVolume through the registered driver, its CSIDriver\'s volumeLifecycleModes checked)';
const FILE_OWNER = refused('the owner UID of written files (AtomicWriteVolumeUserFields) is not implemented: files are owned by the node\'s user, or fsGroup');
const DRA: FieldHandling = { refused: 'dynamic resource allocation: this node has no DRA driver, so no claim can be prepared', at: 'sandbox' };
const WINDOWS = refused('Windows options: this is a Linux node');

const SECURITY = 'src/kuberuntime/securityContext.ts';
const ENV = 'src/kuberuntime/envVars.ts';
const DOWNWARD = 'src/api/downward.ts';
const PLAN = 'src/volumes/plan.ts';
const TRUST_ANCHORS = 'ClusterTrustBundles read through the API server (certificates.k8s.io v1, v1beta1 or v1alpha1): src/volumes/trustAnchors.ts, src/client/objects.ts';
const HOOKS_PROBES = 'src/kuberuntime/hooks.ts, src/prober/handlers.ts';
const CONTAINER_CONFIG = 'src/kuberuntime/generateContainerConfig.ts';
const BLOCK = 'raw block volumes: src/volumes/localBlock.ts (local), src/volumes/csi/block.ts (CSI), mapped by src/volumes/blockMap.ts, given as CRI devices by src/kuberuntime/blockVolumes.ts';

const CONTAINER: TypeFields = {
  args: implemented(CONTAINER_CONFIG),
  command: implemented(CONTAINER_CONFIG),
  env: implemented(ENV),
  envFrom: implemented(ENV),
  image: implemented('src/kuberuntime/images.ts'),
  imagePullPolicy: implemented('src/kuberuntime/images.ts'),
  lifecycle: implemented('src/kuberuntime/hooks.ts'),
  livenessProbe: implemented('src/prober'),
  name: implemented('src/kuberuntime/computePodActions.ts'),
  ports: implemented('src/kuberuntime/configs.ts (port mappings), src/admission/admit.ts (host ports)'),
  readinessProbe: implemented('src/prober'),
  resizePolicy: implemented('src/kuberuntime/podResize.ts'),
  resources: implemented('src/kuberuntime/resources.ts, src/admission/resources.ts, src/api/qos.ts'),
  restartPolicy: implemented('a regular or init container\'s own policy over the pod\'s: src/api/containerRestart.ts (computePodActions, the phase, the probers); on an init container `Always` makes a sidecar'),
  restartPolicyRules: implemented('src/api/containerRestart.ts for regular and init containers (a sidecar restarts whatever its rules say), validated in src/api/validate.ts'),
  securityContext: implemented(SECURITY),
  startupProbe: implemented('src/prober'),
  stdin: implemented(CONTAINER_CONFIG),
  stdinOnce: implemented('src/kuberuntime/configs.ts (CRI stdin_once); sim:// containers read no input'),
  terminationMessagePath: implemented('src/kuberuntime/terminationMessage.ts'),
  terminationMessagePolicy: implemented('src/kuberuntime/terminationMessage.ts'),
  tty: implemented(CONTAINER_CONFIG),
  volumeDevices: implemented(BLOCK),
  volumeMounts: implemented(PLAN),
  workingDir: implemented(CONTAINER_CONFIG),
};

const KEY_SELECTOR: TypeFields = { key: implemented(ENV), name: implemented(ENV), optional: implemented(ENV) };
const NAMED_OPTIONAL: TypeFields = { name: implemented(ENV), optional: implemented(ENV) };
const KEY_TO_PATH_SOURCE = (name: 'name' | 'secretName'): TypeFields => ({
  defaultMode: implemented(PLAN),
  defaultUser: FILE_OWNER,
  items: implemented(PLAN),
  [name]: implemented('src/volumes/setUp.ts'),
  optional: implemented(PLAN),
});
const PROJECTION: TypeFields = { items: implemented(PLAN), name: implemented('src/volumes/setUp.ts'), optional: implemented(PLAN) };
const PROFILE: TypeFields = { localhostProfile: implemented(SECURITY), type: implemented(SECURITY) };
const NODE_AFFINITY = 'src/admission/nodeAffinity.ts';

export const POD_FIELDS: Readonly<Record<string, TypeFields>> = {
  PodSpec: {
    activeDeadlineSeconds: implemented('src/kuberuntime/deadline.ts'),
    affinity: implemented(NODE_AFFINITY),
    automountServiceAccountToken: controlPlane('the API server (ServiceAccount admission adds the token volume, or not)'),
    containers: implemented('src/kuberuntime/computePodActions.ts'),
    dnsConfig: implemented('src/kuberuntime/dns.ts'),
    dnsPolicy: implemented('src/kuberuntime/dns.ts'),
    enableServiceLinks: implemented(ENV),
    ephemeralContainers: implemented('src/kuberuntime/computePodActions.ts'),
    evictionResponders: controlPlane('the API server and the responders (the Eviction API)'),
    hostAliases: implemented('src/kuberuntime/hosts.ts'),
    hostIPC: implemented(SECURITY),
    hostNetwork: implemented('src/kuberuntime/configs.ts'),
    hostPID: implemented(SECURITY),
    hostUsers: implemented('src/kuberuntime (user namespaces: the sandbox\'s namespace options)'),
    hostname: implemented('src/kuberuntime/hosts.ts'),
    hostnameOverride: implemented('src/kuberuntime/hosts.ts (the sandbox\'s hostname and /etc/hosts), src/api/validate.ts'),
    imagePullSecrets: implemented('src/kuberuntime (the pull credentials keyring)'),
    initContainers: implemented('src/kuberuntime/computePodActions.ts'),
    nodeName: implemented('src/admission/admit.ts'),
    nodeSelector: implemented(NODE_AFFINITY),
    os: implemented('src/admission/admit.ts'),
    overhead: implemented('src/admission/resources.ts, src/cm/podResources.ts'),
    preemptionPolicy: SCHEDULER,
    priority: implemented('src/eviction/rank.ts, src/api/types.ts isCriticalPod'),
    priorityClassName: implemented('src/kuberuntime/resources.ts (system-node-critical\'s OOM score); the API server resolves it into priority'),
    readinessGates: implemented('src/status/generate.ts'),
    resourceClaims: DRA,
    resources: implemented('src/cm/podResources.ts, src/admission/resources.ts, src/api/qos.ts'),
    restartPolicy: implemented('src/kuberuntime/computePodActions.ts'),
    runtimeClassName: implemented('src/kuberuntime (RuntimeClass: the sandbox\'s runtime handler)'),
    schedulerName: SCHEDULER,
    schedulingGates: SCHEDULER,
    schedulingGroup: SCHEDULER,
    securityContext: implemented(SECURITY),
    serviceAccount: controlPlane('the API server (the deprecated alias of serviceAccountName)'),
    serviceAccountName: implemented('src/volumes/tokens.ts'),
    setHostnameAsFQDN: implemented('src/kuberuntime/hosts.ts sandboxHostname'),
    shareProcessNamespace: implemented(SECURITY),
    subdomain: implemented('src/kuberuntime/hosts.ts'),
    terminationGracePeriodSeconds: implemented('src/pod/gracePeriod.ts'),
    tolerations: implemented(NODE_AFFINITY),
    topologySpreadConstraints: SCHEDULER,
    volumes: implemented(PLAN),
  },
  Container: CONTAINER,
  EphemeralContainer: {
    ...CONTAINER,
    restartPolicy: implemented('invalid on an ephemeral container, as in the API server (src/api/validate.ts)'),
    restartPolicyRules: implemented('invalid on an ephemeral container, as in the API server (src/api/validate.ts)'),
    targetContainerName: implemented(SECURITY),
  },
  ContainerRestartRule: {
    action: refused('the RestartAllContainers action (RestartAllContainersOnContainerExits) is not implemented', ['Restart']),
    exitCodes: implemented('src/api/containerRestart.ts'),
  },
  ContainerRestartRuleOnExitCodes: { operator: implemented('src/api/containerRestart.ts'), values: implemented('src/api/containerRestart.ts') },
  Affinity: { nodeAffinity: implemented(NODE_AFFINITY), podAffinity: SCHEDULER, podAntiAffinity: SCHEDULER },
  NodeAffinity: { preferredDuringSchedulingIgnoredDuringExecution: SCHEDULER, requiredDuringSchedulingIgnoredDuringExecution: implemented(NODE_AFFINITY) },
  NodeSelector: { nodeSelectorTerms: implemented(NODE_AFFINITY) },
  NodeSelectorTerm: { matchExpressions: implemented(NODE_AFFINITY), matchFields: implemented(NODE_AFFINITY) },
  NodeSelectorRequirement: { key: implemented(NODE_AFFINITY), operator: implemented(NODE_AFFINITY), values: implemented(NODE_AFFINITY) },
  Toleration: {
    effect: implemented(NODE_AFFINITY),
    key: implemented(NODE_AFFINITY),
    operator: implemented(NODE_AFFINITY),
    tolerationSeconds: controlPlane('the taint eviction controller'),
    value: implemented(NODE_AFFINITY),
  },
  PodDNSConfig: { nameservers: implemented('src/kuberuntime/dns.ts'), options: implemented('src/kuberuntime/dns.ts'), searches: implemented('src/kuberuntime/dns.ts') },
  PodDNSConfigOption: { name: implemented('src/kuberuntime/dns.ts'), value: implemented('src/kuberuntime/dns.ts') },
  HostAlias: { hostnames: implemented('src/kuberuntime/hosts.ts'), ip: implemented('src/kuberuntime/hosts.ts') },
  LocalObjectReference: { name: implemented('src/kuberuntime (the pull credentials keyring)') },
  PodOS: { name: implemented('src/admission/admit.ts') },
  PodReadinessGate: { conditionType: implemented('src/status/generate.ts') },
  PodSecurityContext: {
    appArmorProfile: implemented(SECURITY),
    fsGroup: implemented(`${SECURITY}, src/volumes/ownership.ts`),
    fsGroupChangePolicy: implemented('src/volumes/ownership.ts, for the CSI volumes the node gives to the fsGroup (src/volumes/csi/operations.ts); the other plugins take none, as in the kubelet'),
    runAsGroup: implemented(SECURITY),
    runAsNonRoot: implemented(SECURITY),
    runAsUser: implemented(SECURITY),
    seLinuxChangePolicy: refused('only `Recursive` relabelling (the runtime\'s) is implemented, not `MountOption`', ['Recursive']),
    seLinuxOptions: implemented(SECURITY),
    seccompProfile: implemented(SECURITY),
    supplementalGroups: implemented(SECURITY),
    supplementalGroupsPolicy: implemented(`${SECURITY}, src/admission/admit.ts`),
    sysctls: implemented('src/api/sysctls.ts, src/kuberuntime/configs.ts'),
    windowsOptions: WINDOWS,
  },
  SecurityContext: {
    allowPrivilegeEscalation: implemented(SECURITY),
    appArmorProfile: implemented(SECURITY),
    capabilities: implemented(SECURITY),
    privileged: implemented(SECURITY),
    procMount: implemented(SECURITY),
    readOnlyRootFilesystem: implemented(SECURITY),
    runAsGroup: implemented(SECURITY),
    runAsNonRoot: implemented(SECURITY),
    runAsUser: implemented(SECURITY),
    seLinuxOptions: implemented(SECURITY),
    seccompProfile: implemented(SECURITY),
    windowsOptions: WINDOWS,
  },
  Capabilities: { add: implemented(SECURITY), drop: implemented(SECURITY) },
  SELinuxOptions: { level: implemented(SECURITY), role: implemented(SECURITY), type: implemented(SECURITY), user: implemented(SECURITY) },
  SeccompProfile: PROFILE,
  AppArmorProfile: PROFILE,
  Sysctl: { name: implemented('src/api/sysctls.ts'), value: implemented('src/kuberuntime/configs.ts') },
  ResourceRequirements: {
    claims: DRA,
    limits: implemented('src/kuberuntime/resources.ts, src/cm/podResources.ts'),
    requests: implemented('src/admission/resources.ts, src/kuberuntime/resources.ts'),
  },
  ContainerPort: {
    containerPort: implemented('src/kuberuntime/configs.ts'),
    hostIP: implemented('src/kuberuntime/configs.ts, src/admission/admit.ts'),
    hostPort: implemented('src/kuberuntime/configs.ts, src/admission/admit.ts'),
    name: implemented('src/kuberuntime/hooks.ts resolvePort (named ports of probes and hooks)'),
    protocol: implemented('src/kuberuntime/configs.ts'),
  },
  ContainerResizePolicy: { resourceName: implemented('src/kuberuntime/podResize.ts'), restartPolicy: implemented('src/kuberuntime/podResize.ts') },
  EnvVar: { name: implemented(ENV), value: implemented(ENV), valueFrom: implemented(ENV) },
  EnvVarSource: {
    configMapKeyRef: implemented(ENV),
    fieldRef: implemented(`${ENV}, ${DOWNWARD}`),
    fileKeyRef: refused('environment variables from files (EnvFiles) are not implemented'),
    resourceFieldRef: implemented(`${ENV}, ${DOWNWARD}`),
    secretKeyRef: implemented(ENV),
  },
  ConfigMapKeySelector: KEY_SELECTOR,
  SecretKeySelector: KEY_SELECTOR,
  EnvFromSource: { configMapRef: implemented(ENV), prefix: implemented(ENV), secretRef: implemented(ENV) },
  ConfigMapEnvSource: NAMED_OPTIONAL,
  SecretEnvSource: NAMED_OPTIONAL,
  ObjectFieldSelector: { apiVersion: implemented(DOWNWARD), fieldPath: implemented(DOWNWARD) },
  ResourceFieldSelector: { containerName: implemented(DOWNWARD), divisor: implemented(DOWNWARD), resource: implemented(DOWNWARD) },
  Lifecycle: {
    postStart: implemented('src/kuberuntime/hooks.ts'),
    preStop: implemented('src/kuberuntime/hooks.ts'),
    stopSignal: refused('container stop signals (ContainerStopSignals) are not implemented'),
  },
  LifecycleHandler: { exec: implemented('src/kuberuntime/hooks.ts'), httpGet: implemented('src/kuberuntime/hooks.ts'), sleep: implemented('src/kuberuntime/hooks.ts'), tcpSocket: implemented('src/kuberuntime/hooks.ts') },
  Probe: {
    exec: implemented('src/prober/handlers.ts'),
    failureThreshold: implemented('src/prober/decide.ts'),
    grpc: implemented('src/prober/handlers.ts'),
    httpGet: implemented('src/prober/handlers.ts'),
    initialDelaySeconds: implemented('src/prober/decide.ts'),
    periodSeconds: implemented('src/prober/manager.ts'),
    successThreshold: implemented('src/prober/decide.ts'),
    tcpSocket: implemented('src/prober/handlers.ts'),
    terminationGracePeriodSeconds: implemented('src/kuberuntime/kill.ts'),
    timeoutSeconds: implemented('src/prober/handlers.ts'),
  },
  ExecAction: { command: implemented(HOOKS_PROBES) },
  HTTPGetAction: {
    host: implemented(HOOKS_PROBES),
    httpHeaders: implemented(HOOKS_PROBES),
    path: implemented(HOOKS_PROBES),
    port: implemented(HOOKS_PROBES),
    protocol: refused('only HTTP/1.1 probes and hooks are implemented', ['HTTP1']),
    scheme: implemented(HOOKS_PROBES),
  },
  HTTPHeader: { name: implemented(HOOKS_PROBES), value: implemented(HOOKS_PROBES) },
  TCPSocketAction: { host: implemented(HOOKS_PROBES), port: implemented(HOOKS_PROBES) },
  SleepAction: { seconds: implemented('src/kuberuntime/hooks.ts') },
  GRPCAction: {
    mode: refused('only plaintext gRPC probes are implemented', ['Plaintext']),
    port: implemented('src/prober/handlers.ts'),
    service: implemented('src/prober/handlers.ts'),
  },
  VolumeDevice: { devicePath: implemented('src/kuberuntime/blockVolumes.ts'), name: implemented('src/kuberuntime/blockVolumes.ts') },
  VolumeMount: {
    bindMountOptions: refused('bind mount options (VolumeBindMountOptions) are not implemented'),
    mountPath: implemented(PLAN),
    mountPropagation: implemented(PLAN),
    name: implemented(PLAN),
    readOnly: implemented(PLAN),
    recursiveReadOnly: refused('recursively read-only mounts are not implemented', ['Disabled']),
    subPath: implemented('src/volumes/subPath.ts'),
    subPathExpr: implemented('src/volumes/subPath.ts'),
  },
  Volume: {
    awsElasticBlockStore: noPlugin('awsElasticBlockStore'),
    azureDisk: noPlugin('azureDisk'),
    azureFile: noPlugin('azureFile'),
    cephfs: noPlugin('cephfs'),
    cinder: noPlugin('cinder'),
    configMap: implemented(`${PLAN}, src/volumes/setUp.ts`),
    csi: implemented(CSI_INLINE),
    downwardAPI: implemented(`${PLAN}, src/volumes/setUp.ts`),
    emptyDir: implemented('src/volumes/setUp.ts, src/volumes/mounter.ts'),
    ephemeral: implemented(CLAIMS),
    fc: noPlugin('fc'),
    flexVolume: noPlugin('flexVolume'),
    flocker: noPlugin('flocker'),
    gcePersistentDisk: noPlugin('gcePersistentDisk'),
    gitRepo: noPlugin('gitRepo (its driver is off and locked in the kubelet too)'),
    glusterfs: noPlugin('glusterfs'),
    hostPath: implemented('src/volumes/setUp.ts'),
    image: noPlugin('image'),
    iscsi: noPlugin('iscsi'),
    name: implemented(PLAN),
    nfs: noPlugin('nfs'),
    persistentVolumeClaim: implemented(CLAIMS),
    photonPersistentDisk: noPlugin('photonPersistentDisk'),
    portworxVolume: noPlugin('portworxVolume'),
    projected: implemented(`${PLAN}, src/volumes/setUp.ts`),
    quobyte: noPlugin('quobyte'),
    rbd: noPlugin('rbd'),
    scaleIO: noPlugin('scaleIO'),
    secret: implemented(`${PLAN}, src/volumes/setUp.ts`),
    storageos: noPlugin('storageos'),
    vsphereVolume: noPlugin('vsphereVolume'),
  },
  EmptyDirVolumeSource: {
    medium: implemented('the node\'s disk, tmpfs for Memory, hugetlbfs for HugePages[-<size>]: src/volumes/setUp.ts, src/volumes/hugePages.ts, src/volumes/mounter.ts'),
    mode: refused('the emptyDir mode (EmptyDirVolumeMode) is not implemented: the directory is 0777'),
    sizeLimit: implemented('src/eviction/localStorage.ts, src/volumes/mounter.ts'),
  },
  CSIVolumeSource: {
    driver: implemented(CSI_INLINE),
    fsType: implemented(CSI_INLINE),
    nodePublishSecretRef: implemented(CSI_INLINE),
    readOnly: implemented(CSI_INLINE),
    volumeAttributes: implemented(CSI_INLINE),
  },
  HostPathVolumeSource: { path: implemented('src/volumes/setUp.ts'), type: implemented('src/volumes/setUp.ts') },
  PersistentVolumeClaimVolumeSource: { claimName: implemented('src/volumes/claims.ts'), readOnly: implemented('src/volumes/claims.ts, src/volumes/plan.ts') },
  // The ephemeral-volume controller makes the claim `<pod>-<volume>` from the template; the node reads the claim (src/volumes/claims.ts).
  EphemeralVolumeSource: { volumeClaimTemplate: controlPlane('the ephemeral-volume controller') },
  ConfigMapVolumeSource: KEY_TO_PATH_SOURCE('name'),
  SecretVolumeSource: KEY_TO_PATH_SOURCE('secretName'),
  DownwardAPIVolumeSource: { defaultMode: implemented(PLAN), defaultUser: FILE_OWNER, items: implemented(PLAN) },
  KeyToPath: { key: implemented(PLAN), mode: implemented(PLAN), path: implemented(PLAN), user: FILE_OWNER },
  DownwardAPIVolumeFile: { fieldRef: implemented(DOWNWARD), mode: implemented(PLAN), path: implemented(PLAN), resourceFieldRef: implemented(DOWNWARD), user: FILE_OWNER },
  ProjectedVolumeSource: { defaultMode: implemented(PLAN), defaultUser: FILE_OWNER, sources: implemented(PLAN) },
  VolumeProjection: {
    clusterTrustBundle: implemented(TRUST_ANCHORS),
    configMap: implemented(PLAN),
    downwardAPI: implemented(PLAN),
    podCertificate: refused('the podCertificate projection (pod certificates) is not implemented'),
    secret: implemented(PLAN),
    serviceAccountToken: implemented('src/volumes/tokens.ts'),
  },
  ConfigMapProjection: PROJECTION,
  SecretProjection: PROJECTION,
  DownwardAPIProjection: { items: implemented(PLAN) },
  ClusterTrustBundleProjection: {
    labelSelector: implemented(TRUST_ANCHORS),
    name: implemented(TRUST_ANCHORS),
    optional: implemented(TRUST_ANCHORS),
    path: implemented(PLAN),
    signerName: implemented(TRUST_ANCHORS),
    user: FILE_OWNER,
  },
  ServiceAccountTokenProjection: {
    audience: implemented('src/volumes/tokens.ts'),
    expirationSeconds: implemented('src/volumes/tokens.ts'),
    path: implemented(PLAN),
    user: FILE_OWNER,
  },
};

/** A Go zero value: the field is unset (an empty object is a set pointer, as for a volume source). */
function isUnset(value: unknown): boolean {
  return value === undefined || value === null || value === false || value === '' || (Array.isArray(value) && value.length === 0);
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** The first refused field `value`, of the pod API type `type`, sets (at `at`), depth first in the pod's order. */
function refusedIn(type: string, value: unknown, at: string): { field: string; why: string } | undefined {
  if (!isObject(value)) return undefined;
  const fields = POD_FIELDS[type] ?? {};
  for (const [name, member] of Object.entries(value)) {
    const handling = fields[name];
    if (handling === undefined || isUnset(member)) continue;
    const path = `${at}.${name}`;
    if ('refused' in handling) {
      if (handling.at === 'admission' && !(handling.allowed ?? []).includes(member)) return { field: path, why: handling.refused };
      continue;
    }
    if (!('implemented' in handling)) continue;
    const held = POD_API_TYPES[type]?.[name];
    if (held === null || held === undefined) continue;
    const items: [string, unknown][] = Array.isArray(member) ? member.map((m, i) => [`${path}[${i}]`, m]) : [[path, member]];
    for (const [itemAt, item] of items) {
      const found = refusedIn(held, item, itemAt);
      if (found) return found;
    }
  }
  return undefined;
}

/**
 * The first field of the pod's spec that this node refuses at admission, with why, or undefined.
 * Pure; run by admission (admit.ts) last, where the kubelet checks a pod's features
 * (pkg/kubelet/lifecycle/handlers.go declaredFeaturesAdmitHandler).
 */
export function unsupportedField(spec: unknown): { field: string; why: string } | undefined {
  return refusedIn('PodSpec', spec, 'spec');
}
