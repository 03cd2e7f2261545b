/**
 * Pod admission (pkg/kubelet/lifecycle/predicate.go Admit, generalFilter), pure: the predicates
 * the kubelet runs against its own node and the pods it already admitted, in its order; the first
 * failure wins and names the kubelet's reason. A rejected pod is never started; its status
 * becomes Failed with `Pod was rejected: <message>`.
 */
import type { NodeObject, Taint } from '../api/cluster.ts';
import { isCriticalPod, isStaticPod, type NodePressureCondition, type Pod } from '../api/types.ts';
import { podQos } from '../api/qos.ts';
import { forbiddenSysctl } from '../api/sysctls.ts';
import { appArmorRequired } from '../kuberuntime/securityContext.ts';
import { matchesNodeAffinity, toleratesTaint, untoleratedNoExecuteTaint } from './nodeAffinity.ts';
import { amounts, type ResourceAmounts } from '../api/quantity.ts';
import { podRequests, sumRequests } from './resources.ts';
import { unsupportedField } from './podFields.ts';

export interface NodeInfo {
  name: string;
  maxPods: number;
  labels: Readonly<Record<string, string>>;
  os: string;
  /** The Node's allocatable amounts (resources.ts units); absent: only the pod count is checked. */
  allocatable?: ResourceAmounts;
  taints?: readonly Taint[];
  /** --allowed-unsafe-sysctls: the namespaced sysctls pods may set besides the safe ones. */
  allowedUnsafeSysctls?: readonly string[];
  /** The host's kernel enforces AppArmor (/sys/module/apparmor/parameters/enabled); absent: not known, not checked. */
  appArmorEnabled?: boolean;
  /** The pressure conditions the eviction manager reports True. */
  pressure?: readonly NodePressureCondition[];
  /**
   * The runtime reports `features.supplemental_groups_policy` in its Status (what the kubelet
   * publishes as the Node's `status.features.supplementalGroupsPolicy`); false: a pod asking for
   * `supplementalGroupsPolicy: Strict` is refused. Absent: not known yet (the runtime's Status
   * not read), not checked.
   */
  supplementalGroupsPolicySupported?: boolean;
}

export type Admission = { admit: true } | { admit: false; reason: string; message: string };

/**
 * The node admission checks a pod against (predicate.go Admit, getNodeAnyWayFunc): what the
 * agent knows of itself (`local`: its name, pod limit, sysctls, AppArmor, the runtime's features)
 * with the labels, taints and allocatable of `node`, a Node object. That is the Node as last
 * written or read in a cluster, else the one the agent would register (initialNode), which is all a
 * standalone node ever has; null, when neither is known: `local` alone, and no resources checked.
 */
export function nodeForAdmission(local: NodeInfo, node: NodeObject | null): NodeInfo {
  if (!node) return local;
  return {
    ...local,
    labels: node.metadata.labels ?? local.labels,
    taints: node.spec?.taints ?? [],
    ...(node.status?.allocatable ? { allocatable: amounts(node.status.allocatable) } : {}),
  };
}

function hostPorts(pod: Pod): string[] {
  const ports: string[] = [];
  for (const c of [...(pod.spec.initContainers ?? []), ...pod.spec.containers]) {
    for (const p of c.ports ?? []) {
      if (p.hostPort) ports.push(`${p.protocol ?? 'TCP'}/${p.hostIP || '0.0.0.0'}/${p.hostPort}`);
    }
  }
  return ports;
}

function portsConflict(a: string, b: string): boolean {
  const [protoA, ipA, portA] = a.split('/');
  const [protoB, ipB, portB] = b.split('/');
  if (protoA !== protoB || portA !== portB) return false;
  return ipA === ipB || ipA === '0.0.0.0' || ipB === '0.0.0.0';
}

/** The resources checked by name, in the scheduler's order; others follow in the pod's order. */
const NAMED_RESOURCES = ['cpu', 'memory', 'ephemeral-storage'];

/**
 * An extended resource (`example.com/gpu`) the node does not advertise is ignored: it may be a
 * cluster-level resource (removeMissingExtendedResources). Native ones (`hugepages-2Mi`) count.
 */
function isExtended(name: string): boolean {
  return name.includes('/') && !name.startsWith('kubernetes.io/') && !name.includes('.kubernetes.io/');
}

/** The first resource the pod asks more of than the node has left (noderesources fitsRequest). */
function insufficientResource(pod: Pod, used: ResourceAmounts, allocatable: ResourceAmounts): Admission | undefined {
  const requested = podRequests(pod);
  const names = [...NAMED_RESOURCES, ...Object.keys(requested).filter((n) => !NAMED_RESOURCES.includes(n) && n !== 'pods')];
  for (const name of names) {
    const want = requested[name] ?? 0;
    if (want <= 0) continue;
    if (isExtended(name) && allocatable[name] === undefined) continue;
    const capacity = allocatable[name] ?? 0;
    const inUse = used[name] ?? 0;
    if (want > capacity - inUse) {
      return { admit: false, reason: `OutOf${name}`, message: `Node didn't have enough resource: ${name}, requested: ${want}, used: ${inUse}, capacity: ${capacity}` };
    }
  }
  return undefined;
}

/**
 * Decides whether `pod` may run next to the already admitted, still active `active` pods;
 * `used` is their summed requests (given by a caller that keeps it as it admits a batch).
 */
