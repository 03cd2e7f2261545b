/**
 * Service-account tokens of the pods' projected volumes (pkg/kubelet/token/token_manager.go): one
 * TokenRequest per (service account, namespace, audiences, lifetime, pod), kept until it needs a
 * refresh — past 80 % of its life, or 24 h after it was issued (each less a jitter of up to 10 s,
 * so a thousand pods started together do not all ask again in the same second), or when the
 * clock says it was issued in the future. A failed refresh keeps the old token while it is valid.
 * Tokens of a pod are forgotten when its volumes are torn down; expired ones are collected each
 * minute (the volume manager's tick). A token is a credential: it never appears in a message.
 */
import type { IssuedToken, KubeApi, TokenRequestSpec } from '../client/api.ts';

/** The longest a token is used without asking for a new one (maxTTL). */
const MAX_TOKEN_AGE_MS = 24 * 3_600_000;
/** The refresh time is moved earlier by up to this much, at random (maxJitter). */
const MAX_JITTER_MS = 10_000;

interface CachedToken {
  token: string;
  /** When the API server says the token expires (ms since the epoch). */
  expiresAtMs: number;
  /** Its lifetime as granted: issued = expiry − lifetime. */
  expirationSeconds: number;
  podUID: string;
}

/** Whether the token must be asked for again now (requiresRefresh); `jitterMs` in [0, MAX_JITTER_MS). */
export function tokenNeedsRefresh(cached: Pick<CachedToken, 'expiresAtMs' | 'expirationSeconds'>, nowMs: number, jitterMs: number): boolean {
  const lifetimeMs = cached.expirationSeconds * 1000;
  const issuedAtMs = cached.expiresAtMs - lifetimeMs;
  // Whole seconds, as the kubelet computes 20 % of the lifetime in integer seconds.
  const fifthMs = Math.floor((cached.expirationSeconds * 20) / 100) * 1000;
  if (nowMs > issuedAtMs + MAX_TOKEN_AGE_MS - jitterMs) return true;
  if (nowMs > cached.expiresAtMs - fifthMs - jitterMs) return true;
  return nowMs < issuedAtMs;
}

export interface TokenRequestFor {
  namespace: string;
  serviceAccount: string;
  audience?: string;
  expirationSeconds: number;
  pod: { name: string; uid: string };
}

/** A token with its expiry (authentication/v1 TokenRequestStatus), as a CSI driver is given it. */
export interface TokenStatus {
  token: string;
  /** RFC 3339, whole seconds (metav1.Time). */
  expirationTimestamp: string;
}

/** What callers see of the token manager. */
export interface TokenSource {
  token(request: TokenRequestFor): Promise<string>;
  /** The token with its expiry (the CSI plugin's tokenRequests: csi_mounter.go podServiceAccountTokenAttrs). */
  tokenStatus(request: TokenRequestFor): Promise<TokenStatus>;
}

export class TokenManager implements TokenSource {
  private readonly cache = new Map<string, CachedToken>();
  /** Requests under way by key: concurrent syncs of one pod ask once. */
  private readonly inFlight = new Map<string, Promise<CachedToken>>();

  constructor(
    private readonly api: Pick<KubeApi, 'createServiceAccountToken'>,
    private readonly now: () => number,
    private readonly log: (level: 'error', message: string, fields: Record<string, unknown>) => void,
    private readonly jitter: () => number = () => Math.floor(Math.random() * (MAX_JITTER_MS / 1000)) * 1000,
  ) {}

  /** Cached tokens (for the visualizer and the bench). */
  get size(): number {
    return this.cache.size;
  }

  async token(request: TokenRequestFor): Promise<string> {
    return (await this.cached(request)).token;
  }

  async tokenStatus(request: TokenRequestFor): Promise<TokenStatus> {
    const { token, expiresAtMs } = await this.cached(request);
    return { token, expirationTimestamp: new Date(expiresAtMs).toISOString().replace(/\.\d{3}Z$/, 'Z') };
  }

  private cached(request: TokenRequestFor): Promise<CachedToken> {
    const key = cacheKey(request);
    const cached = this.cache.get(key);
    if (cached && !tokenNeedsRefresh(cached, this.now(), this.jitter())) return Promise.resolve(cached);
    let pending = this.inFlight.get(key);
    if (!pending) {
      pending = this.refresh(key, request, cached).finally(() => this.inFlight.delete(key));
      this.inFlight.set(key, pending);
    }
    return pending;
  }

  private async refresh(key: string, request: TokenRequestFor, cached: CachedToken | undefined): Promise<CachedToken> {
    const spec: TokenRequestSpec = {
      ...(request.audience ? { audiences: [request.audience] } : {}),
      expirationSeconds: request.expirationSeconds,
      boundObjectRef: { apiVersion: 'v1', kind: 'Pod', name: request.pod.name, uid: request.pod.uid },
    };
    let issued: IssuedToken;
    try {
      issued = await this.api.createServiceAccountToken(request.namespace, request.serviceAccount, spec);
    } catch (err) {
      const cause = err instanceof Error ? err.message : String(err);
      if (!cached) throw new Error(`failed to fetch token: ${cause}`);
      if (this.now() > cached.expiresAtMs) throw new Error(`token ${key} expired and refresh failed: ${cause}`);
      this.log('error', "Couldn't update token", { cacheKey: key, err: cause });
      return cached;
    }
    const fresh = { token: issued.token, expiresAtMs: Date.parse(issued.expirationTimestamp), expirationSeconds: issued.expirationSeconds, podUID: request.pod.uid };
    this.cache.set(key, fresh);
    return fresh;
  }

  /** The pod's tokens are no longer kept (its volumes were torn down). */
  forgetPod(podUID: string): void {
    for (const [key, cached] of this.cache) if (cached.podUID === podUID) this.cache.delete(key);
  }

  /** Drops expired tokens (the kubelet's cleanup each minute); returns how many. */
  collectExpired(): number {
    let dropped = 0;
    for (const [key, cached] of this.cache) {
      if (this.now() > cached.expiresAtMs) {
        this.cache.delete(key);
        dropped++;
      }
    }
    return dropped;
  }
}

/** The cache key; safe to log (no token in it). */
function cacheKey(request: TokenRequestFor): string {
  return JSON.stringify([request.serviceAccount, request.namespace, request.audience ? [request.audience] : [], request.expirationSeconds, request.pod.uid]);
}
