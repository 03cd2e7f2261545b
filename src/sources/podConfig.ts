/**
 * PodConfig: merges the full snapshots of the pod sources (`file`, `http`, `api`) into the
 * incremental updates the sync loop consumes, with the kubelet's podStorage semantics.
 *
 * State: per source, a map UID → the pod as last stored. A snapshot replaces its source's map:
 *
 * - unknown UID ⇒ ADD (the pod gets `kubernetes.io/config.seen`, the time of first sighting);
 * - known UID, semantically different (spec, labels, deletionTimestamp, deletionGracePeriodSeconds,
 *   or annotations other than the kubelet-local source/mirror/seen keys) ⇒ DELETE when the new
 *   version carries a deletionTimestamp, UPDATE otherwise;
 * - known UID, same semantics but a different status ⇒ RECONCILE;
 * - known UID, nothing different ⇒ nothing;
 * - a UID of the previous snapshot that is missing now ⇒ REMOVE.
 *
 * Every stored pod is annotated `kubernetes.io/config.source`; the `seen` time of a UID never
 * changes while it stays in its source. Within one snapshot, a second pod with an already used
 * full name (`name_namespace`) — or UID — is dropped and reported through `onDuplicate`.
 *
 * A merge returns its updates in the order REMOVE, ADD, UPDATE, DELETE, RECONCILE, leaving out
 * empty ones, except that a source's first snapshot that adds, updates and deletes nothing still
 * yields an empty ADD: that is how the consumer learns the source has been seen.
 *
 * Pure: no I/O, no timers; the clock is injected. Stored pods are frozen (a change stores a new
 * object, holding the parts that did not change) and handed out as they are: every consumer of a
 * pod shares one object, and none can change it or the store (a write throws). A source
 * never changes a pod object it has handed over (it hands over a new one): the same object in the
 * next snapshot is taken as unchanged without being compared.
 */
import { ConfigAnnotation, podFullName, type Pod, type SourceName } from '../api/types.ts';
import { jsonEqual } from '../api/json.ts';
import { deepFreeze } from '../immutable.ts';
import type { ConfigOp } from '../events.ts';

export interface PodUpdate {
  op: ConfigOp;
  source: SourceName;
  pods: Pod[];
}

interface PodConfigOptions {
  /** Clock for the `seen` annotation; defaults to the wall clock. */
  now?: () => Date;
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
 * The stored pod after a semantic change: what a source may change is taken from `incoming`; the
 * rest of the metadata (e.g. resourceVersion) and the local annotations stay as first stored.
 */
function updatedPod(existing: Pod, incoming: Pod): Pod {
  const annotations: Record<string, string> = { ...incoming.metadata.annotations };
  for (const key of LOCAL_ANNOTATIONS) {
    const kept = existing.metadata.annotations?.[key];
    if (kept !== undefined) annotations[key] = kept;
  }
  const { labels, deletionTimestamp, deletionGracePeriodSeconds, generation } = incoming.metadata;
  const metadata = withoutUndefined({ ...existing.metadata, labels, deletionTimestamp, deletionGracePeriodSeconds, generation, annotations });
  return withoutUndefined({ ...existing, metadata, spec: incoming.spec, status: incoming.status });
}

function withStatus(existing: Pod, incoming: Pod): Pod {
  return withoutUndefined({ ...existing, status: incoming.status });
}

/**
 * `value` without its members set to `undefined`, so a field a source removed is absent, not
 * `undefined`. A new object (deleting members would leave V8 a dictionary, several times larger).
 */
function withoutUndefined<T extends object>(value: T): T {
  return Object.fromEntries(Object.entries(value).filter(([, member]) => member !== undefined)) as T;
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
  /** The objects each source handed over last, by UID: the same object again is the same pod. */
  private readonly given = new Map<SourceName, Map<string, Pod>>();
  private readonly now: () => Date;
  private readonly onDuplicate: PodConfigOptions['onDuplicate'];

  constructor(expectedSources: readonly SourceName[], options: PodConfigOptions = {}) {
    this.expected = new Set(expectedSources);
    this.now = options.now ?? (() => new Date());
    this.onDuplicate = options.onDuplicate;
  }

  /** Replaces `source`'s pods with `snapshot` and returns what changed, in emission order. */
  merge(source: SourceName, snapshot: readonly Pod[]): PodUpdate[] {
    if (!this.expected.has(source)) throw new Error(`pod source "${source}" is not configured`);
    const firstSnapshot = !this.seen.has(source);
    this.seen.add(source);

    const previous = this.bySource.get(source) ?? new Map<string, Pod>();
    const givenBefore = this.given.get(source);
    const given = new Map<string, Pod>();
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
      given.set(uid, pod);

      const existing = previous.get(uid);
      // A source sends its whole set at each change of any one pod, so most of a snapshot is
      // unchanged: the object handed over last time (the API source keeps one per version) needs
      // no look, another is compared as it came (the source annotation is a local one, which
      // classify leaves out; a source that shares unchanged parts between versions makes the
      // comparison of those parts an identity check).
      const change = !existing ? 'added' : givenBefore?.get(uid) === pod ? 'none' : classify(existing, pod);
      if (change === 'none') {
        next.set(uid, existing!);
        continue;
      }
      const local: Record<string, string> = { [ConfigAnnotation.source]: source };
      if (!existing) local[ConfigAnnotation.seen] = this.now().toISOString();
      const incoming: Pod = { ...pod, metadata: { ...pod.metadata, annotations: { ...pod.metadata.annotations, ...local } } };
      if (!existing) {
        const stored = deepFreeze(incoming);
        next.set(uid, stored);
        byOp.ADD.push(stored);
      } else if (change === 'status') {
        const stored = deepFreeze(withStatus(existing, incoming));
        next.set(uid, stored);
        byOp.RECONCILE.push(stored);
      } else {
        const stored = deepFreeze(updatedPod(existing, incoming));
        next.set(uid, stored);
        (stored.metadata.deletionTimestamp ? byOp.DELETE : byOp.UPDATE).push(stored);
      }
    }
    for (const [uid, pod] of previous) {
      if (!next.has(uid)) byOp.REMOVE.push(pod);
    }
    this.bySource.set(source, next);
    this.given.set(source, given);

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