/**
 * The eviction manager's admit handler (pkg/kubelet/eviction/eviction_manager.go Admit): under
 * pressure only critical pods are admitted, except that memory pressure alone still admits pods
 * that are not BestEffort, and BestEffort ones tolerating the memory-pressure taint.
 */
function pressureRejection(pod: Pod, pressure: readonly NodePressureCondition[]): Admission | undefined {
  if (pressure.length === 0 || isCriticalPod(pod)) return undefined;
  if (pressure.length === 1 && pressure[0] === 'MemoryPressure') {
    if (podQos(pod) !== 'BestEffort') return undefined;
    if (toleratesTaint(pod.spec.tolerations, { key: 'node.kubernetes.io/memory-pressure', effect: 'NoSchedule' })) return undefined;
  }
  // Go's %v of the condition list: `[MemoryPressure DiskPressure]`, and the kubelet's trailing space.
  return { admit: false, reason: 'Evicted', message: `The node had condition: [${pressure.join(' ')}]. ` };
}

export function admitPod(pod: Pod, active: readonly Pod[], node: NodeInfo, used: ResourceAmounts = sumRequests(active)): Admission {
  // The eviction manager's admit handler is the first of the kubelet's (kubelet.go NewMainKubelet).
  const pressure = pressureRejection(pod, node.pressure ?? []);
  if (pressure) return pressure;
  // The sysctl allowlist is an admit handler of its own, ahead of the predicates (kubelet.go NewMainKubelet).
  const sysctl = forbiddenSysctl(pod.spec.securityContext?.sysctls ?? [], pod.spec, node.allowedUnsafeSysctls ?? []);
  if (sysctl) return { admit: false, reason: 'SysctlForbidden', message: sysctl };
  const osLabel = pod.metadata.labels?.['kubernetes.io/os'];
  if (osLabel !== undefined && osLabel !== node.os) {
    return { admit: false, reason: 'PodOSSelectorNodeLabelDoesNotMatch', message: `Failed to admit pod as the \`kubernetes.io/os\` label doesn't match node label` };
  }
  const specOs = (pod.spec.os as { name?: string } | undefined)?.name;
  if (specOs !== undefined && specOs !== node.os) {
    return { admit: false, reason: 'PodOSNotSupported', message: `Failed to admit pod as the OS field doesn't match node OS` };
  }
  // rejectPodAdmissionBasedOnSupplementalGroupsPolicy: Strict only where the runtime applies it
  // (one that does not, containerd 1.6, would apply Merge without a word).
  if (node.supplementalGroupsPolicySupported === false && pod.spec.securityContext?.supplementalGroupsPolicy === 'Strict') {
    return { admit: false, reason: 'SupplementalGroupsPolicyNotSupported', message: 'SupplementalGroupsPolicy=Strict is not supported in this node' };
  }
  if (active.length + 1 > node.maxPods) {
    return { admit: false, reason: 'OutOfpods', message: `Node didn't have enough resource: pods, requested: 1, used: ${active.length}, capacity: ${node.maxPods}` };
  }
  // The scheduler's AdmissionCheck order: resources, node affinity, node name, host ports; then taints.
  if (node.allocatable) {
    const short = insufficientResource(pod, used, node.allocatable);
    if (short) return short;
  }
  if (!matchesNodeAffinity(pod, node.labels, node.name)) {
    return { admit: false, reason: 'NodeAffinity', message: `Predicate NodeAffinity failed: node(s) didn't match Pod's node affinity/selector` };
  }
  if (pod.spec.nodeName && pod.spec.nodeName !== node.name) {
    return { admit: false, reason: 'NodeName', message: `Predicate NodeName failed: node(s) didn't match the requested node name` };
  }
  const wanted = hostPorts(pod);
  if (wanted.length) {
    const used = active.flatMap(hostPorts);
    if (wanted.some((w) => used.some((u) => portsConflict(w, u)))) {
      return { admit: false, reason: 'NodePorts', message: `Predicate NodePorts failed: node(s) didn't have free ports for the requested pod ports` };
    }
  }
  // Static pods are the node's own: its taints do not keep them off it.
  if (!isStaticPod(pod) && untoleratedNoExecuteTaint(node.taints ?? [], pod.spec.tolerations)) {
    return { admit: false, reason: 'TaintToleration', message: `Predicate TaintToleration failed: node(s) had taints that the pod didn't tolerate` };
  }
  // The AppArmor admit handler follows the predicates (kubelet.go NewMainKubelet; apparmor/validate.go).
  if (node.appArmorEnabled === false && appArmorRequired(pod)) {
    return { admit: false, reason: 'AppArmor', message: 'Cannot enforce AppArmor: AppArmor is not enabled on the host' };
  }
  // A field this node does not implement (podFields.ts), last, where the kubelet checks the pod's
  // features against the node's (kubelet.go NewMainKubelet; lifecycle/handlers.go
  // declaredFeaturesAdmitHandler, whose reason and wording these are).
  const unsupported = unsupportedField(pod.spec);
  if (unsupported) {
    return { admit: false, reason: 'PodFeatureUnsupported', message: `Pod requires node features that are not available: ${unsupported.field} (${unsupported.why})` };
  }
  return { admit: true };
}
