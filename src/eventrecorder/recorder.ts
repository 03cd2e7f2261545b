/**
 * The agent's events (the kubelet's record.EventRecorder, pkg/kubelet/events/event.go reasons):
 * every event is logged; in a cluster it is also written to the events API, after the
 * correlator's spam filter, aggregation and deduplication (correlator.ts).
 *
 * Writing never blocks the caller: events wait in a bounded queue (the oldest dropped beyond it)
 * and go out a few at a time; a failed write is retried a few times, a refused one (403, 422) is
 * logged once per reason and dropped, so the API server's trouble never reaches a pod's sync.
 */
import type { ObjectReference } from '../api/cluster.ts';
import type { Pod } from '../api/types.ts';
import { ApiError, isForbidden, isNotFound, type KubeApi } from '../client/api.ts';
import type { Clock } from '../clock.ts';
import type { Logger } from '../log.ts';
import { type Correlation, EventCorrelator, type EventInput } from './correlator.ts';

export type EventType = 'Normal' | 'Warning';

export interface EventRecorder {
  event(object: ObjectReference, type: EventType, reason: string, message: string): void;
}

/**
 * The pod as an event's involved object; with a container, that container's field path
 * (`spec.containers{c}`, `spec.initContainers{c}` or `spec.ephemeralContainers{c}`: pkg/kubelet/container/ref.go
 * GenerateContainerRef, fieldPath).
 */
export function podReference(pod: Pick<Pod, 'metadata' | 'spec'>, containerName?: string): ObjectReference {
  const ref: ObjectReference = { kind: 'Pod', apiVersion: 'v1', namespace: pod.metadata.namespace, name: pod.metadata.name, uid: pod.metadata.uid };
  if (containerName === undefined) return ref;
  const named = (list: { name: string }[] | undefined) => (list ?? []).some((c) => c.name === containerName);
  const list = named(pod.spec.initContainers) ? 'initContainers' : named(pod.spec.ephemeralContainers) ? 'ephemeralContainers' : 'containers';
  return { ...ref, fieldPath: `spec.${list}{${containerName}}` };
}

/** The Node as the kubelet refers to it in events: its UID is its name (kubelet.go nodeRef). */
export function nodeReference(nodeName: string): ObjectReference {
  return { kind: 'Node', name: nodeName, uid: nodeName };
}

/** Logs events only: a standalone node has nowhere to write them. The line is named by the reason. */
export function loggingRecorder(log: Logger): EventRecorder {
  return {
    event(object, type, reason, message) {
      const container = /\{(.*)\}$/.exec(object.fieldPath ?? '')?.[1];
      const subject =
        object.kind === 'Pod' ? { pod: `${object.namespace}/${object.name}`, ...(container ? { container } : {}) } : { [object.kind.toLowerCase()]: object.name };
      log(type === 'Warning' ? 'warn' : 'info', reason, { ...subject, type, message });
    },
  };
}

function describe(o: ObjectReference): string {
  const name = o.namespace ? `${o.kind} ${o.namespace}/${o.name}` : `${o.kind} ${o.name}`;
  return o.fieldPath ? `${name} ${o.fieldPath}` : name;
}

interface ApiRecorderDeps {
  api: KubeApi;
  nodeName: string;
  clock: Clock;
  log: Logger;
  /** Events waiting to be written, at most (the oldest dropped beyond). */
  maxQueued?: number;
}

/** Writes at once, at most (the rest queue). */
const IN_FLIGHT = 4;
/** Tries per event, and the wait between them (client-go's recordToSink tries 12 times, 10 s apart). */
const MAX_TRIES = 12;
const RETRY_MS = 10_000;

type Write = Exclude<Correlation, { action: 'drop' }> & { tries: number };

interface ApiRecorderStats {
  written: number;
  dropped: number;
  /** Not written yet: queued, or being written. */
  queued: number;
}

export class ApiEventRecorder implements EventRecorder {
  private readonly correlator: EventCorrelator;
  private readonly queue: Write[] = [];
  private readonly refusedReasons = new Set<string>();
  private inFlight = 0;
  private stopped = false;
  readonly stats: ApiRecorderStats = { written: 0, dropped: 0, queued: 0 };

  constructor(private readonly deps: ApiRecorderDeps) {
    this.correlator = new EventCorrelator({ component: 'kubelet', host: deps.nodeName });
  }

  event(object: ObjectReference, type: EventType, reason: string, message: string): void {
    loggingRecorder(this.deps.log).event(object, type, reason, message);
    if (this.stopped) return;
    const input: EventInput = { object, type, reason, message };
    const correlation = this.correlator.correlate(input, this.deps.clock.now());
    if (correlation.action === 'drop') {
      this.stats.dropped++;
      return;
    }
    this.enqueue({ ...correlation, tries: 0 });
  }

  stop(): void {
    this.stopped = true;
    this.queue.length = 0;
  }

  private enqueue(write: Write): void {
    this.queue.push(write);
    if (this.queue.length > (this.deps.maxQueued ?? 1_000)) {
      this.queue.shift();
      this.stats.dropped++;
    }
    this.pump();
  }

  private pump(): void {
    while (!this.stopped && this.inFlight < IN_FLIGHT && this.queue.length > 0) {
      const write = this.queue.shift()!;
      this.inFlight++;
      void this.write(write).finally(() => {
        this.inFlight--;
        this.pump();
      });
    }
    // Waiting to be written: queued, or on their way (a write may wait for a rate-limit token).
    this.stats.queued = this.queue.length + this.inFlight;
  }

  private async write(write: Write): Promise<void> {
    const { api, log } = this.deps;
    const event = write.event;
    try {
      if (write.action === 'patch') {
        try {
          await api.patchEvent(event.metadata.namespace, event.metadata.name, write.patch);
        } catch (err) {
          // The Event expired or was deleted: write it as a new one (client-go recordEvent).
          if (!isNotFound(err)) throw err;
          this.correlator.forget(event);
          await api.createEvent({ ...event, count: 1, firstTimestamp: event.lastTimestamp });
        }
      } else {
        await api.createEvent(event);
      }
      this.stats.written++;
    } catch (err) {
      const status = err instanceof ApiError ? err.status : undefined;
      // Refused: the same write would be refused again.
      if (isForbidden(err) || status === 422 || status === 400 || status === 409) {
        this.stats.dropped++;
        const key = `${status} ${event.reason}`;
        if (!this.refusedReasons.has(key)) {
          this.refusedReasons.add(key);
          log('warn', 'The API server refused an event; events like it are dropped', { reason: event.reason, object: describe(event.involvedObject), err });
        }
        return;
      }
      if (++write.tries >= MAX_TRIES) {
        this.stats.dropped++;
        log('warn', 'Dropped an event after repeated failures to write it', { reason: event.reason, object: describe(event.involvedObject), err });
        return;
      }
      this.deps.clock.setTimeout(() => !this.stopped && this.enqueue(write), RETRY_MS);
    }
  }
}

/** The node's recorder: in a cluster events go to the API too (correlated, rate-limited), and `stop` ends its writes; a standalone node logs them. */
export function nodeEventRecorder(deps: Omit<ApiRecorderDeps, 'api'> & { api: KubeApi | undefined }): EventRecorder & { stats?: ApiRecorderStats; stop(): void } {
  if (deps.api) return new ApiEventRecorder({ ...deps, api: deps.api });
  return { ...loggingRecorder(deps.log), stop: () => {} };
}
