/**
 * What a pod asks of the node, as admission counts it, pure (the scheduler's noderesources fit,
 * through k8s.io/component-helpers/resource PodRequests): the regular containers and every sidecar
 * run side by side, while an init container runs next to the sidecars started before it only; the
 * pod needs the larger of the two, plus its `spec.overhead`. Pod-level requests replace the
 * containers' for the resources they name.
 *
 * Amounts are whole numbers in the units the kubelet's messages use: millicores for `cpu`, bytes
 * for memory and storage, units for the rest (each rounded up, as resource.Quantity does).
 */
import { quantityValue } from '../api/quantity.ts';
import type { Container, Pod } from '../api/types.ts';

export type ResourceAmounts = Record<string, number>;

/** `cpu` in millicores, anything else in its own unit, rounded up. */
export function amount(name: string, quantity: string | number | undefined): number {
  const scaled = quantityValue(quantity) * (name === 'cpu' ? 1000 : 1);
  // "0.7" is 700.0000000000001 millicores in floating point: that is 700, not 701.
  const nearest = Math.round(scaled);
  return Math.abs(scaled - nearest) < 1e-6 ? nearest : Math.ceil(scaled);
}

/** A ResourceList (`{cpu: "500m", memory: "1Gi"}`) as amounts; entries that are not objects count as none. */
export function amounts(list: Readonly<Record<string, string | number>> | undefined): ResourceAmounts {
  const out: ResourceAmounts = {};
  if (!list || typeof list !== 'object') return out;
  for (const [name, quantity] of Object.entries(list)) out[name] = amount(name, quantity);
  return out;
}

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
