/**
 * Whether a pod may land on this node by its labels and taints, pure
 * (k8s.io/component-helpers/scheduling/corev1/nodeaffinity GetRequiredNodeAffinity,
 * k8s.io/component-helpers/scheduling/corev1 helpers.go FindMatchingUntoleratedTaint,
 * k8s.io/api/core/v1 toleration.go ToleratesTaint).
 */
import type { Taint } from '../api/cluster.ts';
import type { NodeSelectorRequirement, NodeSelectorTerm, Pod, Toleration } from '../api/types.ts';

function requirementHolds(req: NodeSelectorRequirement, value: string | undefined): boolean {
  const values = Array.isArray(req.values) ? req.values : [];
  switch (req.operator) {
    case 'In':
      return value !== undefined && values.includes(value);
    case 'NotIn':
      return value === undefined || !values.includes(value);
    case 'Exists':
      return value !== undefined;
    case 'DoesNotExist':
      return value === undefined;
    case 'Gt':
    case 'Lt': {
      // Both sides must be integers; anything else does not match.
      if (value === undefined || values.length !== 1 || !/^-?\d+$/.test(value) || !/^-?\d+$/.test(values[0]!)) return false;
      const [have, bound] = [BigInt(value), BigInt(values[0]!)];
      return req.operator === 'Gt' ? have > bound : have < bound;
    }
    default:
      return false;
  }
}

/** A term matches when it has requirements and all of them hold; matchFields knows `metadata.name` only. */
function termMatches(term: NodeSelectorTerm, labels: Readonly<Record<string, string>>, nodeName: string): boolean {
  const expressions = Array.isArray(term?.matchExpressions) ? term.matchExpressions : [];
  const fields = Array.isArray(term?.matchFields) ? term.matchFields : [];
  if (expressions.length === 0 && fields.length === 0) return false;
  return (
    expressions.every((req) => requirementHolds(req, labels[req.key])) &&
    fields.every((req) => req.key === 'metadata.name' && (req.operator === 'In' || req.operator === 'NotIn') && requirementHolds(req, nodeName))
  );
}

/** `spec.nodeSelector` and the required node affinity (any of its terms) both match the node. */
export function matchesNodeAffinity(pod: Pod, labels: Readonly<Record<string, string>>, nodeName: string): boolean {
  for (const [key, value] of Object.entries(pod.spec.nodeSelector ?? {})) {
    if (labels[key] !== value) return false;
  }
  const required = pod.spec.affinity?.nodeAffinity?.requiredDuringSchedulingIgnoredDuringExecution;
  if (!required) return true;
  const terms = Array.isArray(required.nodeSelectorTerms) ? required.nodeSelectorTerms : [];
  return terms.some((term) => termMatches(term, labels, nodeName));
}

/** ToleratesTaint: an empty effect tolerates every effect; an empty key with Exists, every key. */
function tolerates(toleration: Toleration, taint: Taint): boolean {
  if (toleration.effect && toleration.effect !== taint.effect) return false;
  if (toleration.key && toleration.key !== taint.key) return false;
  switch (toleration.operator ?? 'Equal') {
    case 'Exists':
      return true;
    case 'Equal':
      return (toleration.value ?? '') === (taint.value ?? '');
    default:
      return false;
  }
}

/** Whether one of the tolerations tolerates the taint (TolerationsTolerateTaint). */
export function toleratesTaint(tolerations: readonly Toleration[] | undefined, taint: Taint): boolean {
  return (Array.isArray(tolerations) ? tolerations : []).some((t) => tolerates(t, taint));
}

/** The first NoExecute taint none of the pod's tolerations tolerates (the only effect admission checks). */
export function untoleratedNoExecuteTaint(taints: readonly Taint[], tolerations: readonly Toleration[] | undefined): Taint | undefined {
  const list = Array.isArray(tolerations) ? tolerations : [];
  return taints.find((taint) => taint.effect === 'NoExecute' && !list.some((t) => tolerates(t, taint)));
}
