/**
 * The node's allocation of resources to pods, pure (pkg/kubelet/allocation: allocation_manager.go
 * ResourceInfoForPod, updatePodFromAllocation, handlePodResourcesResize, sortPendingResizes,
 * isResizeIncreasingRequests; handlers.go podResizesAdmitHandler; kubelet.go
 * recordContainerResizeOperations).
 *
 * A pod's *desired* resources are its spec's; its *allocated* ones are what the node admitted it
 * (or its last accepted resize) with, kept in a checkpoint. The pod's worker runs the allocated
 * pod (the spec with the allocated resources), so a resize reaches the containers only once it is
 * admitted. A resize is admitted as a pod is, against the node's other pods as allocated: what
 * would not fit now is `Deferred` (retried when pods leave or shrink, and every 3 minutes); what
 * the node can never do is `Infeasible`. Beyond allocatable is refused by the API server itself
 * (plugin/pkg/admission/podresize, `node didn't have enough allocatable resources`), so a resize
 * that reaches the node fits it when it is empty. Static pods are not resized (the API server
 * refuses their mirror pods', and a new manifest is a new pod).
 */
import { type Admission, type NodeInfo, admitPod } from '../admission/admit.ts';
import { podRequests } from '../admission/resources.ts';
import { podQos } from '../api/qos.ts';
import { amount } from '../api/quantity.ts';
import type { Container, Pod, ResourceRequirements } from '../api/types.ts';

/** The resources allocated (or actuated) per container of a pod, by container name (state.PodResourceInfo). */
export type PodResourceInfo = Readonly<Record<string, ResourceRequirements>>;

/**
 * The containers whose resources a pod's allocation records (allocation.IsResizableContainer): the
 * regular containers and the init containers (InPlacePodVerticalScalingInitContainers is GA in
 * 1.37); never the ephemeral ones.
 */
function allocatableContainers(pod: Pod): Container[] {
  return [...(pod.spec.initContainers ?? []), ...pod.spec.containers];
}

const copyRequirements = (r: ResourceRequirements | undefined): ResourceRequirements => ({
  ...(r?.limits ? { limits: { ...r.limits } } : {}),
  ...(r?.requests ? { requests: { ...r.requests } } : {}),
});

/** ResourceInfoForPod: the pod's containers' resources as its allocation records them. */
export function resourceInfoForPod(pod: Pod): PodResourceInfo {
  return Object.fromEntries(allocatableContainers(pod).map((c) => [c.name, copyRequirements(c.resources)]));
}

/** Semantic equality of two resource lists (apiequality: quantities by value, an absent list equal to an empty one). */
function listsEqual(a: Record<string, string | number> | undefined, b: Record<string, string | number> | undefined): boolean {
  const names = new Set([...Object.keys(a ?? {}), ...Object.keys(b ?? {})]);
  for (const name of names) {
    const x = a?.[name];
    const y = b?.[name];
    if (x === undefined || y === undefined) return false;
    if (amount(name, x) !== amount(name, y)) return false;
  }
  return true;
}

export function resourcesEqual(a: ResourceRequirements | undefined, b: ResourceRequirements | undefined): boolean {
  return listsEqual(a?.requests, b?.requests) && listsEqual(a?.limits, b?.limits);
}

/**
 * updatePodFromAllocation: the pod with each recorded container's allocated resources in place of
 * its spec's; `updated` when any differed (a resize not yet allocated). Without a record, the pod as it is.
 */
export function updatePodFromAllocation(pod: Pod, allocated: PodResourceInfo | undefined): { pod: Pod; updated: boolean } {
  if (!allocated) return { pod, updated: false };
  let updated = false;
  const apply = (c: Container): Container => {
    const alloc = allocated[c.name];
    if (!alloc || resourcesEqual(c.resources, alloc)) return c;
    updated = true;
    const next: Container = { ...c, resources: copyRequirements(alloc) };
    if (!alloc.limits && !alloc.requests) delete next.resources;
    return next;
  };
  const containers = pod.spec.containers.map(apply);
  const initContainers = pod.spec.initContainers?.map(apply);
  if (!updated) return { pod, updated };
  return { pod: { ...pod, spec: { ...pod.spec, containers, ...(initContainers ? { initContainers } : {}) } }, updated };
}

