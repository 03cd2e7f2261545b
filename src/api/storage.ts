/**
 * The storage objects a node reads (core/v1 PersistentVolumeClaim, PersistentVolume): only the
 * fields the kubelet's volume manager looks at.
 */
import type { ObjectMeta } from './types.ts';

export type PersistentVolumeMode = 'Filesystem' | 'Block';

export interface PersistentVolumeClaim {
  metadata: Pick<ObjectMeta, 'name' | 'namespace' | 'uid'> & {
    resourceVersion?: string;
    annotations?: Record<string, string>;
    deletionTimestamp?: string;
    finalizers?: string[];
    ownerReferences?: { apiVersion?: string; kind?: string; name?: string; uid?: string; controller?: boolean }[];
  };
  spec?: { volumeName?: string; volumeMode?: PersistentVolumeMode; accessModes?: string[]; resources?: { requests?: Record<string, string> } };
  status?: {
    phase?: string;
    capacity?: Record<string, string>;
    /** What the resizer allocated, and where each resource's resize stands (`NodeResizePending`, …): the expansion's progress. */
    allocatedResources?: Record<string, string>;
    allocatedResourceStatuses?: Record<string, string>;
    conditions?: PersistentVolumeClaimCondition[];
  };
}

/** A claim's condition (`FileSystemResizePending`, `NodeResizeError`, …). */
export interface PersistentVolumeClaimCondition {
  type: string;
  status: string;
  lastProbeTime?: string;
  lastTransitionTime?: string;
  reason?: string;
  message?: string;
}

export interface PersistentVolume {
  metadata: { name: string; uid?: string; annotations?: Record<string, string> };
  spec?: {
    claimRef?: { namespace?: string; name?: string; uid?: string } | null;
    volumeMode?: PersistentVolumeMode;
    accessModes?: string[];
    capacity?: Record<string, string>;
    mountOptions?: string[];
    hostPath?: { path: string; type?: string };
    local?: { path: string; fsType?: string };
    /** Any other volume source: its key names the plugin. */
    [source: string]: unknown;
  };
}

/** A PersistentVolume's `csi` source (core/v1 CSIPersistentVolumeSource): what the kubelet reads of it. */
export interface CsiPersistentVolumeSource {
  driver: string;
  volumeHandle: string;
  readOnly?: boolean;
  fsType?: string;
  volumeAttributes?: Record<string, string>;
  nodeStageSecretRef?: { name: string; namespace: string };
  nodePublishSecretRef?: { name: string; namespace: string };
  controllerPublishSecretRef?: { name: string; namespace: string };
  nodeExpandSecretRef?: { name: string; namespace: string };
}

/** A pod's inline `csi` volume (core/v1 CSIVolumeSource). */
export interface CsiVolumeSource {
  driver: string;
  readOnly?: boolean;
  fsType?: string;
  volumeAttributes?: Record<string, string>;
  /** A Secret in the pod's namespace. */
  nodePublishSecretRef?: { name?: string };
}

/** A CSIDriver (storage.k8s.io/v1): the fields the kubelet's CSI plugin reads, as the API defaults them. */
export interface CSIDriver {
  metadata: { name: string };
  spec: {
    attachRequired?: boolean;
    podInfoOnMount?: boolean;
    volumeLifecycleModes?: ('Persistent' | 'Ephemeral')[];
    fsGroupPolicy?: string;
    tokenRequests?: { audience: string; expirationSeconds?: number }[];
    requiresRepublish?: boolean;
    seLinuxMount?: boolean;
    serviceAccountTokenInSecrets?: boolean;
  };
}

/** A VolumeAttachment (storage.k8s.io/v1) as the kubelet reads it: its status, written by the external attacher. */
export interface VolumeAttachment {
  metadata: { name: string; deletionTimestamp?: string };
  spec?: { attacher?: string; nodeName?: string; source?: { persistentVolumeName?: string } };
  status?: { attached?: boolean; attachmentMetadata?: Record<string, string>; attachError?: { message?: string; time?: string } };
}
