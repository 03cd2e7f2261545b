/**
 * The node's cgroups (pkg/kubelet/cm: container_manager_linux.go, qos_container_manager_linux.go,
 * pod_container_manager_linux.go, node_container_manager_linux.go): at start (createNodeCgroups,
 * before the node is built) the kubepods cgroup with the node's allocatable, and the burstable and
 * besteffort cgroups; for each pod, before its
 * sandbox, its own cgroup with its limits (the sandbox's cgroup parent); the pod's cgroup removed
 * once it has terminated, and at housekeeping any pod cgroup no pod owns.
 *
 * The burstable cgroup's CPU shares follow the Burstable pods' requests: set again before each
 * new Burstable pod's cgroup and after each one's removal (the kubelet's UpdateQOSCgroups runs for
 * every pod, but only a Burstable pod moves the sum), the requests made while one update runs
 * served by the next (the kubelet also does it every minute; here nothing else changes them).
 */
import { podQos, type QosClass } from '../api/qos.ts';
import type { ResourceAmounts } from '../api/quantity.ts';
import type { Pod } from '../api/types.ts';
import type { Logger } from '../log.ts';
import type { Cgroups } from './cgroupfs.ts';
import { BESTEFFORT_CGROUP_CONFIG, POD_RESOURCE_FILES, burstableCgroupConfig, kubepodsCgroup, kubepodsCgroupConfig, podCgroup, parsePodCgroupResources, podCgroupConfig, podResizeConfig, podUidOfCgroup, qosCgroup } from './podResources.ts';
import type { PodCgroupResources, PodCgroupSettings } from '../kuberuntime/podResize.ts';

/** The node's cgroup tree and what each pod cgroup gets, as the agent opened them (open.ts). */
export interface NodeCgroupSettings {
  cgroups: Cgroups;
  /** --cgroup-root: where kubepods goes ('/' by default). */
  cgroupRoot: string;
  /** --pod-max-pids; -1 or 0: none. */
  podPidsLimit: number;
  /** The huge page sizes the host has (`2MB`, `1GB`): each pod cgroup's HugeTLB limits cover them all. */
  hugePageSizes: readonly string[];
  /** --enforce-node-allocatable has `pods`: kubepods is limited to allocatable rather than capacity. */
  enforcePods: boolean;
  capacity: { milliCpu: number; memoryBytes: number; pids?: number };
  /** --system-reserved and --kube-reserved summed (amounts: millicores, bytes, pids). */
  reserved: ResourceAmounts;
}

export interface ContainerManagerDeps extends NodeCgroupSettings {
  /** The pods admitted and not terminated, whose requests the burstable cgroup shares. */
  activePods(): Pod[];
  log: Logger;
}

/**
 * Makes kubepods and the QoS cgroups (enforceNodeAllocatableCgroups, QOSContainerManager.Start),
 * before any pod is admitted; rejects with the cgroup filesystem's error.
 */
export async function createNodeCgroups(settings: NodeCgroupSettings): Promise<void> {
  const { cgroups, cgroupRoot } = settings;
  await cgroups.create(kubepodsCgroup(cgroupRoot), kubepodsCgroupConfig(settings.capacity, settings.reserved, settings.enforcePods));
  await cgroups.create(qosCgroup(cgroupRoot, 'Burstable'), burstableCgroupConfig([]));
  await cgroups.create(qosCgroup(cgroupRoot, 'BestEffort'), BESTEFFORT_CGROUP_CONFIG);
}

/** The error the kubelet's SyncPod reports when the pod cgroup cannot be made; `cause` is the filesystem's. */
export class PodCgroupError extends Error {
  override readonly name = 'PodCgroupError';
  constructor(
    uid: string,
    readonly causeText: string,
  ) {
    super(`failed to ensure that the pod: ${uid} cgroups exist and are correctly applied: ${causeText}`);
  }
}

export class ContainerManager {
  /**
   * The pod cgroups this agent made or found, by UID: a pod's sync checks the filesystem only
   * the first time (the kubelet stats every hierarchy at every sync; statelet owns these cgroups).
   */
  private readonly known = new Set<string>();
  /** The burstable cgroup's shares as last written (createNodeCgroups wrote those of no pods), so an unchanged value is not written again. */
  private burstableShares: number | null = burstableCgroupConfig([]).cpuShares ?? null;
  /** The update of the burstable cgroup that has not begun yet, which later requests join, and the pods they add. */
  private nextBurstable: { run: Promise<void>; also: Map<string, Pod> } | null = null;
  /** The update running or last run (settled either way): the next one begins after it. */
  private lastBurstable: Promise<void> = Promise.resolve();

  constructor(private readonly deps: ContainerManagerDeps) {}

  /** The pod's cgroup, the sandbox's cgroup_parent. */
  parentOf(pod: Pod): string {
    return podCgroup(this.deps.cgroupRoot, pod);
  }

