/**
 * The API server pod source (pkg/kubelet/config/apiserver.go NewSourceApiserver): the pods bound
 * to this node, by a list and then a watch of `spec.nodeName=<node>` across namespaces
 * (src/client/reflector.ts: resume, 410 relist, backoff, bursts coalesced), handed over whole
 * after each change, as the file source does; the merge (podConfig.ts) turns the sets into
 * CONFIG.* events. The first snapshot comes after the first list, so the source counts as seen
 * only then.
 *
 * Mirror pods (annotation `kubernetes.io/config.mirror`) are never run: they go to
 * `onMirrorPods`, for the agent to match against its static pods. A pod the agent cannot run
 * (it fails validation) is reported once per version through `onError`, naming the pod and the
 * field, and left out; the others are unaffected.
 */
import { ConfigAnnotation, type Pod } from '../api/types.ts';
import { deepFreeze, sharedWith } from '../immutable.ts';
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
  /** Each pod version as the agent runs it (null: rejected, and reported once), by UID. */
  const accepted = new Map<string, { version: string; pod: Pod | null }>();
  let lastAccepted: Pod | undefined;

  /** The pod as the agent runs it, or null (reported) when it cannot; computed once per version. */
  const accept = (raw: Pod): Pod | null => {
    const uid = raw.metadata.uid;
    const version = raw.metadata.resourceVersion ?? '';
    const known = accepted.get(uid);
    if (known && known.version === version && version !== '') return known.pod;
    const checked = validatePod(raw);
    let pod: Pod | null = null;
    if (checked.pod) {
      const defaulted = applyPodDefaults(checked.pod);
      const annotations = { ...defaulted.metadata.annotations, [ConfigAnnotation.source]: 'api' };
      // A new version mostly differs from the last in its status: it keeps the last one's other
      // parts; a new pod keeps what it has in common with the pod accepted before it (its defaults).
      pod = deepFreeze(sharedWith(known?.pod ?? lastAccepted, { ...defaulted, metadata: { ...defaulted.metadata, annotations } }));
      lastAccepted = pod;
    } else {
      const first = checked.errors[0]!;
      options.onError(`${raw.metadata.namespace}/${raw.metadata.name}`, `${first.field ? `${first.field}: ` : ''}${first.message}`, raw);
    }
    accepted.set(uid, { version, pod });
    return pod;
  };

  const isMirror = (pod: Pod) => pod.metadata.annotations?.[ConfigAnnotation.mirror] !== undefined;
  return createReflector<Pod>({
    kind: 'Pod',
    list: () => options.api.listPods(fieldSelector),
    watch: (resourceVersion, handlers) => options.api.watchPods(fieldSelector, resourceVersion, handlers),
    clock: options.clock,
    log: options.log,
    onChange: (store) => {
      const all = [...store.values()];
      options.onMirrorPods?.(all.filter(isMirror));
      for (const uid of accepted.keys()) if (!store.has(uid)) accepted.delete(uid);
      options.onSnapshot(all.filter((pod) => !isMirror(pod)).map(accept).filter((pod): pod is Pod => pod !== null));
    },
    onMalformed: (message) => options.onError('(unnamed)', message),
    ...(options.onState ? { onState: options.onState } : {}),
  });
}
