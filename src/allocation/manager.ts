/**
 * The allocation manager (pkg/kubelet/allocation/allocation_manager.go manager, with the resize
 * conditions the kubelet's status manager keeps and the actuated state of its runtime manager):
 * the node's records of what it gave each pod, in one place with one writer per record:
 *
 *   record                    written by                                  read by
 *   allocated resources       the config handlers (admission, a resize    the config handlers, the pod
 *     (checkpointed)            accepted), on the dispatcher's turn         workers' pods (allocatedPod)
 *   actuated resources        the pod's effects (a container created or   the pod's effects and status
 *     (checkpointed)            updated in place)
 *   resize conditions         the config handlers (PodResizePending, a    the pod's status
 *                               resize started), the pod's effects
 *                               (PodResizeInProgress and its end)
 *   pending resizes           the config handlers                         their retries
 *
 * The decisions are in allocation.ts and src/status/resize.ts; this class only keeps their results.
 */
import type { Pod, PodCondition, ResourceRequirements } from '../api/types.ts';
import type { Clock } from '../clock.ts';
import type { ActuatedResources } from '../kuberuntime/podResize.ts';
import type { ActuatedStore, PodResizeState } from '../kuberuntime/resize.ts';
import type { Logger } from '../log.ts';
import {
  type ResizeConditions,
  backfillConditions,
  clearInProgress,
  clearPending,
  resizeConditionList,
  setInProgress,
  setPending,
} from '../status/resize.ts';
import { type PodResourceInfo, resourceInfoForPod, updatePodFromAllocation } from './allocation.ts';
import { type CheckpointStore, type PodResourceRecords, fileCheckpoint } from './checkpoint.ts';

/** The first retry of pending resizes after start, and the period after (allocation_manager.go initialRetryDelay, retryDelay). */
export const INITIAL_RETRY_DELAY_MS = 30_000;
export const RETRY_DELAY_MS = 3 * 60_000;

interface AllocationManagerDeps {
  allocated: CheckpointStore;
  actuated: CheckpointStore;
  /** Wall-clock milliseconds (the conditions' times). */
  now(): number;
}

/** Seconds-precision RFC 3339, as the API shows condition times. */
const toTime = (ms: number): string => new Date(Math.floor(ms / 1000) * 1000).toISOString().replace('.000Z', 'Z');

export class AllocationManager implements PodResizeState {
  /** The node's allocation manager, its records checkpointed in `dir` (the root directory) as the kubelet's files are. */
  static checkpointed(dir: string, clock: Clock, log: Logger): AllocationManager {
    return new AllocationManager({
      allocated: fileCheckpoint(dir, 'allocated_pods_state', log, clock),
      actuated: fileCheckpoint(dir, 'actuated_pods_state', log, clock),
      now: () => clock.now(),
    });
  }

  /** The actuated records as a store, for the runtime's steps that set them. */
  readonly actuated: ActuatedStore = { of: (uid) => this.actuatedOf(uid), set: (uid, container, resources) => this.setActuated(uid, container, resources) };

  private readonly allocated: PodResourceRecords;
  private readonly actuatedRecords: PodResourceRecords;
  private readonly resizeConditions = new Map<string, ResizeConditions>();
  private pendingResizes: string[] = [];
  private nextRetryAt: number;

  constructor(private readonly deps: AllocationManagerDeps) {
    this.allocated = deps.allocated.load();
    this.actuatedRecords = deps.actuated.load();
    this.nextRetryAt = deps.now() + INITIAL_RETRY_DELAY_MS;
  }

  // ---------------------------------------------------------------- allocated resources

  /** HasPodAllocatedResources. */
  has(uid: string): boolean {
    return this.allocated[uid] !== undefined;
  }

  allocation(uid: string): PodResourceInfo | undefined {
    return this.allocated[uid];
  }

  /** UpdatePodFromAllocation: the pod as its worker runs it. */
  allocatedPod(pod: Pod): Pod {
    return updatePodFromAllocation(pod, this.allocated[pod.metadata.uid]).pod;
  }

  /** The pod's desired resources differ from its allocated ones: a resize not (yet) accepted. */
  hasPendingChange(pod: Pod): boolean {
    return updatePodFromAllocation(pod, this.allocated[pod.metadata.uid]).updated;
  }

  /** SetAllocatedResources: checkpoints the pod's resources as allocated. */
  setAllocated(pod: Pod): void {
    this.allocated[pod.metadata.uid] = { ...resourceInfoForPod(pod) };
    this.deps.allocated.save(this.allocated);
  }