/** recordContainerResizeOperations: a container's CPU or memory request or limit differs between the two versions of a pod. */
export function resizeRequested(oldPod: Pod, newPod: Pod): boolean {
  const old = new Map(allocatableContainers(oldPod).map((c) => [c.name, c.resources]));
  for (const c of allocatableContainers(newPod)) {
    if (!old.has(c.name)) continue;
    const before = old.get(c.name);
    for (const list of ['requests', 'limits'] as const) {
      for (const name of ['cpu', 'memory']) {
        if (amount(name, before?.[list]?.[name]) !== amount(name, c.resources?.[list]?.[name])) return true;
      }
    }
  }
  return false;
}

/** What the node does with a pod's resources as desired now (handlePodResourcesResize). */
export type ResizeDecision =
  | { kind: 'unchanged' }
  | { kind: 'allocate' }
  /** `reason`: the admit handler's (Infeasible, OutOfcpu, …): any but Infeasible is shown as Deferred. */
  | { kind: 'pending'; reason: string; message: string };

/**
 * handlePodResourcesResize's decision for a pod whose desired resources may differ from its
 * allocation: nothing to do when they are the same; else the resize is admitted through the node's
 * admit handlers as a pod is, against the other active pods as allocated (canAdmitPod with
 * ResizeOperation: the resize handler first, whose refusals are all Infeasible, then the others in
 * the kubelet's order). The resize handler refuses nothing on this node: it refuses resizes that
 * involve swap (the node runs NoSwap only), memory-backed volume sizes (not resizable: the feature
 * is off) and Guaranteed pods under the static CPU or memory manager (the node has neither).
 */
export function decideResize(desired: Pod, allocated: PodResourceInfo | undefined, others: readonly Pod[], node: NodeInfo): ResizeDecision {
  if (!updatePodFromAllocation(desired, allocated).updated) return { kind: 'unchanged' };
  const admission: Admission = admitPod(desired, others.filter((p) => p.metadata.uid !== desired.metadata.uid), node);
  if (admission.admit) return { kind: 'allocate' };
  return { kind: 'pending', reason: admission.reason, message: admission.message };
}

/** isResizeIncreasingRequests: the pod's CPU or memory request, summed as admission sums it, grows. */
export function isResizeIncreasingRequests(desired: Pod, allocated: PodResourceInfo | undefined): boolean {
  const { pod: allocatedPod, updated } = updatePodFromAllocation(desired, allocated);
  if (!updated) return false;
  const before = podRequests(allocatedPod);
  const after = podRequests(desired);
  return (after['memory'] ?? 0) > (before['memory'] ?? 0) || (after['cpu'] ?? 0) > (before['cpu'] ?? 0);
}

/** A pending resize as the retry order sees it. */
export interface PendingResize {
  uid: string;
  /** isResizeIncreasingRequests. */
  increasing: boolean;
  priority: number;
  guaranteed: boolean;
  /** The PodResizePending condition's lastTransitionTime; absent: not pending yet. */
  pendingSince?: string;
}

/** The facts sortPendingResizes orders a pod's resize by. */
export function pendingResizeOf(desired: Pod, allocated: PodResourceInfo | undefined, pendingSince: string | undefined): PendingResize {
  return {
    uid: desired.metadata.uid,
    increasing: isResizeIncreasingRequests(desired, allocated),
    priority: desired.spec.priority ?? 0,
    guaranteed: podQos(desired) === 'Guaranteed',
    ...(pendingSince ? { pendingSince } : {}),
  };
}

/**
 * sortPendingResizes: the order pending resizes are retried in, so that those most likely to
 * succeed and most important go first: those that do not grow requests, then higher priority,
 * then Guaranteed before the others, then the longest pending (one not pending yet last).
 */
export function sortPendingResizes(pending: readonly PendingResize[]): string[] {
  const byAge = (a?: string, b?: string) => (a === undefined ? (b === undefined ? 0 : 1) : b === undefined ? -1 : Date.parse(a) - Date.parse(b));
  return [...pending]
    .sort((a, b) => Number(a.increasing) - Number(b.increasing) || b.priority - a.priority || Number(b.guaranteed) - Number(a.guaranteed) || byAge(a.pendingSince, b.pendingSince))
    .map((p) => p.uid);
}
