/**
 * Dynamic resource allocation on a node without it, pure. Before a pod's sandbox, the kubelet
 * prepares each of its claims through the DRA driver the claim was allocated to
 * (pkg/kubelet/cm/dra/manager.go PrepareResources, called from kuberuntime_manager.go SyncPod);
 * any failure is a Warning `FailedPrepareDynamicResources` "Failed to prepare dynamic resources:
 * …", no sandbox, and the pod stays Pending, tried again at the next sync. This node has no DRA
 * drivers, so a claim it would have to prepare always fails: with the kubelet's words while the
 * claim is not known yet (resourceclaim.Name), with ours once it is.
 */
import type { Pod } from '../api/types.ts';

/** Why the pod's claims cannot be prepared (the event's `%v`), or null when it has none to prepare. */
export function dynamicResourcesError(pod: Pod): string | null {
  const podRef = `pod "${pod.metadata.namespace}/${pod.metadata.name}"`;
  for (const claim of pod.spec.resourceClaims ?? []) {
    let name: string | undefined;
    if (claim.resourceClaimName !== undefined) name = claim.resourceClaimName;
    else if (claim.resourceClaimTemplateName !== undefined) {
      const status = pod.status?.resourceClaimStatuses?.find((s) => s.name === claim.name);
      if (!status) return `prepare dynamic resources: ${podRef}: ResourceClaim not created yet`;
      // No claim was needed for this one (resourceclaim.Name gives nil: "Nothing to do").
      if (status.resourceClaimName === undefined) continue;
      name = status.resourceClaimName;
    } else return `prepare dynamic resources: ${podRef}, spec.resourceClaim "${claim.name}": none of the supported fields are set`;
    return `prepare dynamic resources: ResourceClaim ${name}: this node has no DRA driver to prepare it`;
  }
  return null;
}