  /** RemovePod: a pod that left its source; its records and conditions go. */
  removePod(uid: string): void {
    this.resizeConditions.delete(uid);
    this.pendingResizes = this.pendingResizes.filter((u) => u !== uid);
    const hadAllocation = delete this.allocated[uid];
    const hadActuated = delete this.actuatedRecords[uid];
    if (hadAllocation) this.deps.allocated.save(this.allocated, true);
    if (hadActuated) this.deps.actuated.save(this.actuatedRecords, true);
  }

  /** RemoveOrphanedPods: the records of every pod `keep` does not name. */
  removeOrphans(keep: (uid: string) => boolean): void {
    for (const uid of new Set([...Object.keys(this.allocated), ...Object.keys(this.actuatedRecords)])) if (!keep(uid)) this.removePod(uid);
  }

  /** Writes the checkpoints now (the agent stops). */
  flush(): void {
    this.deps.allocated.flush?.();
    this.deps.actuated.flush?.();
  }

  // ---------------------------------------------------------------- actuated resources

  /** The resources the runtime last took for each of the pod's containers (empty: none recorded). */
  actuatedOf(uid: string): ActuatedResources {
    return this.actuatedRecords[uid] ?? {};
  }

  /** A container's resources as the runtime took them (setActuatedContainerResources). */
  setActuated(uid: string, container: string, resources: ResourceRequirements): void {
    // A container started with what it was allocated (the common case) changes nothing to write.
    if (JSON.stringify(this.actuatedRecords[uid]?.[container]) === JSON.stringify(resources)) return;
    const record = { ...this.actuatedRecords[uid] };
    record[container] = resources;
    this.actuatedRecords[uid] = record;
    this.deps.actuated.save(this.actuatedRecords);
  }

  /** InitializeActuatedPod: a pod without a record starts with its allocated resources as actuated. */
  initializeActuated(pod: Pod): void {
    if (this.actuatedRecords[pod.metadata.uid]) return;
    this.actuatedRecords[pod.metadata.uid] = { ...resourceInfoForPod(pod) };
    this.deps.actuated.save(this.actuatedRecords);
  }

  // ---------------------------------------------------------------- resize conditions

  conditionsOf(uid: string): ResizeConditions {
    return this.resizeConditions.get(uid) ?? {};
  }

  /** The pod's resize conditions for its status. */
  conditions(uid: string): PodCondition[] {
    return resizeConditionList(this.resizeConditions.get(uid));
  }

  /** SetPodResizePendingCondition; true when its reason or generation changed. */
  setPending(uid: string, reason: string, message: string, generation: number): boolean {
    const { conditions, changed } = setPending(this.conditionsOf(uid), reason, message, generation, toTime(this.deps.now()));
    this.resizeConditions.set(uid, conditions);
    return changed;
  }

  clearPending(uid: string): void {
    this.store(uid, clearPending(this.conditionsOf(uid)));
  }

  /** SetPodResizeInProgressCondition: whether it changed, and its generation. */
  setInProgress(uid: string, reason: string, message: string, generation: number): { changed: boolean; generation: number } {
    const { conditions, changed, generation: kept } = setInProgress(this.conditionsOf(uid), reason, message, generation, toTime(this.deps.now()));
    this.resizeConditions.set(uid, conditions);
    return { changed, generation: kept };
  }

  /** ClearPodResizeInProgressCondition: the generation of the condition cleared, or null when there was none. */
  clearInProgress(uid: string): number | null {
    const { conditions, cleared } = clearInProgress(this.conditionsOf(uid));
    this.store(uid, conditions);
    return cleared;
  }

  /** Both conditions cleared (a pod that has reached a terminal phase: determinePodResizeStatus). */
  clearConditions(uid: string): void {
    this.resizeConditions.delete(uid);
  }

  /** BackfillPodResizeConditions from the pod's API status (after a restart of the agent). */
  backfill(pod: Pod): void {
    const filled = backfillConditions(this.conditionsOf(pod.metadata.uid), pod.status?.conditions, toTime(this.deps.now()));
    this.store(pod.metadata.uid, filled);
  }

  private store(uid: string, conditions: ResizeConditions): void {
    if (conditions.pending || conditions.inProgress) this.resizeConditions.set(uid, conditions);
    else this.resizeConditions.delete(uid);
  }

  // ---------------------------------------------------------------- pending resizes

  /** The pods whose resize waits, in retry order. */
  pending(): readonly string[] {
    return this.pendingResizes;
  }

  /** Sets the pending resizes (PushPendingResize's sorted list, or a retry's remainder). */
  setPendingResizes(uids: readonly string[]): void {
    this.pendingResizes = [...uids];
  }

  /** The periodic retry is due (the kubelet's ticker). */
  retryDue(now: number): boolean {
    return now >= this.nextRetryAt;
  }

  /** When the periodic retry comes next: `delayMs` from `now`. */
  scheduleRetry(now: number, delayMs: number): void {
    this.nextRetryAt = now + delayMs;
  }
}
