/**
 * Mirror pods, pure (pkg/kubelet/pod/mirror_client.go CreateMirrorPod, pkg/kubelet/kubelet.go
 * syncPod, pkg/kubelet/kubelet_pods.go HandlePodCleanups): each static pod has, in the API, a pod
 * of the same name and namespace carrying `kubernetes.io/config.mirror` = the static pod's hash,
 * owned by the Node and bound to it, so the cluster can see it. The agent never runs a mirror.
 *
 * `planMirrors` compares the static pods with the mirrors the API shows: a static pod without a
 * mirror gets one; a mirror of an older version of the pod (another hash) or one being deleted is
 * deleted (at once, with its UID as precondition) and created anew once it is gone; a mirror
 * whose static pod is gone is deleted. The agent runs nothing for a mirror, so a mirror's
 * graceful deletion has nothing to wait for: it is finished with grace 0.
 */
import type { OwnerReference } from '../api/cluster.ts';
import { ConfigAnnotation, type Pod, podFullName } from '../api/types.ts';

interface MirrorPlan {
  create: Pod[];
  delete: { namespace: string; name: string; uid: string }[];
}

const hashOf = (pod: Pod) => pod.metadata.annotations?.[ConfigAnnotation.hash] ?? pod.metadata.uid;

function mirrorPodFor(staticPod: Pod, nodeName: string, owner: OwnerReference): Pod {
  const { annotations = {}, labels } = staticPod.metadata;
  // A copy of the static pod's annotations, as the kubelet's mirror carries them, plus the mirror's own.
  const mirrorAnnotations = { ...annotations, [ConfigAnnotation.mirror]: hashOf(staticPod) };
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name: staticPod.metadata.name,
      namespace: staticPod.metadata.namespace,
      // The API assigns the mirror its own UID.
      uid: '',
      ...(labels ? { labels } : {}),
      annotations: mirrorAnnotations,
      ownerReferences: [{ ...owner, controller: true }],
    },
    spec: { ...staticPod.spec, nodeName },
  };
}

export function planMirrors(staticPods: readonly Pod[], mirrors: readonly Pod[], nodeName: string, owner: OwnerReference | null): MirrorPlan {
  const plan: MirrorPlan = { create: [], delete: [] };
  const byName = new Map(mirrors.map((m) => [podFullName(m), m]));
  const wanted = new Set<string>();
  for (const pod of staticPods) {
    const fullName = podFullName(pod);
    wanted.add(fullName);
    const mirror = byName.get(fullName);
    const current = mirror && mirror.metadata.annotations?.[ConfigAnnotation.mirror] === hashOf(pod) && !mirror.metadata.deletionTimestamp;
    if (current) continue;
    if (mirror) plan.delete.push({ namespace: mirror.metadata.namespace, name: mirror.metadata.name, uid: mirror.metadata.uid });
    // Created once the old one is gone (the next plan), and once the Node's UID is known.
    if (!mirror && owner) plan.create.push(mirrorPodFor(pod, nodeName, owner));
  }
  for (const mirror of mirrors) {
    if (!wanted.has(podFullName(mirror))) {
      plan.delete.push({ namespace: mirror.metadata.namespace, name: mirror.metadata.name, uid: mirror.metadata.uid });
    }
  }
  return plan;
}
