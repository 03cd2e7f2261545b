/**
 * What a pod asks of the node, as admission counts it, pure (the scheduler's noderesources fit,
 * through k8s.io/component-helpers/resource PodRequests): the regular containers and every sidecar
 * run side by side, while an init container runs next to the sidecars started before it only; the
 * pod needs the larger of the two, plus its `spec.overhead`. Pod-level requests replace the
 * containers' for the resources they name. Amounts are as api/quantity.ts gives them
 * (millicores for cpu).
 */
import { amounts, type ResourceAmounts } from '../api/quantity.ts';
import type { Container, Pod } from '../api/types.ts';

/** Adds `more` into `into`, resource by resource. */
export function addAmounts(into: ResourceAmounts, more: ResourceAmounts): void {
  for (const [name, value] of Object.entries(more)) into[name] = (into[name] ?? 0) + value;
}

function max(into: ResourceAmounts, other: ResourceAmounts): void {
  for (const [name, value] of Object.entries(other)) into[name] = Math.max(into[name] ?? 0, value);
}

const requestsOf = (c: Container) => amounts(c.resources?.requests);

/** The pod's effective requests (PodRequests, overhead included). */
export function podRequests(pod: Pod): ResourceAmounts {
  const total: ResourceAmounts = {};
  for (const c of pod.spec.containers) addAmounts(total, requestsOf(c));
  const sidecarsSoFar: ResourceAmounts = {};
  const initPeak: ResourceAmounts = {};
  for (const c of pod.spec.initContainers ?? []) {
    const own = requestsOf(c);
    if (c.restartPolicy === 'Always') {
      addAmounts(total, own);
      addAmounts(sidecarsSoFar, own);
      max(initPeak, sidecarsSoFar);
    } else {
      const whileRunning = { ...sidecarsSoFar };
      addAmounts(whileRunning, own);
      max(initPeak, whileRunning);
    }
  }
  max(total, initPeak);
  const podLevel = amounts(pod.spec.resources?.requests);
  for (const name of ['cpu', 'memory']) {
    if (podLevel[name] !== undefined) total[name] = podLevel[name]!;
  }
  addAmounts(total, amounts(pod.spec.overhead));
  return total;
}

/** Summed requests of several pods: what the admitted pods use of the node. */
export function sumRequests(pods: readonly Pod[]): ResourceAmounts {
  const used: ResourceAmounts = {};
  for (const pod of pods) addAmounts(used, podRequests(pod));
  return used;
}
