/**
 * Questions about a pod's spec that decisions on every layer ask (computePodActions, status
 * generation, termination order). Pure; no defaults are written back.
 */
import type { Container, Pod } from './types.ts';

/** The pod's restart policy, defaulted as the API server defaults it. */
export function restartPolicyOf(pod: Pod): 'Always' | 'OnFailure' | 'Never' {
  return pod.spec.restartPolicy ?? 'Always';
}

/** A sidecar: an init container with `restartPolicy: Always`, started in order and kept running. */
export function isSidecar(container: Container): boolean {
  return container.restartPolicy === 'Always';
}

/** The API server has set a deletion timestamp: the pod is on its way out. */
export function isDeleting(pod: Pod): boolean {
  return pod.metadata.deletionTimestamp !== undefined;
}
