/**
 * The labels and annotations the kubelet puts on CRI sandboxes and containers. They are how the
 * agent finds its pods again after a restart (nothing else is persisted) and how containerd
 * tooling shows familiar names, so the keys are the kubelet's own.
 */
import type { Container, Pod } from '../api/types.ts';
import type { KeyValueMap } from '../runtime/types.ts';
import { containerHash } from './hash.ts';

export const Label = {
  podName: 'io.kubernetes.pod.name',
  podNamespace: 'io.kubernetes.pod.namespace',
  podUid: 'io.kubernetes.pod.uid',
  containerName: 'io.kubernetes.container.name',
} as const;

export const Annotation = {
  containerHash: 'io.kubernetes.container.hash',
  restartCount: 'io.kubernetes.container.restartCount',
  terminationMessagePath: 'io.kubernetes.container.terminationMessagePath',
  terminationMessagePolicy: 'io.kubernetes.container.terminationMessagePolicy',
  podDeletionGracePeriod: 'io.kubernetes.pod.deletionGracePeriod',
  podTerminationGracePeriod: 'io.kubernetes.pod.terminationGracePeriod',
  preStopHandler: 'io.kubernetes.container.preStopHandler',
  ports: 'io.kubernetes.container.ports',
  containerType: 'io.kubernetes.container.type',
} as const;

export type ContainerType = 'init' | 'container' | 'ephemeral';

export function sandboxLabels(pod: Pod): KeyValueMap {
  return {
    ...pod.metadata.labels,
    [Label.podName]: pod.metadata.name,
    [Label.podNamespace]: pod.metadata.namespace,
    [Label.podUid]: pod.metadata.uid,
  };
}

export function containerLabels(pod: Pod, container: Container): KeyValueMap {
  return {
    [Label.podName]: pod.metadata.name,
    [Label.podNamespace]: pod.metadata.namespace,
    [Label.podUid]: pod.metadata.uid,
    [Label.containerName]: container.name,
  };
}

export function containerAnnotations(
  pod: Pod,
  container: Container,
  restartCount: number,
  type: ContainerType,
): KeyValueMap {
  const annotations: KeyValueMap = {
    [Annotation.containerHash]: containerHash(container),
    [Annotation.restartCount]: String(restartCount),
    [Annotation.terminationMessagePath]: container.terminationMessagePath ?? '/dev/termination-log',
    [Annotation.terminationMessagePolicy]: container.terminationMessagePolicy ?? 'File',
    [Annotation.containerType]: type,
  };
  if (pod.metadata.deletionGracePeriodSeconds !== undefined) {
    annotations[Annotation.podDeletionGracePeriod] = String(pod.metadata.deletionGracePeriodSeconds);
  }
  if (pod.spec.terminationGracePeriodSeconds !== undefined) {
    annotations[Annotation.podTerminationGracePeriod] = String(pod.spec.terminationGracePeriodSeconds);
  }
  if (container.lifecycle?.preStop) {
    annotations[Annotation.preStopHandler] = JSON.stringify(container.lifecycle.preStop);
  }
  if (container.ports?.length) {
    annotations[Annotation.ports] = JSON.stringify(container.ports);
  }
  return annotations;
}

/** An annotation read back as an integer; a missing or garbled value counts as 0. */
export function intAnnotation(annotations: KeyValueMap, key: string): number {
  const value = Number.parseInt(annotations[key] ?? '', 10);
  return Number.isFinite(value) ? value : 0;
}
