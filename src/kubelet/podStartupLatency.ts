/**
 * The pod startup latency tracker: when a pod first runs, how long that took since the agent first
 * saw it (pkg/kubelet/kubelet.go SyncPod, PodStartDuration) and the same without the time its
 * images took to pull (pkg/kubelet/util/pod_startup_latency_tracker.go, PodStartSLIDuration).
 *
 * A pod is tracked from its first Pending status until every container has started; its record
 * holds when it was first seen (the config source's `kubernetes.io/config.seen`, the kubelet's
 * ConfigFirstSeenAnnotationKey) and the first pull start and last pull end. The start duration is
 * observed when the pod first turns Running, the SLI duration when every container runs; then the
 * record is dropped, so each pod is observed once and only pods still starting are kept. A pod whose
 * first status is already Running (adopted after an agent restart) is not observed; one that ends
 * (Succeeded, Failed, deleted) before starting is forgotten.
 *
 * Departure: the kubelet's SLI runs from the pod's creationTimestamp to when the API watch shows it
 * running; statelet measures both figures from the first sighting, so they differ exactly by the
 * pull time.
 */
import { ConfigAnnotation, type Pod, type PodStatus } from '../api/types.ts';
import type { PodStatusReader } from '../status/manager.ts';

export interface PodStartRecord {
  seenMs: number;
  firstPullStartMs: number | null;
  lastPullEndMs: number | null;
  /** The start duration was observed (the pod turned Running). */
  runningSeen: boolean;
}

interface PodStartStep {
  /** The record after this status; `undefined`: not tracked (any more). */
  record: PodStartRecord | undefined;
  /** Seconds from first seen to Running, when this status is the pod's first Running one. */
  startSeconds?: number;
  /** The same, less the image pulls, when every container has just started. */
  sliSeconds?: number;
}

/** Every container runs and has a start time (pod_startup_latency_tracker.go hasPodStartedSLO). */
export function hasPodStarted(status: PodStatus): boolean {
  const containers = status.containerStatuses ?? [];
  return containers.length > 0 && containers.every((c) => c.state.running?.startedAt !== undefined);
}

/** When the config source first saw the pod; `fallbackMs` when it did not say. */
function firstSeenMs(pod: Pod | undefined, fallbackMs: number): number {
  const seen = Date.parse(pod?.metadata.annotations?.[ConfigAnnotation.seen] ?? '');
  return Number.isNaN(seen) ? fallbackMs : seen;
}

/** What one status change of a pod does to its record and what it observes. */
export function podStartStep(record: PodStartRecord | undefined, pod: Pod | undefined, status: PodStatus | undefined, nowMs: number): PodStartStep {
  if (status === undefined || status.phase === 'Succeeded' || status.phase === 'Failed') return { record: undefined };
  if (record === undefined) {
    if (status.phase !== 'Pending') return { record: undefined };
    return { record: { seenMs: firstSeenMs(pod, nowMs), firstPullStartMs: null, lastPullEndMs: null, runningSeen: false } };
  }
  const step: PodStartStep = { record };
  if (!record.runningSeen && status.phase === 'Running') {
    step.startSeconds = (nowMs - record.seenMs) / 1000;
    step.record = { ...record, runningSeen: true };
  }
  if (hasPodStarted(status)) {
    const { firstPullStartMs: start, lastPullEndMs: end } = record;
    const pullMs = start !== null && end !== null && end > start ? end - start : 0;
    step.sliSeconds = (nowMs - record.seenMs - pullMs) / 1000;
    step.record = undefined;
  }
  return step;
}

export interface PodStartObserver {
  podStarted(seconds: number): void;
  /** `firstWithNetwork`: the node's first pod without host networking (the kubelet's label). */
  podStartedSli(seconds: number, firstWithNetwork: boolean): void;
}

export class PodStartupLatency {
  private readonly pods = new Map<string, PodStartRecord>();
  private firstNetworkPodSeen = false;

  constructor(
    private readonly now: () => number,
    private readonly observer: PodStartObserver,
  ) {}

  /** Pods still being tracked. */
  get size(): number {
    return this.pods.size;
  }

  /** A pod's status changed (`undefined`: deleted); `pod` is its spec, when the agent has it. */
  statusChanged(uid: string, pod: Pod | undefined, status: PodStatus | undefined): void {
    const step = podStartStep(this.pods.get(uid), pod, status, this.now());
    if (step.record) this.pods.set(uid, step.record);
    else this.pods.delete(uid);
    if (step.startSeconds !== undefined) this.observer.podStarted(step.startSeconds);
    if (step.sliSeconds !== undefined) {
      const first = pod?.spec.hostNetwork !== true && !this.firstNetworkPodSeen;
      if (first) this.firstNetworkPodSeen = true;
      this.observer.podStartedSli(step.sliSeconds, first);
    }
  }

  /** An image pull for the pod started (image_manager.go RecordImageStartedPulling). */
  pullStarted(uid: string): void {
    const record = this.pods.get(uid);
    if (record && record.firstPullStartMs === null) this.pods.set(uid, { ...record, firstPullStartMs: this.now() });
  }

  /** An image pull for the pod succeeded (image_manager.go RecordImageFinishedPulling). */
  pullFinished(uid: string): void {
    const record = this.pods.get(uid);
    if (record) this.pods.set(uid, { ...record, lastPullEndMs: this.now() });
  }
}

/**
 * The node's pod start metrics, where its metrics take them: they follow every status change of
 * `statuses`, the pod's spec read from `desired`. None where nothing would be told.
 */
export function followPodStarts(
  metrics: Partial<PodStartObserver>,
  statuses: Pick<PodStatusReader, 'subscribe'>,
  desired: (uid: string) => Pod | undefined,
  now: () => number,
): PodStartupLatency | undefined {
  if (!metrics.podStarted || !metrics.podStartedSli) return undefined;
  const startup = new PodStartupLatency(now, { podStarted: (seconds) => metrics.podStarted?.(seconds), podStartedSli: (seconds, first) => metrics.podStartedSli?.(seconds, first) });
  statuses.subscribe((uid, status) => startup.statusChanged(uid, desired(uid), status));
  return startup;
}
