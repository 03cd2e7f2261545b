/**
 * The last step of a source's normalization of its pods (decoded, null members dropped,
 * validated, defaulted — then this): each pod stamped with the source it came from and the time
 * the source first saw its UID (pkg/kubelet/config/config.go: the `kubernetes.io/config.source`
 * and `kubernetes.io/config.seen` annotations the kubelet's merge gives every pod), stored sharing
 * what did not change since its last version (or, new, what it has in common with the pod stored
 * before it: a ReplicaSet's pods share one spec), and frozen. What a source hands over is what
 * every part of the node holds from then on: the merge (podConfig.ts), the pod manager, the
 * workers pass it on untouched.
 */
import { ConfigAnnotation, type Pod, type SourceName } from '../api/types.ts';
import { deepFreeze, sharedWith } from '../immutable.ts';

export class SourcePods {
  /** By UID: the pod the source gave last (a source may give the same object again) and the pod kept for it. */
  private readonly kept = new Map<string, { given: Pod; pod: Pod }>();
  private last: Pod | undefined;

  constructor(
    private readonly source: SourceName,
    /** The wall clock, for the first sighting. */
    private readonly now: () => number,
  ) {}

  /** The pod as the node keeps it; the same object as before when `pod` is the object the source gave last for its UID. */
  keep(pod: Pod): Pod {
    const uid = pod.metadata.uid;
    const previous = this.kept.get(uid);
    if (previous?.given === pod) return previous.pod;
    const seen = previous?.pod.metadata.annotations?.[ConfigAnnotation.seen] ?? new Date(this.now()).toISOString();
    const annotations = { ...pod.metadata.annotations, [ConfigAnnotation.source]: this.source, [ConfigAnnotation.seen]: seen };
    const kept = deepFreeze(sharedWith(previous?.pod ?? this.last, { ...pod, metadata: { ...pod.metadata, annotations } }));
    this.kept.set(uid, { given: pod, pod: kept });
    this.last = kept;
    return kept;
  }

  /** A whole snapshot of the source, kept; the UIDs it no longer has are forgotten. */
  snapshot(pods: readonly Pod[]): Pod[] {
    const kept = pods.map((pod) => this.keep(pod));
    this.retain(new Set(kept.map((pod) => pod.metadata.uid)));
    return kept;
  }

  /** Forgets every UID but these (a UID that comes back is seen anew). */
  retain(uids: ReadonlySet<string>): void {
    for (const uid of this.kept.keys()) if (!uids.has(uid)) this.kept.delete(uid);
  }
}
