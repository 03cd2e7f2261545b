/**
 * A pod's image pull secrets, read at each sync as the kubelet reads them
 * (pkg/kubelet/kubelet_pods.go getPullSecretsForPod): each `spec.imagePullSecrets` entry with a
 * name, through the node's object reader (the Node authorizer lets a node read the Secrets its
 * pods name). One that cannot be read is left out and named in a Warning event on the pod; the
 * pull goes ahead with the others.
 */
import type { Pod } from '../api/types.ts';
import type { PullSecret } from '../credentialprovider/keyring.ts';
import type { PodPullContext } from '../credentialprovider/plugins.ts';
import { podReference } from '../eventrecorder/recorder.ts';
import type { PodCluster, PodObserve } from './podWork.ts';

export async function podPullSecrets(pod: Pod, cluster: PodCluster | undefined, observe: PodObserve): Promise<PullSecret[]> {
  // API validation once let entries with empty names through: they are skipped, without a warning.
  const names = (pod.spec.imagePullSecrets ?? []).map((ref) => ref.name ?? '').filter((name) => name.length > 0);
  if (names.length === 0) return [];
  const { namespace } = pod.metadata;
  const found: PullSecret[] = [];
  const failed: string[] = [];
  for (const name of names) {
    try {
      const secret = cluster ? await cluster.objects.pullSecret(namespace, name) : null;
      if (secret) found.push({ ...secret, namespace, name });
      else failed.push(name);
    } catch (err) {
      observe.log('info', 'Unable to retrieve pull secret, the image pull may not succeed.', { pod: `${namespace}/${pod.metadata.name}`, secret: `${namespace}/${name}`, err });
      failed.push(name);
    }
  }
  if (failed.length > 0) {
    observe.recorder.event(
      podReference(pod),
      'Warning',
      'FailedToRetrieveImagePullSecret',
      `Unable to retrieve some image pull secrets (${failed.join(', ')}); attempting to pull the image may not succeed.`,
    );
  }
  return found;
}

/**
 * The TokenRequest's lifetime when none is asked: the API server's default of one hour
 * (pkg/apis/authentication/v1 defaults.go SetDefaults_TokenRequestSpec), which the kubelet relies
 * on for credential provider tokens (plugin.go serviceAccountProvider.getServiceAccountToken sets none).
 */
const PROVIDER_TOKEN_SECONDS = 3600;

/**
 * The pod an image is pulled for, as credential provider plugins in service-account token mode
 * see it (image_manager.go makeLookupPullCredentialsFunc: the sandbox's namespace, name and uid,
 * and `spec.serviceAccountName`): its ServiceAccount read through the node's object reader (the
 * kubelet's service account manager), its token from the node's token manager, bound to the pod.
 * Without an API server there is no account to read and no token to get.
 */
export function podPullContext(pod: Pod, cluster: PodCluster | undefined): PodPullContext {
  const { namespace, name, uid } = pod.metadata;
  return {
    namespace,
    name,
    uid,
    serviceAccountName: typeof pod.spec['serviceAccountName'] === 'string' ? pod.spec['serviceAccountName'] : '',
    serviceAccount: (accountNamespace, accountName) => (cluster ? cluster.objects.serviceAccount(accountNamespace, accountName) : Promise.resolve(null)),
    token: (request) => {
      if (!cluster) return Promise.reject(new Error('no API server to request a service account token from'));
      return cluster.tokens.token({
        namespace: request.namespace,
        serviceAccount: request.serviceAccount,
        audience: request.audience,
        expirationSeconds: PROVIDER_TOKEN_SECONDS,
        pod: { name: request.podName, uid: request.podUid },
      });
    },
  };
}
