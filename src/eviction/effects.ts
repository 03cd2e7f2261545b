/**
 * The eviction manager's effects over the node's parts (pkg/kubelet/eviction/eviction_manager.go
 * synchronize, localStorageEviction, reclaimNodeLevelResources, evictPod): the node's own figures
 * read as signals, the pods over a local-storage limit, the node-level reclaim of disk (dead
 * containers, then unused images), the ranking of the active pods, the `Evicted` event on each pod
 * chosen, and whether it has been cleaned up.
 *
 * The kubelet reads its whole Summary, every pod's usage included, each round. The signals are the
 * node's alone, so a round reads the node (StatsProvider.readNode) and the pods only where a
 * decision needs them: the local-storage check reads the Summary when an active pod has a limit it
 * could break (`hasLocalStorageLimit`), the ranking when a threshold is met. The same pods are
 * evicted for the same reasons; a node of 1,000 pods without limits is not listed, its stats not
 * decoded nor its pods' log and emptyDir directories walked every 10 s.
 *
 * What a disk signal reclaims and what a pod's usage counts depend on whether the image
 * filesystem is dedicated (diskSignals.ts). Each read of the node says so, as far as the stats
 * provider could tell; the last answer is kept through a read that cannot (the runtime down a moment),
 * and before any answer the node counts as one disk. The kubelet asks HasDedicatedImageFs each
 * round until it has an answer and keeps that one; following each round's answer costs nothing
 * more (the read measured it) and follows a runtime restarted onto another disk.
 */
import { isCriticalPod, podRef, type Pod } from '../api/types.ts';
import { type EventRecorder, nodeReference, podReference } from '../eventrecorder/recorder.ts';
import type { Logger } from '../log.ts';
import type { StatsProvider } from '../stats/provider.ts';
import type { Summary } from '../stats/summary.ts';
import type { EvictionChoice, EvictionEffects, Reading } from './evictionManager.ts';
import { diskUsageCountedFor, nodeReclaimsFor } from './diskSignals.ts';
import { LOCAL_STORAGE_GRACE_PERIOD_SECONDS, hasLocalStorageLimit, localStorageViolations } from './localStorage.ts';
import { evictionGracePeriodSeconds, evictionMessage, rankForEviction } from './rank.ts';
import { type Observations, observe } from './synchronize.ts';
import { SIGNALS, type Threshold } from './thresholds.ts';

export interface EvictionDeps {
  nodeName: string;
  stats: Pick<StatsProvider, 'summary' | 'readNode'>;
  /** The pods admitted and not terminating (the kubelet's activePods). */
  activePods(): Pod[];
  /** Whether the pod's actor is done with it (stopped and cleaned up), or gone. */
  podCleanedUp(uid: string): boolean;
  /** Removes every dead container of a pod that no longer runs (containerGC DeleteAllUnusedContainers). */
  deleteAllUnusedContainers(): Promise<void>;
  /** Removes every image no container uses (imageGC DeleteUnusedImages). */
  deleteUnusedImages(): Promise<void>;
  recorder: EventRecorder;
  now(): number;
  log: Logger;
}

export function createEvictionEffects(deps: EvictionDeps): EvictionEffects {
  /** Whether the image filesystem is on a disk of its own, as the last read that could tell said. */
  let dedicatedImageFs = false;
  const remember = <T extends Omit<Summary, 'pods'>>(read: T): T => {
    if (read.dedicatedImageFs !== undefined) dedicatedImageFs = read.dedicatedImageFs;
    return read;
  };
  const summary = async (): Promise<Summary> => remember(await deps.stats.summary(false));
  const read = async (): Promise<Observations> => observe(remember(await deps.stats.readNode()));
  /** Says why the pod goes (its Evicted event), unless it is critical (evictPod); false: it stays. */
  const tell = (pod: Pod, message: string): boolean => {
    if (isCriticalPod(pod)) {
      deps.log('error', 'Eviction manager: cannot evict a critical pod', { pod: podRef(pod) });
      return false;
    }
    deps.recorder.event(podReference(pod), 'Warning', 'Evicted', message);
    deps.log('info', 'Eviction manager: pod is evicted', { pod: podRef(pod), podUID: pod.metadata.uid, message });
    return true;
  };
  return {
    async observe(): Promise<Reading> {
      return { observations: await read(), at: deps.now() };
    },

    async localStorageEviction(): Promise<EvictionChoice[]> {
      const limited = deps.activePods().filter(hasLocalStorageLimit);
      if (limited.length === 0) return [];
      const round = await summary();
      const byUid = new Map(round.pods.map((p) => [p.podRef.uid, p]));
      const chosen: EvictionChoice[] = [];
      for (const { pod, message } of localStorageViolations(limited, (p) => byUid.get(p.metadata.uid), dedicatedImageFs)) {
        if (tell(pod, message)) chosen.push({ uid: pod.metadata.uid, pod: podRef(pod), gracePeriodSeconds: LOCAL_STORAGE_GRACE_PERIOD_SECONDS, message });
      }
      return chosen;
    },

    async reclaimNodeResources(threshold: Threshold) {
      const resource = SIGNALS[threshold.signal].resource;
      deps.log('warn', 'Eviction manager: attempting to reclaim', { resourceName: resource });
      deps.recorder.event(nodeReference(deps.nodeName), 'Warning', 'EvictionThresholdMet', `Attempting to reclaim ${resource}`);
      const reclaims = nodeReclaimsFor(threshold.signal, dedicatedImageFs);
      if (reclaims.length === 0) return null;
      // Each runs whatever the one before did, and the node is measured again after them all.
      for (const reclaim of reclaims) {
        try {
          await deps[reclaim]();
        } catch (err) {
          deps.log('info', 'Eviction manager: unexpected error when attempting to reduce resource pressure', { resourceName: resource, err });
        }
      }
      return read();
    },

    async selectPod(threshold: Threshold, observations: Observations, maxPodGracePeriodSeconds: number): Promise<EvictionChoice | null> {
      const now = await summary();
      const byUid = new Map(now.pods.map((p) => [p.podRef.uid, p]));
      const statsOf = (pod: Pod) => byUid.get(pod.metadata.uid);
      const ranked = rankForEviction(threshold.signal, deps.activePods(), statsOf, diskUsageCountedFor(threshold.signal, dedicatedImageFs));
      deps.log('info', 'Eviction manager: pods ranked for eviction', { signal: threshold.signal, pods: ranked.map(podRef) });
      for (const pod of ranked) {
        const message = evictionMessage(SIGNALS[threshold.signal].resource, threshold, observations, pod, statsOf(pod));
        if (!tell(pod, message)) continue;
        return { uid: pod.metadata.uid, pod: podRef(pod), gracePeriodSeconds: evictionGracePeriodSeconds(threshold, pod, maxPodGracePeriodSeconds), message };
      }
      deps.log('info', 'Eviction manager: unable to evict any pods from the node');
      return null;
    },

    async podCleanedUp(uid: string) {
      return deps.podCleanedUp(uid);
    },
  };
}
