/**
 * A credential provider's cache of the credentials its plugin gave (plugin.go pluginProvider:
 * cache, getCachedCredentials, and the caching half of provide): an entry is kept under the image,
 * its registry or one global key as the response's cacheKeyType says, until its expiry; a lookup
 * tries the image, then the registry, then the global key. Expired entries are dropped when looked
 * up, and every 15 minutes all of them, as the kubelet's expiration store is listed.
 */

import { type AuthEntry, type CacheKeyType, type CredentialProviderResponse, registryOf } from './pluginProtocol.ts';

/** plugin.go cachePurgeInterval. */
export const CACHE_PURGE_INTERVAL_MS = 15 * 60_000;
/** plugin.go globalCacheKey. */
const GLOBAL_CACHE_KEY = 'global';

/**
 * When a response's credentials stop being served from the cache, or null when they are not
 * cached: a `cacheDuration` of 0, or none with a defaultCacheDuration of 0 (plugin.go provide).
 */
export function cacheExpiry(response: CredentialProviderResponse, defaultCacheDurationMs: number, now: number): number | null {
  const duration = response.cacheDurationMs ?? defaultCacheDurationMs;
  return duration === 0 ? null : now + duration;
}

/** The key a response's credentials are kept under. */
export function cacheKeyFor(cacheKeyType: CacheKeyType, image: string): string {
  if (cacheKeyType === 'Image') return image;
  if (cacheKeyType === 'Registry') return registryOf(image);
  return GLOBAL_CACHE_KEY;
}

/**
 * A cache key joined with a provider's service-account key (plugin.go generateCacheKey): a pod's
 * credentials are not another service account's. Without one, the key is unchanged.
 */
export function withServiceAccountKey(key: string, serviceAccountKey: string): string {
  return serviceAccountKey === '' ? key : JSON.stringify([key, serviceAccountKey]);
}

export class CredentialCache {
  private readonly entries = new Map<string, { credentials: AuthEntry[]; expiresAt: number }>();
  private lastPurge: number;

  constructor(private readonly now: () => number) {
    this.lastPurge = now();
  }

  /**
   * The cached credentials for `image`: under the image, else its registry, else the global key,
   * each joined with the service-account key of a provider in token mode (plugin.go
   * getCachedCredentials, lookupCredentialsInCache).
   */
  lookup(image: string, serviceAccountKey = ''): AuthEntry[] | undefined {
    const now = this.now();
    if (now > this.lastPurge + CACHE_PURGE_INTERVAL_MS) {
      for (const [key, entry] of this.entries) if (now > entry.expiresAt) this.entries.delete(key);
      this.lastPurge = now;
    }
    for (const key of [image, registryOf(image), GLOBAL_CACHE_KEY].map((base) => withServiceAccountKey(base, serviceAccountKey))) {
      const entry = this.entries.get(key);
      if (entry === undefined) continue;
      // cacheExpirationPolicy.IsExpired: expired strictly after expiresAt.
      if (now > entry.expiresAt) {
        this.entries.delete(key);
        continue;
      }
      return entry.credentials;
    }
    return undefined;
  }

  store(key: string, credentials: AuthEntry[], expiresAt: number): void {
    this.entries.set(key, { credentials, expiresAt });
  }

  /** How many entries are held, expired ones included until purged. */
  get size(): number {
    return this.entries.size;
  }
}
