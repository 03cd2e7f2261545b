/**
 * The config sources as one actor the syncLoop invokes: it runs each configured source (the file
 * source, the HTTP source, the API server source), merges their snapshots (PodConfig) and sends
 * the resulting CONFIG.* events, then SOURCE.SEEN, to the syncLoop, in that order, so that a
 * source counts as seen only once its pods are known.
 * A broken manifest is logged with its file (or URL) and field; it never stops the source. A pod
 * left out because another of its source has its name, or an API pod the node cannot run, is sent
 * as a SOURCE.ERROR carrying the kubelet's FailedValidation event (pkg/kubelet/config/config.go
 * filterInvalidPods), which the node's recorder writes.
 */
import { type EventObject, fromCallback } from 'xstate';
import type { Pod, SourceName } from '../api/types.ts';
import { podRef } from '../api/types.ts';
import type { Clock } from '../clock.ts';
import { type ConfigEvent, type SourceEvent, configEvent } from '../events.ts';
import type { Logger } from '../log.ts';
import type { KubeApi } from '../client/api.ts';
import { createApiSource } from './apiserver.ts';
import { createFileSource } from './file.ts';
import { createHttpSource } from './http.ts';
import { PodConfig, duplicatePodEvent } from './podConfig.ts';

interface ConfigSourcesOptions {
  nodeName: string;
  podManifestPath?: string;
  /** --manifest-url: a URL serving a Pod or a PodList. */
  manifestUrl?: string;
  /** --manifest-url-header: sent with each request to manifestUrl. */
  manifestUrlHeaders?: Record<string, string[]>;
  /** --http-check-frequency: the time between two fetches of manifestUrl. */
  httpCheckFrequencyMs: number;
  /** The API server (--kubeconfig): the pods bound to this node. */
  api?: KubeApi;
  fileCheckFrequencyMs: number;
  clock: Clock;
  log: Logger;
}

/**
 * The sources the options configure (pkg/kubelet/kubelet.go makePodSourceConfig: file with a
 * static pod path, http with a URL, api with a client): the syncLoop waits for each of them before
 * housekeeping, and pods removed before then are not killed (config.go SeenAllSources).
 */
export function configuredSources(options: Pick<ConfigSourcesOptions, 'podManifestPath' | 'manifestUrl' | 'api'>): SourceName[] {
  return [
    ...(options.podManifestPath ? (['file'] as const) : []),
    ...(options.manifestUrl ? (['http'] as const) : []),
    ...(options.api ? (['api'] as const) : []),
  ];
}

export function createConfigSourcesLogic(options: ConfigSourcesOptions) {
  return fromCallback<EventObject>(({ sendBack }) => {
    const send = (event: ConfigEvent | SourceEvent) => sendBack(event);
    const duplicate = (pod: Pod, source: SourceName) => {
      const warning = { pod, ...duplicatePodEvent(pod, source) };
      send({ type: 'SOURCE.ERROR', source, message: warning.message, warning });
    };
    const config = new PodConfig(configuredSources(options), {
      onDuplicate: (pod, source, by) => {
        options.log('warn', `Dropped a pod whose ${by === 'name' ? 'name' : 'UID'} repeats within its source`, { pod: podRef(pod), podUID: pod.metadata.uid, source });
        // The kubelet checks names only (a second pod of one UID replaces the first in its store).
        if (by === 'name') duplicate(pod, source);
      },
    });
    const deliver = (source: SourceName, pods: Pod[]) => {
      for (const update of config.merge(source, pods)) {
        send(configEvent(update.op, update.source, update.pods));
      }
      send({ type: 'SOURCE.SEEN', source });
    };

    const stops: (() => void)[] = [];
    if (options.podManifestPath) {
      const file = createFileSource({
        path: options.podManifestPath,
        nodeName: options.nodeName,
        checkFrequencyMs: options.fileCheckFrequencyMs,
        clock: options.clock,
        onSnapshot: (pods) => deliver('file', pods),
        onError: (err) => {
          options.log('error', 'Skipping bad static pod manifest', {
            file: err.file,
            ...(err.line !== undefined ? { line: err.line } : {}),
            ...(err.field !== undefined ? { field: err.field } : {}),
            err: err.message,
          });
          // Left out by the file source itself, which knows both files: the kubelet's event all the same.
          send({ type: 'SOURCE.ERROR', source: 'file', message: err.message, ...(err.duplicate ? { warning: { pod: err.duplicate, ...duplicatePodEvent(err.duplicate, 'file') } } : {}) });
        },
      });
      file.start().catch((err: unknown) => options.log('error', 'File source failed to start', { err }));
      stops.push(() => file.stop());
    }
    if (options.manifestUrl) {
      const url = options.manifestUrl;
      const http = createHttpSource({
        url,
        headers: options.manifestUrlHeaders ?? {},
        nodeName: options.nodeName,
        checkFrequencyMs: options.httpCheckFrequencyMs,
        clock: options.clock,
        onSnapshot: (pods) => deliver('http', pods),
        onError: (err) => {
          options.log('error', 'Failed to read pods from URL', {
            url,
            ...(err.pod !== undefined ? { pod: err.pod } : {}),
            ...(err.field !== undefined ? { field: err.field } : {}),
            err: err.message,
          });
          send({ type: 'SOURCE.ERROR', source: 'http', message: err.message });
        },
        onRecovered: () => options.log('info', 'Successfully read pods from URL', { url }),
      });
      void http.start();
      stops.push(() => http.stop());
    }
    if (options.api) {
      const api = createApiSource({
        api: options.api,
        nodeName: options.nodeName,
        clock: options.clock,
        log: options.log,
        onSnapshot: (pods) => deliver('api', pods),
        onMirrorPods: (pods) => send({ type: 'SOURCE.MIRRORS', pods }),
        onState: (state) =>
          send({
            type: 'SOURCE.STATE',
            source: 'api',
            phase: state.phase,
            detail: state.phase === 'watching' ? `from ${state.resourceVersion}` : state.phase === 'backingOff' ? `${state.delayMs} ms: ${state.error}` : '',
          }),
        onError: (pod, message, object) => {
          options.log('error', 'Skipping a pod from the API server that the agent cannot run', { pod, err: message });
          send({
            type: 'SOURCE.ERROR',
            source: 'api',
            message: `${pod}: ${message}`,
            ...(object ? { warning: { pod: object, reason: 'FailedValidation', message: `The node cannot run this pod: ${message}` } } : {}),
          });
        },
      });
      api.start();
      stops.push(() => api.stop());
    }
    return () => stops.forEach((stop) => stop());
  });
}
