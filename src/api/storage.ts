/**
 * The storage objects a node reads (core/v1 PersistentVolumeClaim, PersistentVolume): only the
 * fields the kubelet's volume manager looks at.
 */
import type { ObjectMeta } from './types.ts';

export type PersistentVolumeMode = 'Filesystem' | 'Block';

export interface PersistentVolumeClaim {
  metadata: Pick<ObjectMeta, 'name' | 'namespace' | 'uid'> & {
    deletionTimestamp?: string;
    finalizers?: string[];
    ownerReferences?: { apiVersion?: string; kind?: string; name?: string; uid?: string; controller?: boolean }[];
  };
  spec?: { volumeName?: string; volumeMode?: PersistentVolumeMode; accessModes?: string[] };
  status?: { phase?: string; capacity?: Record<string, string> };
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
