/**
 * The API server pod source (pkg/kubelet/config/apiserver.go NewSourceApiserver): the pods bound
 * to this node, by a list and then a watch of `spec.nodeName=<node>` across namespaces
 * (src/client/reflector.ts: resume, 410 relist, backoff, bursts coalesced), handed over whole
 * after each change, as the file source does; the merge (podConfig.ts) turns the sets into
 * CONFIG.* events. The first snapshot comes after the first list, so the source counts as seen
 * only then.
 *
 * Each pod is normalized once, as the reflector stores it: the client decoded it, this source
 * validates, defaults and keeps it (sourcePods.ts: stamped, shared with its last version, frozen).
 * Mirror pods (annotation `kubernetes.io/config.mirror`) are never run: they go to
 * `onMirrorPods`, for the agent to match against its static pods. A pod the agent cannot run
 * (it fails validation) is reported once per version through `onError`, naming the pod and the
 * field, and left out; the others are unaffected.
 */
import { ConfigAnnotation, type Pod } from '../api/types.ts';
import { deepFreeze, sharedWith } from '../immutable.ts';
import { SourcePods } from './sourcePods.ts';
import { applyPodDefaults, validatePod } from '../api/validate.ts';
import type { KubeApi } from '../client/api.ts';
import { createReflector, type ReflectorState } from '../client/reflector.ts';
import type { Clock } from '../clock.ts';
import type { Logger } from '../log.ts';

interface ApiSourceOptions {
  api: KubeApi;
  nodeName: string;
  clock: Clock;
  log: Logger;
  onSnapshot(pods: Pod[]): void;
  onMirrorPods?(pods: Pod[]): void;
  /** A pod the agent cannot run: `pod` names it (`namespace/name`), `object` is what the API sent, if it had a name. */
  onError(pod: string, message: string, object?: Pod): void;
  /** Reports how the source is doing, for the visualizer: listing, watching, backing off. */
  onState?(state: ApiSourceState): void;
}

export type ApiSourceState = ReflectorState;

interface ApiSource {
  start(): void;
  stop(): void;
}

export function createApiSource(options: ApiSourceOptions): ApiSource {
  const fieldSelector = `spec.nodeName=${options.nodeName}`;
  const pods = new SourcePods('api', () => options.clock.now());
  /** The version of each pod the agent cannot run, reported once. */
  const rejected = new Map<string, string>();

  /**
   * The pod as the agent runs it, or null (reported once per version) when it cannot: validated,
   * defaulted and kept (sourcePods.ts) as the reflector stores it. The client decoded it (null
   * members dropped, managedFields left out). A mirror pod is not run: kept as it came.
   */
  const normalize = (raw: Pod, previous: Pod | undefined): Pod | null => {
    if (isMirror(raw)) return deepFreeze(sharedWith(previous, raw));
    const uid = raw.metadata.uid;
    const version = raw.metadata.resourceVersion ?? '';
    if (version !== '' && rejected.get(uid) === version) return null;
    const checked = validatePod(raw);
    if (checked.pod) {
      rejected.delete(uid);
      return pods.keep(applyPodDefaults(checked.pod));
    }
    rejected.set(uid, version);
    const first = checked.errors[0]!;
    options.onError(`${raw.metadata.namespace}/${raw.metadata.name}`, `${first.field ? `${first.field}: ` : ''}${first.message}`, raw);
    return null;
  };

  return createReflector<Pod>({
    kind: 'Pod',
    list: () => options.api.listPods(fieldSelector),
    watch: (resourceVersion, handlers) => options.api.watchPods(fieldSelector, resourceVersion, handlers),
    clock: options.clock,
    log: options.log,
    normalize,
    onChange: (store) => {
      const all = [...store.values()];
      options.onMirrorPods?.(all.filter(isMirror));
      for (const uid of rejected.keys()) if (!store.has(uid)) rejected.delete(uid);
      pods.retain(new Set(store.keys()));
      options.onSnapshot(all.filter((pod) => !isMirror(pod)));
    },
    onMalformed: (message) => options.onError('(unnamed)', message),
    ...(options.onState ? { onState: options.onState } : {}),
  });
}

const isMirror = (pod: Pod) => pod.metadata.annotations?.[ConfigAnnotation.mirror] !== undefined;
