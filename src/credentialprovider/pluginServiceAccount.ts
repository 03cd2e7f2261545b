/**
 * The service-account token mode of a credential provider (`tokenAttributes`,
 * KubeletServiceAccountTokenForCredentialProviders): the pod's ServiceAccount annotations the
 * provider asks for, and the keys its credentials are cached and shared under
 * (pkg/credentialprovider/plugin/plugin.go serviceAccountProvider, generateServiceAccountCacheKey,
 * generateSingleFlightKey). Pure: the reads and the token request are plugins.ts's.
 */

import { createHash } from 'node:crypto';
import type { TokenAttributes } from './pluginConfig.ts';

/** The pod an image is pulled for (plugin.go perPodPluginProvider), and how to read its account and get its token. */
export interface PodPullContext {
  namespace: string;
  name: string;
  uid: string;
  /** `spec.serviceAccountName`; empty for a pod without one (a static pod). */
  serviceAccountName: string;
  /** The ServiceAccount's uid and annotations; null when it does not exist. */
  serviceAccount(namespace: string, name: string): Promise<{ uid: string; annotations: Readonly<Record<string, string>> } | null>;
  /** A token of the pod's service account bound to the pod, for `audience` (the kubelet's token manager). */
  token(request: { namespace: string; serviceAccount: string; audience: string; podName: string; podUid: string }): Promise<string>;
}

/** Who a token-mode provider's credentials were given for (credentialprovider.ServiceAccountCoordinates). */
export interface ServiceAccountCoordinates {
  uid: string;
  namespace: string;
  name: string;
}

/** plugin.go requiredAnnotationNotFoundError: the plugin is not run, and the pod gets no credentials from it. */
export class RequiredAnnotationNotFoundError extends Error {
  constructor(key: string) {
    super(`required annotation ${key} not found`);
    this.name = 'RequiredAnnotationNotFoundError';
  }
}

/**
 * The annotations the request carries (plugin.go getServiceAccountData): every required key, which
 * must be on the ServiceAccount, and the optional keys it has.
 */
export function requestAnnotations(attributes: TokenAttributes, annotations: Readonly<Record<string, string>>): Record<string, string> {
  const selected: Record<string, string> = {};
  for (const key of attributes.requiredServiceAccountAnnotationKeys) {
    if (!Object.hasOwn(annotations, key)) throw new RequiredAnnotationNotFoundError(key);
    selected[key] = annotations[key]!;
  }
  for (const key of attributes.optionalServiceAccountAnnotationKeys) if (Object.hasOwn(annotations, key)) selected[key] = annotations[key]!;
  return selected;
}

/** plugin.go getHashIfNotEmpty: what a key keeps of a token, never the token. */
export function tokenHash(token: string): string {
  return token === '' ? '' : `sha256:${createHash('sha256').update(token).digest('hex')}`;
}

/** Annotations in key order, so that equal maps give equal keys (cacheKeyBuilder.addAnnotations sorts them). */
function sortedAnnotations(annotations: Readonly<Record<string, string>>): string[][] {
  return Object.keys(annotations)
    .sort()
    .map((key) => [key, annotations[key]!]);
}

/**
 * The service-account part of a cache key (plugin.go generateServiceAccountCacheKey): the
 * namespace, the account's name and uid and the request's annotations; for cacheType `Token` also
 * the token's hash, so that a new token asks the plugin again.
 */
export function serviceAccountCacheKey(
  cacheType: string,
  account: ServiceAccountCoordinates,
  annotations: Readonly<Record<string, string>>,
  token: string,
): string {
  const parts: unknown[] = [account.namespace, account.name, account.uid, sortedAnnotations(annotations)];
  if (cacheType === 'Token') parts.push('token', tokenHash(token));
  return JSON.stringify(parts);
}

/** Who shares one exec of the plugin (plugin.go generateSingleFlightKey): the image, the token's hash and the annotations. */
export function singleFlightKey(image: string, token: string, annotations: Readonly<Record<string, string>>): string {
  return JSON.stringify([image, tokenHash(token), sortedAnnotations(annotations)]);
}
