/**
 * The cluster objects the agent writes besides pods: its Node (core/v1), its Lease
 * (coordination.k8s.io/v1) and Events (core/v1). As in types.ts, only the fields the agent uses
 * are declared.
 */
import type { ObjectMeta } from './types.ts';

export interface OwnerReference {
  apiVersion: string;
  kind: string;
  name: string;
  uid: string;
  controller?: boolean;
  blockOwnerDeletion?: boolean;
}

export interface Taint {
  key: string;
  value?: string;
  effect: 'NoSchedule' | 'PreferNoSchedule' | 'NoExecute';
}

type ConditionStatus = 'True' | 'False' | 'Unknown';

export interface NodeCondition {
  type: string;
  status: ConditionStatus;
  reason: string;
  message: string;
  lastHeartbeatTime: string;
  lastTransitionTime: string;
}

export interface NodeAddress {
  type: 'InternalIP' | 'ExternalIP' | 'Hostname' | 'InternalDNS' | 'ExternalDNS';
  address: string;
}

export interface NodeSystemInfo {
  machineID: string;
  systemUUID: string;
  bootID: string;
  kernelVersion: string;
  osImage: string;
  containerRuntimeVersion: string;
  kubeletVersion: string;
  kubeProxyVersion: string;
  operatingSystem: string;
  architecture: string;
}

export interface ContainerImage {
  names: string[];
  sizeBytes: number;
}

export interface NodeStatus {
  capacity: Record<string, string>;
  allocatable: Record<string, string>;
  conditions: NodeCondition[];
  addresses: NodeAddress[];
  daemonEndpoints: { kubeletEndpoint: { Port: number } };
  nodeInfo: NodeSystemInfo;
  images: ContainerImage[];
  /** What the runtime implements (NodeFeatures); absent when the runtime does not say. */
  features?: { supplementalGroupsPolicy?: boolean };
  /** The runtime's handlers and what each supports (NodeRuntimeHandler); absent when it reports none. */
  runtimeHandlers?: { name: string; features: { recursiveReadOnlyMounts: boolean; userNamespaces: boolean } }[];
  /** The attachable volumes the node uses or wants (setters.go VolumesInUse); absent when none. */
  volumesInUse?: string[];
  /** Written by the attach-detach controller only; the node's status patch never carries it. */
  volumesAttached?: { name: string; devicePath: string }[];
}

export interface NodeObject {
  apiVersion?: 'v1';
  kind?: 'Node';
  metadata: ObjectMeta & { name: string };
  spec?: { taints?: Taint[]; unschedulable?: boolean; providerID?: string; podCIDR?: string; podCIDRs?: string[] };
  status?: Partial<NodeStatus>;
}

export interface Lease {
  apiVersion?: 'coordination.k8s.io/v1';
  kind?: 'Lease';
  metadata: ObjectMeta & { name: string; namespace: string; ownerReferences?: OwnerReference[] };
  spec: {
    holderIdentity?: string;
    leaseDurationSeconds?: number;
    /** RFC 3339 with microseconds (metav1.MicroTime). */
    renewTime?: string;
  };
}

/** A driver of a CSINode (storage.k8s.io/v1 CSINodeDriver). */
export interface CSINodeDriver {
  name: string;
  nodeID: string;
  topologyKeys?: string[] | null;
  allocatable?: { count?: number };
}

/** The node's CSI drivers as the kubelet publishes them (storage.k8s.io/v1 CSINode, named after the Node). */
export interface CSINode {
  apiVersion?: 'storage.k8s.io/v1';
  kind?: 'CSINode';
  metadata: ObjectMeta & { name: string; ownerReferences?: OwnerReference[] };
  spec: { drivers: CSINodeDriver[] | null };
}

/** A Service, for the environment's service link variables (only what those read). */
export interface Service {
  metadata: { name: string; namespace: string; uid: string; resourceVersion?: string };
  spec: { clusterIP?: string; ports?: { name?: string; port: number; protocol?: string }[] };
}

/** A node.k8s.io/v1 RuntimeClass: cluster-scoped, naming the CRI runtime handler its pods run on. */
export interface RuntimeClass {
  metadata: { name: string; uid: string; resourceVersion?: string };
  handler: string;
}

/** A certificates.k8s.io ClusterTrustBundle (v1, v1beta1 and v1alpha1 have this shape): a signer's trust anchors as PEM. */
export interface ClusterTrustBundle {
  metadata: { name: string; labels?: Record<string, string> };
  spec: { signerName?: string; trustBundle: string };
}

export interface ObjectReference {
  apiVersion?: string;
  kind: string;
  name: string;
  namespace?: string;
  uid?: string;
  fieldPath?: string;
}

export interface KubeEvent {
  apiVersion?: 'v1';
  kind?: 'Event';
  metadata: ObjectMeta & { name: string; namespace: string };
  involvedObject: ObjectReference;
  reason: string;
  message: string;
  type: 'Normal' | 'Warning';
  source: { component: string; host?: string };
  count: number;
  firstTimestamp: string;
  lastTimestamp: string;
  reportingComponent?: string;
  reportingInstance?: string;
}

/** A certificates.k8s.io/v1 CertificateSigningRequest, the fields a node writes and reads. */
export interface CertificateSigningRequest {
  apiVersion?: 'certificates.k8s.io/v1';
  kind?: 'CertificateSigningRequest';
  metadata: { name?: string; generateName?: string; uid?: string; resourceVersion?: string };
  spec: {
    /** The PEM `CERTIFICATE REQUEST`, base64 (the API's bytes). */
    request: string;
    signerName: string;
    usages: string[];
    expirationSeconds?: number;
    username?: string;
  };
  status?: {
    conditions?: { type: string; status?: string; reason?: string; message?: string }[];
    /** The issued chain, PEM base64 (the API's bytes). */
    certificate?: string;
  };
}

/** What a node's certificate is requested for (x509.CertificateRequest as the kubelet's certificate managers fill it). */
export interface CertificateTemplate {
  commonName: string;
  organizations: readonly string[];
  /** Subject alternative names (the serving certificate's); sorted, without duplicates. */
  dnsNames: readonly string[];
  ipAddresses: readonly string[];
}
