/**
 * Pods with claims in the API episodes (apiFaults.ts), and what they must leave behind. For each
 * `claim` pod: a local PersistentVolume on a directory of the episode's own (holding a `data`
 * file the test writes), pre-bound to a claim made for the pod, the claim and the volume Bound
 * through their status subresource as the PV controller would leave them (no controller-manager
 * runs). The volume is kept when its pod goes (Retain). The pod appends its `data` to `beats` on
 * the volume every second: a beat on the volume's directory shows the pod both reads the claim's
 * data and writes to the claim itself (not to a directory left where a mount was).
 * Where the agent is root (CI) a local volume is bind-mounted into the pod's directory
 * (pkg/volume/local local.go SetUpAt), so a mount left for a deleted pod is seen; elsewhere the
 * container gets the volume's own directory.
 *
 * Checked until converged (claimsNotConverged): every claim's data is on its volume as written,
 * the pod of each live claim has beaten since the fault, and of each deleted pod nothing is left:
 * neither its directory under `<root-dir>/pods` (the pod's teardown, cleanupOrphanedPodDirs) nor
 * a mount under it.
 */
import { existsSync } from 'node:fs';
import { mkdir, readFile, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import * as k8s from '@kubernetes/client-node';
import { mountPointsUnder } from '../../src/volumes/mounter.ts';
import type { ControlPlane } from '../support/controlPlane.ts';

/** A claim pod's one container: the claim's data appended to its beats every second. */
export const CLAIM_COMMAND = "trap 'exit 0' TERM; while true; do cat /data/data >> /data/beats; sleep 1; done";
export const CLAIM_MOUNT_PATH = '/data';

const STORAGE = { storage: '1Gi' };
const mergePatch = k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch);

interface Claim {
  name: string;
  pvName: string;
  dir: string;
  data: string;
}

export class PodClaims {
  /** The claims made, by pod name: each one's volume directory and the data written there. */
  private readonly claims = new Map<string, Claim>();
  /** The beats on each claim's volume at the last mark (bytes). */
  private readonly marked = new Map<string, number>();

  constructor(
    private readonly cp: ControlPlane,
    private readonly namespace: string,
    private readonly node: string,
    /** Where the volumes' directories are made. */
    private readonly dir: string,
  ) {}

  /** Makes the claim of pod `pod`, Bound to a local volume of its own holding its data; the pod volume that mounts it. */
  async make(pod: string): Promise<k8s.V1Volume> {
    const { cp, namespace, node } = this;
    // Persistent volumes are cluster-wide: the namespace keeps episodes apart.
    const pvName = `${namespace}-${pod}`;
    const claim: Claim = { name: `${pod}-data`, pvName, dir: path.join(this.dir, pod), data: `data of ${namespace}/${pod}\n` };
    await mkdir(claim.dir, { recursive: true });
    await writeFile(path.join(claim.dir, 'data'), claim.data);
    const created = await cp.core.createNamespacedPersistentVolumeClaim({ namespace, body: { metadata: { name: claim.name }, spec: { storageClassName: '', volumeName: pvName, accessModes: ['ReadWriteOnce'], resources: { requests: STORAGE } } } });
    const onThisNode = { required: { nodeSelectorTerms: [{ matchExpressions: [{ key: 'kubernetes.io/hostname', operator: 'In', values: [node] }] }] } };
    await cp.core.createPersistentVolume({
      body: {
        metadata: { name: pvName },
        spec: { capacity: STORAGE, accessModes: ['ReadWriteOnce'], storageClassName: '', persistentVolumeReclaimPolicy: 'Retain', claimRef: { namespace, name: claim.name, uid: created.metadata!.uid! }, local: { path: claim.dir }, nodeAffinity: onThisNode },
      },
    });
    // What pv_controller.go bindVolumeToClaim and bindClaimToVolume leave.
    await cp.core.patchPersistentVolumeStatus({ name: pvName, body: { status: { phase: 'Bound' } } }, mergePatch);
    await cp.core.patchNamespacedPersistentVolumeClaimStatus({ namespace, name: claim.name, body: { status: { phase: 'Bound', accessModes: ['ReadWriteOnce'], capacity: STORAGE } } }, mergePatch);
    this.claims.set(pod, claim);
    return { name: 'data', persistentVolumeClaim: { claimName: claim.name } };
  }

  /** Deletes the persistent volumes made (the claims go with their namespace), once nothing uses them. */
  async deleteVolumes(): Promise<void> {
    for (const claim of this.claims.values()) await this.cp.core.deletePersistentVolume({ name: claim.pvName }).catch(() => {});
  }

  /** Notes each claim's beats now: a live claim's pod must beat again before the node counts as converged. */
  async mark(): Promise<void> {
    for (const [pod, claim] of this.claims) this.marked.set(pod, await beatsSize(claim));
  }

  /**
   * Why the claims are not as they must be: a claim's data changed or gone (of live and deleted
   * pods alike: a volume outlives its pod), a beat of a live pod's that is not its claim's data,
   * or no beat since the mark.
   */
  async notConverged(live: ReadonlySet<string>): Promise<string[]> {
    const reasons: string[] = [];
    for (const [pod, claim] of this.claims) {
      const data = await readFile(path.join(claim.dir, 'data'), 'utf8').catch(() => null);
      if (data !== claim.data) reasons.push(`claim ${claim.name}: its data on the volume is ${data === null ? 'gone' : `now ${JSON.stringify(data)}`}`);
      if (!live.has(pod)) continue;
      const beats = await readFile(path.join(claim.dir, 'beats'), 'utf8').catch(() => '');
      const wrong = beats.split('\n').find((line) => line !== '' && `${line}\n` !== claim.data);
      if (wrong !== undefined) reasons.push(`pod ${pod}: wrote ${JSON.stringify(wrong)} to its claim, not the claim's data`);
      if (beats.length <= (this.marked.get(pod) ?? 0)) reasons.push(`pod ${pod}: nothing written to its claim ${claim.name} since the fault`);
    }
    return reasons;
  }
}

async function beatsSize(claim: Claim): Promise<number> {
  return (await stat(path.join(claim.dir, 'beats')).catch(() => null))?.size ?? 0;
}

/**
 * What deleted pods left on the node: their directory under `<rootDir>/pods`, or a mount under it
 * (`gone`: the pods' names by UID).
 */
export async function deletedPodsLeftovers(rootDir: string, gone: ReadonlyMap<string, string>): Promise<string[]> {
  const mountinfo = await readFile('/proc/self/mountinfo', 'utf8');
  const reasons: string[] = [];
  for (const [uid, name] of gone) {
    const podDir = path.join(rootDir, 'pods', uid);
    const mounted = mountPointsUnder(mountinfo, podDir);
    if (mounted.length > 0) reasons.push(`deleted pod ${name} (${uid}) still has mounts: ${mounted.join(', ')}`);
    else if (existsSync(podDir)) reasons.push(`the directory of deleted pod ${name} (${uid}) is still there`);
  }
  return reasons;
}