  /**
   * Makes the pod's cgroup if it is missing (EnsureExists, after UpdateQOSCgroups); an existing
   * one is left as it is (only a resize changes it).
   */
  async ensurePod(pod: Pod): Promise<void> {
    const uid = pod.metadata.uid;
    if (this.known.has(uid)) return;
    const cgroup = this.parentOf(pod);
    try {
      if (!(await this.deps.cgroups.exists(cgroup))) {
        if (podQos(pod) === 'Burstable') await this.updateBurstable([pod]);
        await this.deps.cgroups.create(cgroup, podCgroupConfig(pod, this.deps.podPidsLimit, this.deps.hugePageSizes));
      }
      this.known.add(uid);
    } catch (err) {
      throw new PodCgroupError(pod.metadata.uid, err instanceof Error ? err.message : String(err));
    }
  }

  /** The pod cgroup's CPU and memory settings now (GetPodCgroupConfig), what a resize starts from; rejects with the filesystem's error. */
  async podResources(pod: Pod): Promise<PodCgroupResources> {
    const cgroup = this.parentOf(pod);
    const version = this.deps.cgroups.version;
    const files: Record<string, string> = {};
    for (const file of POD_RESOURCE_FILES[version]) files[file] = await this.deps.cgroups.read(cgroup, file);
    return parsePodCgroupResources(version, files);
  }

  /**
   * Sets some of the pod cgroup's settings in place (SetPodCgroupConfig): one step of an in-place
   * resize. New CPU shares change what the Burstable pods share too.
   */
  /** What the pod's cgroup should have for its spec, in CPU and memory (a resize's target). */
  resizeConfig(pod: Pod): PodCgroupSettings {
    return podResizeConfig(pod);
  }

  async setPodResources(pod: Pod, config: PodCgroupSettings): Promise<void> {
    await this.deps.cgroups.update(this.parentOf(pod), config);
    if (config.cpuShares !== undefined) await this.updateBurstable([]).catch((err: unknown) => this.deps.log('warn', 'Failed to update the burstable cgroup', { err }));
  }

  /** Removes the terminated pod's cgroup, killing what is left in it (Destroy); the burstable shares follow, or are left to the next pod if they cannot be set. */
  async destroyPod(pod: Pod): Promise<void> {
    this.known.delete(pod.metadata.uid);
    await this.deps.cgroups.destroy(this.parentOf(pod));
    if (podQos(pod) !== 'Burstable') return;
    await this.updateBurstable([]).catch((err: unknown) => this.deps.log('warn', 'Failed to update the burstable cgroup', { err }));
  }

  /** Removes the pod cgroups whose pod `isOrphan` (cleanupOrphanedPodCgroups); the number removed. */
  async removeOrphans(isOrphan: (uid: string) => boolean): Promise<number> {
    let removed = 0;
    for (const qos of ['Guaranteed', 'Burstable', 'BestEffort'] as const satisfies readonly QosClass[]) {
      const parent = qosCgroup(this.deps.cgroupRoot, qos);
      for (const name of await this.deps.cgroups.children(parent)) {
        const uid = podUidOfCgroup(name);
        if (uid === null || !isOrphan(uid)) continue;
        try {
          this.known.delete(uid);
          await this.deps.cgroups.destroy(`${parent}/${name}`);
          removed++;
          this.deps.log('info', 'Removed the cgroup of a pod that is gone', { podUID: uid, cgroup: `${parent}/${name}` });
        } catch (err) {
          this.deps.log('error', 'Failed to remove an orphaned pod cgroup', { podUID: uid, cgroup: `${parent}/${name}`, err });
        }
      }
    }
    return removed;
  }

  /**
   * Sets the burstable cgroup's shares when they change, making it again if it went
   * (UpdateQOSCgroups ensures the QoS cgroups exist). Requests made while an update runs are
   * served together by the next one, which reads the active pods after all of them were made: a
   * burst of pod starts computes the shares over every pod once or twice, not once per pod.
   */
  private updateBurstable(also: readonly Pod[]): Promise<void> {
    if (!this.nextBurstable) {
      const next = { also: new Map<string, Pod>(), run: Promise.resolve() };
      next.run = this.lastBurstable.then(() => {
        this.nextBurstable = null;
        return this.writeBurstable([...next.also.values()]);
      });
      this.nextBurstable = next;
      this.lastBurstable = next.run.catch(() => undefined);
    }
    for (const pod of also) this.nextBurstable.also.set(pod.metadata.uid, pod);
    return this.nextBurstable.run;
  }

  private async writeBurstable(also: readonly Pod[]): Promise<void> {
    const pods = [...this.deps.activePods()];
    const active = new Set(pods.map((pod) => pod.metadata.uid));
    for (const pod of also) if (!active.has(pod.metadata.uid)) pods.push(pod);
    const config = burstableCgroupConfig(pods);
    if (config.cpuShares === this.burstableShares) return;
    const burstable = qosCgroup(this.deps.cgroupRoot, 'Burstable');
    await this.deps.cgroups.update(burstable, config).catch(() => this.deps.cgroups.create(burstable, config));
    this.burstableShares = config.cpuShares ?? null;
  }
}
