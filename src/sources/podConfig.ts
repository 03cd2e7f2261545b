/**
 * PodConfig: merges the full snapshots of the pod sources (`file`, `http`, `api`) into the
 * incremental updates the sync loop consumes, with the kubelet's podStorage semantics.
 *
 * State: per source, a map UID → the pod as last stored. A snapshot replaces its source's map:
 *
 * - unknown UID ⇒ ADD;
 * - known UID, semantically different (spec, labels, deletionTimestamp, deletionGracePeriodSeconds,
 *   or annotations other than the kubelet-local source/mirror/seen keys) ⇒ DELETE when the new
 *   version carries a deletionTimestamp, UPDATE otherwise;
 * - known UID, same semantics but a different status ⇒ RECONCILE;
 * - known UID, nothing different ⇒ nothing;
 * - a UID of the previous snapshot that is missing now ⇒ REMOVE.
 *
 * The pods come normalized by their source (sourcePods.ts: stamped with their source and first
 * sighting, frozen) and are stored and handed on as they are: the merge decides, it does not
 * reshape. Within one snapshot, a second pod with an already used full name (`name_namespace`) —
 * or UID — is dropped and reported through `onDuplicate`.
 *
 * A merge returns its updates in the order REMOVE, ADD, UPDATE, DELETE, RECONCILE, leaving out
 * empty ones, except that a source's first snapshot that adds, updates and deletes nothing still
 * yields an empty ADD: that is how the consumer learns the source has been seen.
 *
 * Pure: no I/O, no timers. Every consumer of a pod shares the source's one object, frozen, and
 * none can change it or the store (a write throws). A source never changes a pod object it has
 * handed over (it hands over a new one): the same object in the next snapshot is taken as
 * unchanged without being compared.
 */
import { ConfigAnnotation, podFullName, type Pod, type SourceName } from '../api/types.ts';
import { jsonEqual } from '../api/json.ts';
import type { ConfigOp } from '../events.ts';

export interface PodUpdate {
  op: ConfigOp;
  source: SourceName;
  pods: Pod[];
}

interface PodConfigOptions {
  /** Called for each pod dropped because its full name (or UID) repeats within one snapshot; `by` says which. */
  onDuplicate?: (pod: Pod, source: SourceName, by: 'name' | 'uid') => void;
}

/** Annotations the agent itself sets; a source changing them is not a change of the pod. */
const LOCAL_ANNOTATIONS: readonly string[] = [ConfigAnnotation.source, ConfigAnnotation.mirror, ConfigAnnotation.seen];

type Change = 'none' | 'status' | 'semantic';

function withoutLocalAnnotations(annotations: Record<string, string> | undefined): Record<string, string> {
  const out: Record<string, string> = { ...annotations };
  for (const key of LOCAL_ANNOTATIONS) delete out[key];
  return out;
}

function classify(existing: Pod, incoming: Pod): Change {
  const was = existing.metadata;
  const now = incoming.metadata;
  const same =
    jsonEqual(existing.spec, incoming.spec) &&
    jsonEqual(was.labels ?? {}, now.labels ?? {}) &&
    jsonEqual(was.deletionTimestamp, now.deletionTimestamp) &&
    jsonEqual(was.deletionGracePeriodSeconds, now.deletionGracePeriodSeconds) &&
    jsonEqual(withoutLocalAnnotations(was.annotations), withoutLocalAnnotations(now.annotations));
  if (!same) return 'semantic';
  return jsonEqual(existing.status ?? {}, incoming.status ?? {}) ? 'none' : 'status';
}

/**
 * The event the kubelet records on a pod it leaves out because an earlier pod of its source has
 * its full name (pkg/kubelet/config/config.go filterInvalidPods: Warning FailedValidation, the
 * dropped pod as `name_namespace(uid)` and the name they share).
 */
export function duplicatePodEvent(pod: Pod, source: SourceName): { reason: 'FailedValidation'; message: string } {
  const { name, namespace, uid } = pod.metadata;
  return { reason: 'FailedValidation', message: `Error validating pod ${name}_${namespace}(${uid}) from ${source} due to duplicate pod name ${JSON.stringify(name)}, ignoring` };
}

export class PodConfig {
  private readonly expected: ReadonlySet<SourceName>;
  private readonly seen = new Set<SourceName>();
  private readonly bySource = new Map<SourceName, Map<string, Pod>>();
  private readonly onDuplicate: PodConfigOptions['onDuplicate'];

  constructor(expectedSources: readonly SourceName[], options: PodConfigOptions = {}) {
    this.expected = new Set(expectedSources);
    this.onDuplicate = options.onDuplicate;
  }

  /** Replaces `source`'s pods with `snapshot` and returns what changed, in emission order. */
  merge(source: SourceName, snapshot: readonly Pod[]): PodUpdate[] {
    if (!this.expected.has(source)) throw new Error(`pod source "${source}" is not configured`);
    const firstSnapshot = !this.seen.has(source);
    this.seen.add(source);

    const previous = this.bySource.get(source) ?? new Map<string, Pod>();
    const next = new Map<string, Pod>();
    const byOp: Record<ConfigOp, Pod[]> = { REMOVE: [], ADD: [], UPDATE: [], DELETE: [], RECONCILE: [] };
    const names = new Set<string>();

    for (const pod of snapshot) {
      const uid = pod.metadata.uid;
      const fullName = podFullName(pod);
      if (names.has(fullName) || next.has(uid)) {
        this.onDuplicate?.(pod, source, names.has(fullName) ? 'name' : 'uid');
        continue;
      }
      names.add(fullName);

      const existing = previous.get(uid);
      next.set(uid, pod);
      // A source sends its whole set at each change of any one pod, so most of a snapshot is
      // unchanged: the object stored last time (a source keeps one per version) needs no look,
      // another is compared (its source shares the parts that did not change with its last
      // version, which makes comparing them an identity check).
      const change = !existing ? 'added' : existing === pod ? 'none' : classify(existing, pod);
      if (change === 'none') continue;
      if (change === 'added') byOp.ADD.push(pod);
      else if (change === 'status') byOp.RECONCILE.push(pod);
      else (pod.metadata.deletionTimestamp ? byOp.DELETE : byOp.UPDATE).push(pod);
    }
    for (const [uid, pod] of previous) {
      if (!next.has(uid)) byOp.REMOVE.push(pod);
    }
    this.bySource.set(source, next);

    const signalSeen = firstSnapshot && byOp.ADD.length === 0 && byOp.UPDATE.length === 0 && byOp.DELETE.length === 0;
    const order: readonly ConfigOp[] = ['REMOVE', 'ADD', 'UPDATE', 'DELETE', 'RECONCILE'];
    return order
      .filter((op) => byOp[op].length > 0 || (op === 'ADD' && signalSeen))
      .map((op) => ({ op, source, pods: byOp[op] }));
  }

  /** Sources that have delivered at least one snapshot. */
  seenSources(): ReadonlySet<SourceName> {
    return new Set(this.seen);
  }

  /** Every configured source has delivered at least one snapshot. */
  sourcesReady(): boolean {
    return [...this.expected].every((source) => this.seen.has(source));
  }

  /** All pods currently known, across sources. */
  pods(): Pod[] {
    return [...this.bySource.values()].flatMap((pods) => [...pods.values()]);
  }
}
